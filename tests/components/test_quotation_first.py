"""QuotationFirst: the model is skipped only when the best paper's own conclusion speaks to a single-path question."""

from __future__ import annotations

from haystack import Document, Pipeline
from haystack.dataclasses import ChatMessage

from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder
from pmc_rag.components.quotation_first import QuotationFirst

PROMPT = [ChatMessage.from_user("Excerpts: ... Question: ...")]
QUESTION = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"
CONCLUSION = Document(id="c", content="Erlotinib is an effective first-line treatment of EGFR-mutant lung cancer, "
                                      "with manageable toxicity.",
                      meta={"source_id": "PMC4816447", "section": "Abstract: Conclusions"})
METHODS = Document(id="m", content="Patients with EGFR-mutant lung cancer received erlotinib 150 mg daily until "
                                   "progression.", meta={"source_id": "PMC4816447", "section": "Methods"})
OTHER = Document(id="o", content="Gefitinib improved progression-free survival in EGFR-mutant lung cancer in this "
                                 "trial.", meta={"source_id": "PMC1111111", "section": "Abstract: Conclusions"})


def test_the_first_papers_conclusion_answers_and_the_prompt_is_not_passed_on():
    result = QuotationFirst().run(prompt=PROMPT, documents=[METHODS, CONCLUSION], question=QUESTION)
    assert "prompt" not in result and "PMC4816447" in result["skipped_model"]


def test_the_model_is_asked_without_a_conclusion_of_the_first_paper_or_off_the_single_path():
    first = QuotationFirst()
    # the first paper's only quotable sentence is a method; another paper's conclusion does not stand for it
    assert first.run(prompt=PROMPT, documents=[METHODS, OTHER], question=QUESTION) == {"prompt": PROMPT}
    assert first.run(prompt=PROMPT, documents=[CONCLUSION], question=QUESTION, route="compare") == {"prompt": PROMPT}
    assert first.run(prompt=PROMPT, documents=[CONCLUSION], question="What about its side effects?",
                     topic_question=QUESTION) == {"prompt": PROMPT}
    assert first.run(prompt=PROMPT, documents=[], question=QUESTION) == {"prompt": PROMPT}
    # a question about a paper it names asks for that paper's details: the model reads it
    assert first.run(prompt=PROMPT, documents=[CONCLUSION], question="How was erlotinib dosed in the FIELT trial?",
                     named_paper="FIELT") == {"prompt": PROMPT}
    # a question asking for a detail (a count, a dose) gets the conclusion only when it gives that detail
    assert first.run(prompt=PROMPT, documents=[CONCLUSION], question="How many patients took erlotinib in the "
                     "EGFR-mutant lung cancer study?") == {"prompt": PROMPT}
    counted = Document(id="n", content="Erlotinib was effective in all 46 patients with EGFR-mutant lung cancer.",
                       meta=CONCLUSION.meta)
    assert "skipped_model" in first.run(prompt=PROMPT, documents=[counted], question="How many patients took "
                                        "erlotinib in the EGFR-mutant lung cancer study?")
    assert "skipped_model" in QuotationFirst(routes=["single", "compare"]).run(
        prompt=PROMPT, documents=[CONCLUSION], question=QUESTION, route="compare")


def test_the_builder_quotes_the_conclusion_flagged_and_says_why_no_model_answered():
    skipped = QuotationFirst().run(prompt=PROMPT, documents=[CONCLUSION, METHODS], question=QUESTION)["skipped_model"]
    answer = CitedAnswerBuilder().run(question=QUESTION, documents=[CONCLUSION, METHODS],
                                      skipped_model=skipped)["answer"]
    assert answer.answer == CONCLUSION.content.rstrip(".") + " [1]."
    assert answer.flags["quoted_first"] and answer.flags["extractive_fallback"] and answer.model is None
    assert answer.notes == [skipped]  # not "No model answer was available"
    assert "Answered by no model (the best paper's conclusion quoted)" in answer.as_text(explain=True)
    without = CitedAnswerBuilder().run(question=QUESTION, documents=[CONCLUSION, METHODS])["answer"]
    assert "quoted_first" not in without.flags and "No model answer was available" in without.notes[0]


def test_a_quoted_answer_without_the_number_asked_for_says_so_first():
    question = "How many patients took erlotinib in the EGFR-mutant lung cancer study?"
    answer = CitedAnswerBuilder().run(question=question, documents=[CONCLUSION, METHODS], route="single")["answer"]
    assert answer.flags["detail_not_given"] and answer.caveat().startswith("No sentence of this answer gives a number")
    counted = Document(id="n", content="Erlotinib was effective in all 46 patients with EGFR-mutant lung cancer.",
                       meta=CONCLUSION.meta)
    given = CitedAnswerBuilder().run(question=question, documents=[counted], route="single")["answer"]
    assert "detail_not_given" not in given.flags


def test_serialization_round_trip():
    first = QuotationFirst(routes=["single", "several"], meaning_model="sentence-transformers/all-MiniLM-L6-v2",
                           min_conclusion_similarity=0.5)
    data = first.to_dict()
    assert data["type"] == "pmc_rag.components.quotation_first.QuotationFirst"
    assert data["init_parameters"]["routes"] == ["single", "several"]
    assert QuotationFirst.from_dict(data).to_dict() == data
    pipeline = Pipeline()
    pipeline.add_component("quotation_first", first)
    assert Pipeline.loads(pipeline.dumps()).get_component("quotation_first").to_dict() == data
