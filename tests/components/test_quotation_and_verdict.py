"""The quotation choice and the verdict check, as components of their own (out of CitedAnswerBuilder)."""

from __future__ import annotations

import pytest
from haystack import Document

from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder
from pmc_rag.components.quotation_chooser import QuotationChooser
from pmc_rag.components.references import source_link
from pmc_rag.components.verdict_check import VerdictCheck

EXCERPTS = [
    Document(content="This study aimed to assess erlotinib in EGFR-mutant lung cancer. "
                     "Erlotinib prolonged progression-free survival in EGFR-mutant lung cancer compared with chemotherapy.",
             meta={"source_id": "PMC3297584", "section": "Abstract: Conclusions"}),
    Document(content="Smoking cessation programmes reduced hospital admissions among adults with asthma in the region.",
             meta={"source_id": "PMC1111111", "section": "Results"}),
]


@pytest.mark.parametrize("component", [QuotationChooser(extractive_sentences=2, source_id_field="doc_id"),
                                       VerdictCheck(policy="none", min_support=0.5)])
def test_round_trip(component):
    data = component.to_dict()
    again = type(component).from_dict(data)
    assert again.to_dict() == data
    assert data["init_parameters"] != type(component)().to_dict()["init_parameters"]


def test_the_finding_is_quoted_not_the_aim_and_an_unrelated_paper_is_left_out():
    claims = QuotationChooser().run(question="Does erlotinib help in EGFR-mutant lung cancer?",
                                    documents=EXCERPTS)["claims"]
    assert [c["cited"] for c in claims] == [["PMC3297584"]]
    assert claims[0]["text"].startswith("Erlotinib prolonged")


def test_at_most_extractive_sentences_papers_are_quoted():
    same = [Document(content=f"Erlotinib prolonged survival in lung cancer in cohort number {i} of the trial.",
                     meta={"source_id": f"PMC{i}", "section": "Results"}) for i in range(1, 5)]
    claims = QuotationChooser(extractive_sentences=2).run(question="Does erlotinib prolong survival in lung cancer?",
                                                          documents=same)["claims"]
    assert [c["cited"] for c in claims] == [["PMC1"], ["PMC2"]]


@pytest.mark.parametrize("policy, text, support, shown, withheld", [
    ("checked", "No: parents reported higher quality with a regular clinician.", 0.8,
     "Parents reported higher quality with a regular clinician.", "No"),       # says the opposite of "No"
    ("checked", "No, erlotinib did not improve survival.", 0.8, "No, erlotinib did not improve survival.", ""),
    ("checked", "Yes, erlotinib improved survival.", 0.1, "Erlotinib improved survival.", "Yes"),  # unsupported
    ("none", "Yes, erlotinib improved survival.", 0.9, "Erlotinib improved survival.", "Yes"),
    ("model", "Yes, erlotinib did not improve survival.", 0.0, "Yes, erlotinib did not improve survival.", ""),
])
def test_a_verdict_is_shown_only_as_the_policy_says(policy, text, support, shown, withheld):
    result = VerdictCheck(policy=policy).run(claims=[{"text": text, "cited": ["PMC1"], "support": support}])
    assert [c["text"] for c in result["claims"]] == [shown]
    assert result["withheld"] == withheld


def test_a_verdict_on_its_own_stands_or_falls_with_the_next_sentence():
    claims = [{"text": "Yes.", "cited": [], "support": None},
              {"text": "Erlotinib did not improve survival.", "cited": ["PMC1"], "support": 0.9}]
    result = VerdictCheck().run(claims=claims)
    assert [c["text"] for c in result["claims"]] == ["Erlotinib did not improve survival."]
    assert result["withheld"] == "Yes"


def test_an_unknown_policy_is_refused_by_the_builder_and_the_check():
    with pytest.raises(ValueError, match="verdicts must be one of"):
        VerdictCheck(policy="sometimes")
    with pytest.raises(ValueError, match="verdicts must be one of"):
        CitedAnswerBuilder(verdicts="sometimes")


def test_source_link_prefers_pmc_then_pubmed_then_doi():
    assert source_link({"pmcid": "PMC1", "pmid": "2", "doi": "10.1/x"}) == "https://pmc.ncbi.nlm.nih.gov/articles/PMC1/"
    assert source_link({"pmid": "2", "doi": "10.1/x"}) == "https://pubmed.ncbi.nlm.nih.gov/2/"
    assert source_link({"doi": "10.1/x"}) == "https://doi.org/10.1/x"
    assert source_link({}) is None
