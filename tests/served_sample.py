"""The serving tests' shared set-up: the bundled sample in a table of their own and the app serving it in
process (FastAPI test client). A test module imports the fixtures it uses by name, `client` with `serve_config`
(which `client` needs); each module gets its own."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from conftest import LOCAL_BASE_URL, write_serve_config

QUESTION = "Is first-line erlotinib effective in advanced non-small cell lung cancer with EGFR mutations?"
TABLE = "serving_chunks"


@pytest.fixture(scope="module")
def serve_config(tmp_path_factory, pg_conn_str):
    from conftest import fill_table_with_pmc_sample, make_store

    fill_table_with_pmc_sample(TABLE)
    folder = tmp_path_factory.mktemp("serving")
    path = write_serve_config(TABLE, folder, server={"max_body_bytes": 4096, "max_question_chars": 300},
                              conversations={"retention_days": 1}, cache={"max_entries": 50},
                              uploads={"max_bytes": 400_000})
    yield path
    make_store(TABLE).delete_table()


@pytest.fixture(scope="module")
def client(serve_config):
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    with TestClient(build_app(load_serve_config(serve_config)), base_url=LOCAL_BASE_URL) as test_client:
        yield test_client


def chunk_count(pg_conn_str: str) -> int:
    with psycopg.connect(pg_conn_str) as connection:
        return connection.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]


def chat_body(*messages: str, **fields: Any) -> dict:
    return {"model": "rag", "messages": [{"role": "user", "content": text} for text in messages], **fields}
