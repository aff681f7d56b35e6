"""The connection a component keeps to its document store's database, shared by the writer and the BM25 retriever.

`connect(store)` opens it as both want it (autocommit, pgvector's types registered). pmc-rag's sessions with the embedded PostgreSQL end after a few seconds idle (so that a server asked to shut down
is not kept waiting by them), and any server may restart; a component that keeps a connection between runs then
holds one that fails on first use. `run_reconnecting` connects anew and runs the work once more in that case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from pgvector.psycopg import register_vector

T = TypeVar("T")


def connect(document_store: Any) -> psycopg.Connection:
    """A connection to `document_store`'s database (a PgvectorDocumentStore): autocommit, vector type registered."""
    connection = psycopg.connect(document_store.connection_string.resolve_value() or "", autocommit=True)
    register_vector(connection)
    return connection


def on_primary(document_store: Any) -> Any:
    """`document_store` itself if it connects through PG_CONN_STR (the primary), else a copy that does: schema
    changes (installing the BM25 index) cannot run on a read replica."""
    data = document_store.to_dict()
    secret = data["init_parameters"].get("connection_string") or {}
    if secret.get("env_vars", ["PG_CONN_STR"])[0] == "PG_CONN_STR":
        return document_store
    data["init_parameters"]["connection_string"] = {"type": "env_var", "env_vars": ["PG_CONN_STR"], "strict": True}
    return type(document_store).from_dict(data)


def run_reconnecting(connection: Callable[[], psycopg.Connection], reconnect: Callable[[], None],
                     work: Callable[[psycopg.Connection], T]) -> T:
    """
    `work(connection())`; if it fails because the session is gone, `reconnect()` and run `work` once more. A
    transaction on a lost session was rolled back by the server, so running it again is safe. Errors on a live
    session (a bad statement, a timeout) are raised as they are.

    Usage:
    ```python
    rows = run_reconnecting(lambda: self._connection, self._reconnect,
                            lambda c: c.execute("SELECT id FROM chunks LIMIT 5").fetchall())
    ```
    """
    current = connection()
    try:
        return work(current)
    except psycopg.OperationalError:
        if not (current.closed or current.broken):
            raise
    reconnect()
    return work(connection())
