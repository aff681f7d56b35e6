"""Nearest-neighbour retrieval from a pgvector table that requests running side by side can share."""

from __future__ import annotations

from typing import Any

import psycopg
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
from pgvector import Vector
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pmc_rag.components.chunk_rows import document_from_row
from pmc_rag.components.sql_filters import filter_condition
from pmc_rag.components.store_connection import open_pool, run_pooled, with_store_from_dict

# pgvector's distance operator per similarity, and the score the stock retriever reports for it.
_DISTANCES = {
    "cosine_similarity": ("<=>", "1 - ({distance})"),
    "inner_product": ("<#>", "({distance}) * -1"),
    "l2_distance": ("<->", "{distance}"),
}
_CONNECTIONS = 8  # sessions for requests running side by side


@component
class PgvectorPooledEmbeddingRetriever:
    """
    Retrieves the chunks nearest a query embedding from a `PgvectorDocumentStore`'s table, like Haystack's
    `PgvectorEmbeddingRetriever` (same inputs, outputs, scores and filters), but safe and fast when requests run in
    parallel threads, as they do in `pmc-rag serve`.

    The stock store runs every query on one connection and one shared cursor: concurrent requests queue behind each
    other, and when that connection has to be replaced (the embedded server ends sessions idle for a few seconds)
    one request can close it under another, which then fails. This retriever takes a session from a small pool for
    each run. With `return_embedding: false` it also leaves the vectors in the database, for pipelines that never
    read them (384 floats a chunk to send, parse and copy between components).

    Usage:
    ```python
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    store = PgvectorDocumentStore(table_name="pmc_chunks", embedding_dimension=384, search_strategy="hnsw")
    retriever = PgvectorPooledEmbeddingRetriever(document_store=store, top_k=20, return_embedding=False)
    chunks = retriever.run(query_embedding=[0.1] * 384)["documents"]
    ```
    """

    def __init__(self, document_store: PgvectorDocumentStore, filters: dict[str, Any] | None = None, top_k: int = 10,
                 vector_function: str | None = None, filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
                 return_embedding: bool = True):
        """
        :param document_store: The store whose table is searched (its connection string, table, similarity and
            `hnsw_ef_search` are used).
        :param filters: Filters applied to every query (Haystack filter syntax on `meta.*`).
        :param top_k: How many chunks to return.
        :param vector_function: "cosine_similarity", "inner_product" or "l2_distance"; the store's if not given.
        :param filter_policy: How run-time filters combine with `filters`: "replace" or "merge".
        :param return_embedding: Also return each chunk's embedding.
        """
        if not isinstance(document_store, PgvectorDocumentStore):
            raise ValueError(f"document_store must be a PgvectorDocumentStore, got {type(document_store).__name__}")
        vector_function = vector_function or document_store.vector_function
        if vector_function not in _DISTANCES:
            raise ValueError(f"vector_function must be one of {sorted(_DISTANCES)}, got {vector_function!r}")
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.vector_function = vector_function
        self.filter_policy = FilterPolicy.from_str(filter_policy) if isinstance(filter_policy, str) else filter_policy
        self.return_embedding = return_embedding
        self._pool: ConnectionPool | None = None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, document_store=self.document_store.to_dict(), filters=self.filters, top_k=self.top_k,
            vector_function=self.vector_function, filter_policy=self.filter_policy.value,
            return_embedding=self.return_embedding)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PgvectorPooledEmbeddingRetriever:
        return default_from_dict(cls, with_store_from_dict(data))

    def warm_up(self) -> None:
        """Open the pool (sessions are made as requests need them)."""
        if self._pool is None:
            store = self.document_store
            settings = {"hnsw.ef_search": store.hnsw_ef_search} if store.hnsw_ef_search else {}
            self._pool = open_pool(store.connection_string.resolve_value() or "", _CONNECTIONS,
                                   "pmc-rag semantic", settings=settings)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @component.output_types(documents=list[Document])
    def run(self, query_embedding: list[float], filters: dict[str, Any] | None = None,
            top_k: int | None = None) -> dict[str, list[Document]]:
        """
        :param query_embedding: The query's embedding (the store's dimension).
        :param filters: Filters for this query, combined with the init filters by `filter_policy`.
        :param top_k: How many chunks to return (defaults to the init value).
        :returns: `documents`: the nearest chunks, nearest first, with their similarity in `score`.
        """
        if len(query_embedding) != self.document_store.embedding_dimension:
            raise ValueError(f"query_embedding has {len(query_embedding)} dimensions; the store has "
                             f"{self.document_store.embedding_dimension}")
        self.warm_up()
        filters = apply_filter_policy(self.filter_policy, self.filters, filters)
        operator, score = _DISTANCES[self.vector_function]
        distance = sql.SQL("embedding " + operator + " %s")
        where, params = sql.SQL(""), []
        if filters:
            condition, params = filter_condition(filters)
            where = sql.SQL(" WHERE ") + condition
        query = sql.SQL("SELECT id, content, meta, {embedding}, {score} AS score FROM {table}{where} "
                        "ORDER BY {distance} LIMIT {top_k}").format(
            embedding=sql.SQL("embedding" if self.return_embedding else "NULL::vector AS embedding"),
            score=sql.SQL(score).format(distance=distance), table=sql.Identifier(
                self.document_store.schema_name, self.document_store.table_name),
            where=where, distance=distance, top_k=sql.Literal(top_k or self.top_k))
        vector = Vector(query_embedding)
        values = [vector, *params, vector]  # in the order of the placeholders: score, filters, ORDER BY

        def search(connection: psycopg.Connection) -> list[dict[str, Any]]:
            with connection.cursor(row_factory=dict_row) as cursor:
                return cursor.execute(query, values).fetchall()

        return {"documents": [document_from_row(row) for row in run_pooled(self._pool, search)]}
