"""First token and whole answer for the README question, as a reader of a warm server gets them.

    .venv/bin/python evaluation/results/2026-11-25-issue33/readme_question.py [--runs 3] [--pipeline rag]
        [--local-model qwen2.5-coder-1.5b-instruct]

The README question is asked `runs` times, each time after a different dev question, so that the model server
has the system prompt cached (as it has after any earlier question) but not this question's excerpts. Answers are
streamed through the answering service, as `pmc-rag serve` streams them. Prints one line per run and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from pmc_rag.answer_service import AnswerService
from pmc_rag.database import ensure_database
from pmc_rag.evaluation.bench_llm import README_QUESTION
from pmc_rag.evaluation.runner import TokenClock, free_port, with_local_model
from pmc_rag.paths import DEV_QUESTIONS
from pmc_rag.pipelines import load_declared_pipeline


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pipeline", default="rag")
    parser.add_argument("--local-model", default=None, help="another embedded model, from a server of its own")
    args = parser.parse_args()
    ensure_database()
    edit = with_local_model(args.local_model, free_port()) if args.local_model else None
    pipeline = load_declared_pipeline(args.pipeline, edit=edit)
    pipeline.warm_up()
    service = AnswerService(pipeline, name="readme timing")
    others = [q["QUESTION"] for q in list(json.loads(DEV_QUESTIONS.read_text()).values())[200:200 + args.runs]]
    firsts, totals = [], []
    for other in others:
        service.answer_for_evaluation(other)  # a different question first: only the system prompt stays cached
        clock = TokenClock()
        started = time.perf_counter()
        answer, _ = service.answer_for_evaluation(README_QUESTION, streaming_callback=clock.callback)
        total = time.perf_counter() - started
        first = clock.figures(answer.get("usage", {}).get("completion_tokens")).get("first_token_ms", float("nan"))
        firsts.append(first / 1000)
        totals.append(total)
        print(f"first token {first / 1000:.2f} s, answer {total:.2f} s, prompt tokens "
              f"{answer.get('usage', {}).get('prompt_tokens')}, model {answer.get('model')}: {answer['answer'][:90]!r}",
              flush=True)
    if args.local_model:
        from pmc_rag.local_llm.supervisor import local_model_server

        local_model_server(pipeline.local_model).stop()
    print(f"median of {len(firsts)}: first token {statistics.median(firsts):.2f} s, answer {statistics.median(totals):.2f} s")


if __name__ == "__main__":
    main()
