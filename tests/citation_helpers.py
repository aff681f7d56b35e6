"""Hand-made excerpts and the two steps most citation tests run on them: verify a reply's citations, then build
the answer from what was verified."""

from __future__ import annotations

from haystack import Document
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citation_verifier import CitationVerifier
from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder


EXCERPTS = [
    Document(id="c1", content="Erlotinib prolonged progression-free survival in patients with EGFR-mutant lung "
                              "adenocarcinoma. Skin rash was the most common adverse event.",
             meta={"source_id": "PMC4816447", "pmcid": "PMC4816447", "pmid": "27032107", "year": 2016,
                   "title": "First-line erlotinib in EGFR-mutant NSCLC", "journal": "PLoS ONE",
                   "doi": "10.1371/journal.pone.0147599", "section": "Abstract: Results"}),
    Document(id="c2", content="Metformin lowered HbA1c by 1.1 percentage points compared with placebo over "
                              "twelve weeks in adults with type 2 diabetes.",
             meta={"source_id": "PMID:15703931", "pmid": "15703931", "year": 2005, "section": "Abstract: Results"}),
]


def verify(text: str, documents=EXCERPTS, threshold: float = 0.6):
    return CitationVerifier(attribution_threshold=threshold).run(
        replies=[ChatMessage.from_assistant(text)], documents=documents)


def build(text: str, documents=EXCERPTS, **kwargs):
    verified = verify(text, documents)
    return CitedAnswerBuilder().run(question="Does erlotinib work?", documents=documents, claims=verified["claims"],
                                    invalid_citations=verified["invalid_citations"],
                                    raw_answer=verified["raw_answer"], **kwargs)["answer"].model_dump()
