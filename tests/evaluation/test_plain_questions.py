"""The plain-language question set and its judge: gold from the paper's own conclusion, never from the answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmc_rag.evaluation.plain_questions import (
    EVERY_SET,
    MULTILINGUAL,
    MULTILINGUAL_SETS,
    SEALED_2,
    SEALED_2_SETS,
    SEALED_3,
    SEALED_3_SETS,
    judged,
    load,
    main,
    states_gold,
    table,
)

GOLD = ["The present study reinforces the use of EGFR tyrosine kinase inhibition as a first line treatment of choice "
        "for advanced adenocarcinoma of the lung carrying an activating EGFR mutation."]


def answer(text: str, cited: list[str], **fields) -> dict:
    return {"answer": text, "references": [{"source_id": s} for s in cited], "flags": {}, "kind": "answer",
            "sources": [{"source_id": s, "found_by": {"semantic": {}}} for s in cited], **fields}


def test_the_set_has_200_questions_a_third_about_full_texts_each_with_gold_halves_apart():
    questions = load()
    assert len(questions) >= 200 and sum(q["source"] == "full_text" for q in questions) * 3 >= len(questions)
    assert all(q["gold_paper"] and q["gold_sentences"] for q in questions)
    assert {q["set"] for q in questions} == {"plain_tuning", "plain_held_aside"}
    assert abs(sum(q["set"] == "plain_held_aside" for q in questions) * 2 - len(questions)) <= 2
    assert len({q["question"] for q in questions}) == len(questions)


def test_the_questions_in_other_languages_have_gold_halves_apart_and_none_is_in_english():
    from pmc_rag.components.question_translator import QuestionTranslator

    questions = load(MULTILINGUAL)
    assert len(questions) >= 40 and {q["set"] for q in questions} == set(MULTILINGUAL_SETS)
    assert sum(q["set"] == "multilingual_held_aside" for q in questions) * 2 == len(questions)
    assert len({q["language"] for q in questions}) >= 5 and all(q["gold_paper"] and q["gold_sentences"]
                                                                  for q in questions)
    translator = QuestionTranslator(chat_generator=None)  # only its language check is used
    assert all(translator.language(q["question"]) for q in questions if q["set"] == "multilingual_tuning")


def test_the_second_sealed_set_asks_about_papers_no_other_set_uses():
    """`plain_sealed_2` was written from the conclusions of abstracts that have no PubMedQA question here and are
    no other set's gold paper: a paper another set asks about would carry that set's wording into it."""
    from pmc_rag.paths import DEV_QUESTIONS

    questions = load(SEALED_2)
    assert len(questions) >= 20 and {q["set"] for q in questions} == set(SEALED_2_SETS)
    assert all(q["gold_paper"] and q["gold_sentences"] for q in questions)
    elsewhere = {q["gold_paper"] for q in load() + load(MULTILINGUAL)} | {
        f"PMID:{pmid}" for pmid in json.loads(Path(DEV_QUESTIONS).read_text(encoding="utf-8"))}
    assert not {q["gold_paper"] for q in questions} & elsewhere


def test_the_third_sealed_set_asks_twice_about_each_full_text_paper_in_two_styles():
    questions = load(SEALED_3)
    assert {q["set"] for q in questions} == set(SEALED_3_SETS) and all(q["source"] == "full_text" for q in questions)
    by_paper: dict[str, list[str]] = {}
    for q in questions:
        by_paper.setdefault(q["gold_paper"], []).append(q["style"])
    assert len(by_paper) >= 20 and all(sorted(styles) == ["search box", "story"] for styles in by_paper.values())
    # gold as the main set gives it for the same paper: its conclusion's sentences
    main_gold = {s for q in load() if q["source"] == "full_text" for s in q["gold_sentences"]}
    assert all(set(q["gold_sentences"]) <= main_gold for q in questions)
    assert not any("?" in q["question"] for q in questions if q["style"] == "search box")


def test_eval_plain_counts_every_set_of_every_question_file_once():
    """`pmc-rag eval --plain` answers every file's sets with one service: each tuning and sealed set, once."""
    named = [name for dataset, sets in EVERY_SET for name in sets]
    assert sorted(named) == sorted({"plain_tuning", "plain_held_aside", "plain_sealed_2", "plain_sealed_3",
                                    "multilingual_tuning", "multilingual_held_aside"})
    for dataset, sets in EVERY_SET:
        assert {q["set"] for q in load(dataset)} == set(sets), dataset.name


def test_the_judge_names_a_missing_set_of_another_file_and_its_sets(capsys):
    with pytest.raises(SystemExit):
        main(["--dataset", "multilingual_questions.json", "--sets", "plain_tuning"])
    assert "multilingual_questions.json has no set ['plain_tuning']; its sets: multilingual_tuning, " \
           "multilingual_held_aside" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a name alone, as the help says, is found in evaluation/datasets
        main(["--dataset", "multilingual_questions", "--sets", "plain_tuning"])
    assert "multilingual_questions.json has no set" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--dataset", "no_such_questions", "--sets", "plain_tuning"])
    assert "no question file no_such_questions" in capsys.readouterr().err


def test_an_answer_states_the_gold_finding_only_citing_the_gold_paper_with_its_words():
    stated = answer("EGFR tyrosine kinase inhibition is a first line treatment of choice for advanced lung "
                    "adenocarcinoma with an activating EGFR mutation [1].", ["PMC4816447"])
    assert states_gold(stated, "PMC4816447", GOLD)
    assert not states_gold(stated, "PMC6580637", GOLD)  # another paper cited
    assert not states_gold(answer("Rash was the most common toxicity [1].", ["PMC4816447"]), "PMC4816447", GOLD)
    away = answer("The indexed papers do not answer this question.", [], flags={"not_answered": True})
    row = judged({"id": "x", "set": "plain_tuning", "source": "full_text", "gold_paper": "PMC4816447",
                  "gold_sentences": GOLD}, away)
    assert row["turned_away"] and not row["cites_gold"] and not row["emergency"]
    assert "| plain_tuning | full_text | 1 | 0% | 0% | 0% | 0% | 100% | 0% | 0 |" in table([row])
    related = answer("The indexed papers do not answer this question. The closest findings, which may not answer "
                     "it: EGFR tyrosine kinase inhibition is a first line treatment of choice for advanced lung "
                     "adenocarcinoma with an activating EGFR mutation [1].", ["PMC4816447"],
                     flags={"not_answered": True, "related_findings": True})
    row = judged({"id": "x", "set": "plain_tuning", "source": "full_text", "gold_paper": "PMC4816447",
                  "gold_sentences": GOLD}, related)
    # the finding was shown, labelled as related: not turned away, and counted apart
    assert row["states_gold"] and row["states_gold_as_related"] and row["related_only"] and not row["turned_away"]
    # AnswerScope's label (rag_scoped.yml): answered, its findings labelled as related, counted as related too
    scoped = answer("None of the papers found tests this question directly; their closest findings are related, "
                    "not an answer: EGFR tyrosine kinase inhibition is a first line treatment of choice for advanced "
                    "lung adenocarcinoma with an activating EGFR mutation [1].", ["PMC4816447"],
                    flags={"related_only": True})
    row = judged({"id": "x", "set": "plain_tuning", "source": "full_text", "gold_paper": "PMC4816447",
                  "gold_sentences": GOLD}, scoped)
    assert row["states_gold_as_related"] and row["related_only"] and not row["turned_away"]


def test_directions_are_judged_against_the_gold_verdict_and_shown_only_above_the_threshold():
    import numpy as np

    from pmc_rag.evaluation.directions import labelled, negation_floor, shown_precision

    tuning, held = labelled()
    assert len(tuning) == len(held) == 250 and not {r["question"] for r in tuning} & {r["question"] for r in held}
    assert negation_floor("Erlotinib did not prolong survival.") == "no"
    assert negation_floor("Erlotinib prolonged survival.") == "yes"
    probabilities = np.array([[0.1, 0.05, 0.85], [0.7, 0.2, 0.1], [0.3, 0.6, 0.1], [0.05, 0.05, 0.9]])
    # classes maybe/no/yes: shown are the 0.85 "yes" and the 0.9 "yes" (the 0.7 is "maybe", never a direction)
    assert shown_precision(probabilities, ["maybe", "no", "yes"], ["yes", "maybe", "no", "no"], 0.8) == (2, 0.5)
    assert shown_precision(probabilities, ["maybe", "no", "yes"], ["yes"] * 4, 0.95)[0] == 0


def test_pmc_rag_eval_directions_prints_tuning_beside_held_aside(tmp_path, capsys):
    from pmc_rag import cli

    assert cli.main(["eval", "--directions", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "table.md").read_text(encoding="utf-8")
    assert "| held aside | negation floor |" in table and "| tuning (5-fold) | classifier, shown from 0.9 |" in table
    assert "Threshold reaching 95% precision on the tuning half:" in table
