"""What the serving tests share besides their fixtures (`serve_config`, `client`: tests/conftest.py): the question
they ask, the table the app serves, and the requests they send."""

from __future__ import annotations

from typing import Any

import psycopg

from conftest import SERVING_TABLE

QUESTION = "Is first-line erlotinib effective in advanced non-small cell lung cancer with EGFR mutations?"
TABLE = SERVING_TABLE


def chunk_count(pg_conn_str: str) -> int:
    with psycopg.connect(pg_conn_str) as connection:
        return connection.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]


def chat_body(*messages: str, **fields: Any) -> dict:
    return {"model": "rag", "messages": [{"role": "user", "content": text} for text in messages], **fields}
