"""Load test for a running `pmc-rag serve`: N concurrent clients per endpoint, p50/p95 latency and errors.

    pmc-rag serve &                                   # in another shell
    python -m pmc_rag.evaluation.load_test --clients 20 --duration 60          # answers and retrieval at once
    python -m pmc_rag.evaluation.load_test --clients 20 --requests 40 --one-at-a-time

Not a test: it prints figures. Each client asks, waits for the reply, and asks again; a 503 (the answer queue is
full) is counted apart from other errors and honoured as a well-behaved client would: it waits `Retry-After`
before asking again. Questions are the PubMedQA dev questions, each asked once while they last (so the answer
cache, which would make repeats ~20 ms, does not flatter the figures); `--repeat` asks the same one again and
again to measure the cache instead.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm import tqdm

QUESTIONS = Path(__file__).parent / "datasets" / "pubmedqa_dev_questions.json"


def ask(url: str, question: str, key: str | None) -> tuple[float, int, float]:
    """(milliseconds, HTTP status or 0 for no reply, seconds the server asked to wait before asking again)"""
    request = urllib.request.Request(url, data=json.dumps({"question": question}).encode(),
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {key}"} if key else {})})
    started = time.perf_counter()
    retry_after = 0.0
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
        retry_after = float(error.headers.get("Retry-After") or 0)
    except OSError:
        status = 0
    return (time.perf_counter() - started) * 1000, status, retry_after


class Questions:
    """Thread-safe: each call gives the next question (all of them once, then again from the start)."""

    def __init__(self, repeat: bool):
        questions = [item["QUESTION"] for item in json.loads(QUESTIONS.read_text()).values()]
        self._next = itertools.cycle(questions[:1] if repeat else questions)
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            return next(self._next)


def run(base: str, endpoint: str, clients: int, requests: int | None, duration: float | None,
        questions: Questions, key: str | None, position: int = 0) -> dict:
    """`clients` clients on one endpoint, for `requests` requests in all or for `duration` seconds."""
    results: list[tuple[float, int]] = []
    lock = threading.Lock()
    started = time.perf_counter()
    stop_at = started + duration if duration else None
    left = itertools.count()
    progress = tqdm(total=requests, desc=f"{endpoint} x{clients}", unit="req", position=position, leave=False)

    def client() -> None:
        while True:
            if stop_at is not None and time.perf_counter() >= stop_at:
                return
            if stop_at is None and next(left) >= requests:
                return
            ms, status, retry_after = ask(f"{base}/{endpoint}/run", questions(), key)
            with lock:
                results.append((ms, status))
            progress.update()
            if status == 503 and retry_after:
                time.sleep(min(retry_after, max(0.0, (stop_at or float("inf")) - time.perf_counter())))

    with ThreadPoolExecutor(clients) as pool:
        for _ in range(clients):
            pool.submit(client)
    progress.close()
    wall = time.perf_counter() - started
    latencies = sorted(ms for ms, status in results if status == 200)
    return {"endpoint": endpoint, "clients": clients, "requests": len(results),
            "ok": len(latencies), "busy_503": sum(status == 503 for _, status in results),
            "errors": sum(status not in (200, 503) for _, status in results),
            "p50_ms": statistics.median(latencies) if latencies else None,
            "p95_ms": latencies[max(0, round(0.95 * len(latencies)) - 1)] if latencies else None,
            "answered_per_s": len(latencies) / wall, "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="http://127.0.0.1:1416")
    parser.add_argument("--endpoints", nargs="+", default=["retrieve", "rag"])
    parser.add_argument("--clients", type=int, nargs="+", default=[20], help="one run per number, e.g. 20 50")
    parser.add_argument("--requests", type=int, default=None, help="requests per endpoint (instead of --duration)")
    parser.add_argument("--duration", type=float, default=60, help="seconds each run lasts (clients finish the "
                                                                   "request they are waiting for)")
    parser.add_argument("--one-at-a-time", action="store_true", help="endpoints one after another, not together")
    parser.add_argument("--repeat", action="store_true", help="ask one question repeatedly (measures the cache)")
    parser.add_argument("--api-key", default=None)
    args = parser.parse_args()
    duration = None if args.requests else args.duration
    rows = []
    questions = {endpoint: Questions(args.repeat) for endpoint in args.endpoints}  # later runs ask new ones
    for clients in args.clients:
        def one(position_and_endpoint: tuple[int, str], clients: int = clients) -> dict:
            position, endpoint = position_and_endpoint
            return run(args.base, endpoint, clients, args.requests, duration, questions[endpoint], args.api_key,
                       position)

        if args.one_at_a_time:
            rows += [one((0, endpoint)) for endpoint in args.endpoints]
        else:
            with ThreadPoolExecutor(len(args.endpoints)) as pool:
                rows += list(pool.map(one, enumerate(args.endpoints)))
    together = "one at a time" if args.one_at_a_time else "together"
    print(f"\nEndpoints {together}; {'%d requests each' % args.requests if args.requests else '%g s' % duration}; "
          "latency of answered (200) requests.\n")
    print("| endpoint | clients | requests | answered | 503 busy | other errors | p50 ms | p95 ms | answered/s |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['endpoint']} | {r['clients']} | {r['requests']} | {r['ok']} | {r['busy_503']} | {r['errors']} | "
              f"{r['p50_ms'] or 0:.0f} | {r['p95_ms'] or 0:.0f} | {r['answered_per_s']:.2f} |")


if __name__ == "__main__":
    main()
