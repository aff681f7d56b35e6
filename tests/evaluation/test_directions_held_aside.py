"""The sealed directions set (evaluation/datasets/directions_held_aside.json) is what its README says: its shape,
not its answers (no judge is run on it here)."""

import json

from pmc_rag.paths import PROJECT_ROOT

DATASETS = PROJECT_ROOT / "evaluation" / "datasets"


def test_each_question_is_about_a_sample_abstract_without_a_pubmedqa_question_and_has_a_direction():
    held = json.loads((DATASETS / "directions_held_aside.json").read_text(encoding="utf-8"))["questions"]
    dev = json.loads((DATASETS / "pubmedqa_dev_questions.json").read_text(encoding="utf-8"))
    corpus = {json.loads(line)["pmid"] for line in
              (PROJECT_ROOT / "corpus" / "pubmedqa" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()}
    assert len(held) == 24 and len({q["id"] for q in held}) == 24 and len({q["pmid"] for q in held}) == 24
    assert all(q["pmid"] in corpus and q["pmid"] not in dev for q in held)
    assert {q["direction"] for q in held} <= {"supports", "does not support", "unclear"}
    assert all(q["set"] == "held_aside" and q["question"].endswith("?") for q in held)
