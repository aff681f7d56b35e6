"""The SQL of the BM25 index (`bm25_index.py` describes it): its side tables, the triggers that keep them in step,
the native scorer's packed blocks, and the two searches (MaxScore in PL/pgSQL, and the C scan). Templates only:
`BM25Tables.format` fills in the table names, the language and the block size.

    from pmc_rag.components.bm25_index import BM25Tables
    from pmc_rag.components.bm25_sql import CREATE_TABLES

    connection.execute(BM25Tables("public", "pmc_chunks", "english").format(CREATE_TABLES))
"""

CREATE_TABLES = """
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
ADD_ROWS = """
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
REMOVE_ROWS = """
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


TRIGGER_FUNCTION = """
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
CREATE_BLOCKS = """
CREATE TABLE IF NOT EXISTS {blocks} (
    term_id integer NOT NULL, block integer NOT NULL, postings bytea NOT NULL, PRIMARY KEY (term_id, block));
-- stored uncompressed: scoring reads them without decompressing first
ALTER TABLE {blocks} ALTER COLUMN postings SET STORAGE EXTERNAL;
"""


PACKED = ("string_agg(int4send(((p.docno - p.docno / {block_size} * {block_size}) * 65536 + p.tf)::integer) "
           "|| int4send(p.doc_len), ''::bytea ORDER BY p.docno)")


FILL_BLOCKS = """
TRUNCATE {blocks};
INSERT INTO {blocks} (term_id, block, postings)
SELECT p.term_id, (p.docno / {block_size})::integer, """ + PACKED + """
FROM {postings} p GROUP BY p.term_id, p.docno / {block_size}
"""


FRESH_BLOCKS = ("SELECT p.term_id, (p.docno / {block_size})::integer AS block, " + PACKED + " AS postings "
                 "FROM {postings} p GROUP BY p.term_id, p.docno / {block_size}")


BLOCKS_IN_STEP = ("SELECT NOT EXISTS ((SELECT term_id, block, postings FROM {blocks} EXCEPT ALL " + FRESH_BLOCKS
                   + ") UNION ALL (" + FRESH_BLOCKS + " EXCEPT ALL SELECT term_id, block, postings FROM {blocks}))")


# Adds the (term, block) pairs of {source}'s chunks (which must still be in {docs}) to those to re-pack.
TOUCHED = """
SELECT touched_terms || coalesce(array_agg(x.term_id), '{{}}'), touched_blocks || coalesce(array_agg(x.block), '{{}}')
INTO touched_terms, touched_blocks
FROM (SELECT DISTINCT t.term_id, (d.docno / {block_size})::integer AS block
      FROM {source} s JOIN {docs} d ON d.doc_id = s.id,
           unnest(to_tsvector({language}::regconfig, coalesce(s.content, ''))) u JOIN {terms} t ON t.term = u.lexeme
     ) x;
"""


REPACK = """
DELETE FROM {blocks} k USING unnest(touched_terms, touched_blocks) AS x(term_id, block)
WHERE k.term_id = x.term_id AND k.block = x.block;
INSERT INTO {blocks} (term_id, block, postings)
SELECT x.term_id, x.block, """ + PACKED + """
FROM (SELECT DISTINCT * FROM unnest(touched_terms, touched_blocks) AS u(term_id, block)) x
JOIN {postings} p ON p.term_id = x.term_id AND p.docno >= x.block::bigint * {block_size}
                 AND p.docno < (x.block + 1)::bigint * {block_size}
GROUP BY x.term_id, x.block;
"""


# The k best chunks for the question terms `term_ids` (with their IDFs), exactly as scoring every posting would rank
# them: score descending (to 9 decimals, so that equal scores summed in another order stay equal), then docno. See the
# module docstring for the method.
TOP_FUNCTION = """
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
SCAN_FUNCTION = """
CREATE OR REPLACE FUNCTION {scan}(blocks integer[], lists bytea[], idfs float8[], k integer, k1 float8, b float8,
                                  avgdl float8, block_size integer)
RETURNS float8[] LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS {library}, {symbol}
"""


# The same search as TOP_FUNCTION, same signature and result, scoring every posting of the question's terms in C.
NATIVE_TOP_FUNCTION = """
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


DROP_SCAN = "DROP FUNCTION IF EXISTS {scan}(integer[], bytea[], float8[], integer, float8, float8, float8, integer)"


TRIGGERS = {
    "insert": "AFTER INSERT ON {chunks} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT",
    "update": "AFTER UPDATE ON {chunks} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT",
    "delete": "AFTER DELETE ON {chunks} REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT",
    "truncate": "AFTER TRUNCATE ON {chunks} FOR EACH STATEMENT",
}
