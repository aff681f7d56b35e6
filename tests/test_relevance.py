"""Questions the indexed papers do not answer: the relevance gate and the "not answered" reply."""

from __future__ import annotations

from haystack import Document

from pmc_rag.components.answer import Answer
from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder
from pmc_rag.components.relevance_gate import RelevanceGate


def scored(*pairs):
    return [Document(id=f"{source}-{i}", content="text", score=score, meta={"source_id": source, "title": f"T {source}"})
            for i, (source, score) in enumerate(pairs)]


def test_relevant_excerpts_pass_and_irrelevant_ones_are_held_back_with_the_closest_papers():
    gate = RelevanceGate(min_similarity=0.5, closest_papers=2)
    excerpts = scored(("PMC1", 0.7))
    assert gate.run(documents=excerpts, scored=scored(("PMC1", 0.7), ("PMC2", 0.4))) == {"documents": excerpts}
    held = gate.run(documents=excerpts, scored=scored(("PMC2", 0.3), ("PMC2", 0.45), ("PMC3", 0.2), ("PMC4", 0.1)))
    assert "documents" not in held
    assert [(d.meta["source_id"], d.meta["relevance"]) for d in held["unanswered"]] == [("PMC2", 0.45), ("PMC3", 0.2)]
    assert gate.run(documents=[], scored=[]) == {"unanswered": []}  # nothing retrieved (filters): not answered
    assert RelevanceGate.from_dict(gate.to_dict()).to_dict() == gate.to_dict()


def test_the_not_answered_reply_cites_nothing_and_lists_the_closest_papers():
    closest = RelevanceGate(min_similarity=0.9).run(documents=[], scored=scored(("PMID:7", 0.41)))["unanswered"]
    answer = Answer.model_validate(CitedAnswerBuilder().run(question="What is the capital of France?",
                                                            documents=[], unanswered=closest)["answer"])
    assert answer.answer == "The indexed papers do not answer this question."
    assert answer.flags["not_answered"] and not answer.citations and not answer.references
    assert answer.not_answering[0].source_id == "PMID:7" and answer.not_answering[0].relevance == 0.41
    assert answer.not_answering[0].url is None  # no PMID or PMCID in its metadata
    text = answer.as_text()
    assert "do not answer the question" in text and "PMID:7" in text and "References" not in text
