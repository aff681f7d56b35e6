"""Native BM25 scorer against the SQL pruned search on every dev question at 1M chunks: same top 25? how fast?

A one-off check behind this folder's README, not part of the package. Needs the `bench_scale_1000000` table with the
native scorer installed (`pmc-rag bench scale --sizes 1000000 --keep`). The SQL search (MaxScore, itself checked
against exhaustive scoring) is installed beside it under a temporary name and dropped at the end.
Usage, from the checkout: `.venv/bin/python evaluation/results/2026-11-24-issue14-native/native_vs_sql.py`
"""
import json
import os
import statistics
import time

from pmc_rag.database import ensure_database

ensure_database()

import psycopg  # noqa: E402

from pmc_rag.components import bm25_index, bm25_retriever  # noqa: E402
from pmc_rag.paths import DEV_QUESTIONS  # noqa: E402

TABLE = "bench_scale_1000000"
SQL_TOP = f"{TABLE}__bm25_top_sql"
tables = bm25_index.BM25Tables("public", TABLE, "english")
connection = psycopg.connect(os.environ["PG_CONN_STR"], autocommit=True)
connection.execute(tables.format(bm25_index._TOP_FUNCTION.replace("{top}", SQL_TOP)))
question_terms = tables.format(bm25_retriever._QUESTION_TERMS + " SELECT (SELECT array_agg(term_id ORDER BY idf DESC, "
                               "term_id) FROM scored_terms), (SELECT array_agg(idf ORDER BY idf DESC, term_id) FROM "
                               "scored_terms)")
same_10 = same_25 = asked = 0
native_s, sql_s = [], []
for question in (q["QUESTION"] for q in json.loads(DEV_QUESTIONS.read_text()).values()):
    term_ids, idfs = connection.execute(question_terms, (question, 32)).fetchone()
    if not term_ids:
        continue
    asked += 1
    started = time.perf_counter()
    native = connection.execute(tables.format("SELECT docno FROM {top}(%s, %s, 25, 1.2, 0.75)"), (term_ids, idfs)).fetchall()
    native_s.append(time.perf_counter() - started)
    started = time.perf_counter()
    by_sql = connection.execute(f"SELECT docno FROM {SQL_TOP}(%s, %s, 25, 1.2, 0.75)", (term_ids, idfs)).fetchall()
    sql_s.append(time.perf_counter() - started)
    same_10 += native[:10] == by_sql[:10]
    same_25 += native == by_sql
connection.execute(f"DROP FUNCTION {SQL_TOP}(integer[], float8[], integer, float8, float8, integer)")


def p95(seconds: list[float]) -> float:
    return sorted(seconds)[int(0.95 * (len(seconds) - 1))] * 1000


print(f"{asked} questions: top 10 identical {same_10}/{asked}, top 25 identical {same_25}/{asked}")
print(f"native p50 {statistics.median(native_s) * 1000:.1f} p95 {p95(native_s):.1f} ms; "
      f"SQL MaxScore p50 {statistics.median(sql_s) * 1000:.1f} p95 {p95(sql_s):.1f} ms")
