"""The ONNX Runtime query embedder against the stock Sentence Transformers one, in one process: CPU time per
question, largest difference between the vectors, and whether retrieve_hybrid ranks the same chunks.

    HF_HUB_OFFLINE=1 python evaluation/results/2026-11-24-issue14-query-embedder/same_rankings.py [--table NAME]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from pmc_rag.environment import configure_environment

configure_environment()

from pmc_rag.database import ensure_database  # noqa: E402
from pmc_rag.pipelines import load_declared_pipeline  # noqa: E402

QUESTIONS = Path(__file__).parents[2] / "datasets" / "pubmedqa_dev_questions.json"
STOCK = "haystack_integrations.components.embedders.sentence_transformers.sentence_transformers_text_embedder." \
        "SentenceTransformersTextEmbedder"


def pipeline(table: str, stock: bool):
    def edit(node):
        if isinstance(node, dict):
            if "table_name" in node:
                node.update(table_name=table, hnsw_index_name=f"{table}_hnsw", keyword_index_name=f"{table}_keyword")
            for value in node.values():
                edit(value)

    def edit_all(spec):
        edit(spec)
        if stock:
            spec["components"]["query_embedder"] = {"type": STOCK, "init_parameters": {
                "model": "sentence-transformers/all-MiniLM-L6-v2", "normalize_embeddings": True,
                "progress_bar": False}}
    loaded = load_declared_pipeline("retrieve_hybrid", edit=edit_all)
    loaded.warm_up()
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", default="pmc_chunks")
    parser.add_argument("--limit", type=int, default=500)
    args = parser.parse_args()
    ensure_database()
    questions = [q["QUESTION"] for q in json.loads(QUESTIONS.read_text()).values()][: args.limit]
    onnx, stock = pipeline(args.table, stock=False), pipeline(args.table, stock=True)
    embedders = {"onnx": onnx.pipeline.get_component("query_embedder"),
                 "stock": stock.pipeline.get_component("query_embedder")}
    print("runtime:", embedders["onnx"].runtime, "| table:", args.table)
    cpu = {name: 0.0 for name in embedders}
    worst = 0.0
    same_top10 = same_set = 0
    for question in tqdm(questions, unit="question"):
        vectors = {}
        for name, embedder in embedders.items():
            started = time.process_time()
            vectors[name] = np.array(embedder.run(text=question)["embedding"])
            cpu[name] += time.process_time() - started
        worst = max(worst, float(np.abs(vectors["onnx"] - vectors["stock"]).max()))
        ranked = [[d.id for d in p.run(question=question, top_k=10)["documents"]] for p in (onnx, stock)]
        same_top10 += ranked[0] == ranked[1]
        same_set += set(ranked[0]) == set(ranked[1])
    n = len(questions)
    print(f"questions: {n}")
    print(f"CPU per question embedding: onnx {1000 * cpu['onnx'] / n:.1f} ms, stock {1000 * cpu['stock'] / n:.1f} ms "
          f"(stock/onnx {cpu['stock'] / cpu['onnx']:.2f})")
    print(f"largest difference in any vector component: {worst:.2e}")
    print(f"retrieve_hybrid top 10 identical (ids and order): {same_top10} of {n}; same set: {same_set} of {n}")


if __name__ == "__main__":
    main()
