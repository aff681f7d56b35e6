"""What `pmc-rag eval` says about each route: a comparison's evidence judged from the corpus, not-answered judged
per kind of question, and the sentences shown, cited and copied from a cited paper."""

from __future__ import annotations

import pytest


def test_the_evaluation_judges_a_comparison_s_evidence_from_the_corpus_not_from_the_answer():
    """Where the corpus holds evidence for each side is decided from its passages (read by SQL in `pmc-rag eval`),
    never from what the pipeline retrieved or cited."""
    from pmc_rag.evaluation.routes import _both_sides_in_corpus, _evidence_for_each, run_route_answers
    from pmc_rag.components.citations import content_words

    corpus = [("PMC1", content_words("Children with asthma used inhaled steroids more often.")),
              ("PMC2", content_words("Adults with asthma had fewer exacerbations on inhaled steroids.")),
              ("PMC3", content_words("Adults with diabetes were studied."))]
    row = {"question": "How do children compare with adults in asthma?", "subjects": ["children", "adults"]}
    evidence = _evidence_for_each(row, corpus)
    assert evidence == {"children": ["PMC1"], "adults": ["PMC2"]}  # PMC3 names adults, not asthma
    assert _both_sides_in_corpus({"evidence_for_each": evidence})
    assert not _both_sides_in_corpus({"evidence_for_each": {"children": ["PMC1"], "adults": []}})
    assert not _both_sides_in_corpus({"evidence_for_each": {"children": ["PMC1"], "adults": ["PMC1"]}})
    with pytest.raises(ValueError, match="unknown kind\\(s\\) of question: compares; the kinds are single"):
        run_route_answers(["rag"], kinds=["compares"], progress=False)


def test_each_kind_s_row_says_whether_not_answered_came_when_it_was_right():
    """Questions labelled `answerable: false` are counted apart: "not answered" is their right answer, and the
    answer figures (papers cited, not answered) are those of the questions the corpus answers."""
    from pmc_rag.evaluation.routes import _route_answer_summary, labelled_route_questions, route_answers_markdown

    def record(answerable: bool, not_answered: bool, cited: list[str]) -> dict:
        return {"pipeline": "rag", "kind": "compare", "route": "compare", "answerable": answerable,
                "not_answered": not_answered, "cited": cited, "quoted": False, "named_paper_only": None,
                "sections_given": True, "subjects": [], "subjects_in_evidence": [], "evidence_for_each": None,
                "seconds": 1.0}

    rows = _route_answer_summary([record(True, False, ["PMC1", "PMC2"]), record(True, True, []),
                                  record(False, True, []), record(False, False, ["PMC3"])])
    row = rows[0]
    assert (row["questions"], row["routed"], row["route_right"]) == (2, 4, 4)
    assert (row["not_answered"], row["unanswerable"], row["unanswerable_not_answered"]) == (1, 2, 1)
    assert row["papers_cited_mean"] == 1.0 and row["two_or_more_papers"] == 1
    table = route_answers_markdown({"set": "dev", "per_kind": 2, "summary": rows})
    assert "| rag | compare | 2 | 4 of 4 |" in table and "| 1 of 2 |" in table
    unanswerable = [q for q in labelled_route_questions() if q.get("answerable") is False]
    assert {q["kind"] for q in unanswerable} == {"single", "summarise", "compare", "several", "overview",
                                                 "multi_step"}


def test_the_evaluation_counts_the_sentences_shown_cited_and_copied_from_a_cited_paper():
    from pmc_rag.components.citations import content_words
    from pmc_rag.evaluation.routes import _sentence_checks

    corpus = [("PMC1", content_words("Erlotinib improved progression-free survival to 11 months in the trial.")),
              ("PMC2", content_words("Rash was the most common adverse event of osimertinib."))]
    answer = {"answer": "Erlotinib improved progression-free survival to 11 months [1]. Rash was the most common "
                        "adverse event of osimertinib [1]. Both drugs are safe.",
              "citations": [{"number": 1, "source_id": "PMC1"}], "flags": {}}
    # the second sentence is in a paper, but not the one it cites; the third cites nothing
    assert _sentence_checks(answer, corpus) == {"sentences": 3, "sentences_cited": 2, "sentences_copied": 1}
    assert _sentence_checks({"answer": "x", "flags": {"not_answered": True}}, corpus)["sentences"] == 0
