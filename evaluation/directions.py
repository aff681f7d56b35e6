"""Can a quoted finding be labelled "supports" or "does not support" the question, precisely enough to show?

    python -m pmc_rag.evaluation.directions [--out DIR]

Issue 61, item 3: a direction is shown beside a quoted finding only where its precision on held-aside questions is
at least 95%. The labelled data are the PubMedQA dev questions (the question, the paper's conclusion, the gold
yes/no/maybe): the even-numbered ones (file order) tune, the odd-numbered ones are held aside and never trained or
chosen on. Judged against the gold verdict, never by the component:

- the floor: a one-line negation rule on the conclusion (any of no, not, similar, neither, ... means "no");
- a learned classifier: tf-idf of the conclusion's words and word pairs (numbers as one token) and its negation
  (`claim_signals.is_negated`), logistic regression over yes/no/maybe; a direction is shown when its probability
  reaches a threshold and it is yes or no. The threshold is the lowest whose precision reaches 95% in 5-fold
  cross-validation on the tuning half with at least 10 shown; where none does, no direction is shown;
- with `--model NAME`, an embedded answering model asked "According to this conclusion, is the answer to the
  question yes or no?", read by the log-odds of its first word (`YesNoJudge`); a direction is shown when their
  size reaches a threshold, chosen on the tuning half as the classifier's is (about 2 s a question on 2 cores
  for the 1.5B: 17 minutes for both halves).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

TARGET_PRECISION = 0.95
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)
LOG_ODDS_THRESHOLDS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
MODEL_SYSTEM = "You read a study's conclusion and say what it answers to a question. Answer with one word: yes or no."
MODEL_USER = ("Question: {question}\n\nThe study's conclusion: {conclusion}\n\nAccording to this conclusion, is the "
              "answer to the question yes or no?")
# The floor: "no", "not", "did not", "similar", ... in the conclusion means No.
_NEGATION_FLOOR = re.compile(r"\b(?:no|not|similar|neither|nor|without|none|cannot|fail\w*|unable|lack\w*|"
                             r"comparable|equivalent)\b", re.IGNORECASE)
_WORD = re.compile(r"(?u)\b\w\w+\b")


def labelled(path: Path | None = None) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(tuning, held aside): each {question, conclusion, verdict}, even- and odd-numbered in file order."""
    from pmc_rag.paths import DEV_QUESTIONS

    raw = json.loads(Path(path or DEV_QUESTIONS).read_text(encoding="utf-8"))
    rows = [{"question": v["QUESTION"], "conclusion": v["LONG_ANSWER"], "verdict": v["final_decision"]}
            for v in raw.values()]
    return rows[::2], rows[1::2]


def negation_floor(conclusion: str) -> str:
    return "no" if _NEGATION_FLOOR.search(conclusion) else "yes"


def terms(conclusion: str) -> list[str]:
    from pmc_rag.components.claim_signals import is_negated

    words = _WORD.findall(re.sub(r"\d+(?:[.,]\d+)?", " numtok ", conclusion.lower()))
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])] + (["__negated__"] if is_negated(conclusion) else [])


def shown_precision(probabilities: Any, classes: list[str], gold: list[str], threshold: float) -> tuple[int, float]:
    """How many directions a threshold shows (yes or no, at least that probable) and the share of them right."""
    import numpy as np

    predicted = np.array(classes)[probabilities.argmax(1)]
    shown = (probabilities.max(1) >= threshold) & (predicted != "maybe")
    right = predicted[shown] == np.array(gold)[shown]
    return int(shown.sum()), float(right.mean()) if shown.any() else float("nan")


def model_log_odds(rows: list[dict[str, str]], judge: Any) -> list[float]:
    """The judge's (`YesNoJudge`) log-odds of "yes" against "no" for each question given its paper's conclusion."""
    said = []
    for row in rows:
        said.append(judge.log_odds(MODEL_SYSTEM, MODEL_USER.format(question=row["question"],
                                                                   conclusion=row["conclusion"])))
        if len(said) % 50 == 0:
            print(f"  {len(said)}/{len(rows)} conclusions read by {judge.model}", flush=True)
    return said


def model_report(tuning: list[dict[str, str]], held: list[dict[str, str]], model: str) -> dict[str, Any]:
    """The model's rows (accuracy, and per threshold the share shown and their precision) on both halves, and the
    threshold chosen on the tuning half: the lowest whose precision reaches 95% with at least 10 shown."""
    import numpy as np

    from pmc_rag.local_llm.yes_no import YesNoJudge

    judge, rows, chosen = YesNoJudge(model), [], None
    read = {name: np.array(model_log_odds(part, judge)) for name, part in (("tuning", tuning), ("held aside", held))}
    judge.close()
    for name, part in (("tuning", tuning), ("held aside", held)):
        log_odds = read[name]
        said, gold = np.where(log_odds >= 0, "yes", "no"), np.array([r["verdict"] for r in part])
        rows.append({"set": name, "method": f"{model}, its likelier word", "accuracy": float(np.mean(said == gold))})
        for threshold in LOG_ODDS_THRESHOLDS:
            shown = np.abs(log_odds) >= threshold
            precision = float(np.mean(said[shown] == gold[shown])) if shown.any() else float("nan")
            rows.append({"set": name, "method": f"{model}, shown from log-odds {threshold}",
                         "shown": float(shown.mean()), "precision": precision})
            if name == "tuning" and chosen is None and shown.sum() >= 10 and precision >= TARGET_PRECISION:
                chosen = threshold
    return {"rows": rows, "chosen_log_odds": chosen}


def run(judge_model: str | None = None) -> dict[str, Any]:
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    tuning, held = labelled()
    report: dict[str, Any] = {"questions": {"tuning": len(tuning), "held_aside": len(held)}, "rows": []}
    for name, rows in (("tuning", tuning), ("held aside", held)):
        gold = [r["verdict"] for r in rows]
        report["rows"].append({"set": name, "method": "always yes", "accuracy": float(np.mean([g == "yes" for g in gold]))})
        report["rows"].append({"set": name, "method": "negation floor", "accuracy": float(np.mean(
            [negation_floor(r["conclusion"]) == g for r, g in zip(rows, gold)]))})
    vectorizer = TfidfVectorizer(analyzer=terms, min_df=2, sublinear_tf=True)
    matrix = vectorizer.fit_transform([r["conclusion"] for r in tuning])
    gold = [r["verdict"] for r in tuning]
    model = LogisticRegression(C=10, max_iter=3000)
    crossed = cross_val_predict(model, matrix, gold, cv=5, method="predict_proba")
    classes = sorted(set(gold))
    chosen = None
    for threshold in THRESHOLDS:
        shown, precision = shown_precision(crossed, classes, gold, threshold)
        report["rows"].append({"set": "tuning (5-fold)", "method": f"classifier, shown from {threshold}",
                               "shown": shown / len(gold), "precision": precision})
        if chosen is None and shown >= 10 and precision >= TARGET_PRECISION:
            chosen = threshold
    report["rows"].append({"set": "tuning (5-fold)", "method": "classifier, most probable verdict",
                           "accuracy": float(np.mean(np.array(classes)[crossed.argmax(1)] == np.array(gold)))})
    model.fit(matrix, gold)
    held_probabilities = model.predict_proba(vectorizer.transform([r["conclusion"] for r in held]))
    held_gold = [r["verdict"] for r in held]
    report["rows"].append({"set": "held aside", "method": "classifier, most probable verdict", "accuracy": float(
        np.mean(np.array(list(model.classes_))[held_probabilities.argmax(1)] == np.array(held_gold)))})
    for threshold in THRESHOLDS:
        shown, precision = shown_precision(held_probabilities, list(model.classes_), held_gold, threshold)
        report["rows"].append({"set": "held aside", "method": f"classifier, shown from {threshold}",
                               "shown": shown / len(held), "precision": precision})
    report["chosen_threshold"] = chosen
    if judge_model:
        judged = model_report(tuning, held, judge_model)
        report["rows"] += judged["rows"]
        report["model"], report["chosen_log_odds"] = judge_model, judged["chosen_log_odds"]
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = ["| set | method | accuracy | directions shown | precision of those shown |", "|---|---|---:|---:|---:|"]
    for row in report["rows"]:
        cells = [f"{row[k]:.0%}" if isinstance(row.get(k), float) and row[k] == row[k] else "-"
                 for k in ("accuracy", "shown", "precision")]
        lines.append(f"| {row['set']} | {row['method']} | " + " | ".join(cells) + " |")
    chosen = report["chosen_threshold"]
    lines += ["", f"Threshold reaching {TARGET_PRECISION:.0%} precision on the tuning half: "
                  + (f"{chosen}" if chosen is not None else "none, so answers show no direction")]
    if report.get("model"):
        chosen = report["chosen_log_odds"]
        lines.append(f"The same for {report['model']}'s log-odds: " + (f"{chosen}" if chosen is not None else "none"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for report.json and table.md")
    parser.add_argument("--model", default=None, help="also an embedded answering model as the judge (`pmc-rag model "
                                                      "list`; qwen2.5-coder-1.5b-instruct)")
    args = parser.parse_args(argv)
    report = run(args.model)
    text = markdown(report)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.json").write_text(json.dumps(report, indent=1))
        (args.out / "table.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
