"""The default embedder (all-MiniLM-L6-v2, the vectors in the store) against nomic-embed-text-v1.5 (GGUF, llama.cpp),
on the same chunks and questions: the vector leg alone, and what it costs to embed.

    pmc-rag bench embedders [--limit N]

Every stored chunk is embedded again with nomic (its text as `pipelines/indexing.yml` joins it: title, section,
content; with the model's `search_document: ` prefix) in a child process, so a native crash is reported, not fatal.
Questions are embedded by both (`search_query: ` for nomic). For each question the chunks are ranked by cosine
similarity and the first chunk of each paper gives the paper's rank:

- answerable sets (their gold paper): paper MRR@10, gold paper first, in the top 5;
- the relevance gate's first signal, the best chunk's similarity: how well it separates the answerable questions
  from the unanswerable ones (AUC, tuning and held aside), and with the threshold that catches 96% of the tuning
  unanswerable questions (the rules' target), the held-aside shares let through and caught.

The sets are `gate_learning.gold_sets()`. Held-aside figures are printed, never read
question by question. Ingest cost: chunks/s of each embedder over the same chunks in this process's child.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

import numpy as np

from pmc_rag.evaluation.gate_learning import gold_sets

ANSWERABLE_TUNING = ("pubmedqa_dev", "vague_dev", "plain_tuning")
UNANSWERABLE_TUNING = ("generated_tuning", "unanswerable_tuning")
ANSWERABLE_HELD = ("plain_held_aside", "vague_held_out")
UNANSWERABLE_HELD = ("generated_held_aside", "unanswerable_held_out")
CAUGHT_ON_TUNING = 0.96


def _nomic_embed(model_path: str, texts: list[str], prefix: str, report_every: int = 0) -> tuple[np.ndarray, float]:
    """In the child process: the texts' normalised nomic vectors, and the seconds it took."""
    from llama_cpp import Llama

    # One text per call: llama.cpp's attention spans a whole batch, so packing several texts costs more than it saves.
    model = Llama(model_path, embedding=True, n_ctx=2048, n_batch=512, n_ubatch=512, n_threads=os.cpu_count(),
                  verbose=False)
    vectors, started = [], time.perf_counter()
    for index, text in enumerate(texts, 1):
        vectors.append(model.embed(prefix + text, normalize=True, truncate=True))
        if report_every and index % report_every == 0:
            rate = index / (time.perf_counter() - started)
            print(f"  nomic: {index}/{len(texts)} chunks, {rate:.1f}/s", flush=True)
    return np.asarray(vectors, dtype=np.float32), time.perf_counter() - started


def _in_child(*args: Any) -> tuple[np.ndarray, float]:
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        try:
            return pool.submit(_nomic_embed, *args).result()
        except BrokenProcessPool as error:
            raise SystemExit(f"the nomic embedder's process died ({error}): llama.cpp may not run on this CPU "
                             "(see `lscpu`); the default embedder is unaffected") from None


def stored_chunks(limit: int | None) -> tuple[list[str], list[str], np.ndarray]:
    """The stored chunks' papers, texts as the indexing pipeline embeds them, and MiniLM vectors."""
    import psycopg

    from pmc_rag.database import ensure_database

    info = ensure_database()
    query = "SELECT content, meta, embedding::text FROM pmc_chunks ORDER BY id"
    query += f" LIMIT {int(limit)}" if limit else ""
    with psycopg.connect(info.connection_string) as connection:
        rows = connection.execute(query).fetchall()
    papers = [meta.get("source_id") for _, meta, _ in rows]
    texts = ["\n".join([str(meta.get("title") or ""), str(meta.get("section") or ""), content])
             for content, meta, _ in rows]
    vectors = np.asarray([json.loads(vector) for _, _, vector in rows], dtype=np.float32)
    return papers, texts, vectors


def paper_ranks(similarities: np.ndarray, papers: np.ndarray, gold: str, depth: int = 200) -> int:
    """The gold paper's rank among papers (by each paper's best chunk); 999 when not in the first `depth` chunks."""
    seen: list[str] = []
    for index in np.argsort(-similarities)[:depth]:
        if papers[index] not in seen:
            seen.append(papers[index])
    return seen.index(gold) + 1 if gold in seen else 999


def auc(positive: list[float], negative: list[float]) -> float:
    pos, neg = np.asarray(positive)[:, None], np.asarray(negative)[None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def measure(sets: dict[str, list[tuple[str, str | None]]], queries: np.ndarray, chunks: np.ndarray,
            papers: np.ndarray) -> dict[str, dict[str, list[float]]]:
    """Per set: the gold papers' ranks (answerable sets) and each question's best chunk similarity."""
    similarities = queries @ chunks.T
    out, row = {}, 0
    for name, items in sets.items():
        ranks, best = [], []
        for _, gold in items:
            best.append(float(similarities[row].max()))
            if gold:
                ranks.append(paper_ranks(similarities[row], papers, gold))
            row += 1
        out[name] = {"ranks": ranks, "best": best}
    return out


def tables(results: dict[str, dict[str, dict[str, list[float]]]], sets: dict[str, Any]) -> str:
    names = list(results)
    lines = ["| set | questions | " + " | ".join(f"{n} MRR@10" for n in names) + " | " +
             " | ".join(f"{n} first" for n in names) + " | " + " | ".join(f"{n} top 5" for n in names) + " |",
             "|---|---:|" + "---:|" * (3 * len(names))]
    for set_name, items in sets.items():
        if items[0][1] is None:
            continue
        cells = []
        for figure in ("mrr", "first", "top5"):
            for name in names:
                ranks = np.asarray(results[name][set_name]["ranks"])
                value = {"mrr": np.where(ranks <= 10, 1 / ranks, 0).mean(), "first": (ranks == 1).mean(),
                         "top5": (ranks <= 5).mean()}[figure]
                cells.append(f"{value:.3f}" if figure == "mrr" else f"{value:.0%}")
        lines.append(f"| {set_name} | {len(items)} | " + " | ".join(cells) + " |")
    lines += ["", "| embedder | gate AUC, tuning | gate AUC, held aside | threshold (96% of tuning unanswerable "
              "caught) | tuning answerable let through | held-aside answerable let through | held-aside unanswerable "
              "caught |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        def best(set_names: tuple[str, ...], embedder: str = name) -> np.ndarray:
            return np.asarray([b for s in set_names for b in results[embedder][s]["best"]])

        threshold = float(np.quantile(best(UNANSWERABLE_TUNING), CAUGHT_ON_TUNING))
        lines.append(f"| {name} | {auc(best(ANSWERABLE_TUNING), best(UNANSWERABLE_TUNING)):.3f} | "
                     f"{auc(best(ANSWERABLE_HELD), best(UNANSWERABLE_HELD)):.3f} | {threshold:.3f} | "
                     f"{(best(ANSWERABLE_TUNING) > threshold).mean():.1%} | "
                     f"{(best(ANSWERABLE_HELD) > threshold).mean():.1%} | "
                     f"{(best(UNANSWERABLE_HELD) <= threshold).mean():.1%} |")
    return "\n".join(lines)


def run_benchmark(limit: int | None = None) -> int:
    from pmc_rag.environment import configure_environment
    from pmc_rag.models import EMBEDDING_MODEL, seed_embedding_model
    from pmc_rag.nomic_embed_model import DOCUMENT_PREFIX, QUERY_PREFIX, nomic_embed_gguf

    configure_environment()
    seed_embedding_model()
    model_path = str(nomic_embed_gguf())
    papers, texts, minilm_chunks = stored_chunks(limit)
    sets = gold_sets()
    questions = [question for items in sets.values() for question, _ in items]
    print(f"{len(texts)} stored chunks, {len(questions)} questions in {len(sets)} sets", flush=True)

    from sentence_transformers import SentenceTransformer

    stock = SentenceTransformer(EMBEDDING_MODEL, device="cpu", local_files_only=True)
    started = time.perf_counter()
    minilm_queries = stock.encode(questions, batch_size=16, normalize_embeddings=True).astype(np.float32)
    minilm_query_s = time.perf_counter() - started
    sample = texts[:min(len(texts), 500)]
    started = time.perf_counter()
    stock.encode(sample, batch_size=16, normalize_embeddings=True)
    minilm_chunk_rate = len(sample) / (time.perf_counter() - started)

    print("Embedding the chunks with nomic (a child process) ...", flush=True)
    nomic_chunks, nomic_chunk_s = _in_child(model_path, texts, DOCUMENT_PREFIX, 250)
    nomic_queries, nomic_query_s = _in_child(model_path, questions, QUERY_PREFIX, 0)

    results = {"MiniLM": measure(sets, minilm_queries, minilm_chunks, np.asarray(papers)),
               "nomic": measure(sets, nomic_queries, nomic_chunks, np.asarray(papers))}
    print()
    print(tables(results, sets))
    print()
    print("| embedder | dimensions | chunks/s (stored chunks) | ms per question |\n|---|---:|---:|---:|")
    print(f"| MiniLM (stock Sentence Transformers, float32, first {len(sample)} chunks) | {minilm_chunks.shape[1]} | "
          f"{minilm_chunk_rate:.1f} | {1000 * minilm_query_s / len(questions):.1f} (batches of 16) |")
    print(f"| nomic-embed-text-v1.5 (llama.cpp, f16) | {nomic_chunks.shape[1]} | {len(texts) / nomic_chunk_s:.1f} | "
          f"{1000 * nomic_query_s / len(questions):.1f} |")
    return 0
