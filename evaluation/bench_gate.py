"""What reading words by meaning costs the relevance gate: its time per question with and without `meaning_model`,
on the same retrieved inputs, in one process.

    python -m pmc_rag.evaluation.bench_gate [--questions 100] [--pipeline rag]

The questions (the first dev questions and the plain-language tuning half) go through the pipeline once without
generation; the gate's inputs are kept, then each gate judges all of them, the plain one first. The meaning gates
run cold (their word cache empty, as on a fresh server), without and with `min_meaning_carried` (the sentences
whose meaning is weighed are embedded too), then the pipeline's own gate again, warm.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from typing import Any


def gate_inputs(pipeline_name: str, questions: list[str]) -> list[dict[str, Any]]:
    """The relevance gate's keyword arguments for each question, as the pipeline gave them."""
    from pmc_rag.answering.pipeline_run import run_answering
    from pmc_rag.components import relevance_gate
    from pmc_rag.evaluation.runner import without_generation
    from pmc_rag.pipelines import load_declared_pipeline

    captured: list[dict[str, Any]] = []
    original = relevance_gate.RelevanceGate.run

    @functools.wraps(original)  # Haystack reads the run() signature for the component's sockets
    def keeping(self: Any, **inputs: Any) -> dict[str, Any]:
        captured.append(inputs)
        return original(self, **inputs)

    relevance_gate.RelevanceGate.run = keeping  # type: ignore[method-assign]
    try:
        pipeline = load_declared_pipeline(pipeline_name, edit=without_generation)
        pipeline.warm_up()
        for question in questions:
            run_answering(pipeline, question)
    finally:
        relevance_gate.RelevanceGate.run = original  # type: ignore[method-assign]
    return captured


def timed(gate: Any, inputs: list[dict[str, Any]]) -> list[float]:
    times = []
    for kwargs in inputs:
        started = time.perf_counter()
        gate.run(**kwargs)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    from pmc_rag.components.relevance_gate import RelevanceGate
    from pmc_rag.database import ensure_database
    from pmc_rag.environment import configure_environment
    from pmc_rag.evaluation.plain_questions import load as load_plain
    from pmc_rag.evaluation.questions import load_questions
    from pmc_rag.paths import DEV_QUESTIONS
    from pmc_rag.pipelines import load_declared_pipeline

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100, help="how many of each set (default: %(default)s)")
    parser.add_argument("--pipeline", default="rag")
    args = parser.parse_args(argv)
    configure_environment()
    ensure_database()
    questions = [q.question for q in load_questions(DEV_QUESTIONS)[:args.questions]] + [
        q["question"] for q in load_plain() if q["set"] == "plain_tuning"][:args.questions]
    inputs = gate_inputs(args.pipeline, questions)
    spec = load_declared_pipeline(args.pipeline, edit=lambda s: None).pipeline.get_component("gate").to_dict()
    meaning = RelevanceGate.from_dict(spec)
    plain = RelevanceGate.from_dict({**spec, "init_parameters": {**spec["init_parameters"], "meaning_model": None}})
    # each gate loads its own model, so each starts with its own empty cache
    words_only = RelevanceGate.from_dict({**spec, "init_parameters": {**spec["init_parameters"],
                                                                       "min_meaning_carried": None}})
    meaning.warm_up()
    words_only.warm_up()
    rows = [("words by spelling (meaning_model: null)", timed(plain, inputs)),
            ("words by meaning, no min_meaning_carried, cold word cache", timed(words_only, inputs)),
            (f"words by meaning ({args.pipeline}.yml), cold word cache", timed(meaning, inputs)),
            (f"words by meaning ({args.pipeline}.yml), warm word cache", timed(meaning, inputs))]
    base = statistics.median(rows[0][1])
    print(f"Relevance gate, {len(inputs)} questions ({args.pipeline}.yml's gate), ms per question:\n")
    print("| gate | p50 | p95 | mean | p50 x spelling |\n|---|---:|---:|---:|---:|")
    for name, times in rows:
        ordered = sorted(times)
        print(f"| {name} | {statistics.median(times):.1f} | {ordered[int(len(ordered) * 0.95)]:.1f} | "
              f"{statistics.mean(times):.1f} | {statistics.median(times) / max(base, 1e-6):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
