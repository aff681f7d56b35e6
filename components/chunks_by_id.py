"""Fetches chunks by id, so that a follow-up question can offer the chunks cited earlier to the answer."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore


@component
class ChunksById:
    """
    Returns the chunks with the given ids from a `PgvectorDocumentStore`, in the order the ids were given.

    The stock `FilterRetriever` would return the whole table when it gets no filters, which is what an empty
    list of ids would amount to; this returns nothing instead.

    Usage:
    ```python
    from pmc_rag.components.chunks_by_id import ChunksById

    carried = ChunksById(document_store=store)
    carried.run(chunk_ids=["3f1c..."])  # {"documents": [Document(id="3f1c...", ...)]}
    ```
    """

    def __init__(self, *, document_store: PgvectorDocumentStore, max_chunks: int = 10):
        """
        :param document_store: The store the chunks live in.
        :param max_chunks: At most this many of the given ids are fetched (the first ones).
        """
        self.document_store = document_store
        self.max_chunks = max_chunks

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict(), max_chunks=self.max_chunks)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunksById:
        data = {**data, "init_parameters": dict(data["init_parameters"])}
        data["init_parameters"]["document_store"] = PgvectorDocumentStore.from_dict(
            data["init_parameters"]["document_store"])
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, chunk_ids: list[str] | None = None) -> dict[str, Any]:
        """
        :param chunk_ids: Ids of chunks to fetch; none or an empty list gives no documents.
        :returns: `documents`: the chunks found, in the order of `chunk_ids` (missing ids are skipped).
        """
        wanted = list(dict.fromkeys(chunk_ids or []))[: self.max_chunks]
        if not wanted:
            return {"documents": []}
        found = {d.id: d for d in self.document_store.filter_documents(
            {"field": "id", "operator": "in", "value": wanted})}
        return {"documents": [found[i] for i in wanted if i in found]}
