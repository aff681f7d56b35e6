"""`pmc-rag eval --routes`: how often the question router picks the labelled kind, per kind and set, and its cost.

The labelled questions are evaluation/datasets/route_questions.json. The router's similarity layer votes with the
dev questions, so on the dev set each question is measured without its own vote (leave one out); the held-aside
quarter is never an exemplar. Rules alone are reported beside rules + exemplars. The time is the router's own,
per question, after the query embedding (which the pipeline computes for retrieval anyway).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from pmc_rag.components.question_router import ROUTES, QuestionRouter, labelled_route_questions


def run_routes(progress: bool = True, path: str | None = None) -> dict[str, Any]:
    """Every labelled question through the router; counts per set, kind and check, the confusion of the
    layered router, the questions it got wrong, and its time per question."""
    from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder
    from pmc_rag.environment import configure_environment

    configure_environment()  # offline unless allowed
    questions = labelled_route_questions(path)
    router = QuestionRouter(exemplars=path)
    router.warm_up()
    rules_only = QuestionRouter(exemplars="")
    embedder = OnnxTextEmbedder(normalize_embeddings=True)
    embedder.warm_up()
    counts: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(
        lambda: [0, 0])))
    confusion: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    wrong: list[dict[str, Any]] = []
    times_ms: list[float] = []
    layers: dict[str, int] = defaultdict(int)
    for number, row in enumerate(questions, 1):
        embedding = embedder.run(text=row["question"])["embedding"]
        started = time.perf_counter()
        route, layer, _ = router.decide(row["question"], embedding, leave_out=row["set"] != "held_aside")
        times_ms.append((time.perf_counter() - started) * 1000)
        layers[layer] += 1
        by_rules, _, _ = rules_only.decide(row["question"])
        for check, decided in (("rules", by_rules), ("rules + exemplars", route)):
            tally = counts[row["set"]][check][row["kind"]]
            tally[0] += decided == row["kind"]
            tally[1] += 1
        confusion[row["set"]][row["kind"]][route] += 1
        if route != row["kind"]:
            wrong.append({"id": row["id"], "set": row["set"], "kind": row["kind"], "route": route, "layer": layer,
                          "question": row["question"]})
        if progress and number % 50 == 0:
            print(f"  {number}/{len(questions)} questions", flush=True)
    times_ms.sort()
    return {"counts": {s: {c: {k: {"right": t[0], "of": t[1]} for k, t in kinds.items()}
                           for c, kinds in checks.items()} for s, checks in counts.items()},
            "confusion": {s: {k: dict(v) for k, v in kinds.items()} for s, kinds in confusion.items()},
            "layers": dict(layers), "wrong": wrong,
            "time_ms": {"p50": times_ms[len(times_ms) // 2], "p95": times_ms[int(len(times_ms) * 0.95)],
                        "max": times_ms[-1]}}


def routes_markdown(report: dict[str, Any]) -> str:
    kinds = [k for k in ROUTES if any(k in checks["rules"] for checks in report["counts"].values())]
    lines = ["| set | check | " + " | ".join(kinds) + " | all |", "|---|---|" + "---:|" * (len(kinds) + 1)]
    for name in sorted(report["counts"], key=lambda s: s == "held_aside"):
        for check, tallies in report["counts"][name].items():
            cells = [f"{tallies[k]['right']}/{tallies[k]['of']}" if k in tallies else "" for k in kinds]
            right = sum(t["right"] for t in tallies.values())
            total = sum(t["of"] for t in tallies.values())
            lines.append(f"| {name} | {check} | " + " | ".join(cells) + f" | {right}/{total} ({right / total:.2f}) |")
    timing = report["time_ms"]
    lines += ["", f"Router time per question (after the query embedding): p50 {timing['p50']:.2f} ms, "
                  f"p95 {timing['p95']:.2f} ms, max {timing['max']:.2f} ms. Decided by: "
              + ", ".join(f"{layer} {n}" for layer, n in sorted(report["layers"].items())), ""]
    for item in report["wrong"]:
        lines.append(f"- {item['set']}: {item['kind']} taken for {item['route']} ({item['layer']}): "
                     f"{item['question']!r}")
    return "\n".join(lines)
