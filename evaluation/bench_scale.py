"""Scale benchmark: retrieval at 10k, 100k and 1M chunks of synthetic literature.

    pmc-rag bench scale [--sizes 10000,100000,1000000] [--questions 500] [--exact-questions 100]
                        [--recall-questions 100] [--keep]

For each size it builds a table of synthetic chunks fitted to the ingested sample (see synthetic_corpus.py: the
vocabulary grows with the corpus, so most words stay rare), through the same store, triggers and indexes as real
ingestion, then asks the PubMedQA dev questions through `pipelines/retrieve_hybrid.yml` pointed at that table. It
reports build and index times, disk and memory, p50/p95 of each retrieval stage and of the whole path, how often
the pruned BM25 top 10 equals exhaustive BM25's, and HNSW recall@10 against exact search; as a Markdown table,
a JSON file and a PNG plot of latency against size. `--keep` leaves the tables for the next run, which reuses them.
"""

from __future__ import annotations

import json
import resource
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from tqdm import tqdm

from pmc_rag.components.bm25_index import (BM25Tables, drop_bm25_index, ensure_bm25_index, install_bm25_index,
                                           native_scorer_installed, vacuum_bm25_tables)
from pmc_rag.components.filter_statistics import ensure_filter_statistics
from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever
from pmc_rag.components.store_connection import on_primary
from pmc_rag.database import ensure_database
from pmc_rag.evaluation.questions import load_questions
from pmc_rag.evaluation.synthetic_corpus import CorpusStatistics, synthetic_batches
from pmc_rag.paths import DEV_QUESTIONS
from pmc_rag.pipelines import load_declared_pipeline, pipeline_spec

STAGES = ["query embedding", "HNSW", "BM25", "fusion", "whole path"]


def run_benchmark(sizes: list[int], out_dir: Path, questions: int = 500, recall_questions: int = 100,
                  exact_questions: int = 100, keep: bool = False, pipeline_name: str = "retrieve_hybrid") -> int:
    print(f"Database: {ensure_database().description}")
    with _connect() as connection:
        stats = _sample_statistics(connection, pipeline_name)
    asked = [q.question for q in load_questions(DEV_QUESTIONS)][:questions]
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for size in sizes:
        table = f"bench_scale_{size}"
        row: dict[str, Any] = {"chunks": size}
        with _connect() as connection:
            row.update(_build(connection, stats, table, size, pipeline_name))
        row.update(_measure(table, asked, recall_questions, exact_questions, pipeline_name))
        results.append(row)
        (out_dir / "scale.json").write_text(json.dumps(results, indent=1))
        if not keep:
            with _connect() as connection:
                _drop(connection, table)
    _print_table(results)
    _plot(results, out_dir / "scale.png")
    print(f"\nWrote {out_dir / 'scale.json'} and {out_dir / 'scale.png'}")
    return 0


def _connect() -> psycopg.Connection:
    """A connection of its own per step: the server closes sessions left idle while the models run."""
    connection = psycopg.connect(ensure_database().connection_string, autocommit=True)
    register_vector(connection)
    return connection


def _sample_statistics(connection: psycopg.Connection, pipeline_name: str) -> CorpusStatistics:
    table = _store_settings(pipeline_name)["table_name"]
    rows = connection.execute(sql.SQL("SELECT content, embedding, meta->>'source_id' FROM {} ORDER BY id").format(
        sql.Identifier(table))).fetchall()
    if len(rows) < 100:
        raise SystemExit(f"the scale benchmark fits its synthetic corpus to the ingested sample, but {table} holds "
                         f"{len(rows)} chunks; run `pmc-rag setup` (or `pmc-rag ingest`) first")
    embeddings = np.stack([np.asarray(r[1].to_numpy() if hasattr(r[1], "to_numpy") else r[1]) for r in rows])
    stats = CorpusStatistics.of([r[0] for r in rows], embeddings, [r[2] or r[0] for r in rows])
    print(f"Sample: {len(rows):,} chunks, {len(stats.vocabulary):,} words, {stats.lengths.mean():.0f} words per "
          f"chunk; Heaps beta {stats.heaps_beta:.2f}, Zipf slope {stats.zipf_slope:.2f}, "
          f"repeats {stats.repeat_share:.1%}, words from the paper's topic {stats.topic_share:.1%}")
    return stats


def _store_settings(pipeline_name: str) -> dict[str, Any]:
    """The semantic retriever's store settings, as the pipeline YAML resolves them (nothing is built)."""
    return pipeline_spec(pipeline_name)[1]["components"]["semantic"]["init_parameters"]["document_store"][
        "init_parameters"]


def _pointed_at(table: str) -> Callable[[dict[str, Any]], None]:
    """Edits a pipeline spec so that every document store reads `table` (and its own indexes)."""
    def edit(node: Any) -> None:
        if isinstance(node, dict):
            if "table_name" in node:
                node.update(table_name=table, hnsw_index_name=f"{table}_hnsw", keyword_index_name=f"{table}_keyword")
            for value in node.values():
                edit(value)
        elif isinstance(node, list):
            for value in node:
                edit(value)
    return edit


def _build(connection: psycopg.Connection, stats: CorpusStatistics, table: str, size: int,
           pipeline_name: str) -> dict[str, Any]:
    exists = connection.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0]
    if exists and connection.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0] \
            == size:
        print(f"\n{table}: reusing the table kept from an earlier run")
        ensure_filter_statistics(connection, "public", table)  # a table kept from before they existed
        started = time.perf_counter()
        # A table kept from before the native scorer (or from a run with it off) gets its packed blocks now
        if ensure_bm25_index(connection, BM25Tables("public", table, "english")):
            print(f"BM25 index brought up to date in {time.perf_counter() - started:.0f} s")
        previous = connection.execute("SELECT obj_description(%s::regclass)", (table,)).fetchone()[0]
        return {**json.loads(previous or "{}"), **_sizes(connection, table)}
    if exists:
        _drop(connection, table)
    settings = _store_settings(pipeline_name)
    pipeline = load_declared_pipeline(pipeline_name, edit=_pointed_at(table))
    store = on_primary(pipeline.pipeline.get_component("semantic").document_store)  # it creates and writes
    # The table (and its keyword index) as the store makes it, without the HNSW index: built once at the end.
    store.search_strategy = "exact_nearest_neighbor"
    store.count_documents()
    install_bm25_index(store)
    ensure_filter_statistics(connection, store.schema_name, table)  # computed by the ANALYZE after the load
    started = time.perf_counter()
    with tqdm(total=size, unit="chunk", desc=f"Loading {size:,} synthetic chunks") as bar:
        for batch in synthetic_batches(stats, size):
            with connection.cursor() as cursor, cursor.copy(sql.SQL(
                    "COPY {} (id, embedding, content, meta) FROM STDIN (FORMAT BINARY)").format(
                    sql.Identifier(table))) as copy:
                copy.set_types(["varchar", "vector", "text", "jsonb"])
                for row in zip(batch.ids, batch.embeddings, batch.texts, batch.metas):
                    copy.write_row(row)
            bar.update(len(batch.ids))
    load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    # What autovacuum would do soon after a bulk load: mark pages all-visible, so postings are read from the index
    vacuum_bm25_tables(connection, BM25Tables.of(store))
    vacuum_seconds = time.perf_counter() - started
    kwargs = settings.get("hnsw_index_creation_kwargs") or {}
    started = time.perf_counter()
    print(f"Building the HNSW index ({kwargs}) ...", flush=True)
    connection.execute("SET maintenance_work_mem = '4GB'")  # the graph must fit, or building slows many times
    connection.execute(sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) WITH ({})").format(
        sql.Identifier(f"{table}_hnsw"), sql.Identifier(table),
        sql.SQL(", ").join(sql.SQL("{} = {}").format(sql.SQL(k), sql.Literal(v)) for k, v in kwargs.items())))
    hnsw_seconds = time.perf_counter() - started
    connection.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    built = {"load_s": load_seconds, "load_chunks_per_s": size / load_seconds, "vacuum_s": vacuum_seconds,
             "hnsw_build_s": hnsw_seconds}
    connection.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(sql.Identifier(table),
                                                                    sql.Literal(json.dumps(built))))
    return {**built, **_sizes(connection, table)}


def _sizes(connection: psycopg.Connection, table: str) -> dict[str, Any]:
    def size(name: str) -> int:
        return connection.execute("SELECT coalesce(pg_total_relation_size(to_regclass(%s)), 0)", (name,)).fetchone()[0]
    bm25 = sum(size(f"{table}__bm25_{s}") for s in ("terms", "docs", "postings", "stats", "blocks"))
    native = native_scorer_installed(connection, BM25Tables("public", table, "english"))
    return {"disk_bytes": size(table) + bm25, "bm25_bytes": bm25, "hnsw_bytes": size(f"{table}_hnsw"),
            "bm25_scorer": "native (C)" if native else "SQL (MaxScore)",
            "postings": connection.execute(sql.SQL("SELECT reltuples::bigint FROM pg_class WHERE oid = {}::regclass")
                                           .format(sql.Literal(f"{table}__bm25_postings"))).fetchone()[0]}


def _measure(table: str, asked: list[str], recall_questions: int, exact_questions: int,
             pipeline_name: str) -> dict[str, Any]:
    pipeline = load_declared_pipeline(pipeline_name, edit=_pointed_at(table))
    pipeline.warm_up()
    embedder, semantic, bm25, fusion = (pipeline.pipeline.get_component(n)
                                         for n in ("query_embedder", "semantic", "bm25", "fusion"))
    exhaustive = PgvectorBM25Retriever.from_dict(bm25.to_dict())
    exhaustive.exhaustive = True
    timings: dict[str, list[float]] = {stage: [] for stage in [*STAGES, "BM25 exhaustive"]}
    identical = identical_top10 = 0
    embeddings = []

    def timed(stage: str, call: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        result = call()
        timings[stage].append(time.perf_counter() - started)
        return result

    for question in asked[:3]:  # warm caches and models; not timed
        pipeline.run(question=question)
    for number, question in enumerate(tqdm(asked, desc=f"Questions on {table}", unit="question")):
        embedding = timed("query embedding", lambda: embedder.run(text=question)["embedding"])
        embeddings.append(embedding)
        found = timed("HNSW", lambda: semantic.run(query_embedding=embedding)["documents"])
        ranked = timed("BM25", lambda: bm25.run(query=question)["documents"])
        timed("fusion", lambda: fusion.run(documents=[found, ranked]))
        timed("whole path", lambda: pipeline.run(question=question))
        if number >= exact_questions:  # scoring every posting is slow at a million chunks
            continue
        reference = timed("BM25 exhaustive", lambda: exhaustive.run(query=question)["documents"])
        identical += [d.id for d in ranked] == [d.id for d in reference]
        identical_top10 += [d.id for d in ranked][:10] == [d.id for d in reference][:10]
    exhaustive.close()
    compared = min(exact_questions, len(asked))
    result: dict[str, Any] = {"questions": len(asked), "exact_questions": compared,
                              "bm25_identical": identical / compared, "bm25_identical_top10": identical_top10 / compared,
                              "hnsw_recall_at_10": _hnsw_recall(table, embeddings[:recall_questions],
                                                                semantic.document_store.hnsw_ef_search),
                              "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    for stage, seconds in timings.items():
        ordered = sorted(seconds)
        result[f"{stage} p50_ms"] = statistics.median(ordered) * 1000
        result[f"{stage} p95_ms"] = ordered[int(0.95 * (len(ordered) - 1))] * 1000
    return result


def _hnsw_recall(table: str, embeddings: list[list[float]], ef_search: int) -> float:
    """Share of the exact 10 nearest chunks (by a sequential scan) that the HNSW index returns."""
    query = sql.SQL("SELECT id FROM {} ORDER BY embedding <=> %s::vector LIMIT 10").format(sql.Identifier(table))
    found = 0
    connection = _connect()
    for embedding in tqdm(embeddings, desc="HNSW recall against exact search", unit="question"):
        vector = np.array(embedding, dtype=np.float32)
        with connection.transaction():
            connection.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef_search or 40)))
            approximate = {r[0] for r in connection.execute(query, (vector,)).fetchall()}
            connection.execute("SET LOCAL enable_indexscan = off")
            exact = {r[0] for r in connection.execute(query, (vector,)).fetchall()}
        found += len(approximate & exact)
    connection.close()
    return found / (10 * len(embeddings)) if embeddings else float("nan")


def _drop(connection: psycopg.Connection, table: str) -> None:
    drop_bm25_index(connection, BM25Tables("public", table, "english"))
    connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


def _print_table(results: list[dict[str, Any]]) -> None:
    gib = 1024 ** 3
    print("\n| chunks | load (chunks/s) | vacuum (s) | HNSW build (s) | disk (GiB) | BM25 tables (GiB) | HNSW index (GiB) "
          "| peak RSS of the benchmark (GiB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['chunks']:,} | {r.get('load_chunks_per_s', float('nan')):,.0f} | "
              f"{r.get('vacuum_s', float('nan')):.0f} | "
              f"{r.get('hnsw_build_s', float('nan')):.0f} | {r['disk_bytes'] / gib:.2f} | {r['bm25_bytes'] / gib:.2f} "
              f"| {r['hnsw_bytes'] / gib:.2f} | {r['peak_rss_bytes'] / gib:.2f} |")
    print("\nLatency, ms (p50 / p95), one question at a time:\n")
    stages = [*STAGES, "BM25 exhaustive"]
    print("| chunks | BM25 scorer | " + " | ".join(stages) + " | BM25 top 10 = exhaustive | HNSW recall@10 |")
    print("|---:|---|" + "---:|" * (len(stages) + 2))
    for r in results:
        cells = [f"{r[f'{s} p50_ms']:.1f} / {r[f'{s} p95_ms']:.1f}" for s in stages]
        print(f"| {r['chunks']:,} | {r.get('bm25_scorer', 'SQL (MaxScore)')} | " + " | ".join(cells)
              + f" | {r['bm25_identical_top10']:.1%} of {r['exact_questions']} | {r['hnsw_recall_at_10']:.3f} |")


def _plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    sizes = [r["chunks"] for r in results]
    for stage in [*STAGES, "BM25 exhaustive"]:
        axis.plot(sizes, [r[f"{stage} p95_ms"] for r in results], marker="o", label=stage,
                  linestyle="--" if stage == "BM25 exhaustive" else "-")
    for target, what in ((50, "BM25 target"), (100, "whole-path target")):
        axis.axhline(target, color="grey", linewidth=0.8, linestyle=":")
        axis.annotate(f"{what} ({target} ms)", (sizes[0], target), fontsize=7, color="grey",
                      textcoords="offset points", xytext=(2, 2))
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("chunks")
    axis.set_ylabel("p95 latency (ms)")
    axis.set_title("pmc-rag retrieval latency against corpus size (one question at a time)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
