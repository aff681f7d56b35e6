"""Streamed answers: how long a reader waits for the first checked sentence, against the model's first token.

    pmc-rag bench stream [--questions 10] [--start 400]

A stream now shows only what the checks passed (issue 60): status lines while the answer is made, then the checked
answer. What that costs a reader is the wait between the model's first token (what the old stream showed first,
unchecked) and the first checked sentence. Both are timed in the same run, on the same answers: the status line
"writing and checking the answer" goes out the moment the model's first token arrives.

The served app (hayhooks.yml, in process, the answer cache off) answers PubMedQA dev questions through
`POST /rag/stream`; each row is one question, and the last rows are medians and 95th percentiles.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from typing import Any

from pmc_rag.components.cpu_trial import cpu_flags
from pmc_rag.evaluation.metrics import nearest_rank

WRITING = "writing and checking the answer"


def dev_questions(start: int, count: int) -> list[str]:
    from importlib.resources import files

    data = json.loads(files("pmc_rag.evaluation").joinpath("datasets/pubmedqa_dev_questions.json").read_text())
    return [entry["QUESTION"] for entry in list(data.values())[start:start + count]]


def timed_stream(client: Any, endpoint: str, question: str) -> dict[str, float | None]:
    """Seconds from the request to: the first status line, the model's first token, the first checked sentence,
    the answer object."""
    started = time.perf_counter()
    seen: dict[str, float | None] = {"status": None, "first_token": None, "first_sentence": None, "answer": None}
    with client.stream("POST", f"/{endpoint}/stream", json={"question": question}) as response:
        for line in response.iter_lines():
            if not line.strip():
                continue
            item, now = json.loads(line), time.perf_counter() - started
            if "status" in item:
                seen["status"] = seen["status"] or now
                if item["status"] == WRITING:
                    seen["first_token"] = now
            elif "sentence" in item and seen["first_sentence"] is None:
                seen["first_sentence"] = now
            elif "answer" in item or "error" in item:
                seen["answer"] = now
    return seen



def run_benchmark(questions: int = 10, start: int = 400, endpoint: str = "rag") -> int:
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    config = dataclasses.replace(load_serve_config(), cache_entries=0)
    asked = dev_questions(start, questions)
    rows = []
    with TestClient(build_app(config), base_url=f"http://127.0.0.1:{config.port}") as client:
        timed_stream(client, endpoint, "Is first-line erlotinib effective in EGFR-mutant lung cancer?")  # warm-up
        print(f"{'#':>3} {'first status':>12} {'first token':>11} {'first checked':>13} {'answer':>7}  question")
        for number, question in enumerate(asked, start=start + 1):
            row = timed_stream(client, endpoint, question)
            rows.append(row)
            shown = [f"{row[k]:.2f}" if row[k] is not None else "-" for k in
                     ("status", "first_token", "first_sentence", "answer")]
            print(f"{number:>3} {shown[0]:>12} {shown[1]:>11} {shown[2]:>13} {shown[3]:>7}  {question[:60]}",
                  flush=True)
    both = [r for r in rows if r["first_token"] is not None and r["first_sentence"] is not None]
    for name, share in (("p50", 0.5), ("p95", 0.95)):
        figures = {k: nearest_rank([r[k] for r in rows if r[k] is not None], share) if any(
            r[k] is not None for r in rows) else float("nan") for k in ("status", "first_token", "first_sentence",
                                                                       "answer")}
        print(f"{name:>3} {figures['status']:>12.2f} {figures['first_token']:>11.2f} "
              f"{figures['first_sentence']:>13.2f} {figures['answer']:>7.2f}")
    if both:
        waits = [r["first_sentence"] - r["first_token"] for r in both]
        ratios = [r["first_sentence"] / r["first_token"] for r in both]
        print(f"\nFirst checked sentence after the model's first token: median +{statistics.median(waits):.2f} s "
              f"(x{statistics.median(ratios):.2f}), over {len(both)} of {len(rows)} answers the model wrote "
              "(the rest were answered without it: not answered, or a fixed reply)")
    flags = cpu_flags()
    print(f"CPU flags of note: {', '.join(f for f in ('avx2', 'avx512f', 'avx512_bf16', 'amx_tile') if f in flags)}")
    return 0
