"""Does the relevance gate say "not answered" when, and only when, the indexed papers cannot answer? (`pmc-rag eval
--unanswerable`.)

Runs each answering pipeline without generation (the gate decides before the model is asked) over questions the
corpus cannot answer (evaluation/datasets/unanswerable_questions.json: a `tuning` set the thresholds were chosen on
and a `held_out` set that checks them) and over answerable questions (the dev questions), and counts refusals.

Usage:
```python
report = run_relevance(["rag"], UNANSWERABLE, answerable=load_questions(DEV_QUESTIONS)[:100])
print(relevance_markdown(report))
```
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from pmc_rag.answering.pipeline_run import run_answering
from pmc_rag.evaluation.questions import Question
from pmc_rag.evaluation.runner import shown_path, without_generation
from pmc_rag.pipelines import load_declared_pipeline

ANSWERABLE = "answerable"
# The sets kept back (`unanswerable_questions.json`: held_out; `unanswerable_generated.json`: held_aside): their
# figures are printed, their questions are not.
SEALED = ("held_out", "held_aside")


def load_unanswerable(path: str | Path) -> list[dict[str, str]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    questions = data["questions"] if isinstance(data, dict) else data
    for entry in questions:
        if not str(entry.get("question", "")).strip() or not entry.get("set"):
            raise ValueError(f"{path}: every entry needs a `question` and a `set` (tuning or held_out), got {entry!r}")
    return questions


def run_relevance(pipelines: list[str | Path], path: str | Path, answerable: list[Question],
                  progress: bool = True) -> dict[str, Any]:
    """Every question through each pipeline up to its relevance gate; a record per question."""
    unanswerable = load_unanswerable(path)
    asked = [(q["question"], q["set"], q.get("kind", "")) for q in unanswerable] + \
            [(q.question, ANSWERABLE, "") for q in answerable]
    report: dict[str, Any] = {"meta": {"file": shown_path(Path(path)), "unanswerable": len(unanswerable),
                                       "answerable": len(answerable), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")},
                              "pipelines": {}}
    for target in pipelines:
        pipeline = load_declared_pipeline(target, edit=without_generation)
        pipeline.warm_up()
        records = []
        for question, group, kind in tqdm(asked, desc=Path(str(target)).stem, unit="question", disable=not progress):
            answer, outputs = run_answering(pipeline, question)
            scores = [d.score for d in outputs.get("retrieved_semantic") or [] if d.score is not None]
            records.append({"question": question, "set": group, "kind": kind,
                            "refused": bool(answer.flags.get("not_answered")),
                            # refused, the closest papers' findings quoted after the reply, labelled as related
                            "related": bool(answer.flags.get("related_findings")),
                            "best_similarity": round(max(scores), 4) if scores else None,
                            "why": " ".join(answer.notes) if answer.flags.get("not_answered") else None})
        report["pipelines"][Path(str(target)).stem] = {"summary": summarise_relevance(records), "records": records}
    return report


def summarise_relevance(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per set: questions, refusals, and refusals showing related findings."""
    summary: dict[str, dict[str, int]] = defaultdict(lambda: {"questions": 0, "refused": 0, "related": 0})
    for record in records:
        for group in (record["set"], f"{record['set']} ({record['kind']})" if record["kind"] else None):
            if group:
                summary[group]["questions"] += 1
                summary[group]["refused"] += record["refused"]
                summary[group]["related"] += record.get("related", False)
    return dict(summary)


def relevance_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [f"Relevance gate: {meta['unanswerable']} unanswerable questions from `{meta['file']}` and "
             f"{meta['answerable']} answerable dev questions, {meta['date']}", "",
             "| pipeline | set | questions | said 'not answered' | share | of which with related findings |",
             "|---|---|---:|---:|---:|---:|"]
    for name, entry in report["pipelines"].items():
        for group, counts in sorted(entry["summary"].items()):
            share = counts["refused"] / counts["questions"] if counts["questions"] else 0
            lines.append(f"| {name} | {group} | {counts['questions']} | {counts['refused']} | {share:.0%} | "
                         f"{counts.get('related', 0)} |")
        missed = [r for r in entry["records"] if r["set"] != ANSWERABLE and not r["refused"]]
        refused = [r for r in entry["records"] if r["set"] == ANSWERABLE and r["refused"]]
        for title, chosen in (("unanswerable but answered", missed), ("answerable but refused", refused)):
            shown = [r for r in chosen if r["set"] not in SEALED]
            if chosen:
                lines += ["", f"{name}, {title}:", ""]
                lines += [f"- {r['question']} ({r['set']}, best similarity {r['best_similarity']})" for r in shown]
            if len(shown) < len(chosen):
                # a held-aside question read is a held-aside question tuned on: counted, never printed
                lines.append(f"- and {len(chosen) - len(shown)} held-aside questions (sealed: counted, not printed)")
    return "\n".join(lines)
