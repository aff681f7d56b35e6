"""Questions as people type them: does the answer find the right paper, state its finding, and not turn away?

    python -m pmc_rag.evaluation.plain_questions [--pipeline rag] [--sets plain_tuning plain_held_aside] [--out DIR]
    python -m pmc_rag.evaluation.plain_questions --dataset multilingual_questions.json     # six other languages

The set is `datasets/plain_language_questions.json` (211 questions by patients, clinicians and researchers, a third
about the full-text papers; each with its gold paper and the sentences of that paper's own conclusion). Every
question goes through the answering service as `pmc-rag ask` asks it (the crisis check and greetings first, no
uploads), and is judged against the gold, never by the component that wrote the answer:

- `gold first`: the gold paper is the first of the ranked sources;
- `cites gold`: the answer cites the gold paper;
- `states gold finding`: it cites the gold paper and one of its sentences holds at least half of the content words
  of one of the gold conclusion's sentences (word stems, `citations.content_words`);
- `turned away`: "the indexed papers do not answer this question" (flag `not_answered`) with nothing shown;
- `related only`: not answered, with the closest papers' findings quoted and labelled as related (flag
  `related_findings`), or answered with findings labelled as related because no cited paper tests the question
  (flag `related_only`, `rag_scoped.yml` only); such an answer counts as stating the gold finding when it quotes it, and the column
  `of which as related` says how many of those did;
- `emergency`: answered with the emergency reply (none of these questions is one).

`plain_held_aside` is sealed: its figures are printed, its answers are written to the output file for the record
and are not to be read to change anything. Each row is the share of the set's questions. `--dataset` judges another
file of the same form (`multilingual_questions.json`: its `multilingual_tuning` and sealed `multilingual_held_aside`;
`plain_questions_sealed_2.json`: its sealed `plain_sealed_2`; `plain_questions_sealed_3.json`: `plain_sealed_3`).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

from pmc_rag.paths import PROJECT_ROOT

DATASETS = PROJECT_ROOT / "evaluation" / "datasets"
DATASET = DATASETS / "plain_language_questions.json"
SETS = ("plain_tuning", "plain_held_aside")
MULTILINGUAL = DATASETS / "multilingual_questions.json"
MULTILINGUAL_SETS = ("multilingual_tuning", "multilingual_held_aside")
# A second sealed set written another way (from the conclusions of abstracts no other set uses), for a change's
# choice once the first sealed half had been counted for many: sealed like `plain_held_aside`.
SEALED_2 = DATASETS / "plain_questions_sealed_2.json"
SEALED_2_SETS = ("plain_sealed_2",)
# A third, about the full-text papers, as search-box queries and as stories.
SEALED_3 = DATASETS / "plain_questions_sealed_3.json"
SEALED_3_SETS = ("plain_sealed_3",)
MIN_GOLD_SHARE = 0.5


def load(path: Path = DATASET) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["questions"]


def says_gold(sentences: list[str], gold_sentences: list[str]) -> bool:
    """One of the sentences (their citation marks taken out by the caller) holds at least half the content words of
    one of the gold sentences (those of three content words or more)."""
    from pmc_rag.components.citations import content_words

    gold = [content_words(g) for g in gold_sentences if len(content_words(g)) >= 3]
    shown = [content_words(s) for s in sentences]
    return any(len(g & s) >= MIN_GOLD_SHARE * len(g) for g in gold for s in shown)


def states_gold(answer: dict[str, Any], gold_paper: str, gold_sentences: list[str]) -> bool:
    """The answer cites the gold paper, and one of its sentences holds at least half the content words of one of
    the gold conclusion's sentences."""
    from pmc_rag.components.section_chunker import split_sentences

    if gold_paper not in {r["source_id"] for r in answer.get("references", [])}:
        return False
    return says_gold([re.sub(r"\[\d+\]", "", s) for s in split_sentences(answer.get("answer") or "")], gold_sentences)


def judged(question: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    sources = [s["source_id"] for s in answer.get("sources", []) if s.get("found_by")]
    flags = answer.get("flags", {})
    stated = states_gold(answer, question["gold_paper"], question["gold_sentences"])
    # Either way of saying "these findings are related, not the answer": the gate's (nothing answered) or
    # AnswerScope's (`rag_scoped.yml`: answered, but no cited paper joins the question's subjects).
    related = bool(flags.get("related_findings") or flags.get("related_only"))
    return {"id": question["id"], "set": question["set"], "source": question["source"],
            "gold_first": bool(sources) and sources[0] == question["gold_paper"],
            "cites_gold": question["gold_paper"] in {r["source_id"] for r in answer.get("references", [])},
            "states_gold": stated, "states_gold_as_related": stated and related,
            "turned_away": bool(flags.get("not_answered")) and not flags.get("related_findings"),
            "related_only": related,
            "emergency": answer.get("kind") == "emergency"}


FIGURES = ("gold_first", "cites_gold", "states_gold", "states_gold_as_related", "turned_away", "related_only",
           "emergency")


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| set | source | questions | gold first | cites gold | states gold finding | of which as related | "
             "turned away | related only | emergency |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in dict.fromkeys(r["set"] for r in rows):
        for source in ("pubmedqa_abstract", "full_text", "all"):
            part = [r for r in rows if r["set"] == name and source in ("all", r["source"])]
            if not part:
                continue
            shares = [f"{sum(r.get(f, False) for r in part) / len(part):.0%}" for f in FIGURES[:6]]
            lines.append(f"| {name} | {source} | {len(part)} | " + " | ".join(shares) +
                         f" | {sum(r['emergency'] for r in part)} |")
    return "\n".join(lines)


# Every set `pmc-rag eval --plain` counts, with the file it is in.
EVERY_SET = ((DATASET, SETS), (SEALED_2, SEALED_2_SETS), (SEALED_3, SEALED_3_SETS), (MULTILINGUAL, MULTILINGUAL_SETS))


def run(pipeline: str = "rag", sets: tuple[str, ...] = SETS, out: Path | None = None,
        dataset: Path = DATASET) -> list[dict[str, Any]]:
    """Each question of `dataset`'s `sets` answered by `pipeline` as `pmc-rag ask` answers it, judged."""
    return run_files(pipeline, ((dataset, sets),), out)


def run_files(pipeline: str, files: tuple[tuple[Path, tuple[str, ...]], ...] = EVERY_SET,
              out: Path | None = None) -> list[dict[str, Any]]:
    """`run` over several files' sets, with one answering service (the pipeline and its models loaded once)."""
    from pmc_rag.answering.service import AnswerService
    from pmc_rag.database import ensure_database
    from pmc_rag.environment import configure_environment
    from pmc_rag.pipelines import load_declared_pipeline
    from pmc_rag.serving.access import NOT_UPLOADED

    configure_environment()
    ensure_database()
    service = AnswerService(load_declared_pipeline(pipeline), name="plain-questions")
    questions = [q for dataset, sets in files for q in load(dataset) if q["set"] in sets]
    rows, records = [], []
    started = time.perf_counter()
    for number, question in enumerate(questions, 1):
        answer = service.answer(question["question"], access=NOT_UPLOADED).model_dump(mode="json")
        rows.append(judged(question, answer))
        records.append({"id": question["id"], "answer": answer["answer"], "notes": answer["notes"],
                        "references": [r["source_id"] for r in answer["references"]], "flags": answer["flags"],
                        "kind": answer["kind"]})
        if number % 20 == 0:
            print(f"  {number}/{len(questions)} questions, {time.perf_counter() - started:.0f} s", flush=True)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "judged.json").write_text(json.dumps(rows, indent=1))
        (out / "answers.json").write_text(json.dumps(records, indent=1, ensure_ascii=False))
        (out / "table.md").write_text(table(rows) + "\n")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", default="rag")
    parser.add_argument("--dataset", type=Path, default=DATASET,
                        help="a file of questions of the same form (a name alone is looked up in evaluation/datasets)")
    parser.add_argument("--sets", nargs="+", default=None, help="its sets to run (default: all of them)")
    parser.add_argument("--out", type=Path, default=None, help="folder for judged.json, answers.json, table.md")
    args = parser.parse_args(argv)
    dataset = next((p for p in (args.dataset, DATASETS / args.dataset, DATASETS / f"{args.dataset}.json")
                    if p.is_file()), None)
    if dataset is None:
        parser.error(f"no question file {args.dataset} (nor in {DATASETS}); its files: "
                     f"{', '.join(sorted(p.name for p in DATASETS.glob('*questions*.json')))}")
    known = tuple(dict.fromkeys(q["set"] for q in load(dataset)))
    unknown = set(args.sets or ()) - set(known)
    if unknown:
        parser.error(f"{dataset.name} has no set {sorted(unknown)}; its sets: {', '.join(known)}")
    print(table(run(args.pipeline, tuple(args.sets or known), args.out, dataset)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
