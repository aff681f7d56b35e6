"""An Okapi BM25 index inside PostgreSQL, kept in step with a pgvector table by triggers.

PostgreSQL's own full-text ranking (`ts_rank_cd`) has no inverse document frequency and no term-frequency
saturation, and the stock keyword retriever requires every query word to match. This module keeps what BM25
needs next to the chunk table, in four side tables named after it:

    <table>__bm25_terms     term_id, term, df, max_tf, min_len (chunks containing the term; bounds on its tf and
                                                                their length)
    <table>__bm25_docs      doc_id, docno, doc_len     (a compact number per chunk, and its length in tokens)
    <table>__bm25_postings  term_id, docno, tf, doc_len (one row per term per chunk; primary key (term_id, docno))
    <table>__bm25_stats     doc_count, total_len       (for the average document length)

Tokens are PostgreSQL's: `to_tsvector(<the store's language>, content)`, so stemming and stop words are the
same for documents and questions. Statement-level triggers on the chunk table update the side tables in the
same transaction as every INSERT, UPDATE, DELETE or TRUNCATE, so the index is never out of step and there is
nothing to rebuild by hand. `ensure_bm25_index` installs all this (idempotent) and rebuilds from the table when
the index is new or no longer matches it (say, after the table was dropped and created again).

Searching does not score every posting of every question term. Each term also records the largest tf and the
shortest chunk length among the chunks containing it; since a term's BM25 contribution grows with tf and falls
with length, `idf * max_tf / (max_tf + k1 * (1 - b + b * min_len / avgdl))` bounds what it adds to any chunk,
whatever k1, b and the corpus statistics are at query time. `<table>__bm25_top` (PL/pgSQL, read-only, so it runs on
replicas) first scores the chunks richest in the question's rarest terms, which gives a real k-th best score to
beat. The terms whose bounds together stay under it cannot lift a chunk into the top k on their own (MaxScore), so
only the other terms' postings are read; the weak terms are then looked up, largest bound first, for the
candidates still able to reach the k-th score, and the rest drop out. The result is the exhaustive top k. Deleting a
chunk leaves a term's bound as it was: still a bound, only looser, so deletes stay cheap and results exact.

Where the server can load the native scorer (`bm25_native_scorer.py`: a small C function, compiled here for the embedded
PostgreSQL), `<table>__bm25_top` scores every posting instead, in C, from a fifth table:

    <table>__bm25_blocks    term_id, block, postings   (a term's postings in chunk numbers block * 4096 to
                                                         block * 4096 + 4095, packed 8 bytes each)

Same result (the exhaustive top k, same order), about ten times faster at a million chunks: the SQL search's cost
is PostgreSQL grouping postings by chunk, about 0.4 microseconds each, which the C function replaces with adding
into an array. The triggers re-pack the blocks that each write touches, in the same transaction; with the scorer
off (`PMC_RAG_BM25_NATIVE=off`) or not loadable, `ensure_bm25_index` drops the blocks and installs the SQL search.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from pmc_rag.components import bm25_native_scorer as native
from pmc_rag.components.bm25_sql import (ADD_ROWS, BLOCKS_IN_STEP, CREATE_BLOCKS, CREATE_TABLES, DROP_SCAN, FILL_BLOCKS,
                                         NATIVE_TOP_FUNCTION, REMOVE_ROWS, REPACK, SCAN_FUNCTION, TOP_FUNCTION, TOUCHED,
                                         TRIGGER_FUNCTION, TRIGGERS)
from pmc_rag.components.store_connection import connect, create_store_table

logger = logging.getLogger(__name__)


# The first key of the advisory lock that writers of a chunk table hold until they commit (the second: its oid).
_LOCK_SPACE = 1417

# Chunk numbers per packed block. Smaller blocks make a write re-pack fewer postings; larger ones make fewer rows
# to read per question term (a term in half the chunks has one row per block). 4,096 kept both small at 1M chunks.
BLOCK_SIZE = 4096


@dataclass(frozen=True)
class BM25Tables:
    schema: str
    table: str
    language: str

    @classmethod
    def of(cls, store: Any) -> BM25Tables:
        """The tables of a pgvector document store's chunk table."""
        return cls(store.schema_name, store.table_name, store.language)

    @property
    def chunks(self) -> sql.Identifier:
        return sql.Identifier(self.schema, self.table)

    def trigger(self, event: str) -> sql.Identifier:
        return sql.Identifier(f"{self.table}__bm25_{event}")

    def format(self, template: str, **extra: sql.Composable) -> sql.Composed:
        """Fill a SQL template's {chunks}, {terms}, {docs}, {postings}, {stats}, {blocks}, {function}, {top},
        {scan}, {language} and {block_size}."""
        side = {name: sql.Identifier(self.schema, f"{self.table}__bm25_{suffix}")
                for name, suffix in (("terms", "terms"), ("docs", "docs"), ("postings", "postings"),
                                     ("stats", "stats"), ("function", "sync"), ("top", "top"),
                                     ("blocks", "blocks"), ("scan", "scan"))}
        return sql.SQL(template).format(chunks=self.chunks, language=sql.Literal(self.language),
                                        lock_space=sql.Literal(_LOCK_SPACE), block_size=sql.Literal(BLOCK_SIZE),
                                        **side, **extra)


def ensure_bm25_index(connection: psycopg.Connection, tables: BM25Tables) -> bool:
    """Install the side tables and triggers if missing, and rebuild the index if it does not match the table.

    Runs in one transaction holding a lock that keeps writers out meanwhile. Returns True if it rebuilt.
    """
    with connection.transaction():
        connection.execute(tables.format("LOCK TABLE {chunks} IN SHARE ROW EXCLUSIVE MODE"))
        connection.execute(tables.format(CREATE_TABLES))
        had_blocks = _exists(connection, tables, "blocks")
        native = _install_native_scan(connection, tables)
        if native:
            connection.execute(tables.format(CREATE_BLOCKS))
        else:  # no longer kept in step, so no longer trusted
            connection.execute(tables.format("DROP TABLE IF EXISTS {blocks}"))
            connection.execute(tables.format(DROP_SCAN))
        connection.execute(_trigger_function(tables, native))
        missing = [event for event in TRIGGERS if not _trigger_exists(connection, tables, event)]
        for event in missing:
            connection.execute(tables.format(
                "CREATE TRIGGER {trigger} " + TRIGGERS[event] + " EXECUTE FUNCTION {function}()",
                trigger=tables.trigger(event),
            ))
        connection.execute(tables.format(NATIVE_TOP_FUNCTION if native else TOP_FUNCTION))
        _include_scores_in_postings_key(connection, tables)
        indexed = connection.execute(tables.format("SELECT doc_count FROM {stats}")).fetchone()[0]
        stored = connection.execute(tables.format("SELECT count(*) FROM {chunks}")).fetchone()[0]
        if not missing and indexed == stored:
            bounds_missing = connection.execute(
                tables.format("SELECT 1 FROM {terms} WHERE max_tf IS NULL LIMIT 1")).fetchone() is not None
            if bounds_missing:
                # An index from before the bounds existed: derive them from its postings (no need to re-read text).
                connection.execute(tables.format(
                    "UPDATE {terms} t SET max_tf = p.max_tf, min_len = p.min_len FROM (SELECT term_id, max(tf) AS "
                    "max_tf, min(doc_len) AS min_len FROM {postings} GROUP BY term_id) p WHERE p.term_id = t.term_id"))
            if native and not had_blocks:
                _fill_blocks(connection, tables)
            elif not bounds_missing:
                return False
        else:
            connection.execute(tables.format("TRUNCATE {terms}, {docs}, {postings}"))
            connection.execute(tables.format("UPDATE {stats} SET doc_count = 0, total_len = 0"))
            connection.execute(tables.format(ADD_ROWS, source=tables.chunks))
            if native:
                _fill_blocks(connection, tables)
    # Fresh statistics, or the planner guesses at the new tables' sizes (outside the transaction: cheap).
    connection.execute(tables.format("ANALYZE {terms}, {docs}, {postings}"))
    if native:
        connection.execute(tables.format("ANALYZE {blocks}"))
    return True


def native_scorer_installed(connection: psycopg.Connection, tables: BM25Tables) -> bool:
    """Whether searches of this table score in C (`bm25_native_scorer.py`) rather than by the SQL search."""
    return _exists(connection, tables, "blocks") and _exists(connection, tables, "scan", kind="regproc")


def packed_blocks_in_step(connection: psycopg.Connection, tables: BM25Tables) -> bool:
    """Whether the native scorer's blocks hold exactly the postings, packed as a fresh packing would (read-only; a
    check for tests and for anyone who doubts the index, not needed in normal use)."""
    return connection.execute(tables.format(BLOCKS_IN_STEP)).fetchone()[0]


def _trigger_function(tables: BM25Tables, native: bool) -> sql.Composed:
    """The trigger function, with the upkeep of the packed blocks when the native scorer reads them."""
    nothing = sql.SQL("")
    return tables.format(
        TRIGGER_FUNCTION,
        remove_old=tables.format(REMOVE_ROWS, source=sql.Identifier("old_rows")),
        add_new=tables.format(ADD_ROWS, source=sql.Identifier("new_rows")),
        truncate_blocks=tables.format("TRUNCATE {blocks};") if native else nothing,
        touched_old=tables.format(TOUCHED, source=sql.Identifier("old_rows")) if native else nothing,
        touched_new=tables.format(TOUCHED, source=sql.Identifier("new_rows")) if native else nothing,
        repack=tables.format(REPACK) if native else nothing,
    )


def _fill_blocks(connection: psycopg.Connection, tables: BM25Tables) -> None:
    # One sort of every posting: with the default 4 MB it would spill to disk many times over.
    connection.execute("SET LOCAL work_mem = '256MB'")
    connection.execute(tables.format(FILL_BLOCKS))
    connection.execute("RESET work_mem")


def _install_native_scan(connection: psycopg.Connection, tables: BM25Tables) -> bool:
    """Create the table's `{scan}` function from the first library the server can load and that scores a known
    case right; False (the SQL search stays) when none can or the scorer is turned off."""
    if not native.enabled():
        return False
    version = int(connection.execute("SHOW server_version_num").fetchone()[0])
    compiled = native.compiled_library(version)
    # the local build first: the embedded server, the usual case, loads it at once
    libraries = ([str(compiled)] if compiled else []) + [native.INSTALLED]
    problems = []
    for library in libraries:
        try:
            with connection.transaction():  # a savepoint: a library that fails leaves nothing behind
                connection.execute(tables.format(SCAN_FUNCTION, library=sql.Literal(library),
                                                 symbol=sql.Literal(native.SYMBOL)))
                # one posting (chunk 0, tf 1, length 1) of a term with idf 1: 1 / (1 + 1.2) with k1 1.2 and b 0
                hits = connection.execute(tables.format(
                    "SELECT {scan}(ARRAY[0], ARRAY['\\x0000000100000001'::bytea], ARRAY[1.0::float8], 1, 1.2, 0, "
                    "1.0, {block_size})")).fetchone()[0]
                if len(hits) != 2 or hits[0] != 0 or abs(hits[1] - 1 / 2.2) > 1e-12:
                    raise psycopg.DataError(f"the scorer answered {hits} to a known case")
            return True
        except psycopg.Error as error:
            problems.append(f"{library}: {str(error).strip().splitlines()[0]}")
    logger.info("BM25 uses the SQL search; no native scorer could be loaded (%s)", "; ".join(problems))
    return False


def _include_scores_in_postings_key(connection: psycopg.Connection, tables: BM25Tables) -> None:
    """An index made before its postings' key carried tf and doc_len gets the new key (rebuilt once)."""
    covering = connection.execute(
        "SELECT i.indnatts > i.indnkeyatts FROM pg_index i WHERE i.indrelid = %s::regclass AND i.indisprimary",
        (f'"{tables.schema}"."{tables.table}__bm25_postings"',)).fetchone()
    if covering is not None and not covering[0]:
        connection.execute(tables.format(
            "ALTER TABLE {postings} DROP CONSTRAINT {key}, ADD PRIMARY KEY (term_id, docno) INCLUDE (tf, doc_len)",
            key=sql.Identifier(f"{tables.table}__bm25_postings_pkey")))


def install_bm25_index(document_store: Any) -> bool:
    """Set-up: create a pgvector store's table if it is missing, and install (or rebuild) its BM25 index. For
    `pmc-rag setup` and server start; the indexing pipeline's writer does the same when it warms up. Returns
    True if it built the index."""
    create_store_table(document_store)  # the store creates the extension and its table as configured
    with connect(document_store) as connection:
        return ensure_bm25_index(connection, BM25Tables.of(document_store))


class BM25IndexMissing(RuntimeError):
    """The chunk table has no BM25 index (the indexing pipeline's writer and `pmc-rag setup` install it)."""


def bm25_index_exists(connection: psycopg.Connection, tables: BM25Tables) -> bool:
    """Whether the side tables and all four triggers are there (a read-only check)."""
    return (_exists(connection, tables, "stats")
            and _exists(connection, tables, "top", kind="regproc")
            and all(_trigger_exists(connection, tables, event) for event in TRIGGERS))


def _exists(connection: psycopg.Connection, tables: BM25Tables, suffix: str, kind: str = "regclass") -> bool:
    name = f'"{tables.schema}"."{tables.table}__bm25_{suffix}"'
    return connection.execute(f"SELECT to_{kind}(%s)", (name,)).fetchone()[0] is not None


def vacuum_bm25_tables(connection: psycopg.Connection, tables: BM25Tables) -> None:
    """VACUUM (ANALYZE) the side tables, as after a bulk load (needs an autocommit connection). Until pages are
    marked all-visible, reading postings visits the table's pages besides the index: several times slower."""
    connection.execute(tables.format("VACUUM (ANALYZE) {postings}, {terms}, {docs}"))


def writer_lock(connection: psycopg.Connection, tables: BM25Tables) -> None:
    """Wait for, and hold until this transaction ends, the table's writer lock, which the index's triggers also take.

    Writers of one table then go one at a time from their first change to their commit (embedding, the slow part
    of ingestion, runs before and in parallel). Taking it before the first statement, as `ArticleWriter` does,
    also lets a writer see what the previous one committed: two processes replacing the same article replace it
    one after the other instead of colliding on its chunk ids.
    """
    connection.execute("SELECT pg_advisory_xact_lock(%s, %s::regclass::oid::integer)",
                       (_LOCK_SPACE, f'"{tables.schema}"."{tables.table}"'))


def corpus_generation(connection: psycopg.Connection, tables: BM25Tables) -> int:
    """A number that grows with every insert, update, delete or truncate of the chunk table."""
    return connection.execute(tables.format("SELECT generation FROM {stats}")).fetchone()[0]


def _trigger_exists(connection: psycopg.Connection, tables: BM25Tables, event: str) -> bool:
    row = connection.execute(
        "SELECT 1 FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname = %s",
        (f'"{tables.schema}"."{tables.table}"', f"{tables.table}__bm25_{event}"),
    ).fetchone()
    return row is not None


def drop_bm25_index(connection: psycopg.Connection, tables: BM25Tables) -> None:
    """Remove the side tables, triggers and function (dropping the chunk table alone leaves the side tables)."""
    with connection.transaction():
        for event in TRIGGERS:
            if connection.execute("SELECT to_regclass(%s)", (f'"{tables.schema}"."{tables.table}"',)).fetchone()[0]:
                connection.execute(tables.format("DROP TRIGGER IF EXISTS {trigger} ON {chunks}",
                                                 trigger=tables.trigger(event)))
        connection.execute(tables.format("DROP FUNCTION IF EXISTS {function}()"))
        connection.execute(tables.format("DROP FUNCTION IF EXISTS {top}(integer[], float8[], integer, float8, float8, "
                                         "integer)"))
        connection.execute(tables.format(DROP_SCAN))
        connection.execute(tables.format("DROP TABLE IF EXISTS {terms}, {docs}, {postings}, {stats}, {blocks}"))
