"""Load test for a running `pmc-rag serve`: N concurrent clients, p50/p95 latency and errors per endpoint.

    pmc-rag serve &                                   # in another shell
    python -m evaluation.load_test --clients 20 --requests 40

Not a test: it prints figures. Questions are the PubMedQA dev questions, each asked once (so the answer cache,
which would make repeats ~20 ms, does not flatter the figures); `--repeat` asks the same one again and again
to measure the cache instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm import tqdm

QUESTIONS = Path(__file__).parent / "datasets" / "pubmedqa_dev_questions.json"


def ask(url: str, question: str, key: str | None) -> tuple[float, int]:
    request = urllib.request.Request(url, data=json.dumps({"question": question}).encode(),
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {key}"} if key else {})})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except OSError:
        status = 0
    return (time.perf_counter() - started) * 1000, status


def run(base: str, endpoint: str, clients: int, requests: int, repeat: bool, key: str | None) -> dict:
    questions = [item["QUESTION"] for item in json.loads(QUESTIONS.read_text()).values()]
    asked = [questions[0]] * requests if repeat else questions[:requests]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(tqdm(pool.map(lambda q: ask(f"{base}/{endpoint}/run", q, key), asked), total=len(asked),
                            desc=endpoint, unit="req"))
    wall = time.perf_counter() - started
    latencies = sorted(ms for ms, status in results if status == 200)
    return {"endpoint": endpoint, "clients": clients, "requests": len(results),
            "errors": sum(status != 200 for _, status in results),
            "p50_ms": statistics.median(latencies) if latencies else None,
            "p95_ms": latencies[max(0, round(0.95 * len(latencies)) - 1)] if latencies else None,
            "throughput_per_s": len(results) / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="http://127.0.0.1:1416")
    parser.add_argument("--endpoints", nargs="+", default=["retrieve", "rag"])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--repeat", action="store_true", help="ask one question repeatedly (measures the cache)")
    parser.add_argument("--api-key", default=None)
    args = parser.parse_args()
    rows = [run(args.base, e, args.clients, args.requests, args.repeat, args.api_key) for e in args.endpoints]
    print("\n| endpoint | clients | requests | errors | p50 ms | p95 ms | req/s |\n|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['endpoint']} | {r['clients']} | {r['requests']} | {r['errors']} | {r['p50_ms'] or 0:.0f} | "
              f"{r['p95_ms'] or 0:.0f} | {r['throughput_per_s']:.2f} |")


if __name__ == "__main__":
    main()
