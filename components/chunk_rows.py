"""A chunk table's row (id, content, meta, embedding, score) as a Haystack Document: for retrievers with own SQL."""

from __future__ import annotations

from typing import Any

from haystack import Document


def document_from_row(row: dict[str, Any]) -> Document:
    embedding = row["embedding"]
    return Document(
        id=row["id"], content=row["content"], meta=row["meta"] or {}, score=float(row["score"]),
        # pgvector's psycopg adapter gives a numpy array, or a `Vector` where the numpy loader is not registered
        embedding=None if embedding is None else
        embedding.to_list() if hasattr(embedding, "to_list") else [float(x) for x in embedding],
    )
