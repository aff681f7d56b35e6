"""The embedded PostgreSQL's life cycle, with real servers, real processes and real signals: no server is left
behind by a user killed with -9; a server sent SIGTERM under `pmc-rag serve` comes back without a 500; a shutdown
held up by a session is named, not reported as "."; sessions the server closed are reopened."""

from __future__ import annotations

import pytest

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import psycopg
import yaml
from haystack import Document

from conftest import PROJECT_ROOT, free_port

pytestmark = pytest.mark.integration  # PostgreSQL restarts, kills and signals

UNIT = [0.0] * 383 + [1.0]


def embedded_env(home: Path) -> dict[str, str]:
    env = {**os.environ, "PMC_RAG_HOME": str(home)}
    env.pop("PG_CONN_STR", None)  # the session's test database is not the one under test
    return env


def postmaster_pid(home: Path, within: float = 60) -> int:
    pid_file = home / "pgdata" / "postmaster.pid"
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text().split()[0])
        time.sleep(0.2)
    raise AssertionError("the embedded PostgreSQL did not start")


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.2)
    return False


def test_pooled_connections_close_before_the_server_ends_their_idle_sessions():
    from pmc_rag.components.store_connection import POOL_MAX_IDLE_S
    from pmc_rag.embedded_postgres import IDLE_SESSION_S

    assert POOL_MAX_IDLE_S == IDLE_SESSION_S / 2


def test_a_user_killed_with_kill_9_leaves_no_postgres_behind(tmp_path):
    user = subprocess.Popen(
        [sys.executable, "-c", "import time; from pmc_rag.database import ensure_database; ensure_database(); "
                               "print('ready', flush=True); time.sleep(600)"],
        cwd=PROJECT_ROOT, env=embedded_env(tmp_path), stdout=subprocess.PIPE, text=True)
    try:
        assert user.stdout.readline().strip() == "ready"
        postgres = postmaster_pid(tmp_path)
        user.kill()
        user.wait()
        assert gone_within(postgres, 20), "postgres outlived its only user"
    finally:
        user.kill()


def test_a_shutdown_held_up_by_a_session_is_named_with_its_cause(tmp_path):
    env = embedded_env(tmp_path)
    status = [sys.executable, "-c", "import sys, pmc_rag.embedded_postgres as pg; pg.SHUTDOWN_WAIT_S = 3; "
                                    "from pmc_rag.cli import main; sys.exit(main(['status']))"]
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time, psycopg; from pmc_rag.database import ensure_database; "
                               "ensure_database(); print('ready', flush=True); time.sleep(600)"],
        cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        postgres = postmaster_pid(tmp_path)
        # A session that is not pmc-rag's (no idle timeout), as a psql left open would be.
        foreign = psycopg.connect(f"postgresql://postgres@/postgres?host={tmp_path / 'pgdata'}", autocommit=True)
        os.kill(postgres, signal.SIGTERM)
        held = subprocess.run(status, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert held.returncode != 0
        message = held.stderr + held.stdout
        assert "shutting down" in message and "1 open session" in message and f"kill -INT {postgres}" in message
        assert ": ." not in message
        foreign.close()  # the shutdown finishes; the next start starts a fresh server
        assert gone_within(postgres, 20)
        again = subprocess.run(status, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
    finally:
        holder.kill()


def test_sigterm_to_the_embedded_postgres_under_a_running_server_is_503s_then_answers_never_a_500(tmp_path):
    config = {"server": {"host": "127.0.0.1"}, "endpoints": [
        {"name": "retrieve", "pipeline": str(PROJECT_ROOT / "pipelines" / "retrieve_hybrid.yml"),
         "kind": "retrieval", "rest": True, "chat": False}]}
    path = tmp_path / "hayhooks.yml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    log = open(tmp_path / "serve.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "pmc_rag.cli", "serve", "--config", str(path), "--port",
                               str(port)], cwd=PROJECT_ROOT, env=embedded_env(tmp_path / "home"), stdout=log,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/retrieve/run"
    question = {"question": "Is erlotinib effective in EGFR-mutant lung cancer?"}
    try:
        deadline = time.monotonic() + 240
        while True:
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            try:
                if httpx.post(url, json=question, timeout=30).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        # `pmc-rag serve` gives each request's model work one thread (server.torch_threads' default).
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=30).json()["torch_threads"] == 1
        postgres = postmaster_pid(tmp_path / "home")
        os.kill(postgres, signal.SIGTERM)
        statuses: list[int] = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # steady requests: sessions in use hold a smart shutdown up
            response = httpx.post(url, json=question, timeout=30)
            statuses.append(response.status_code)
            if response.status_code == 503:
                assert "database" in response.json()["detail"]
            if response.status_code == 200 and not psutil.pid_exists(postgres):
                break
            time.sleep(0.5)
        assert statuses[-1] == 200, f"never answered again: {statuses[-10:]}"
        assert set(statuses) <= {200, 503}, statuses
        assert postmaster_pid(tmp_path / "home") != postgres
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    assert "made it a fast shutdown" in (tmp_path / "serve.log").read_text()


def test_a_retriever_whose_session_the_server_closed_reconnects(store, pg_conn_str):
    from pmc_rag.components.article_writer import ArticleWriter
    from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever

    ArticleWriter(document_store=store).run(documents=[Document(id="a", content="erlotinib in lung cancer",
                                                                embedding=UNIT, meta={"source_id": "PMC1"})])
    retriever = PgvectorBM25Retriever(document_store=store, top_k=3)
    retriever.warm_up()
    with psycopg.connect(pg_conn_str, autocommit=True) as admin:  # as an idle timeout or a restart would
        assert admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE application_name = 'pmc-rag bm25'").fetchone()[0] >= 1
    assert [d.id for d in retriever.run("erlotinib")["documents"]] == ["a"]
