"""CitationVerifier, CitedAnswerBuilder, ExcerptBudget and the generator wrappers, on hand-made cases."""

from __future__ import annotations

import random
import re

import pytest
from haystack import Document, Pipeline, component
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citation_verifier import CitationVerifier
from pmc_rag.components.citations import strip_reference_list
from pmc_rag.components.answer import Reference
from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder
from pmc_rag.components.empty_reply_generator import EmptyReplyGenerator
from pmc_rag.components.excerpt_budget import ExcerptBudget
from pmc_rag.components.excerpt_balance import ExcerptBalance
from pmc_rag.components.question_router import QuestionRouter
from pmc_rag.components.question_sentences import QuestionSentences
from pmc_rag.components.remembering_fallback_chat_generator import RememberingFallbackChatGenerator
from pmc_rag.components.section_chunker import SectionChunker

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
                                    raw_answer=verified["raw_answer"], **kwargs)["answer"]


def test_valid_citations_in_the_many_ways_small_models_write_them():
    result = verify("Erlotinib prolonged progression-free survival (PMC4816447). "
                    "Metformin lowered HbA1c [PMID: 15703931, pmc 4816447]. "
                    "Rash was common 【PMC4816447】. Survival improved PMC4816447.")
    assert [c["cited"] for c in result["claims"]] == [
        ["PMC4816447"], ["PMID:15703931", "PMC4816447"], ["PMC4816447"], ["PMC4816447"]]
    assert result["invalid_citations"] == []


def test_citations_to_papers_not_shown_are_removed_and_reported():
    # The 270M base model copies the prompt's example id; others invent plausible ones.
    result = verify("Erlotinib works [PMC1234567]. Metformin helps [PMID:99999999, PMID:15703931]. "
                    "Rash occurs [doi:10.1000/fake].")
    assert result["invalid_citations"] == ["PMC1234567", "PMID:99999999", "doi:10.1000/fake"]
    assert [c["cited"] for c in result["claims"]][1] == ["PMID:15703931"]
    assert all("PMC1234567" not in c["cited"] for c in result["claims"])


def test_a_bare_bracketed_number_is_never_displayed_as_a_citation():
    """A model that writes "[2]" or "See [7]" names no paper; left in, it would pass for our numbered citation."""
    answer = build("Erlotinib prolonged progression-free survival [PMC4816447]. Aspirin cures every cancer [2]. "
                   "See [7] and [3, 4].")
    assert answer["invalid_citations"] == ["[2]", "[7]", "[3,4]"] and answer["flags"]["invalid_citations_removed"]
    numbers = re.findall(r"\[[^\]]*\]", answer["answer"])
    assert numbers and set(numbers) == {"[1]"} and answer["references"][0]["source_id"] == "PMC4816447"
    # no excerpt supports the claim, so it carries no citation: it is left out, and the notes say so without
    # repeating it (a sentence left out may be a claim injected into the question); the raw answer keeps it
    notes = " ".join(answer["notes"])
    assert "Aspirin" not in answer["answer"] and "Aspirin" not in notes and "Left out 2 sentence(s)" in notes
    assert "Aspirin cures every cancer" in answer["raw_answer"]


def test_every_citation_invalid_leaves_nothing_shown_as_a_source():
    answer = build("Aspirin cures everything [PMC1234567]. Vaccines cause nothing [PMC7654321].")
    assert answer["invalid_citations"] == ["PMC1234567", "PMC7654321"]
    assert answer["flags"]["invalid_citations_removed"] and answer["flags"]["extractive_fallback"]
    shown = {ref["source_id"] for ref in answer["references"]}
    assert shown <= {"PMC4816447", "PMID:15703931"}
    assert "PMC1234567" not in answer["answer"] and "[PMC" not in answer["answer"]


def test_uncited_sentences_get_a_citation_only_when_an_excerpt_clearly_supports_them():
    result = verify("Erlotinib prolonged progression-free survival in EGFR-mutant lung adenocarcinoma. "
                    "Green tea prevents all cancers in elderly smokers.")
    supported, unsupported = result["claims"]
    assert supported["cited"] == ["PMC4816447"] and supported["attached"] == ["PMC4816447"]
    assert unsupported["cited"] == [] and unsupported["attached"] == []
    assert verify("Erlotinib prolonged progression-free survival.", threshold=None)["claims"][0]["attached"] == []


def test_duplicate_citations_count_once_and_numbers_follow_first_appearance():
    answer = build("Metformin lowered HbA1c in type 2 diabetes [PMID:15703931][PMID:15703931]. "
                   "Erlotinib prolonged progression-free survival [PMC4816447]. "
                   "Metformin lowered HbA1c against placebo [PMID:15703931].")
    assert [ref["source_id"] for ref in answer["references"]] == ["PMID:15703931", "PMC4816447"]
    assert answer["answer"].startswith("Metformin lowered HbA1c in type 2 diabetes [1].")
    assert "[2]" in answer["answer"] and answer["answer"].count("[1]") == 2


def test_citations_only_in_an_appended_reference_list_do_not_count():
    text = ("Erlotinib helps some patients with lung cancer.\n\nReferences:\n[PMC4816447] First-line erlotinib\n"
            "[PMC1234567] Made up")
    answer_text, appended = strip_reference_list(text)
    assert answer_text == "Erlotinib helps some patients with lung cancer." and "PMC1234567" in appended
    result = verify(text, threshold=None)
    assert result["invalid_citations"] == [] and [c["cited"] for c in result["claims"]] == [[]]
    # A trailing run of id lines with no heading is a reference list too.
    assert strip_reference_list("It works [PMC1].\n[PMC1] Title\n- PMID: 5 Other")[0] == "It works [PMC1]."


def test_malformed_brackets_and_unicode():
    result = verify("Erlotinib prolonged survival [PMC4816447. Rash ［PMC4816447］ was common. "
                    "Métformine réduit l'HbA1c (PMID:15703931 .")
    assert [c["cited"] for c in result["claims"]] == [["PMC4816447"], ["PMC4816447"], ["PMID:15703931"]]
    assert all("[" not in c["text"] and "(" not in c["text"] for c in result["claims"])


def test_no_answer_and_no_citations():
    empty = build("")
    assert empty["flags"]["extractive_fallback"] and empty["references"]
    assert "No model answer" in empty["notes"][0]
    assert verify("")["claims"] == []


def test_references_carry_what_is_needed_to_check_them():
    answer = build("Erlotinib prolonged progression-free survival in EGFR-mutant patients [PMC4816447].")
    reference = answer["references"][0]
    assert reference == {
        "number": 1, "source_id": "PMC4816447", "title": "First-line erlotinib in EGFR-mutant NSCLC",
        "journal": "PLoS ONE", "year": 2016, "pmcid": "PMC4816447", "pmid": "27032107",
        "doi": "10.1371/journal.pone.0147599", "url": "https://pmc.ncbi.nlm.nih.gov/articles/PMC4816447/",
        "section": "Abstract: Results", "chunk_id": "c1",
        "evidence": "Erlotinib prolonged progression-free survival in patients with EGFR-mutant lung adenocarcinoma.",
        "authors": [], "page": None, "collection": None,  # a paper without pages, in no collection
        "uploaded_by": None, "claimed_id": None, "origin": "corpus",  # ingested on the server, not uploaded
        "evidence_level": None,
    }
    assert answer["flags"] == {"invalid_citations_removed": False, "weak_support": False,
                               "extractive_fallback": False, "context_truncated": False,
                               "citations_attached": False, "citations_corrected": False,
                               "claims_removed": False, "fallback_generator": False}


def test_a_reference_points_at_the_chunk_and_section_holding_its_evidence_and_says_its_evidence_level():
    """The paper's first-ranked chunk is a table; the cited sentence is in the abstract's conclusion."""
    paper = {"source_id": "PMC4816447", "pmcid": "PMC4816447", "year": 2016, "evidence_level": "rct"}
    table = Document(id="t2", content="Characteristics of the 46 patients treated with erlotinib.",
                     meta={**paper, "section": "Table 2"})
    conclusion = Document(id="a1", content="First-line erlotinib prolonged progression-free survival in patients "
                                           "with EGFR-mutant lung adenocarcinoma.",
                          meta={**paper, "section": "Abstract: Conclusions"})
    answer = build("Erlotinib prolonged progression-free survival in EGFR-mutant lung adenocarcinoma [PMC4816447].",
                   documents=[table, conclusion])
    reference = Reference.model_validate(answer["references"][0])
    assert (reference.chunk_id, reference.section) == ("a1", "Abstract: Conclusions")
    assert reference.evidence_level == "rct" and "randomised trial" in reference.line()


def test_support_matches_word_forms_and_hyphenation_but_not_yes_or_no():
    from pmc_rag.components.citations import content_words, support

    assert content_words("Yes, EGFR-mutant tumours improved") == content_words("egfr mutant tumour improvement")
    evidence = "Erlotinib improved progression free survival in EGFR mutant lung cancer."
    assert support("Yes, erlotinib improves progression-free survival in EGFR-mutant lung cancer.", evidence) == 1.0
    assert support("Aspirin lowers blood pressure in elderly women.", evidence) == 0.0


def test_british_and_american_spellings_support_each_other_and_nothing_else():
    from pmc_rag.components.citations import content_words, support

    for british, american in [("randomised", "randomized"), ("normalisation", "normalization"),
                              ("tumours", "tumors"), ("haemorrhage", "hemorrhage"), ("anaemia", "anemia"),
                              ("oesophageal", "esophageal"), ("paediatric", "pediatric"), ("diarrhoea", "diarrhea"),
                              ("multicentre", "multicenter"), ("analysed", "analyzed"), ("analogue", "analog"),
                              ("foetal", "fetal"), ("aetiology", "etiology"), ("ageing", "aging")]:
        assert content_words(british) == content_words(american), (british, american)
    for word, other in [("four", "for"), ("hour", "hor"), ("aerobic", "erobic"), ("algae", "alge")]:
        assert content_words(word) != content_words(other), word
    assert support("Paediatric oesophageal tumours were randomised.",
                   "Pediatric esophageal tumors were randomized in the trial.") == 1.0


def test_quotations_skip_headings_and_figure_labels():
    labelled = [Document(id="f", content="Survival outcome. Kaplan-Meier curves of progression-free survival "
                                         "with erlotinib in the whole cohort.", meta={"source_id": "PMC4816447"})]
    answer = CitedAnswerBuilder().run(question="Does erlotinib improve survival?", documents=labelled,
                                      claims=[], raw_answer="")["answer"]
    assert answer["answer"].startswith("Kaplan-Meier curves")


def test_weak_support_is_flagged_and_no_support_falls_back_to_quotations():
    weak = build("Erlotinib prolonged survival [PMC4816447]. Zebra migration patterns changed dramatically "
                 "across savannah regions [PMID:15703931].")
    assert weak["flags"]["weak_support"] and not weak["flags"]["extractive_fallback"]
    none = build("Zebra migration patterns changed across savannah regions [PMC4816447].")
    assert none["flags"]["extractive_fallback"]
    assert none["answer"].startswith("Erlotinib prolonged progression-free survival")  # quoted, with its citation
    assert "[1]" in none["answer"] and "quotes the most relevant passages" in none["notes"][0]


def test_a_repeated_sentence_is_shown_once_and_an_unfinished_last_one_not_at_all():
    # The embedded model, looping until its token limit, on a follow-up about gefitinib (shortened).
    text = ("Erlotinib prolonged progression-free survival [PMC4816447]. Skin rash was the most common adverse "
            "event [PMC4816447]. Erlotinib prolonged progression-free survival [PMC4816447]. Skin rash was the")
    cut = build(text, replies=[ChatMessage.from_assistant(text, meta={"finish_reason": "length"})])
    assert cut["answer"] == ("Erlotinib prolonged progression-free survival [1]. Skin rash was the most common "
                             "adverse event [1].")
    assert "cut off at its length limit" in cut["notes"][0] and "Skin rash was the" not in cut["notes"][0]
    # A reply that ended by itself keeps its last sentence, punctuation or not.
    whole = build("Erlotinib prolonged progression-free survival [PMC4816447]. Skin rash was common [PMC4816447]",
                  replies=[ChatMessage.from_assistant("...", meta={"done_reason": "stop"})])
    assert whole["answer"].endswith("Skin rash was common [1]") and not whole["notes"]


def test_a_follow_up_whose_answer_ignores_what_it_compares_with_is_not_answered():
    topic = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"
    shares = {"compare": 0.04, "gefitinib": 0.002, "erlotinib": 0.003}

    def build(text, documents=EXCERPTS, question="How does it compare with gefitinib?", **kwargs):
        verified = verify(text, documents)
        return CitedAnswerBuilder().run(question=f"{question} (follow-up to: {topic})", documents=documents,
                                        claims=verified["claims"], raw_answer=text, **kwargs)["answer"]

    follow_up = build("Erlotinib prolonged progression-free survival [PMC4816447].", topic_question=topic,
                      word_shares=shares)
    assert follow_up["flags"]["not_answered"] and follow_up["answer"].startswith("The indexed papers do not answer")
    assert follow_up["citations"] == [] and follow_up["references"] == []
    assert "compares it with 'gefitinib'" in follow_up["notes"][0] and "No model was asked" not in \
        follow_up["notes"][0]
    assert [p["source_id"] for p in follow_up["not_answering"]] == ["PMC4816447", "PMID:15703931"]
    # Naming it is not comparing with it (the FIELT paper's background, quoted in a test conversation).
    excerpts = [Document(id="g", content="Gefitinib and erlotinib both outperform chemotherapy as first-line "
                                         "therapy. Erlotinib gave longer progression-free survival than gefitinib.",
                         meta={"source_id": "PMC4816447"})]
    assert build("Gefitinib and erlotinib both outperform chemotherapy [PMC4816447].", excerpts,
                 topic_question=topic, word_shares=shares)["flags"].get("not_answered")
    # Comparing with it answers; so does any answer to a question that is not a follow-up, or names nothing new.
    assert not build("Erlotinib gave longer progression-free survival than gefitinib [PMC4816447].", excerpts,
                     topic_question=topic, word_shares=shares)["flags"].get("not_answered")
    assert not build("Erlotinib prolonged progression-free survival [PMC4816447].",
                     word_shares=shares)["flags"].get("not_answered")
    assert not build("Erlotinib prolonged progression-free survival [PMC4816447].", topic_question=topic,
                     word_shares={"erlotinib": 0.003, "side": 0.2})["flags"].get("not_answered")
    # Other new words are often put otherwise by the papers: only what is compared with must be spoken of.
    assert not build("Erlotinib prolonged progression-free survival [PMC4816447].", topic_question=topic,
                     question="How many patients took part?",
                     word_shares={"took": 0.003, "patients": 1.0})["flags"].get("not_answered")


def test_a_follow_ups_quotation_is_chosen_by_its_own_words_first():
    excerpts = [Document(id="a", content="Characteristics of the 46 patients with lung cancer treated with first-line "
                                         "erlotinib in the study. Skin rash and diarrhoea were the most frequent side "
                                         "effects of erlotinib in these patients.", meta={"source_id": "PMC4816447"})]
    topic = "Is first-line erlotinib effective in lung cancer patients?"
    question = f"What about its side effects? (follow-up to: {topic})"
    quoted = CitedAnswerBuilder().run(question=question, documents=excerpts, claims=[], topic_question=topic)
    assert quoted["answer"]["answer"].startswith("Skin rash and diarrhoea were the most frequent side effects")
    # Without the topic question, the topic's words carried in the query count most, yet a caption is never
    # quoted: it answers nothing.
    caption = CitedAnswerBuilder().run(question=question, documents=excerpts, claims=[])
    assert caption["answer"]["answer"].startswith("Skin rash and diarrhoea")


@pytest.mark.parametrize("sentence, section, rank", [
    ("To examine whether erlotinib prolongs survival in lung cancer.", "Abstract: Objective", 0),
    # The model restating the aim in a follow-up's answer (2026-11-27, the nuchal translucency conversation).
    ("The study was planned to evaluate whether NT thickness predicts gestational diabetes.", "Abstract: Results", 0),
    ("Characteristics of the 46 patients treated with erlotinib.", "Table 2", 0),
    ("Patients were randomized to erlotinib or placebo for twelve weeks.", "Abstract: Methods", 0),
    ("Lung cancer is the leading cause of cancer death worldwide.", "Abstract: Background", 0),
    ("Erlotinib prolonged progression-free survival to 11 months.", "Abstract: Results", 2),
    ("First-line erlotinib is a treatment of choice.", "Abstract: Conclusions", 2),
    # Full-text papers asked in plain words (2026-11-28): an aim, others' work, a limitation and a claim to be the
    # first were quoted from results, discussion and conclusion sections as if they were the paper's finding.
    ("This early phase pilot study was undertaken to explore the possibility of RS based diagnosis of asthma.",
     "Results and Discussion", 0),
    ("In this study, we have explored the feasibility of detecting asthma through RS of serum.", "Abstract", 0),
    ("To our knowledge, our study is the first to rigorously evaluate the clinical and economic impact of "
     "acupuncture and counselling.", "Conclusion", 1),
    ("Another case report also suggested that an EGFR exon 20 mutation could be suppressed by osimertinib.",
     "Discussion", 1),
    ("Several studies, also usually small in size, have reported that carriers of the D allele have higher ACE "
     "activity.", "Results", 1),
    ("For this reason HRQL aspects specific for multimorbid patients may not have been captured.", "Discussion", 1),
    ("Acupuncture and counselling both reduced symptoms of depression at three months.", "Discussion", 2),
    # ... but a conclusion that names its limitations is still the paper's own (dev 401-500, 2026-11-28)
    ("Notwithstanding the limitations of such a study, we conclude that people with periodontal disease are at "
     "higher risk of rheumatoid arthritis.", "Abstract: Conclusions", 2),
])
def test_quotations_are_findings_never_aims_captions_methods_or_background(sentence, section, rank):
    from pmc_rag.components.claim_signals import finding_rank as _finding_rank

    assert _finding_rank(sentence, section) == rank


def test_a_quotation_comes_from_the_papers_conclusion_not_its_aim_though_the_aim_shares_more_words():
    paper = {"source_id": "PMID:1"}
    aim = Document(id="o", content="To assess whether statins reduce the risk of dementia in older adults with "
                                   "high blood pressure.", meta={**paper, "section": "Abstract: Objective"})
    conclusion = Document(id="c", content="Statin use was associated with a lower risk of dementia in this "
                                          "cohort.", meta={**paper, "section": "Abstract: Conclusions"})
    answer = CitedAnswerBuilder().run(question="Do statins reduce the risk of dementia in older adults?",
                                      documents=[aim, conclusion], claims=[])["answer"]
    assert answer["answer"].startswith("Statin use was associated with a lower risk of dementia")


def test_a_conclusion_that_abbreviates_the_subjects_is_quoted_not_the_background_that_spelled_them_out():
    # PMID 26079501 (dev question 4xx, 2026-11-27): the background sentence "It guides resuscitative measures, and
    # predicts outcomes, complications and mortality" was quoted, since the conclusion says "BD" and "TBI".
    paper = {"source_id": "PMID:26079501"}
    objective = Document(id="o", meta={**paper, "section": "Objective"}, content=(
        "Base Deficit (BD) is a marker of tissue hypoxia in polytrauma patients. It guides resuscitative measures, "
        "and predicts outcomes, complications and mortality. The aim of this study was to examine the presence of "
        "BD in patients with isolated severe traumatic brain injury (TBI)."))
    conclusion = Document(id="c", meta={**paper, "section": "Conclusions"}, content=(
        "Although BD is correlated with GCS at presentation and RTS, it is not a reliable prognostic marker for "
        "outcome and mortality in patients with isolated TBI."))
    answer = CitedAnswerBuilder().run(
        question="Does base deficit predict mortality in patients with severe traumatic brain injury?",
        documents=[objective, conclusion], claims=[])["answer"]
    assert answer["answer"].startswith("Although BD is correlated with GCS")


def test_between_sentences_as_close_to_the_question_the_conclusion_is_quoted_not_a_result():
    # Dev question "Advanced epithelial ovarian carcinoma in Thai women: should we continue to offer second-look
    # laparotomy?": spelling out "SLL" made a results sentence as close as the conclusion, and it came first.
    paper = {"source_id": "PMID:1"}
    objective = Document(id="o", meta={**paper, "section": "Abstract: Objective"},
                         content="To evaluate the value of second-look laparotomy (SLL) in ovarian carcinoma.")
    results = Document(id="r", meta={**paper, "section": "Abstract: Results"},
                       content="Sixteen patients underwent SLL, and thirty-four patients refused the procedure.")
    conclusion = Document(id="c", meta={**paper, "section": "Abstract: Conclusions"},
                          content="The second-look laparotomy does not improve survival in these women.")
    answer = CitedAnswerBuilder().run(question="Should we continue to offer second-look laparotomy?",
                                      documents=[objective, results, conclusion], claims=[])["answer"]
    assert answer["answer"].startswith("The second-look laparotomy does not improve survival")


def test_a_quotation_is_never_taken_from_back_matter_or_a_caption():
    # PMC3585041, asked "Is Rift Valley fever virus circulating in sheep in Mozambique?" (2026-11-28): its Author
    # Summary's background ("Outbreaks of RVF occur sporadically ...") was quoted, though back matter is not read
    # as evidence anywhere else.
    paper = {"source_id": "PMC3585041"}
    summary = Document(id="s", meta={**paper, "section": "Author Summary"}, content=(
        "Outbreaks of Rift Valley fever in sheep occur sporadically in Mozambique when heavy rains come."))
    caption = Document(id="t", meta={**paper, "section": "Results", "section_kind": "caption"}, content=(
        "Rift Valley fever virus antibodies in sheep by district of Mozambique, 2010."))
    result = Document(id="a", meta={**paper, "section": "Abstract"}, content=(
        "The results indicate that the virus circulates sub-clinically in small ruminants in Zambezia Province."))
    question = "Is Rift Valley fever virus circulating in sheep in Mozambique?"
    answer = CitedAnswerBuilder().run(question=question, documents=[summary, caption, result], claims=[])["answer"]
    assert answer["answer"].startswith("The results indicate that the virus circulates sub-clinically")


def test_a_quotation_names_the_questions_specific_subject_before_sharing_more_of_its_common_words():
    # The FIELT paper (PMC4816447), asked "Does erlotinib improve survival in non-small cell lung cancer?"
    # (2026-11-28): its discussion's sentence on afatinib shares three of the question's words and was quoted.
    paper = {"source_id": "PMC4816447"}
    afatinib = Document(id="d", meta={**paper, "section": "Discussion"}, content=(
        "Afatinib resulted in a major improvement in PFS versus the optimal standard chemotherapy (pemetrexed and "
        "cisplatin) for this type of lung cancer."))
    erlotinib = Document(id="r", meta={**paper, "section": "Results"}, content=(
        "The median overall survival with erlotinib was 23 months in the current study."))
    question = "Does erlotinib improve survival in non-small cell lung cancer?"
    shares = {"erlotinib": 0.004, "improve": 0.057, "survival": 0.043, "non-small": 0.045, "cell": 0.04,
              "lung": 0.013, "cancer": 0.062}

    def quoted(word_shares):
        return CitedAnswerBuilder().run(question=question, documents=[afatinib, erlotinib], claims=[],
                                        word_shares=word_shares)["answer"]["answer"]

    assert quoted(shares).startswith("The median overall survival with erlotinib was 23 months")
    # Without the corpus statistics, the most words shared decide, as before.
    assert quoted(None).startswith("Afatinib resulted in a major improvement")
    # Naming the subject helps only a finding: background that names it does not beat a result that does not
    # (the PLoS meta-analysis of MDR-TB regimens, asked "Which drugs improve treatment success in
    # multidrug-resistant tuberculosis?", 2026-11-28).
    tb = {"source_id": "doi:10.1371/journal.pmed.1001300"}
    background = Document(id="i", meta={**tb, "section": "Introduction"}, content=(
        "The increasing incidence of multidrug resistant tuberculosis is a major concern for treatment programs."))
    result = Document(id="r", meta={**tb, "section": "Results"}, content=(
        "Treatment success was more likely with drugs such as later-generation fluoroquinolones and ethionamide."))
    answer = CitedAnswerBuilder().run(
        question="Which drugs improve treatment success in multidrug-resistant tuberculosis?",
        documents=[background, result], claims=[],
        word_shares={"drugs": 0.03, "improve": 0.057, "treatment": 0.2, "success": 0.02,
                     "multidrug-resistant": 0.002, "tuberculosis": 0.008})["answer"]
    assert answer["answer"].startswith("Treatment success was more likely with drugs such as later-generation")


@pytest.mark.parametrize("text, defined", [
    ("Base Deficit (BD) is a marker in severe traumatic brain injury (TBI).",
     {"BD": "Base Deficit", "TBI": "traumatic brain injury"}),
    ("the target serum urate (SU) goal with the use of urate-lowering therapy (ULT)",
     {"SU": "serum urate", "ULT": "urate-lowering therapy"}),
    ("carotid intima-media thickness (cIMT) and HbA1c (glycated haemoglobin)",
     {"cIMT": "carotid intima-media thickness"}),
    ("at 95% confidence interval (CI) in group A (n=5) with (p<0.05) in children (aged 5)",
     {"CI": "confidence interval"}),
])
def test_the_abbreviations_a_paper_defines_are_read_with_their_long_forms(text, defined):
    from pmc_rag.components.defined_abbreviations import defined_abbreviations, spelled_out

    assert defined_abbreviations(text) == defined
    assert spelled_out("BD and TBI, not BDX.", {"BD": "base deficit", "TBI": "traumatic brain injury"}) == \
        "BD (base deficit) and TBI (traumatic brain injury), not BDX."


def test_context_truncation_is_reported():
    answer = build("Erlotinib prolonged progression-free survival [PMC4816447].", excerpts_dropped=2)
    assert answer["flags"]["context_truncated"] and "2 lower-ranked excerpt(s)" in answer["notes"][-1]


def test_displayed_citations_are_valid_whatever_the_model_writes():
    """Random answers mixing real and invented ids in every format: every shown citation names a given excerpt."""
    rng = random.Random(7)
    forms = ["[{}]", "({})", " {} ", "【{}】", "[{}, {}]", "[{}; {}]", "({} and {})"]
    ids = ["PMC4816447", "PMID:15703931", "PMC1234567", "PMID:1", "doi:10.1/x", "pmc 4816447", "PMID 15703931",
           "2", "7"]  # bare numbers too: "[2]" must never survive as a citation
    words = "erlotinib metformin survival rash hba1c placebo lung diabetes improved lowered".split()
    for _ in range(300):
        sentences = []
        for _ in range(rng.randint(1, 4)):
            form = rng.choice(forms)
            marks = form.format(*(rng.choice(ids) for _ in range(form.count("{}"))))
            sentences.append(" ".join(rng.choices(words, k=rng.randint(3, 9))) + marks + rng.choice([".", "!", ""]))
        if rng.random() < 0.3:
            sentences.append("\nReferences:\n[PMC1234567] Invented")
        answer = build(" ".join(sentences))
        given = {"PMC4816447", "PMID:15703931"}
        assert {ref["source_id"] for ref in answer["references"]} <= given
        numbers = {int(n) for n in re.findall(r"\[(\d+)\]", answer["answer"])}
        assert numbers == {ref["number"] for ref in answer["references"]}


def test_excerpt_budget_keeps_the_best_ranked_that_fit():
    documents = [Document(content="x" * 300, meta={"rank": i}) for i in range(6)]  # 100 + 40 tokens each
    result = ExcerptBudget(max_tokens=450, max_excerpts=5).run(documents=documents)
    assert [d.meta["rank"] for d in result["documents"]] == [0, 1, 2] and result["dropped"] == 2


def test_rag_yml_prompts_fit_the_embedded_context_even_with_the_densest_excerpts():
    """rag.yml's budget, filled with the corpus's most token-dense chunks and a long question, rendered with its
    own template and counted with Qwen's tokenizer, leaves room for the answer within n_ctx."""
    from llama_cpp import Llama

    from pmc_rag.ingestion.sources import read_articles
    from pmc_rag.models import assemble_llm
    from pmc_rag.pipelines import load_declared_pipeline

    from conftest import CORPUS, PROJECT_ROOT

    declared = load_declared_pipeline(PROJECT_ROOT / "pipelines/rag.yml")
    rag = declared.pipeline
    budget, prompt_builder = rag.get_component("budget"), rag.get_component("prompt_builder")
    embedded = rag.get_component("generator").chat_generators[1]
    assert embedded.api_base_url == declared.local_model.url  # the generator that talks to the local model
    tokenizer = Llama(model_path=str(assemble_llm()), vocab_only=True, verbose=False)

    def tokens(text: str) -> int:
        return len(tokenizer.tokenize(text.encode(), add_bos=False))

    sections = [d for path in sorted(CORPUS.glob("*/*.*ml")) for a in read_articles(path)
                for d in a.section_documents()]
    chunks = SectionChunker().run(documents=sections)["documents"]
    densest = sorted(chunks, key=lambda c: len(c.content) / max(1, tokens(c.content)))[:40]
    kept = budget.run(documents=densest)["documents"]
    question = "Does " + " and ".join(["erlotinib prolong progression-free survival"] * 12) + "?"
    messages = prompt_builder.run(question=question, documents=kept)["prompt"]
    prompt_tokens = sum(tokens(m.text) + 8 for m in messages)  # 8: the chat template's markers per message
    answer_tokens = embedded.generation_kwargs["max_tokens"]
    assert prompt_tokens + answer_tokens <= declared.local_model.n_ctx, (prompt_tokens, answer_tokens)


def test_empty_reply_generator():
    assert EmptyReplyGenerator().run(messages=[])["replies"][0].text == ""


@component
class _ScriptedGenerator:
    """A stand-in chat generator for the fallback tests: raises `error` if given, else replies with `text`."""

    def __init__(self, text: str = "", error: Exception | None = None):
        self.text, self.error, self.calls = text, error, 0

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs=None, tools=None, streaming_callback=None):
        self.calls += 1
        if self.error:
            raise self.error
        return {"replies": [ChatMessage.from_assistant(self.text)]}


def test_a_generator_that_timed_out_is_skipped_for_a_while_and_tried_again_after():
    import httpx

    from pmc_rag.components.remembering_fallback_chat_generator import RememberingFallbackChatGenerator

    hung = _ScriptedGenerator(error=httpx.ReadTimeout("timed out"))
    refused = _ScriptedGenerator(error=ConnectionRefusedError("refused"))
    local = _ScriptedGenerator(text="Yes.")
    generator = RememberingFallbackChatGenerator(chat_generators=[hung, refused, local], skip_after_timeout_s=60)
    for _ in range(3):
        result = generator.run(messages=[ChatMessage.from_user("Q?")])
        assert result["replies"][0].text == "Yes." and result["meta"]["successful_chat_generator_index"] == 2
    assert hung.calls == 1 and refused.calls == 3 and local.calls == 3  # one timeout paid; quick failures retried
    assert result["meta"]["skipped_chat_generators"] == ["_ScriptedGenerator"]
    assert result["meta"]["failed_chat_generators"] == ["_ScriptedGenerator", "_ScriptedGenerator"]

    generator.skip_after_timeout_s = 0  # the time is up: it is tried again
    generator.run(messages=[ChatMessage.from_user("Q?")])
    assert hung.calls == 2
    hung.error = None  # tried again, it answers: no longer remembered, so not skipped however long the window
    assert generator.run(messages="Q?")["meta"]["successful_chat_generator_index"] == 0
    generator.skip_after_timeout_s = 60
    assert generator.run(messages="Q?")["meta"]["successful_chat_generator_index"] == 0 and hung.calls == 4


def test_question_sentences_keep_what_the_question_asks_about_in_order_and_leave_short_excerpts_whole():
    results = ("Erlotinib was given to 46 patients. The weather was mild that year. Median progression-free survival "
               "with erlotinib was 11 months. Follow-up lasted two years. Rash was the most common adverse event.")
    long = Document(id="c1", content=results, meta={"source_id": "PMC1", "section": "Results"})
    short = Document(id="c2", content="Erlotinib improved survival.", meta={"source_id": "PMC2"})
    kept = QuestionSentences(min_words=10, max_sentences=2).run(
        documents=[long, short], question="Does erlotinib improve progression-free survival?")["documents"]
    assert [d.id for d in kept] == ["c1", "c2"] and kept[0].meta == long.meta  # same excerpts, same labels
    assert kept[0].content == ("Erlotinib was given to 46 patients. Median progression-free survival with erlotinib "
                               "was 11 months.")
    assert kept[1].content == "Erlotinib improved survival."
    nothing_shared = QuestionSentences(min_words=10, max_sentences=2).run(
        documents=[long], question="Is aspirin safe in pregnancy?")["documents"]
    assert nothing_shared[0].content == "Erlotinib was given to 46 patients."  # its first sentence, not nothing
    with pytest.raises(ValueError, match="max_sentences at least 1"):
        QuestionSentences(max_sentences=0)


@pytest.mark.parametrize("component", [
    CitationVerifier(attribution_threshold=0.4, source_id_field="sid"),
    CitedAnswerBuilder(min_support=0.2, extractive_sentences=2, specific_word_max_share=0.05),
    ExcerptBudget(max_tokens=900, max_excerpts=3, chars_per_token=2.5, tokens_per_excerpt_label=30),
    EmptyReplyGenerator(),
    RememberingFallbackChatGenerator(chat_generators=[EmptyReplyGenerator()], skip_after_timeout_s=5),
    QuestionSentences(min_words=40, max_sentences=2),
    QuestionRouter(routes=["compare"], exemplars="", k=3, min_share=0.8),
    ExcerptBalance(top_k=4, max_per_paper=2),
], ids=lambda c: type(c).__name__)
def test_serialization_round_trip(component):
    data = component.to_dict()
    assert type(component).from_dict(data).to_dict() == data
    pipeline = Pipeline()
    pipeline.add_component("c", component)
    assert Pipeline.loads(pipeline.dumps(), allowed_modules=["components.*"]).get_component("c").to_dict() == data


def test_abbreviations_expand_unless_ambiguous_without_a_pinned_or_contextual_sense():
    from pmc_rag.components.abbreviation_expander import AbbreviationExpander

    expander = AbbreviationExpander(preferred_senses={"MI": "myocardial infarction"})
    result = expander.run(query="Does SGLT2 inhibition lower HbA1c and the risk of MI?")
    assert result["query"] == ("Does SGLT2 (sodium-glucose cotransporter 2) inhibition lower HbA1c (glycated "
                               "haemoglobin) and the risk of MI (myocardial infarction)?")
    assert expander.run(query="Is DM common in elderly patients?")["expansions"] == {}  # ambiguous, no clue
    assert expander.run(query="Does DM raise insulin resistance in diabetes clinics?")["expansions"] == {
        "DM": "diabetes mellitus"}  # the question's own words pick the sense
    assert expander.run(query="Is it true that this works?")["expansions"] == {}  # ordinary words stay
    data = AbbreviationExpander(lists=["diabetes_abbreviations.tsv"], preferred_senses={"DM": "x"}).to_dict()
    assert AbbreviationExpander.from_dict(data).to_dict() == data
    with pytest.raises(FileNotFoundError, match="abbreviation list nope.tsv not found"):
        AbbreviationExpander(lists=["nope.tsv"]).warm_up()


def test_a_paper_id_that_opens_a_sentence_as_its_subject_becomes_this_paper_and_still_cites_it():
    from pmc_rag.components.citations import split_cited_sentences

    first, second = split_cited_sentences("PMC2329613 is a study of the OHIP-NL. [PMC2329613] The OHIP-NL was "
                                          "reliable.")
    assert (first.text, first.cited) == ("This paper is a study of the OHIP-NL.", ["PMC2329613"])
    assert (second.text, second.cited) == ("The OHIP-NL was reliable.", ["PMC2329613"])  # a mark, not a subject


# A PubMedQA abstract as the follow-ups of a conversation get it, one section per excerpt (shortened from PMID
# 20382292, the "parkinson" test conversation).
PARKINSON = [Document(id=f"pd-{i}", content=text, meta={"source_id": "PMID:20382292", "section": f"Abstract: {label}"})
             for i, (label, text) in enumerate([
                 ("Objective", "To evaluate the relationship between knee extensor strength, postural stability and "
                               "functional ambulation in Parkinson's disease (PD)."),
                 ("Participants", "Patients (N=44) with idiopathic PD."),
                 ("Main Outcome Measures", "Participants were evaluated on their isokinetic knee extensor strength. "
                                           "Dynamic postural stability was assessed as the center of pressure-center "
                                           "of mass moment arm during gait initiation."),
                 ("Results", "Knee extensor strength positively correlated with dynamic postural stability and "
                             "negatively correlated with disease severity in patients with PD (P<.05)."),
                 ("Conclusions", "These findings suggest a malleable relationship between knee extensor strength, "
                                 "dynamic stability, and disease severity in PD.")])]
PARKINSON_TOPIC = ("Are knee extensor strength, dynamic stability and functional ambulation related in Parkinson's "
                   "disease?")


def follow_up(question: str, text: str = "", documents=PARKINSON, topic: str = PARKINSON_TOPIC) -> dict:
    verified = verify(text, documents) if text else {"claims": []}
    return CitedAnswerBuilder(extractive_sentences=1).run(
        question=f"{question} (follow-up to: {topic})", documents=documents, claims=verified["claims"],
        raw_answer=text, topic_question=topic)["answer"]


def test_a_follow_up_asking_how_many_or_how_it_was_measured_is_quoted_from_the_methods():
    assert follow_up("How many patients took part in it?")["answer"] == "Patients (N=44) with idiopathic PD [1]."
    measured = follow_up("How was dynamic stability measured?")["answer"]
    assert measured.startswith("Dynamic postural stability was assessed as the center of pressure")
    # A follow-up asking for a finding still never quotes a method or the aim.
    assert follow_up("Was it related to disease severity?")["answer"].startswith("Knee extensor strength positively")


def test_a_follow_up_is_not_answered_with_the_sentence_that_answered_its_topic_unless_nothing_else_speaks_to_it():
    # The conclusion answered the topic question: "What about severity?" gets the result that names it.
    assert follow_up("What about severity?")["answer"].startswith("Knee extensor strength positively correlated")
    # Nothing else speaks to "Is it important?": the conclusion is the best there is, read again.
    assert follow_up("Is it important?")["answer"].startswith("These findings suggest a malleable relationship")


def test_a_models_answer_without_the_number_a_follow_up_asks_for_gives_way_to_the_sentence_with_it():
    answer = follow_up("How many patients took part in it?",
                       "Knee extensor strength positively correlated with dynamic postural stability [PMID:20382292].")
    assert answer["answer"] == "Patients (N=44) with idiopathic PD [1]."
    assert answer["flags"]["extractive_fallback"]
    assert any("asks about a number, which the model's answer does not speak of" in note for note in answer["notes"])
    # The model's answer that gives the number stays.
    kept = follow_up("How many patients took part in it?", "There were 44 patients with idiopathic Parkinson's "
                                                            "disease in the cohort [PMID:20382292].")
    assert kept["answer"] == "There were 44 patients with idiopathic Parkinson's disease in the cohort [1]."
    assert not kept["flags"]["extractive_fallback"] and not kept["notes"]


def test_side_effects_are_quoted_from_the_sentence_on_toxicity_not_one_on_effectiveness():
    paper = [Document(id=f"e-{i}", content=text, meta={"source_id": "PMC4816447", "section": section})
             for i, (section, text) in enumerate([
                 ("Abstract: Conclusion", "The present study reinforces the use of EGFR tyrosine kinase inhibition "
                                          "as a first line treatment of choice for advanced adenocarcinoma of the "
                                          "lung."),
                 ("Discussion", "The availability of EGFR targeted treatments introduced an effective treatment for a "
                                "previously unmet medical need in this population."),
                 ("Results / Safety", "Treatment with erlotinib was generally well tolerated with manageable toxicity "
                                      "as reported by the participating investigators.")])]
    topic = "Is first-line erlotinib effective in advanced non-small cell lung cancer with EGFR mutations?"
    answer = follow_up("What about its side effects?", documents=paper, topic=topic)["answer"]
    assert answer.startswith("Treatment with erlotinib was generally well tolerated with manageable toxicity")


def test_a_models_result_in_answer_to_how_it_was_measured_gives_way_to_the_method():
    answer = follow_up("How was dynamic stability measured?",
                       "Knee extensor strength positively correlated with dynamic postural stability [PMID:20382292].")
    assert answer["answer"].startswith("Dynamic postural stability was assessed as the center of pressure")
    assert any("asks about how it was measured or done" in note for note in answer["notes"])
    # A model's answer naming how it was measured stays.
    kept = follow_up("How was dynamic stability measured?", "Dynamic postural stability was assessed as the center "
                                                            "of pressure-center of mass moment arm [PMID:20382292].")
    assert not kept["flags"]["extractive_fallback"] and not kept["notes"]


def test_a_models_answer_that_never_names_what_a_follow_up_asks_about_gives_way_to_the_sentence_that_does():
    # The gastric stimulation conversation (PMID 15670262, shortened): the model answered the topic again.
    paper = [Document(id=f"g-{i}", content=text, meta={"source_id": "PMID:15670262", "section": section})
             for i, (section, text) in enumerate([
                 ("Abstract: Results", "Healthcare resource usage significantly improved at 12, 24 and 36 month "
                                       "follow-up for GES patients compared with patients receiving medical therapy."),
                 ("Abstract: Conclusions", "We conclude that GES is more effective in improving long-term GI "
                                           "symptoms than intensive medical therapy in patients with gastroparesis.")])]
    topic = "Is gastric electrical stimulation superior to standard pharmacologic therapy in improving GI symptoms?"
    model = "GES is more effective in improving long-term GI symptoms than intensive medical therapy [PMID:15670262]."
    answer = follow_up("What about its effect on healthcare resources?", model, documents=paper, topic=topic)
    assert answer["answer"].startswith("Healthcare resource usage significantly improved")
    assert any("asks about 'healthcare' or 'resources'" in note for note in answer["notes"])
    # The same model answer stays where it answers the follow-up's own words.
    kept = follow_up("What about GI symptoms in the long term?", model, documents=paper, topic=topic)
    assert kept["answer"].startswith("GES is more effective") and not kept["flags"]["extractive_fallback"]


def test_the_first_note_is_about_the_answer_and_the_account_of_the_checks_comes_after():
    # "What are the side effects of erlotinib?" (2026-11-28): the caveat under the answer said which of the model's
    # sentences were left out; the reader needs first that the answer quotes the papers instead (issue 61, item 5).
    quoted = build("Zebra migration patterns changed across savannah regions. Lions rest in the shade [PMC4816447].")
    assert quoted["flags"]["extractive_fallback"]
    assert "quotes" in quoted["notes"][0]
    assert any(note.startswith("Left out 1 sentence(s)") for note in quoted["notes"][1:])
    from pmc_rag.components.answer import Answer

    assert "quotes" in Answer.model_validate(quoted).caveat()
