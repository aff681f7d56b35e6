"""Collections: the user's named sets of documents in the chunk table (`meta.collection`), listed and deleted.

Deleting goes through the chunk table, so the BM25 index's triggers take the chunks' terms out of its statistics
in the same transaction.

Usage:
```python
from pmc_rag.pipelines import document_store_of, load_pipeline

store = document_store_of(load_pipeline("indexing"))
print(list_collections(store))          # [{"collection": "lab", "documents": 2, "chunks": 41}]
delete_collection(store, "lab")         # {"collection": "lab", "documents": 2, "chunks": 41}
```
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from pmc_rag.components.store_connection import connect
from pmc_rag.ingestion.documents import check_collection


def list_collections(store: Any) -> list[dict[str, Any]]:
    """Each collection with its documents and chunks, by name."""
    with connect(store) as connection:
        if not _table_exists(connection, store):
            return []
        rows = connection.execute(sql.SQL(
            "SELECT meta->>'collection', count(DISTINCT meta->>'source_id'), count(*) FROM {} "
            "WHERE meta ? 'collection' GROUP BY 1 ORDER BY 1").format(_table(store))).fetchall()
    return [{"collection": name, "documents": documents, "chunks": chunks} for name, documents, chunks in rows]


def delete_collection(store: Any, name: str) -> dict[str, Any]:
    """Delete every chunk of collection `name` (IngestError for a name that cannot be one); says how many."""
    check_collection(name)
    with connect(store) as connection:
        if not _table_exists(connection, store):
            return {"collection": name, "documents": 0, "chunks": 0}
        rows = connection.execute(sql.SQL("DELETE FROM {} WHERE meta->>'collection' = %s RETURNING meta->>'source_id'")
                                  .format(_table(store)), (name,)).fetchall()
    return {"collection": name, "documents": len({row[0] for row in rows}), "chunks": len(rows)}


def _table(store: Any) -> sql.Identifier:
    return sql.Identifier(store.schema_name, store.table_name)


def _table_exists(connection: Any, store: Any) -> bool:
    return connection.execute("SELECT to_regclass(%s) IS NOT NULL",
                              (f'"{store.schema_name}"."{store.table_name}"',)).fetchone()[0]
