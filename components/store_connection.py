"""The connections components keep to their document store's database: the writer's and the BM25 retriever's.

`connect(store)` opens one as both want it (autocommit, pgvector's types registered). `open_pool(connection_string, size, name)` keeps
several for a component that requests run side by side (the server runs each request in a thread of its own: on
one shared connection their queries waited for each other). `run_pooled` runs work on one of them. pmc-rag's sessions with the embedded PostgreSQL end after a few seconds idle (so that a server asked to shut down
is not kept waiting by them), and any server may restart; a component that keeps a connection between runs then
holds one that fails on first use. `run_reconnecting` connects anew and runs the work once more in that case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool

T = TypeVar("T")


# Advisory lock key held while a store creates its table (bm25_index.py uses 1417, database.py 1418).
_CREATE_TABLE_LOCK = 1419


def create_store_table(document_store: Any, *then: sql.Composable) -> None:
    """Have the store create its table (and pgvector, and its indexes) if missing, then run `then`, holding a lock
    meanwhile: the stores' own `CREATE ... IF NOT EXISTS` fail with a duplicate key when two processes (two
    `pmc-rag ingest` on a new table, say) run them at the same moment."""
    url = document_store.connection_string.resolve_value() or ""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("SELECT pg_advisory_lock(%s, hashtext(%s))",
                           (_CREATE_TABLE_LOCK, f"{document_store.schema_name}.{document_store.table_name}"))
        document_store.count_documents()  # counting makes the store create what is missing
        for statement in then:
            connection.execute(statement)
    # closing the session released the lock


# A pooled connection is closed once idle this long: half the embedded server's idle_session_timeout
# (pmc_rag.embedded_postgres.IDLE_SESSION_S; tests/store/test_embedded_postgres.py keeps the two so), so the pool never
# hands out a session the server has ended.
POOL_MAX_IDLE_S = 5.0


def connect(document_store: Any) -> psycopg.Connection:
    """A connection to `document_store`'s database (a PgvectorDocumentStore): autocommit, vector type registered."""
    connection = psycopg.connect(document_store.connection_string.resolve_value() or "", autocommit=True)
    register_vector(connection)
    return connection


def open_pool(connection_string: str, max_size: int, application_name: str, vector_types: bool = True,
              settings: dict[str, Any] | None = None) -> ConnectionPool:
    """Up to `max_size` autocommit connections to `connection_string`, opened as needed, with pgvector's types
    registered if `vector_types` (the extension must exist) and the session `settings` (such as hnsw.ef_search)
    made; `application_name` names them in pg_stat_activity.
    A connection is checked before it is handed out (the embedded server ends sessions idle for a few seconds) and
    closed once idle a while, so no request gets a dead one."""
    return ConnectionPool(
        connection_string, min_size=0, max_size=max_size,
        kwargs={"autocommit": True, "application_name": application_name},
        configure=lambda connection: _configure(connection, vector_types, settings or {}),
        check=ConnectionPool.check_connection, max_idle=POOL_MAX_IDLE_S, timeout=10, num_workers=1, open=True,
        name=application_name)


def _configure(connection: psycopg.Connection, vector_types: bool, settings: dict[str, Any]) -> None:
    if vector_types:
        register_vector(connection)
    for name, value in settings.items():
        connection.execute("SELECT set_config(%s, %s, false)", (name, str(value)))


def run_pooled(pool: ConnectionPool, work: Callable[[psycopg.Connection], T]) -> T:
    """`work` on a connection of `pool`; once more on another if the session was lost meanwhile (a server
    restart): a transaction on a lost session was rolled back, so running it again is safe."""
    connection = None
    try:
        with pool.connection() as connection:
            return work(connection)
    except psycopg.OperationalError:  # PoolTimeout too: no connection could be made
        if connection is None or not (connection.closed or connection.broken):
            raise
    with pool.connection() as connection:  # the pool has dropped the broken one
        return work(connection)


def with_store_from_dict(data: dict[str, Any]) -> dict[str, Any]:
    """A retriever's serialized form with its `document_store` turned back into a PgvectorDocumentStore, for
    `from_dict` (the serialized input is left as it was)."""
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    params = dict(data["init_parameters"])
    params["document_store"] = PgvectorDocumentStore.from_dict(params["document_store"])
    return {**data, "init_parameters": params}


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
