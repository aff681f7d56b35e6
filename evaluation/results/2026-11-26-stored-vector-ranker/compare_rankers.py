"""The stock MMR ranker against StoredVectorDiversityRanker on the same fused candidates, per dev question.

    python evaluation/results/2026-11-26-stored-vector-ranker/compare_rankers.py [FIRST LAST]   # default 0 500

Retrieves with retrieve_hybrid.yml (both legs returning their stored vectors), then ranks the same 10 fused
chunks both ways with rag.yml's settings and counts the questions whose five are the same, and in the same order.
"""

import json
import statistics
import sys
import time

from pmc_rag.environment import configure_environment

configure_environment()

from haystack_integrations.components.rankers.sentence_transformers import (  # noqa: E402
    sentence_transformers_diversity as stock_ranker,
)

from pmc_rag.components.stored_vector_diversity_ranker import StoredVectorDiversityRanker  # noqa: E402
from pmc_rag.database import ensure_database  # noqa: E402
from pmc_rag.paths import DEV_QUESTIONS  # noqa: E402
from pmc_rag.pipelines import load_pipeline  # noqa: E402

first, last = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (0, 500)
ensure_database()
retrieval = load_pipeline("retrieve_hybrid")
for leg in ("semantic", "bm25"):
    retrieval.get_component(leg).return_embedding = True   # as in rag.yml
questions = [q["QUESTION"] for q in list(json.loads(DEV_QUESTIONS.read_text()).values())[first:last]]
settings = dict(model="sentence-transformers/all-MiniLM-L6-v2", top_k=5, lambda_threshold=0.9,
                meta_fields_to_embed=["title", "section"])
stock = stock_ranker.SentenceTransformersDiversityRanker(strategy="maximum_margin_relevance", **settings)
stock.warm_up()
stored = StoredVectorDiversityRanker(**settings)
stored.warm_up()
same_order = same_five = 0
seconds: dict[str, list[float]] = {"stock": [], "stored": []}
for question in questions:
    fused = retrieval.run({"query_embedder": {"text": question}, "bm25": {"query": question}},
                          include_outputs_from={"fusion"})["fusion"]["documents"]
    kept = {}
    for name, ranker in (("stock", stock), ("stored", stored)):
        started = time.perf_counter()
        kept[name] = [d.id for d in ranker.run(query=question, documents=fused)["documents"]]
        seconds[name].append(time.perf_counter() - started)
    same_order += kept["stock"] == kept["stored"]
    same_five += set(kept["stock"]) == set(kept["stored"])
print(f"{len(questions)} questions: same five in the same order {same_order}, same five {same_five}; ranking p50: "
      f"stock {statistics.median(seconds['stock']) * 1000:.0f} ms, stored vectors "
      f"{statistics.median(seconds['stored']) * 1000:.0f} ms")
