"""Keyword retrieval benchmark: BM25 in PostgreSQL at the sample corpus's size and at 100k chunks.

    pmc-rag bench keyword [--chunks 100000]

Builds two temporary tables from the sample corpus's chunks (BM25 reads no embeddings, so each chunk gets a
placeholder vector): the corpus itself, and the corpus copied under new ids until it holds `--chunks` chunks.
Times the 500 PubMedQA dev questions on each with our BM25 retriever and the stock keyword retriever, and
reports how often the right paper is in the top 5. (Agreement with a reference BM25, `bm25s`, is checked by
tests/components/test_bm25_retriever.py.)
"""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import replace
from pathlib import Path

import psycopg
from haystack_integrations.components.retrievers.pgvector import PgvectorKeywordRetriever
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
from tqdm import tqdm

from pmc_rag.components.article_writer import ArticleWriter
from pmc_rag.components.bm25_index import BM25Tables, drop_bm25_index
from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever
from pmc_rag.components.section_chunker import SectionChunker
from pmc_rag.evaluation.questions import load_questions
from pmc_rag.ingestion.sources import expand_paths, read_articles
from pmc_rag.ingestion.xml import IngestError
from pmc_rag.database import ensure_database
from pmc_rag.paths import DEV_QUESTIONS, SAMPLE_CORPUS_DIR

_PLACEHOLDER = [0.0] * 383 + [1.0]


def _store(table: str) -> PgvectorDocumentStore:
    return PgvectorDocumentStore(table_name=table, embedding_dimension=384, hnsw_index_name=f"{table}_hnsw",
                                 keyword_index_name=f"{table}_keyword", language="english")


def _percentiles(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def run_benchmark(total_chunks: int = 100_000) -> int:
    print(f"Database: {ensure_database().description}")
    files, _ = expand_paths([str(SAMPLE_CORPUS_DIR)])
    sections = [d for f in files for a in read_articles(Path(f)) if not isinstance(a, IngestError)
                for d in a.section_documents()]
    chunks = [replace(c, embedding=_PLACEHOLDER) for c in SectionChunker().run(documents=sections)["documents"]]
    questions = load_questions(DEV_QUESTIONS)
    suffix = uuid.uuid4().hex[:8]
    rows = []
    stores = []
    try:
        for label, size in (("sample corpus", len(chunks)), (f"{total_chunks:,} chunks", total_chunks)):
            store = _store(f"bench_kw_{len(stores)}_{suffix}")
            stores.append(store)
            writer = ArticleWriter(document_store=store)
            writer.warm_up()  # installs the BM25 index, so loading times include keeping it current
            bm25 = PgvectorBM25Retriever(document_store=store, top_k=10)
            bm25.warm_up()
            started = time.perf_counter()
            with tqdm(total=size, unit="chunk", desc=f"Loading {label}") as bar:
                copy = 0
                while copy * len(chunks) < size:
                    batch = chunks[: size - copy * len(chunks)]
                    if copy:  # a copy of the corpus under new ids and article ids
                        batch = [replace(c, id=f"{c.id}-{copy}", meta={**c.meta, "source_id":
                                 f"{c.meta['source_id']}#{copy}"}) for c in batch]
                    for start in range(0, len(batch), 2000):
                        writer.run(documents=batch[start:start + 2000])
                        bar.update(len(batch[start:start + 2000]))
                    copy += 1
            load_seconds = time.perf_counter() - started
            stock = PgvectorKeywordRetriever(document_store=store, top_k=10)
            timings: dict[str, list[float]] = {"bm25": [], "stock": []}
            hits = {"bm25": 0, "stock": 0}
            for question in tqdm(questions, desc=f"Querying {label}", unit="question"):
                for name, retriever in (("bm25", bm25), ("stock", stock)):
                    started = time.perf_counter()
                    found = retriever.run(query=question.question)["documents"]
                    timings[name].append(time.perf_counter() - started)
                    papers = list(dict.fromkeys(d.meta["source_id"] for d in found))
                    hits[name] += any(p in question.gold_source_ids for p in papers[:5])
            for name, title in (("bm25", "BM25 (ours)"), ("stock", "stock PgvectorKeywordRetriever")):
                p50, p95 = _percentiles(timings[name])
                rows.append((label, title, hits[name] / len(questions), p50, p95, load_seconds))
            bm25.close()
    finally:
        with psycopg.connect(stores[0].connection_string.resolve_value() or "", autocommit=True) as connection:
            for store in stores:
                drop_bm25_index(connection, BM25Tables(store.schema_name, store.table_name, store.language))
                store.delete_table()
                store.close()
    print(f"\n{len(questions)} PubMedQA dev questions; top-5 paper hits count a paper once (the copies in the larger "
          "table are other papers).")
    print("\n| table | retriever | right paper in top 5 | p50 (ms) | p95 (ms) | load + index (s) |")
    print("|---|---|---:|---:|---:|---:|")
    for label, title, hit_rate, p50, p95, load_seconds in rows:
        print(f"| {label} | {title} | {hit_rate:.1%} | {p50:.1f} | {p95:.1f} | {load_seconds:.0f} |")
    return 0
