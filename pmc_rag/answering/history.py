"""Conversations, their citation numbers, and the audit trail, in PostgreSQL.

Kept in the database rather than in process memory so that several server processes share them and a restart
loses nothing. Tables (created on first use, in the same database as the chunks):

- `pmc_rag_conversations`: one row per conversation, `updated_at` drives retention;
- `pmc_rag_turns`: each question (redacted), the standalone query it became, and the answer object;
- `pmc_rag_citation_numbers`: the number each cited paper has in the conversation, with the chunks cited,
  so that [1] in the first answer is [1] in the fifth;
- `pmc_rag_audit`: every request: endpoint, redacted question, status, model, timings, citations, flags.
"""

from __future__ import annotations

import secrets
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pmc_rag.components.answer import Answer
from pmc_rag.components.store_connection import open_pool

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pmc_rag_conversations (
    id text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS pmc_rag_conversations_updated ON pmc_rag_conversations (updated_at);
-- Whose conversation it is: the API key that started it, hashed ('' on a server without keys).
ALTER TABLE pmc_rag_conversations ADD COLUMN IF NOT EXISTS owner text NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS pmc_rag_turns (
    conversation_id text NOT NULL REFERENCES pmc_rag_conversations (id) ON DELETE CASCADE,
    turn integer NOT NULL, question text NOT NULL, standalone_query text NOT NULL, answer jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (conversation_id, turn));
CREATE TABLE IF NOT EXISTS pmc_rag_citation_numbers (
    conversation_id text NOT NULL REFERENCES pmc_rag_conversations (id) ON DELETE CASCADE,
    source_id text NOT NULL, number integer NOT NULL, chunk_ids text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (conversation_id, source_id), UNIQUE (conversation_id, number));
CREATE TABLE IF NOT EXISTS pmc_rag_audit (
    id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), endpoint text NOT NULL,
    conversation_id text, question text, status integer NOT NULL, model text, timings_ms jsonb,
    citations jsonb, flags jsonb);
"""


class UnknownConversation(LookupError):
    """A conversation id this caller cannot continue."""


@dataclass
class ConversationState:
    """What a new turn needs from the earlier ones."""

    conversation_id: str
    owner: str = ""                                             # see pmc_rag.answering.caller
    questions: list[str] = field(default_factory=list)          # standalone queries, oldest first
    numbers: dict[str, int] = field(default_factory=dict)       # source id -> citation number
    cited_chunk_ids: list[str] = field(default_factory=list)    # most recently cited first
    chunk_papers: dict[str, str] = field(default_factory=dict)  # cited chunk id -> its source id
    cited_per_turn: list[list[str]] = field(default_factory=list)  # source ids each turn cited, oldest first


class ConversationStore:
    """
    Reads and writes conversations and the audit trail.

    Usage:
    ```python
    store = ConversationStore(os.environ["PG_CONN_STR"], retention_days=30)
    state = ConversationState(store.new_id())            # a new conversation
    store.save_turn(state, "Is X safe?", "Is X safe?", answer)
    state = store.load(state.conversation_id)              # its next turn (UnknownConversation if not issued)
    ```
    """

    def __init__(self, connection_string: str, retention_days: float = 30):
        self.connection_string = connection_string
        self.retention_days = retention_days
        self._pool = open_pool(connection_string, 8, "pmc-rag conversations", vector_types=False)
        with self._connect() as connection:
            connection.execute(_SCHEMA)
        self.purge_expired()

    def _connect(self) -> AbstractContextManager[psycopg.Connection]:
        # Pooled: every request writes the audit trail, and opening a session each time cost more than the write.
        return self._pool.connection()

    def close(self) -> None:
        self._pool.close()

    @staticmethod
    def new_id() -> str:
        """An id only the server issues: 192 random bits, so ids cannot be guessed or collide between users."""
        return f"conv-{secrets.token_urlsafe(24)}"

    def purge_expired(self) -> int:
        with self._connect() as connection:
            return connection.execute(
                "DELETE FROM pmc_rag_conversations WHERE updated_at < now() - make_interval(secs => %s)",
                (self.retention_days * 86400,)).rowcount

    def load(self, conversation_id: str, owner: str = "") -> ConversationState:
        """The conversation's state.

        :raises UnknownConversation: No conversation has this id for this owner (never issued, expired, or
            started with another API key: the three are not told apart).
        """
        state = ConversationState(conversation_id, owner=owner)
        with self._connect() as connection:
            if not connection.execute("SELECT 1 FROM pmc_rag_conversations WHERE id = %s AND owner = %s",
                                      (conversation_id, owner)).fetchone():
                raise UnknownConversation(conversation_id)
            for query, cited in connection.execute(
                    "SELECT standalone_query, ARRAY(SELECT r ->> 'source_id' FROM jsonb_array_elements("
                    "coalesce(answer -> 'references', '[]')) r) FROM pmc_rag_turns WHERE conversation_id = %s "
                    "ORDER BY turn", (conversation_id,)):
                state.questions.append(query)
                state.cited_per_turn.append([c for c in cited if c])
            for source_id, number, chunk_ids in connection.execute(
                    "SELECT source_id, number, chunk_ids FROM pmc_rag_citation_numbers WHERE conversation_id = %s "
                    "ORDER BY number DESC", (conversation_id,)):
                state.numbers[source_id] = number
                state.cited_chunk_ids.extend(chunk_ids)
                state.chunk_papers.update(dict.fromkeys(chunk_ids, source_id))
        return state

    def save_turn(self, state: ConversationState, question: str, standalone_query: str,
                  answer: Answer) -> None:
        """Store the turn and any new citation numbers, in one transaction.

        The upsert of the conversation row locks it until commit, so turns of one conversation are numbered
        one after another even when two servers answer in it at once.
        """
        with self._connect() as connection, connection.transaction():
            connection.execute(
                "INSERT INTO pmc_rag_conversations (id, owner) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET "
                "updated_at = now()", (state.conversation_id, state.owner))
            turn = connection.execute(
                "SELECT coalesce(max(turn), 0) + 1 FROM pmc_rag_turns WHERE conversation_id = %s",
                (state.conversation_id,)).fetchone()[0]
            connection.execute(
                "INSERT INTO pmc_rag_turns (conversation_id, turn, question, standalone_query, answer) "
                "VALUES (%s, %s, %s, %s, %s)",
                (state.conversation_id, turn, question, standalone_query, Jsonb(answer.model_dump(mode="json"))))
            for reference in answer.references:
                connection.execute(
                    "INSERT INTO pmc_rag_citation_numbers (conversation_id, source_id, number, chunk_ids) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (conversation_id, source_id) DO UPDATE SET "
                    "chunk_ids = (SELECT array_agg(DISTINCT c) FROM unnest("
                    "pmc_rag_citation_numbers.chunk_ids || excluded.chunk_ids) c)",
                    (state.conversation_id, reference.source_id, reference.number,
                     [reference.chunk_id] if reference.chunk_id else []))

    def turns(self, conversation_id: str) -> list[dict[str, Any]]:
        with self._connect() as connection:
            return [{"turn": turn, "question": question, "answer": answer} for turn, question, answer in
                    connection.execute("SELECT turn, question, answer FROM pmc_rag_turns WHERE conversation_id = %s "
                                       "ORDER BY turn", (conversation_id,))]

    def audit(self, endpoint: str, question: str | None, status: int, answer: Answer | None = None,
              conversation_id: str | None = None, timings_ms: dict[str, float] | None = None) -> None:
        references = answer.references if answer else []
        citations = [{"number": r.number, "source_id": r.source_id} for r in references]
        with self._connect() as connection:
            connection.execute(
                "INSERT INTO pmc_rag_audit (endpoint, conversation_id, question, status, model, timings_ms, "
                "citations, flags) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (endpoint, conversation_id, question, status, answer.model if answer else None,
                 Jsonb(timings_ms or (answer.timings_ms if answer else {})), Jsonb(citations),
                 Jsonb(answer.flags if answer else {})))
