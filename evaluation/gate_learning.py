"""The relevance gate learned from labelled questions: its signals gathered, the classifier trained and measured.

    python -m pmc_rag.evaluation.gate_learning            # measure the shipped classifier beside the rules
    python -m pmc_rag.evaluation.gate_learning --train    # retrain resources/gate_classifier.json first
    python -m pmc_rag.evaluation.gate_learning --try min_meaning_carried=0.4,0.6 --part tuning
                                                          # the rules with one setting changed, side by side

Every question goes through `pipelines/rag.yml` without generation, up to the relevance gate, which records what
it measures (`RelevanceGate.measure`) instead of deciding. The classifier learns from the tuning sets only:

- answerable: the 500 PubMedQA dev questions, the 36 `dev` plain rewordings of `vague_questions.json` and the
  plain-language tuning half (`plain_tuning`), each about a paper in the index;
- unanswerable: the generated tuning sets (`generated_tuning`, `generated_tuning_2`) and the 25 hand-written
  `tuning` questions of `unanswerable_questions.json`.

The held-aside sets (the sealed plain-language half, the generated `held_aside` 50, the hand-written `held_out`
25, the 12 held-out rewordings) are measured, never learned from, and their questions are not printed. The table
gives, per set, the share the gate lets through (answerable sets) or turns away (unanswerable sets), by the rules
(as rag.yml sets them) and by the classifier, from the same signals in one run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pmc_rag.paths import PROJECT_ROOT

DATASETS = PROJECT_ROOT / "evaluation" / "datasets"
TUNING = ("pubmedqa_dev", "vague_dev", "plain_tuning", "generated_tuning", "unanswerable_tuning")
HELD_ASIDE = ("plain_held_aside", "vague_held_out", "generated_held_aside", "unanswerable_held_out")
ANSWERABLE = {"pubmedqa_dev", "vague_dev", "plain_tuning", "plain_held_aside", "vague_held_out"}
MIN_CAUGHT = 0.96  # of the tuning unanswerable questions, as the rules catch them (docs, "Evaluating variants")


def gold_sets() -> dict[str, list[tuple[str, str | None]]]:
    """Each set's (question, gold paper id; None for an unanswerable one), by name (`TUNING` and `HELD_ASIDE`)."""
    dev = json.loads((DATASETS / "pubmedqa_dev_questions.json").read_text(encoding="utf-8"))
    vague = json.loads((DATASETS / "vague_questions.json").read_text(encoding="utf-8"))
    plain = json.loads((DATASETS / "plain_language_questions.json").read_text(encoding="utf-8"))["questions"]
    generated = json.loads((DATASETS / "unanswerable_generated.json").read_text(encoding="utf-8"))["questions"]
    written = json.loads((DATASETS / "unanswerable_questions.json").read_text(encoding="utf-8"))["questions"]
    return {
        "pubmedqa_dev": [(q["QUESTION"], f"PMID:{pmid}") for pmid, q in dev.items()],
        "vague_dev": [(q["QUESTION"], f"PMID:{pmid}") for pmid, q in vague.items() if q.get("SET") == "dev"],
        "plain_tuning": [(q["question"], q["gold_paper"]) for q in plain if q["set"] == "plain_tuning"],
        "generated_tuning": [(q["question"], None) for q in generated if q["set"].startswith("generated_tuning")],
        "unanswerable_tuning": [(q["question"], None) for q in written if q["set"] == "tuning"],
        "plain_held_aside": [(q["question"], q["gold_paper"]) for q in plain if q["set"] == "plain_held_aside"],
        "vague_held_out": [(q["QUESTION"], f"PMID:{pmid}") for pmid, q in vague.items() if q.get("SET") != "dev"],
        "generated_held_aside": [(q["question"], None) for q in generated if q["set"] == "held_aside"],
        "unanswerable_held_out": [(q["question"], None) for q in written if q["set"] == "held_out"],
    }


def question_sets() -> dict[str, list[str]]:
    """Each set's questions, by name (`TUNING` and `HELD_ASIDE`)."""
    return {name: [question for question, _ in items] for name, items in gold_sets().items()}


class _Recorder:
    """Stands in for the gate's classifier: keeps what the gate measured and turns every question away, so
    nothing after the gate runs."""

    def __init__(self) -> None:
        self.signals: dict[str, float] | None = None

    def answerable(self, signals: dict[str, float]) -> bool:
        self.signals = dict(signals)
        return False


def gather(sets: dict[str, list[str]], pipeline: str = "rag",
           tried: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Each question's signals (None when the gate had nothing to measure: no excerpt), and whether the rules let
    it through, from one retrieval-only run of `pipeline`; with `tried` (a label and the gate settings it changes),
    also whether the rules so changed let it through (`tried`)."""
    from pmc_rag.components.relevance_gate import RelevanceGate
    from pmc_rag.database import ensure_database
    from pmc_rag.environment import configure_environment
    from pmc_rag.evaluation.runner import without_generation
    from pmc_rag.pipelines import load_declared_pipeline

    configure_environment()
    ensure_database()
    declared = load_declared_pipeline(pipeline, edit=without_generation)
    gate = next(c for _, c in declared.pipeline.walk() if isinstance(c, RelevanceGate))
    declared.warm_up()
    rules = RelevanceGate.from_dict(gate.to_dict() | {"init_parameters": {
        **gate.to_dict()["init_parameters"], "classifier": None}})
    rules._meaning = gate._meaning  # the same model, loaded once
    variants = {label: _changed(rules, changes) for label, changes in (tried or {}).items()}
    original_run = gate.run
    recorder = _Recorder()
    rows: list[dict[str, Any]] = []

    def run(**inputs: Any) -> dict[str, Any]:
        rows[-1]["rules_answer"] = "documents" in rules.run(**inputs)
        rows[-1]["tried"] = {label: "documents" in variant.run(**inputs) for label, variant in variants.items()}
        return original_run(**inputs)

    gate.run = run  # type: ignore[method-assign]
    gate._classifier = recorder
    total = sum(len(v) for v in sets.values())
    for name, questions in sets.items():
        for question in questions:
            recorder.signals = None
            rows.append({"set": name, "question": question, "rules_answer": None, "tried": {}})
            declared.run(question=question)
            rows[-1]["signals"] = recorder.signals
            if len(rows) % 100 == 0:
                print(f"  {len(rows)}/{total} questions", flush=True)
    return rows


def _changed(rules: Any, changes: dict[str, Any]) -> Any:
    """The rules' gate with some settings changed, sharing its loaded model."""
    from pmc_rag.components.relevance_gate import RelevanceGate

    data = rules.to_dict()
    changed = RelevanceGate.from_dict(data | {"init_parameters": {**data["init_parameters"], **changes}})
    changed._meaning = rules._meaning
    return changed


def parse_tried(text: str) -> dict[str, dict[str, Any]]:
    """"min_meaning_carried=0.4,0.6" -> {"min_meaning_carried=0.4": {...: 0.4}, ...}; "none" is None."""
    name, _, values = text.partition("=")
    if not name or not values:
        raise ValueError(f"--try takes a gate setting and its values, as min_meaning_carried=0.4,0.6 (got {text!r})")
    parsed = {v: None if v.lower() in ("none", "null") else int(v) if v.isdigit() else float(v)
              for v in values.split(",")}
    return {f"{name}={v}": {name: value} for v, value in parsed.items()}


def table(rows: list[dict[str, Any]], classifier: Any) -> str:
    labels = list(dict.fromkeys(label for r in rows for label in r.get("tried", {})))
    lines = ["| set | part | questions | measure | rules (rag.yml) | classifier |" + "".join(f" {l} |" for l in labels),
             "|---|---|---:|---|---:|---:|" + "---:|" * len(labels)]
    for name in TUNING + HELD_ASIDE:
        part = [r for r in rows if r["set"] == name]
        if not part:
            continue
        answerable = name in ANSWERABLE
        by_rules = sum(bool(r["rules_answer"]) == answerable for r in part)
        by_classifier = sum((r["signals"] is not None and classifier.answerable(r["signals"])) == answerable
                            for r in part)
        tried = "".join(f" {sum(r['tried'].get(label, False) == answerable for r in part) / len(part):.1%} |"
                        for label in labels)
        lines.append(f"| {name} | {'tuning' if name in TUNING else 'held aside'} | {len(part)} | "
                     f"{'let through' if answerable else 'turned away'} | {by_rules / len(part):.1%} | "
                     f"{by_classifier / len(part):.1%} |" + tried)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", action="store_true", help="retrain components/resources/gate_classifier.json")
    parser.add_argument("--out", type=Path, default=None, help="folder for table.md and the tuning signals")
    parser.add_argument("--try", dest="tried", default=None, metavar="SETTING=V1,V2",
                        help="a column per value: the rules with this gate setting changed (none: unset)")
    parser.add_argument("--part", choices=("tuning", "held-aside", "all"), default="all",
                        help="which sets to run (held-aside ones are counted, never printed question by question)")
    args = parser.parse_args(argv)
    from pmc_rag.components.gate_classifier import GateClassifier, train_gate_classifier

    names = {"tuning": TUNING, "held-aside": HELD_ASIDE, "all": TUNING + HELD_ASIDE}[args.part]
    if args.train and args.part != "all" and args.part != "tuning":
        parser.error("--train learns from the tuning sets: run it with --part tuning or all")
    sets = {name: questions for name, questions in question_sets().items() if name in names}
    rows = gather(sets, tried=parse_tried(args.tried) if args.tried else None)
    if args.train:
        tuning = [r for r in rows if r["set"] in TUNING]
        # a question with nothing to measure is turned away by any gate: it teaches nothing
        learned = [r for r in tuning if r["signals"] is not None]
        data = train_gate_classifier([r["signals"] for r in learned], [r["set"] in ANSWERABLE for r in learned],
                                     min_caught=MIN_CAUGHT, about=(
            "pmc_rag.components.gate_classifier: logistic regression on RelevanceGate.measure's signals, trained "
            f"by python -m pmc_rag.evaluation.gate_learning --train on {len(learned)} tuning questions ("
            + ", ".join(TUNING) + f"); threshold: {MIN_CAUGHT:.0%} of the unanswerable ones caught, cross-validated"))
        print("cross-validated on the tuning sets:", json.dumps(data["cross_validated"]))
    result = table(rows, GateClassifier())
    print(result)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table.md").write_text(result + "\n", encoding="utf-8")
        (args.out / "tuning_signals.json").write_text(json.dumps(
            [r for r in rows if r["set"] in TUNING], indent=0), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
