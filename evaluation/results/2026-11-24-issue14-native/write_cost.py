"""What the native scorer's block upkeep adds to a write into the 1M-chunk table: one INSERT of N chunks (copies of
stored chunks' text and embeddings under new ids), with and without it, each in a transaction that is rolled back.

A one-off measurement behind this folder's README, not part of the package. 'Without' swaps in the SQL search's
trigger function inside the transaction, so nothing changes for good.
Usage, from the checkout: `.venv/bin/python evaluation/results/2026-11-24-issue14-native/write_cost.py 300`
"""
import os
import statistics
import sys
import time
import uuid

from pmc_rag.database import ensure_database

ensure_database()

import psycopg  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from pmc_rag.components import bm25_index  # noqa: E402

TABLE = "bench_scale_1000000"
tables = bm25_index.BM25Tables("public", TABLE, "english")
connection = psycopg.connect(os.environ["PG_CONN_STR"])
per_write = int(sys.argv[1]) if len(sys.argv) > 1 else 10
stored = connection.execute(f"SELECT content, embedding::text, meta FROM {TABLE} TABLESAMPLE SYSTEM (0.5) "
                            "LIMIT 1200").fetchall()
connection.rollback()
insert = (f"INSERT INTO {TABLE} (id, content, embedding, meta) SELECT u.id, u.content, u.embedding::vector, u.meta "
          "FROM unnest(%s::text[], %s::text[], %s::text[], %s::jsonb[]) AS u(id, content, embedding, meta)")
seconds: dict[str, list[float]] = {"with block upkeep": [], "without": []}
for repeat in range(20):
    for mode, timings in seconds.items():
        start = (repeat * per_write) % 600
        rows = stored[start:start + per_write]
        if mode == "without":
            connection.execute(bm25_index._trigger_function(tables, native=False))
        started = time.perf_counter()
        connection.execute(insert, ([uuid.uuid4().hex for _ in rows], [r[0] for r in rows], [r[1] for r in rows],
                                    [Jsonb(r[2]) for r in rows]))
        timings.append(time.perf_counter() - started)
        connection.rollback()
for mode, timings in seconds.items():
    median = statistics.median(timings) * 1000
    print(f"{per_write} chunks per write, {mode}: median {median:.1f} ms, {median / per_write:.2f} ms per chunk")
