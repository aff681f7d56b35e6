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


_CREATE_TABLES = """
CREATE TABLE IF NOT EXISTS {terms} (
    term_id serial PRIMARY KEY, term text NOT NULL UNIQUE, df integer NOT NULL);
CREATE TABLE IF NOT EXISTS {docs} (
    doc_id varchar(128) PRIMARY KEY, docno bigserial NOT NULL UNIQUE, doc_len integer NOT NULL);
CREATE TABLE IF NOT EXISTS {postings} (
    term_id integer NOT NULL, docno bigint NOT NULL, tf smallint NOT NULL, doc_len integer NOT NULL,
    -- tf and doc_len in the index too, so a term's postings are read from the index alone, not from heap pages
    -- scattered over the whole table (index-only scans, once VACUUM has marked the pages all-visible)
    PRIMARY KEY (term_id, docno) INCLUDE (tf, doc_len));
CREATE TABLE IF NOT EXISTS {stats} (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    doc_count bigint NOT NULL DEFAULT 0, total_len bigint NOT NULL DEFAULT 0);
-- Counts every change to the chunk table, so that caches of answers know when the corpus changed.
ALTER TABLE {stats} ADD COLUMN IF NOT EXISTS generation bigint NOT NULL DEFAULT 0;
-- Bounds for pruned search (NULL in an index made before they existed, until ensure_bm25_index fills them).
ALTER TABLE {terms} ADD COLUMN IF NOT EXISTS max_tf smallint, ADD COLUMN IF NOT EXISTS min_len integer;
INSERT INTO {stats} DEFAULT VALUES ON CONFLICT DO NOTHING;
"""

# Adds the rows of {source} (the trigger's transition table, or the chunk table itself when rebuilding).
_ADD_ROWS = """
WITH tokens AS (
    SELECT s.id AS doc_id, u.lexeme, least(coalesce(array_length(u.positions, 1), 1), 32767) AS tf
    FROM {source} s, unnest(to_tsvector({language}::regconfig, coalesce(s.content, ''))) u
), lengths AS (
    SELECT doc_id, sum(tf)::integer AS doc_len FROM tokens GROUP BY doc_id
), added_docs AS (
    INSERT INTO {docs} (doc_id, doc_len)
    SELECT s.id, coalesce(l.doc_len, 0) FROM {source} s LEFT JOIN lengths l ON l.doc_id = s.id
    RETURNING docno, doc_id, doc_len
), added_terms AS (
    INSERT INTO {terms} (term, df, max_tf, min_len)
    SELECT k.lexeme, count(*), max(k.tf), min(l.doc_len)
    FROM tokens k JOIN lengths l ON l.doc_id = k.doc_id GROUP BY k.lexeme ORDER BY k.lexeme
    ON CONFLICT (term) DO UPDATE SET df = {terms}.df + excluded.df,
                                     max_tf = greatest({terms}.max_tf, excluded.max_tf),
                                     min_len = least({terms}.min_len, excluded.min_len)
    RETURNING term_id, term
), added_postings AS (
    INSERT INTO {postings} (term_id, docno, tf, doc_len)
    SELECT t.term_id, d.docno, k.tf, d.doc_len
    FROM tokens k JOIN added_docs d ON d.doc_id = k.doc_id JOIN added_terms t ON t.term = k.lexeme
)
UPDATE {stats} SET generation = generation + 1, doc_count = doc_count + (SELECT count(*) FROM added_docs),
                   total_len = total_len + (SELECT coalesce(sum(doc_len), 0) FROM added_docs)
"""

# Removes the rows of {source} (the trigger's OLD transition table). Postings are found through the old
# text's own terms, so they need no second index on docno.
_REMOVE_ROWS = """
WITH removed_docs AS (
    DELETE FROM {docs} d USING {source} s WHERE d.doc_id = s.id RETURNING d.docno, d.doc_id, d.doc_len
), old_terms AS (
    SELECT s.id AS doc_id, u.lexeme
    FROM {source} s, unnest(to_tsvector({language}::regconfig, coalesce(s.content, ''))) u
), removed_postings AS (
    DELETE FROM {postings} p
    USING old_terms o JOIN removed_docs d ON d.doc_id = o.doc_id JOIN {terms} t ON t.term = o.lexeme
    WHERE p.term_id = t.term_id AND p.docno = d.docno
    RETURNING p.term_id
), df_changes AS (
    UPDATE {terms} t SET df = t.df - r.n
    FROM (SELECT term_id, count(*) AS n FROM removed_postings GROUP BY term_id) r
    WHERE t.term_id = r.term_id
)
UPDATE {stats} SET generation = generation + 1, doc_count = doc_count - (SELECT count(*) FROM removed_docs),
                   total_len = total_len - (SELECT coalesce(sum(doc_len), 0) FROM removed_docs)
"""

_TRIGGER_FUNCTION = """
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
    -- the (term, block) pairs whose packed postings change: re-packed at the end (with the native scorer only)
    touched_terms integer[] := '{{}}';
    touched_blocks integer[] := '{{}}';
BEGIN
    -- One writer at a time per table, until it commits: writers would otherwise lock shared term rows and the
    -- statistics row in different orders and deadlock (see writer_lock).
    PERFORM pg_advisory_xact_lock({lock_space}, TG_RELID::integer);
    IF TG_OP = 'TRUNCATE' THEN
        TRUNCATE {terms}, {docs}, {postings};
        {truncate_blocks}
        UPDATE {stats} SET doc_count = 0, total_len = 0, generation = generation + 1;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        {touched_old}
        {remove_old};
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        {add_new};
        {touched_new}
    END IF;
    {repack}
    RETURN NULL;
END
$body$;
"""

# The native scorer's copy of the postings, 8 bytes each, one row per term and block of BLOCK_SIZE chunk numbers
# (the layout is described in components/resources/bm25_scan.c). Derived from {postings}; kept in step by the triggers.
_CREATE_BLOCKS = """
CREATE TABLE IF NOT EXISTS {blocks} (
    term_id integer NOT NULL, block integer NOT NULL, postings bytea NOT NULL, PRIMARY KEY (term_id, block));
-- stored uncompressed: scoring reads them without decompressing first
ALTER TABLE {blocks} ALTER COLUMN postings SET STORAGE EXTERNAL;
"""

_PACKED = ("string_agg(int4send(((p.docno - p.docno / {block_size} * {block_size}) * 65536 + p.tf)::integer) "
           "|| int4send(p.doc_len), ''::bytea ORDER BY p.docno)")


_FILL_BLOCKS = """
TRUNCATE {blocks};
INSERT INTO {blocks} (term_id, block, postings)
SELECT p.term_id, (p.docno / {block_size})::integer, """ + _PACKED + """
FROM {postings} p GROUP BY p.term_id, p.docno / {block_size}
"""

_FRESH_BLOCKS = ("SELECT p.term_id, (p.docno / {block_size})::integer AS block, " + _PACKED + " AS postings "
                 "FROM {postings} p GROUP BY p.term_id, p.docno / {block_size}")

_BLOCKS_IN_STEP = ("SELECT NOT EXISTS ((SELECT term_id, block, postings FROM {blocks} EXCEPT ALL " + _FRESH_BLOCKS
                   + ") UNION ALL (" + _FRESH_BLOCKS + " EXCEPT ALL SELECT term_id, block, postings FROM {blocks}))")

# Adds the (term, block) pairs of {source}'s chunks (which must still be in {docs}) to those to re-pack.
_TOUCHED = """
SELECT touched_terms || coalesce(array_agg(x.term_id), '{{}}'), touched_blocks || coalesce(array_agg(x.block), '{{}}')
INTO touched_terms, touched_blocks
FROM (SELECT DISTINCT t.term_id, (d.docno / {block_size})::integer AS block
      FROM {source} s JOIN {docs} d ON d.doc_id = s.id,
           unnest(to_tsvector({language}::regconfig, coalesce(s.content, ''))) u JOIN {terms} t ON t.term = u.lexeme
     ) x;
"""

_REPACK = """
DELETE FROM {blocks} k USING unnest(touched_terms, touched_blocks) AS x(term_id, block)
WHERE k.term_id = x.term_id AND k.block = x.block;
INSERT INTO {blocks} (term_id, block, postings)
SELECT x.term_id, x.block, """ + _PACKED + """
FROM (SELECT DISTINCT * FROM unnest(touched_terms, touched_blocks) AS u(term_id, block)) x
JOIN {postings} p ON p.term_id = x.term_id AND p.docno >= x.block::bigint * {block_size}
                 AND p.docno < (x.block + 1)::bigint * {block_size}
GROUP BY x.term_id, x.block;
"""

# The k best chunks for the question terms `term_ids` (with their IDFs), exactly as scoring every posting would rank
# them: score descending (to 9 decimals, so that equal scores summed in another order stay equal), then docno. See the
# module docstring for the method.
_TOP_FUNCTION = """
CREATE OR REPLACE FUNCTION {top}(term_ids integer[], idfs float8[], k integer, k1 float8, b float8,
                                 probe_postings integer DEFAULT 5000)
RETURNS TABLE (docno bigint, score float8) LANGUAGE plpgsql STABLE AS $body$
#variable_conflict use_column
DECLARE
    avgdl float8;
    bounds float8[];        -- per question term (as in term_ids): the most it adds to any chunk
    probed integer[];       -- the rarest terms, up to probe_postings postings in all
    kth float8 := 0;        -- a real k-th best score: what a chunk must reach to matter
    weak integer[];         -- terms whose bounds add up to less than kth: looked up, largest bound first
    weak_bound float8;      -- the most they add together
    strong integer[];       -- the others: every posting read
    docnos bigint[];        -- the candidates and their scores so far
    scores float8[];
BEGIN
    IF coalesce(array_length(term_ids, 1), 0) = 0 THEN
        RETURN;
    END IF;
    SELECT greatest(total_len::float8 / greatest(doc_count, 1), 1) INTO avgdl FROM {stats};
    -- idf alone bounds a term too (the tf part is below 1), for terms indexed before bounds were kept
    SELECT array_agg(coalesce(q.idf * t.max_tf / (t.max_tf + k1 * (1 - b + b * t.min_len / avgdl)), q.idf)
                     ORDER BY q.ord),
           array_agg(q.term_id ORDER BY t.df, q.ord) FILTER (WHERE t.running <= probe_postings OR t.running = t.df)
    INTO bounds, probed
    FROM unnest(term_ids, idfs) WITH ORDINALITY AS q(term_id, idf, ord)
    LEFT JOIN (SELECT u.term_id, u.df, u.max_tf, u.min_len, sum(u.df) OVER (ORDER BY u.df, u.term_id) AS running
               FROM {terms} u WHERE u.term_id = ANY(term_ids)) t ON t.term_id = q.term_id;

    -- A first k-th score to beat: the chunks with the most of the rarest terms, scored in full.
    SELECT array_agg(full_score ORDER BY full_score DESC) INTO scores FROM (
        SELECT sum(q.idf * p.tf / (p.tf + k1 * (1 - b + b * p.doc_len / avgdl))) AS full_score
        FROM (SELECT p.docno FROM {postings} p JOIN unnest(term_ids, idfs) AS q(term_id, idf) USING (term_id)
              WHERE p.term_id = ANY(probed)
              GROUP BY p.docno
              ORDER BY sum(q.idf * p.tf / (p.tf + k1 * (1 - b + b * p.doc_len / avgdl))) DESC, p.docno
              LIMIT 4 * k) best  -- more than k: the commoner terms can reorder them
        JOIN {postings} p ON p.docno = best.docno AND p.term_id = ANY(term_ids)
        JOIN unnest(term_ids, idfs) AS q(term_id, idf) ON q.term_id = p.term_id
        GROUP BY best.docno
    ) first_pass;
    IF coalesce(array_length(scores, 1), 0) >= k THEN
        -- a hair lower, as the same score summed in another order can differ in its last bits
        kth := scores[k] - 1e-9 * abs(scores[k]);
    END IF;

    -- MaxScore: the weakest terms, while their bounds add up to less than kth, cannot lift a chunk alone.
    SELECT coalesce(array_agg(ord ORDER BY bound DESC, ord) FILTER (WHERE below), '{{}}'),
           coalesce(array_agg(term_ids[ord]) FILTER (WHERE NOT below), '{{}}')
    INTO weak, strong
    FROM (SELECT ord, bound, sum(bound) OVER (ORDER BY bound, ord) < kth AS below
          FROM unnest(bounds) WITH ORDINALITY AS t(bound, ord)) split;

    -- The chunks with a strong term, summed over the strong terms; the best of them, scored in full, give a
    -- better k-th score; then only those that the weak terms could still lift to it are kept.
    weak_bound := (SELECT coalesce(sum(bounds[o]), 0) FROM unnest(weak) AS o);
    WITH candidates AS MATERIALIZED (
        SELECT p.docno, sum(q.idf * p.tf / (p.tf + k1 * (1 - b + b * p.doc_len / avgdl))) AS partial
        FROM {postings} p JOIN unnest(term_ids, idfs) AS q(term_id, idf) USING (term_id)
        WHERE p.term_id = ANY(strong)
        GROUP BY p.docno
    ), best AS (
        SELECT c.partial + coalesce(sum(idfs[o] * p.tf / (p.tf + k1 * (1 - b + b * p.doc_len / avgdl))), 0)
               AS full_score
        FROM (SELECT * FROM candidates ORDER BY partial DESC LIMIT 4 * k) c
        LEFT JOIN unnest(weak) AS o ON true
        LEFT JOIN {postings} p ON p.term_id = term_ids[o] AND p.docno = c.docno
        GROUP BY c.docno, c.partial
    ), bar AS (
        SELECT greatest(kth, (array_agg(full_score ORDER BY full_score DESC))[k] * (1 - 1e-9)) AS kth FROM best
    )
    SELECT array_agg(c.docno), array_agg(c.partial), min(bar.kth) INTO docnos, scores, kth
    FROM candidates c, bar
    WHERE c.partial + weak_bound >= bar.kth;
    kth := coalesce(kth, 0);

    -- Each weak term adds its real contribution; candidates that can no longer reach kth drop out.
    FOR i IN 1 .. coalesce(array_length(weak, 1), 0) LOOP
        SELECT array_agg(c.docno), array_agg(c.partial + coalesce(w.weight, 0)) INTO docnos, scores
        FROM unnest(docnos, scores) AS c(docno, partial)
        LEFT JOIN LATERAL (
            SELECT idfs[weak[i]] * p.tf / (p.tf + k1 * (1 - b + b * p.doc_len / avgdl)) AS weight
            FROM {postings} p WHERE p.term_id = term_ids[weak[i]] AND p.docno = c.docno
        ) w ON true
        WHERE c.partial + coalesce(w.weight, 0)
              + (SELECT coalesce(sum(bounds[o]), 0) FROM unnest(weak[i + 1:]) AS o) >= kth;
    END LOOP;
    RETURN QUERY SELECT c.docno, c.score FROM unnest(docnos, scores) AS c(docno, score)
                 ORDER BY round(c.score * 1e9) DESC, c.docno LIMIT k;
END
$body$;
"""

# The native scorer, from a library file on the server's machine (see bm25_native_scorer.py).
_SCAN_FUNCTION = """
CREATE OR REPLACE FUNCTION {scan}(blocks integer[], lists bytea[], idfs float8[], k integer, k1 float8, b float8,
                                  avgdl float8, block_size integer)
RETURNS float8[] LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS {library}, {symbol}
"""

# The same search as _TOP_FUNCTION, same signature and result, scoring every posting of the question's terms in C.
_NATIVE_TOP_FUNCTION = """
CREATE OR REPLACE FUNCTION {top}(term_ids integer[], idfs float8[], k integer, k1 float8, b float8,
                                 probe_postings integer DEFAULT 5000)
RETURNS TABLE (docno bigint, score float8) LANGUAGE sql STABLE AS $body$
SELECT (r.hits[2 * i - 1])::bigint, r.hits[2 * i]
FROM (SELECT {scan}(array_agg(bl.block ORDER BY bl.block, q.ord), array_agg(bl.postings ORDER BY bl.block, q.ord),
                    array_agg(q.idf ORDER BY bl.block, q.ord), k, k1, b,
                    (SELECT greatest(total_len::float8 / greatest(doc_count, 1), 1) FROM {stats}),
                    {block_size}) AS hits
      FROM unnest(term_ids, idfs) WITH ORDINALITY AS q(term_id, idf, ord)
      JOIN {blocks} bl ON bl.term_id = q.term_id) r,
     generate_series(1, coalesce(array_length(r.hits, 1), 0) / 2) AS i
ORDER BY i
$body$;
"""

_DROP_SCAN = "DROP FUNCTION IF EXISTS {scan}(integer[], bytea[], float8[], integer, float8, float8, float8, integer)"

_TRIGGERS = {
    "insert": "AFTER INSERT ON {chunks} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT",
    "update": "AFTER UPDATE ON {chunks} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT",
    "delete": "AFTER DELETE ON {chunks} REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT",
    "truncate": "AFTER TRUNCATE ON {chunks} FOR EACH STATEMENT",
}


def ensure_bm25_index(connection: psycopg.Connection, tables: BM25Tables) -> bool:
    """Install the side tables and triggers if missing, and rebuild the index if it does not match the table.

    Runs in one transaction holding a lock that keeps writers out meanwhile. Returns True if it rebuilt.
    """
    with connection.transaction():
        connection.execute(tables.format("LOCK TABLE {chunks} IN SHARE ROW EXCLUSIVE MODE"))
        connection.execute(tables.format(_CREATE_TABLES))
        had_blocks = _exists(connection, tables, "blocks")
        native = _install_native_scan(connection, tables)
        if native:
            connection.execute(tables.format(_CREATE_BLOCKS))
        else:  # no longer kept in step, so no longer trusted
            connection.execute(tables.format("DROP TABLE IF EXISTS {blocks}"))
            connection.execute(tables.format(_DROP_SCAN))
        connection.execute(_trigger_function(tables, native))
        missing = [event for event in _TRIGGERS if not _trigger_exists(connection, tables, event)]
        for event in missing:
            connection.execute(tables.format(
                "CREATE TRIGGER {trigger} " + _TRIGGERS[event] + " EXECUTE FUNCTION {function}()",
                trigger=tables.trigger(event),
            ))
        connection.execute(tables.format(_NATIVE_TOP_FUNCTION if native else _TOP_FUNCTION))
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
            connection.execute(tables.format(_ADD_ROWS, source=tables.chunks))
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
    return connection.execute(tables.format(_BLOCKS_IN_STEP)).fetchone()[0]


def _trigger_function(tables: BM25Tables, native: bool) -> sql.Composed:
    """The trigger function, with the upkeep of the packed blocks when the native scorer reads them."""
    nothing = sql.SQL("")
    return tables.format(
        _TRIGGER_FUNCTION,
        remove_old=tables.format(_REMOVE_ROWS, source=sql.Identifier("old_rows")),
        add_new=tables.format(_ADD_ROWS, source=sql.Identifier("new_rows")),
        truncate_blocks=tables.format("TRUNCATE {blocks};") if native else nothing,
        touched_old=tables.format(_TOUCHED, source=sql.Identifier("old_rows")) if native else nothing,
        touched_new=tables.format(_TOUCHED, source=sql.Identifier("new_rows")) if native else nothing,
        repack=tables.format(_REPACK) if native else nothing,
    )


def _fill_blocks(connection: psycopg.Connection, tables: BM25Tables) -> None:
    # One sort of every posting: with the default 4 MB it would spill to disk many times over.
    connection.execute("SET LOCAL work_mem = '256MB'")
    connection.execute(tables.format(_FILL_BLOCKS))
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
                connection.execute(tables.format(_SCAN_FUNCTION, library=sql.Literal(library),
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
            and all(_trigger_exists(connection, tables, event) for event in _TRIGGERS))


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
        for event in _TRIGGERS:
            if connection.execute("SELECT to_regclass(%s)", (f'"{tables.schema}"."{tables.table}"',)).fetchone()[0]:
                connection.execute(tables.format("DROP TRIGGER IF EXISTS {trigger} ON {chunks}",
                                                 trigger=tables.trigger(event)))
        connection.execute(tables.format("DROP FUNCTION IF EXISTS {function}()"))
        connection.execute(tables.format("DROP FUNCTION IF EXISTS {top}(integer[], float8[], integer, float8, float8, "
                                         "integer)"))
        connection.execute(tables.format(_DROP_SCAN))
        connection.execute(tables.format("DROP TABLE IF EXISTS {terms}, {docs}, {postings}, {stats}, {blocks}"))
