"""Okapi BM25 keyword retrieval over a pgvector table, inside PostgreSQL."""

from __future__ import annotations

import re
from typing import Any

import psycopg
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pmc_rag.components.bm25_index import BM25IndexMissing, BM25Tables, bm25_index_exists
from pmc_rag.components.chunk_rows import document_from_row
from pmc_rag.components.spellings import american_variants
from pmc_rag.components.sql_filters import filter_condition
from pmc_rag.components.store_connection import open_pool, run_pooled, with_store_from_dict

# Lucene's BM25: idf = ln(1 + (N - df + 0.5) / (df + 0.5)); a term adds idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)).
# Only the question's `max_query_terms` most informative terms (highest idf) are scored, which bounds the work
# for long questions; documents matching any of them are candidates (OR semantics).
_QUESTION_TERMS = """
WITH question AS (
    SELECT DISTINCT lexeme FROM unnest(to_tsvector({language}::regconfig, %s))
), scored_terms AS (
    SELECT t.term_id, ln(1 + ((SELECT doc_count FROM {stats})::float8 - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM question q JOIN {terms} t ON t.term = q.lexeme
    WHERE t.df > 0
    ORDER BY idf DESC, t.term_id
    LIMIT %s
)"""

# The k best by the pruned search (exact; see pmc_rag.components.bm25_index).
_TOP = _QUESTION_TERMS + """
SELECT top.docno, top.score FROM {top}(
    (SELECT array_agg(term_id ORDER BY idf DESC, term_id) FROM scored_terms),
    (SELECT array_agg(idf ORDER BY idf DESC, term_id) FROM scored_terms), %s, %s, %s) top
"""

# The same chunks fetched (and filtered) by docno, best first.
_FETCH = """
SELECT chunks.id, chunks.content, chunks.meta, {embedding} AS embedding, ranked.score
FROM unnest(%s::bigint[], %s::float8[]) AS ranked(docno, score)
JOIN {docs} d ON d.docno = ranked.docno
JOIN {chunks} chunks ON chunks.id = d.doc_id
WHERE true {filters}
ORDER BY round(ranked.score * 1e9) DESC, ranked.docno
LIMIT %s
"""

# Every posting of every question term scored: the reference the pruned search is checked against, and the
# last resort for filters that few chunks pass.
_EXHAUSTIVE = _QUESTION_TERMS + """, scores AS (
    -- The corpus statistics are scalar subqueries: evaluated once, and known to the planner as one row.
    SELECT p.docno, sum(s.idf * p.tf / (p.tf + %s * (1 - %s + %s * p.doc_len / (
               SELECT greatest(total_len::float8 / greatest(doc_count, 1), 1) FROM {stats})))) AS score
    FROM scored_terms s JOIN {postings} p ON p.term_id = s.term_id
    GROUP BY p.docno
)
-- Walk the scores best first, fetching (and filtering) one chunk at a time, so the scan stops at top_k hits.
SELECT chunk.id, chunk.content, chunk.meta, chunk.embedding, ranked.score
-- Ties: scores equal to 9 decimals are equal (the same sum in another order can differ in its last bits).
FROM (SELECT docno, score FROM scores ORDER BY round(score * 1e9) DESC, docno) ranked
CROSS JOIN LATERAL (
    SELECT chunks.id, chunks.content, chunks.meta, {embedding} AS embedding
    FROM {docs} d JOIN {chunks} chunks ON chunks.id = d.doc_id
    WHERE d.docno = ranked.docno {filters}
) chunk
ORDER BY round(ranked.score * 1e9) DESC, ranked.docno
LIMIT %s
"""

# With filters, the pruned search first asks for a quarter more than top_k (the pipelines' filters let nearly every
# chunk through, and every extra chunk asked for lowers the score to beat, so prunes less), then eight times more
# while too few pass, up to _MOST_CANDIDATES; past that, scoring everything is as cheap.
_FILTER_HEADROOM = 8
_MOST_CANDIDATES = 10_000
# Sessions one retriever keeps for requests running side by side (a request holds one for its three statements).
_CONNECTIONS = 8

# The question's words that no indexed chunk contains: a word is unknown when none of its lexemes is indexed (a
# hyphenated word such as "treatment-resistant" is known when its parts are). Stop words have no lexemes.
# Each question word with the share of chunks containing it (0: none does), in the question's order. A stemmed
# word can give several lexemes (a hyphenated word gives itself and its parts): it counts as known if any is, and
# as common as its most common one. Stop words give no lexeme and are left out.
_WORD_SHARES = """
SELECT words.word, COALESCE(max(t.df), 0)::float8 / greatest(max(s.doc_count), 1) AS share
FROM (
    SELECT DISTINCT ON (lower(word)) word, ord
    FROM regexp_split_to_table(%s, '[^[:alnum:]-]+') WITH ORDINALITY AS w(word, ord)
    WHERE word <> '' ORDER BY lower(word), ord
) words
CROSS JOIN LATERAL unnest(to_tsvector({language}::regconfig, words.word)) lexemes
LEFT JOIN {terms} t ON t.term = lexemes.lexeme AND t.df > 0
CROSS JOIN {stats} s
GROUP BY words.word, words.ord
ORDER BY words.ord
"""


@component
class PgvectorBM25Retriever:
    """
    Retrieves chunks from a `PgvectorDocumentStore` table ranked by Okapi BM25, computed in PostgreSQL.

    Unlike the stock `PgvectorKeywordRetriever` (every query word must match; `ts_rank_cd`, which has no
    IDF), a chunk matches if it shares any content term with the question, and ranking is true BM25 with
    `k1` and `b`. Stop words go and words are stemmed by PostgreSQL's text search configuration for the store's
    `language`, for chunks and questions alike. The index lives in side tables kept current by triggers (see
    `pmc_rag.components.bm25_index`), which the indexing pipeline's `ArticleWriter` installs. User text
    reaches SQL only as a bound parameter. Filters work as for the other pgvector retrievers.

    Usage:
    ```python
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
    from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever

    retriever = PgvectorBM25Retriever(document_store=PgvectorDocumentStore(table_name="pmc_chunks"), top_k=10)
    # (the table was filled through pipelines/indexing.yml, whose writer installed the BM25 index)
    retriever.warm_up()
    documents = retriever.run(query="Does metformin lower HbA1c in type 2 diabetes?")["documents"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: PgvectorDocumentStore,
        top_k: int = 10,
        k1: float = 1.2,
        b: float = 0.75,
        max_query_terms: int = 32,
        filters: dict[str, Any] | None = None,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
        exhaustive: bool = False,
    ):
        """
        :param document_store: The store whose table is searched (the one the indexing pipeline writes).
        :param top_k: How many chunks to return.
        :param k1: Term-frequency saturation: how quickly more occurrences of a term stop adding to the score.
        :param b: Length normalisation: 0 ignores chunk length, 1 normalises fully.
        :param max_query_terms: The most question terms scored (those with the highest IDF), so that very long
            questions stay fast.
        :param filters: Filters applied to every query (Haystack filter syntax on `meta.*`).
        :param filter_policy: How run-time filters combine with `filters`: "replace" or "merge".
        :param return_embedding: Also return each chunk's embedding.
        :param exhaustive: Score every posting of every question term instead of the pruned search. The results
            are the same (the pruned search is exact); this is the slow reference it is checked against.
        """
        if not isinstance(document_store, PgvectorDocumentStore):
            raise ValueError(f"document_store must be a PgvectorDocumentStore, got {type(document_store).__name__}")
        if top_k < 1 or max_query_terms < 1 or k1 < 0 or not 0 <= b <= 1:
            raise ValueError("need top_k >= 1, max_query_terms >= 1, k1 >= 0 and 0 <= b <= 1")
        self.document_store = document_store
        self.top_k = top_k
        self.k1 = k1
        self.b = b
        self.max_query_terms = max_query_terms
        self.filters = filters
        self.filter_policy = FilterPolicy.from_str(filter_policy) if isinstance(filter_policy, str) else filter_policy
        self.return_embedding = return_embedding
        self.exhaustive = exhaustive
        self._pool: ConnectionPool | None = None

    @property
    def tables(self) -> BM25Tables:
        return BM25Tables.of(self.document_store)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, document_store=self.document_store.to_dict(), top_k=self.top_k, k1=self.k1, b=self.b,
            max_query_terms=self.max_query_terms, filters=self.filters, filter_policy=self.filter_policy.value,
            return_embedding=self.return_embedding, exhaustive=self.exhaustive,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PgvectorBM25Retriever:
        return default_from_dict(cls, with_store_from_dict(data))

    def warm_up(self) -> None:
        """Connect, and check that the table has its BM25 index (installed at indexing time, never here: building
        it locks out writers, which a read path must not do).

        :raises BM25IndexMissing: When it has none; the message says how to install it.
        """
        if self._pool is not None:
            return
        pool = open_pool(self.document_store.connection_string.resolve_value() or "", _CONNECTIONS, "pmc-rag bm25")
        if not run_pooled(pool, lambda connection: bm25_index_exists(connection, self.tables)):
            pool.close()
            raise BM25IndexMissing(
                f"table {self.tables.schema}.{self.tables.table} has no BM25 index. It is installed when chunks are "
                "written through the indexing pipeline (pmc-rag ingest) and by `pmc-rag setup`; run one of them.")
        self._pool = pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @component.output_types(documents=list[Document], unknown_words=list[str], word_shares=dict[str, float])
    def run(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None) -> dict[str, Any]:
        """
        :param query: The question, in plain words.
        :param filters: Filters for this query, combined with the init filters by `filter_policy`.
        :param top_k: How many chunks to return (defaults to the init value).
        :returns: `documents`: chunks by descending BM25 score (in `Document.score`); `unknown_words`: the
            query's words that no indexed chunk contains (filters aside), in the query's order: a question about
            something the corpus never mentions (`RelevanceGate` reads them); `word_shares`: each of the query's
            words (stop words aside) with the share of indexed chunks that contain it, 0 to 1: how specific it is.
        """
        self.warm_up()
        filters = apply_filter_policy(self.filter_policy, self.filters, filters)
        top_k = top_k or self.top_k
        filter_clause: sql.Composable = sql.SQL("")
        where_params: list[Any] = []
        if filters:
            condition, where_params = filter_condition(filters, table_alias="chunks")
            filter_clause = sql.SQL(" AND ") + condition
        embedding = sql.SQL("chunks.embedding" if self.return_embedding else "NULL::vector")
        exhaustive = self.tables.format(_EXHAUSTIVE, filters=filter_clause, embedding=embedding)
        top, fetch = self.tables.format(_TOP), self.tables.format(_FETCH, filters=filter_clause, embedding=embedding)
        shares = self.tables.format(_WORD_SHARES)

        # A British spelling is searched with its American one ("haemodialysis hemodialysis"): the index keeps
        # them apart, and a word is unknown only when neither spelling is indexed.
        variants = american_variants(query)
        searched = " ".join([query, *variants.values()]) if variants else query

        def search(connection: psycopg.Connection) -> tuple[list[dict[str, Any]], dict[str, float]]:
            with connection.cursor(row_factory=dict_row) as cursor:
                rows = self._search(cursor, searched, top_k, filters, where_params, top, fetch, exhaustive)
                return rows, {row["word"]: row["share"] for row in cursor.execute(shares, (searched,)).fetchall()}

        rows, word_shares = run_pooled(self._pool, search)
        word_shares = _spellings_folded(word_shares, variants, query)
        return {"documents": [document_from_row(row) for row in rows],
                "unknown_words": [word for word, share in word_shares.items() if share == 0],
                "word_shares": word_shares}

    def _search(self, cursor: psycopg.Cursor, query: str, top_k: int, filters: dict[str, Any] | None,
                where_params: list[Any], top: sql.Composed, fetch: sql.Composed,
                exhaustive: sql.Composed) -> list[dict[str, Any]]:
        """The top_k chunks passing the filters. The pruned search finds the best `wanted` chunks; with filters,
        `wanted` grows until top_k of them pass (then they are the top_k of the chunks that pass, since every other
        chunk scores lower) or the search returned every match."""
        wanted = top_k + (top_k + 3) // 4 if filters else top_k
        while not self.exhaustive and wanted <= max(_MOST_CANDIDATES, top_k):
            ranked = cursor.execute(top, (query, self.max_query_terms, wanted, self.k1, self.b)).fetchall()
            docnos, scores = [r["docno"] for r in ranked], [r["score"] for r in ranked]
            rows = cursor.execute(fetch, (docnos, scores, *where_params, top_k)).fetchall()
            if len(rows) == top_k or len(ranked) < wanted:
                return rows
            wanted *= _FILTER_HEADROOM
        return cursor.execute(exhaustive, (query, self.max_query_terms, self.k1, self.b, self.b, *where_params,
                                           top_k)).fetchall()


def _spellings_folded(word_shares: dict[str, float], variants: dict[str, str], query: str) -> dict[str, float]:
    """The query's words with their shares, each British spelling as common as its American one if that is more
    common; the American spellings added to the search are left out unless the query has them too."""
    found = {word.lower(): word for word in word_shares}
    asked = {word.lower() for word in re.findall(r"[^\W_]+", query)}
    folded = dict(word_shares)
    for british, american in variants.items():
        added = found.get(american)
        if added is None:
            continue
        if british in found:
            folded[found[british]] = max(folded[found[british]], word_shares[added])
        if american not in asked:
            folded.pop(added, None)
    return folded
