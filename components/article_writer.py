"""Writes chunks to pgvector so that each article is replaced whole, in one transaction."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.errors import DocumentStoreError
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
from psycopg import sql
from psycopg.types.json import Jsonb

from pmc_rag.components.bm25_index import BM25Tables, ensure_bm25_index, writer_lock
from pmc_rag.components.filter_statistics import ensure_filter_statistics
from pmc_rag.components.store_connection import connect, create_store_table, run_reconnecting

logger = logging.getLogger(__name__)


class EmbeddingDimensionError(DocumentStoreError):
    """The embeddings do not fit the table: the message says which YAML keys to change."""


@component
class ArticleWriter:
    """
    Writes embedded chunks to a `PgvectorDocumentStore` table, replacing each article's earlier chunks.

    For every article (`source_id`) in the input, all of its stored chunks are deleted and the new ones inserted
    in a single transaction: re-ingesting an article leaves no duplicates and no orphans, and an interrupted
    write leaves each article either fully stored or not stored at all. The stock `DocumentWriter` cannot do this
    (its delete and write are separate transactions, and it has no notion of an article).

    Before writing it checks the table's vector dimension against the store's `embedding_dimension` and the
    embeddings it is given, and fails with an `EmbeddingDimensionError` naming the setting to change.

    Usage:
    ```python
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
    from pmc_rag.components.article_writer import ArticleWriter

    writer = ArticleWriter(document_store=PgvectorDocumentStore(table_name="pmc_chunks", embedding_dimension=384))
    writer.run(documents=embedded_chunks)  # {"documents_written": 12, "documents_deleted": 0}
    ```
    """

    def __init__(self, *, document_store: PgvectorDocumentStore, source_id_field: str = "source_id"):
        """
        :param document_store: The pgvector store whose table receives the chunks (created if missing).
        :param source_id_field: The metadata field that names a chunk's article.
        """
        if not isinstance(document_store, PgvectorDocumentStore):
            raise ValueError(f"ArticleWriter needs a PgvectorDocumentStore, got {type(document_store).__name__}")
        self.document_store = document_store
        self.source_id_field = source_id_field
        self._connection: psycopg.Connection | None = None
        self._table_dimension: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, document_store=self.document_store.to_dict(), source_id_field=self.source_id_field
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArticleWriter:
        data = {**data, "init_parameters": dict(data["init_parameters"])}  # leave the caller's dict as it was
        params = data["init_parameters"]
        params["document_store"] = PgvectorDocumentStore.from_dict(params["document_store"])
        return default_from_dict(cls, data)

    @property
    def table(self) -> sql.Composed:
        return sql.SQL("{}.{}").format(
            sql.Identifier(self.document_store.schema_name), sql.Identifier(self.document_store.table_name)
        )

    def warm_up(self) -> None:
        """Connect, create the table if needed (through the store), index `source_id`, install the BM25 index
        (or rebuild it if it no longer matches the table), and check dimensions."""
        if self._connection is not None and not self._connection.closed:
            return
        index = sql.Identifier(f"{self.document_store.table_name}_source_id_idx")
        create_store_table(self.document_store, sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ((meta->>{}))").format(
            index, self.table, sql.Literal(self.source_id_field)))
        connection = connect(self.document_store)
        # Schema changes belong here, at indexing time: the BM25 index's triggers then keep it current.
        ensure_bm25_index(connection, BM25Tables.of(self.document_store))
        ensure_filter_statistics(connection, self.document_store.schema_name, self.document_store.table_name)
        self._table_dimension = self._read_table_dimension(connection)
        self._connection = connection
        self.check_dimension(self.document_store.embedding_dimension, "the store's `embedding_dimension`")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _read_table_dimension(self, connection: psycopg.Connection) -> int | None:
        row = connection.execute(
            "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = %s::regclass AND a.attname = 'embedding'",
            (f'"{self.document_store.schema_name}"."{self.document_store.table_name}"',),
        ).fetchone()
        return row[0] if row and row[0] > 0 else None

    def check_dimension(self, dimension: int, what: str) -> None:
        """An `EmbeddingDimensionError` when `dimension` is not the table's (a new table: no check)."""
        if self._table_dimension is None or dimension == self._table_dimension:
            return
        store = self.document_store
        raise EmbeddingDimensionError(
            f"Table {store.schema_name}.{store.table_name} holds {self._table_dimension}-dimensional embeddings, "
            f"but {what} is {dimension}. Models of different dimensions cannot share a table: in the pipeline "
            f"YAML, give `document_store.init_parameters.table_name` a new name and set `embedding_dimension: "
            f"{dimension}` (then re-ingest), or switch the embedder back to the model that built this table."
        )

    @component.output_types(documents_written=int, documents_deleted=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        """
        :param documents: Embedded chunks; each needs an embedding and `meta[source_id_field]`.
        :returns: `documents_written`: chunks inserted; `documents_deleted`: earlier chunks of the same articles
            that were removed.
        """
        if not documents:
            return {"documents_written": 0, "documents_deleted": 0}
        self.warm_up()
        rows = self._rows(documents)
        source_ids = sorted({meta[self.source_id_field] for _, _, _, meta in rows})
        return run_reconnecting(lambda: self._connection, self._reconnect,
                                lambda connection: self._replace(connection, rows, source_ids))

    def _reconnect(self) -> None:
        self.close()
        self.warm_up()

    def _replace(self, connection: psycopg.Connection, rows: list[tuple], source_ids: list[str]) -> dict[str, int]:
        """In one transaction: delete the articles' earlier chunks, copy the new ones in."""
        with connection.transaction(), connection.cursor() as cursor:
            writer_lock(connection, BM25Tables.of(self.document_store))
            cursor.execute(
                sql.SQL("DELETE FROM {} WHERE meta->>{} = ANY(%s)").format(
                    self.table, sql.Literal(self.source_id_field)
                ),
                (source_ids,),
            )
            deleted = cursor.rowcount
            copy_statement = sql.SQL("COPY {} (id, embedding, content, meta) FROM STDIN (FORMAT BINARY)")
            with cursor.copy(copy_statement.format(self.table)) as copy:
                copy.set_types(["varchar", "vector", "text", "jsonb"])
                for document_id, embedding, content, meta in rows:
                    copy.write_row((document_id, embedding, content, Jsonb(meta)))
        return {"documents_written": len(rows), "documents_deleted": deleted}

    def _rows(self, documents: list[Document]) -> list[tuple[str, Any, str, dict[str, Any]]]:
        """Validated rows, one per distinct id (a repeated id keeps its last version)."""
        rows: dict[str, tuple[str, Any, str, dict[str, Any]]] = {}
        for document in documents:
            if document.embedding is None:
                raise ValueError(f"document {document.id} has no embedding; put an embedder before the writer")
            if not document.meta.get(self.source_id_field):
                raise ValueError(f"document {document.id} has no meta['{self.source_id_field}']")
            self.check_dimension(len(document.embedding), "the embedder's output dimension")
            rows[document.id] = (document.id, list(document.embedding), document.content or "", document.meta)
        return list(rows.values())
