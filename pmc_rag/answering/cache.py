"""Answers to repeated questions, kept until the corpus changes."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

import psycopg

from pmc_rag.components.answer import Answer
from pmc_rag.components.bm25_index import BM25Tables, corpus_generation
from pmc_rag.components.store_connection import run_reconnecting


class AnswerCache:
    """
    A least-recently-used map from (endpoint, question, filters, top_k) to an answer, valid for one corpus
    generation: every write to the chunk table bumps the generation (a counter the BM25 index's triggers keep),
    so an answer cached before an ingestion is never served after it.

    Usage:
    ```python
    cache = AnswerCache(conn_str, retriever.tables, max_entries=1000)
    key = cache.key("rag", question, filters, top_k)
    answer = cache.get(key) or cache.put(key, compute())
    ```
    """

    def __init__(self, connection_string: str, tables: BM25Tables, max_entries: int = 1000):
        self.connection_string = connection_string
        self.tables = tables
        self.max_entries = max_entries
        self._entries: OrderedDict[str, tuple[int, Answer]] = OrderedDict()  # frozen: shared safely
        self._lock = threading.Lock()
        self._connection: psycopg.Connection | None = None

    @staticmethod
    def key(endpoint: str, question: str, filters: dict[str, Any] | None, top_k: int | None) -> str:
        return json.dumps([endpoint, " ".join(question.lower().split()), filters, top_k], sort_keys=True)

    def generation(self) -> int:
        with self._lock:
            if self._connection is None or self._connection.closed or self._connection.broken:
                self._reconnect()
            return run_reconnecting(lambda: self._connection, self._reconnect,
                                    lambda connection: corpus_generation(connection, self.tables))

    def _reconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = psycopg.connect(self.connection_string, autocommit=True, connect_timeout=5)

    def get(self, key: str) -> Answer | None:
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or entry[0] != self.generation():
            return None
        with self._lock:
            self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: str, answer: Answer, generation: int) -> None:
        with self._lock:
            self._entries[key] = (generation, answer)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
