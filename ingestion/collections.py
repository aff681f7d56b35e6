"""Collections: the user's named sets of documents in the chunk table (`meta.collection`), listed and deleted,
and who may change and read the ones uploaded over HTTP.

Deleting goes through the chunk table, so the BM25 index's triggers take the chunks' terms out of its statistics
in the same transaction.

Uploads cannot touch what they did not add. A document's identity is (collection, the file's own id): an upload is
stored as its collection's own copy (`uploaded_copy`) under a citation id of its own, `doc:` and 16 hex digits of
the hash of both, without the PMCID, PMID or DOI the file claims (kept, marked unchecked, as `claimed_id`). So a
file that calls itself PMC4816447 can never replace the indexed PMC4816447, nor be cited as it, nor move a copy
out of another collection. Only `pmc-rag ingest` on the machine itself replaces corpus papers.

An uploaded collection belongs to the key that first uploaded into it (`<table>__collections`: owner, readers);
only that key may add to it, replace its documents or delete it, and it is read by its owner and the keys it names
as readers ("*": every key). Collections made by `pmc-rag ingest --collection` belong to the server: readable by
all, changed only on the machine.

Usage:
```python
from pmc_rag.pipelines import document_store_of, load_pipeline

store = document_store_of(load_pipeline("indexing"))
print(list_collections(store))          # [{"collection": "lab", "documents": 2, "chunks": 41}]
delete_collection(store, "lab")         # {"collection": "lab", "documents": 2, "chunks": 41}
```
"""

from __future__ import annotations

import hashlib
from typing import Any

from psycopg import sql

from pmc_rag.components.store_connection import connect
from pmc_rag.ingestion.article import Article
from pmc_rag.ingestion.documents import check_collection

EVERY_KEY = "*"  # as a reader: every key the server accepts


class CollectionRefused(Exception):
    """A key may not do this to a collection: `status` is the HTTP code (403, 404), the message says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def uploaded_copy(article: Article, collection: str, uploader: str) -> Article:
    """The article as collection `collection`'s own copy, uploaded by `uploader` (see the module's docstring)."""
    claimed = article.source_id
    article.claimed_id = claimed
    article.pmcid = article.pmid = article.doi = None  # not checked: no link to PubMed Central, PubMed or a DOI
    article.doc_id = "doc:" + hashlib.sha256(f"upload\0{collection}\0{claimed}".encode()).hexdigest()[:16]
    article.collection, article.uploaded_by = collection, uploader
    return article


def list_collections(store: Any, readable_by: str | None = None) -> list[dict[str, Any]]:
    """Each collection with its documents and chunks, by name; with `readable_by` (a key's owner id), only those
    that key may read, each saying whether it is the key's own (`yours`) and, if so, its readers."""
    with connect(store) as connection:
        if not _table_exists(connection, store):
            return []
        rows = connection.execute(sql.SQL(
            "SELECT meta->>'collection', count(DISTINCT meta->>'source_id'), count(*) FROM {} "
            "WHERE meta ? 'collection' GROUP BY 1 ORDER BY 1").format(_table(store))).fetchall()
        owners = _owners(connection, store)
    listed = []
    for name, documents, chunks in rows:
        entry: dict[str, Any] = {"collection": name, "documents": documents, "chunks": chunks}
        if readable_by is not None:
            owner, readers = owners.get(name, (None, []))
            if owner is not None and owner != readable_by and not {readable_by, EVERY_KEY} & set(readers):
                continue
            entry["uploaded"] = owner is not None
            entry["yours"] = owner == readable_by
            if entry["yours"]:
                entry["readers"] = readers
        listed.append(entry)
    return listed


def delete_collection(store: Any, name: str, owner: str | None = None) -> dict[str, Any]:
    """Delete every chunk of collection `name` (IngestError for a name that cannot be one); says how many. With
    `owner` (a key's owner id, over HTTP), only an uploaded collection of that key's: CollectionRefused otherwise."""
    check_collection(name)
    with connect(store) as connection:
        if not _table_exists(connection, store):
            return {"collection": name, "documents": 0, "chunks": 0}
        if owner is not None:
            _check_owner(connection, store, name, owner, "delete")
        rows = connection.execute(sql.SQL("DELETE FROM {} WHERE meta->>'collection' = %s RETURNING meta->>'source_id'")
                                  .format(_table(store)), (name,)).fetchall()
        if _owners_table_exists(connection, store):
            connection.execute(sql.SQL("DELETE FROM {} WHERE name = %s").format(_owners_table(store)), (name,))
    return {"collection": name, "documents": len({row[0] for row in rows}), "chunks": len(rows)}


def claim_collection(store: Any, name: str, owner: str) -> None:
    """Make `owner` the owner of collection `name` if no one is, so that it may upload into it; CollectionRefused
    when another key owns it or the server made it (`pmc-rag ingest --collection`)."""
    check_collection(name)
    with connect(store) as connection:
        _ensure_owners_table(connection, store)
        with connection.transaction():
            # One claim at a time, so two keys uploading into a new name at once cannot both own it.
            connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"collection:{name}",))
            current = _owners(connection, store).get(name)
            if current is None:
                if _has_chunks(connection, store, name):
                    raise CollectionRefused(403, f"collection {name!r} was made on the server (pmc-rag ingest "
                                                 "--collection) and cannot be changed over HTTP; upload into a "
                                                 "collection of another name")
                connection.execute(sql.SQL("INSERT INTO {} (name, owner) VALUES (%s, %s)")
                                   .format(_owners_table(store)), (name, owner))
            elif current[0] != owner:
                raise CollectionRefused(403, f"collection {name!r} belongs to another key; only its owner may add "
                                             "to it or change it (upload into a collection of another name)")


def set_readers(store: Any, name: str, owner: str, readers: list[str]) -> list[str]:
    """Let these keys (owner ids, as GET /whoami shows them; "*": every key) read collection `name` of `owner`'s;
    replaces the earlier list. CollectionRefused for a collection not `owner`'s."""
    check_collection(name)
    readers = sorted(set(readers))
    with connect(store) as connection:
        _check_owner(connection, store, name, owner, "share")
        connection.execute(sql.SQL("UPDATE {} SET readers = %s WHERE name = %s").format(_owners_table(store)),
                           (readers, name))
    return readers


def readable_uploads(store: Any, reader: str) -> list[str]:
    """The uploaded collections key `reader` may read: its own and those that name it (or every key) as reader."""
    with connect(store) as connection:
        if not _owners_table_exists(connection, store):
            return []
        rows = connection.execute(sql.SQL("SELECT name FROM {} WHERE owner = %s OR %s = ANY(readers) OR "
                                          "%s = ANY(readers) ORDER BY name").format(_owners_table(store)),
                                  (reader, reader, EVERY_KEY)).fetchall()
    return [row[0] for row in rows]


def _check_owner(connection: Any, store: Any, name: str, owner: str, what: str) -> None:
    current = _owners(connection, store).get(name) if _owners_table_exists(connection, store) else None
    if current is None:
        if _has_chunks(connection, store, name):
            raise CollectionRefused(403, f"collection {name!r} was made on the server (pmc-rag ingest --collection); "
                                         f"only `pmc-rag collections` on the server may {what} it")
        raise CollectionRefused(404, f"no collection {name!r}; GET /collections lists them")
    if current[0] != owner:
        readable = {owner, EVERY_KEY} & set(current[1])
        raise CollectionRefused(403 if readable else 404,
                                f"collection {name!r} belongs to another key; only its owner may {what} it"
                                if readable else f"no collection {name!r}; GET /collections lists them")


def _owners(connection: Any, store: Any) -> dict[str, tuple[str, list[str]]]:
    if not _owners_table_exists(connection, store):
        return {}
    rows = connection.execute(sql.SQL("SELECT name, owner, readers FROM {}").format(_owners_table(store))).fetchall()
    return {name: (owner, list(readers)) for name, owner, readers in rows}


def _has_chunks(connection: Any, store: Any, name: str) -> bool:
    return _table_exists(connection, store) and connection.execute(
        sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE meta->>'collection' = %s)").format(_table(store)),
        (name,)).fetchone()[0]


def _ensure_owners_table(connection: Any, store: Any) -> None:
    connection.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (name text PRIMARY KEY, owner text NOT NULL, "
                               "readers text[] NOT NULL DEFAULT '{{}}', created timestamptz NOT NULL DEFAULT now())")
                       .format(_owners_table(store)))


def _owners_table(store: Any) -> sql.Identifier:
    return sql.Identifier(store.schema_name, f"{store.table_name}__collections")


def _owners_table_exists(connection: Any, store: Any) -> bool:
    return _exists(connection, store.schema_name, f"{store.table_name}__collections")


def _table(store: Any) -> sql.Identifier:
    return sql.Identifier(store.schema_name, store.table_name)


def _table_exists(connection: Any, store: Any) -> bool:
    return _exists(connection, store.schema_name, store.table_name)


def _exists(connection: Any, schema: str, table: str) -> bool:
    return connection.execute("SELECT to_regclass(%s) IS NOT NULL", (f'"{schema}"."{table}"',)).fetchone()[0]
