"""The Hayhooks pipeline wrappers behind each endpoint of hayhooks.yml: thin adapters that parse requests and
render replies (the answering itself is pmc_rag.answering.service's).

`pmc-rag serve` writes, for each endpoint, a folder with a two-line `pipeline_wrapper.py` that subclasses
`AnswerEndpoint` or `RetrievalEndpoint` and names the endpoint; Hayhooks loads those folders (in durable mode:
one after another, all or nothing, no code-deployment routes). `setup()` loads the endpoint's pipeline YAML and
warms its models up, so the port opens only once every model is ready.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import re
import threading
import time
from collections.abc import Generator
from typing import Annotated, Any

from fastapi import HTTPException
from hayhooks import BasePipelineWrapper
from pydantic import BaseModel, Field
from starlette.datastructures import Headers

from pmc_rag.components.answer import Answer
from pmc_rag.components.bm25_index import BM25Tables, install_bm25_index
from pmc_rag.components.filter_statistics import ensure_filter_statistics
from pmc_rag.components.store_connection import connect, on_primary
from pmc_rag.answering.service import AnswerService, narrowed, to_haystack_filters, unavailable
from pmc_rag.database import ensure_database
from pmc_rag.pipelines import document_store_of, load_declared_pipeline
from pmc_rag.answering.refusals import AnswerStopped, Refused
from pmc_rag.serving.access import access_filter, names_collections
from pmc_rag.answering.answer_slots import AnswerSlots
from pmc_rag.answering.cache import AnswerCache
from pmc_rag.answering.caller import current_lifetime, current_request_id, internal_error_detail
from pmc_rag.serving.config import ServeConfig
from pmc_rag.answering.conversation import cited_per_turn_from_history, numbers_from_history, standalone_query
from pmc_rag.answering.guards import SearchFilters, clean_question, redact_personal_data
from pmc_rag.answering.history import ConversationStore
from pmc_rag.serving.http_errors import refusals_as_http
from pmc_rag.serving.open_webui import source_events, wants_source_events
from pmc_rag.answering.streaming import AnswerProgress

log = logging.getLogger("pmc_rag.serve")

# Set by pmc_rag.serving.app before Hayhooks loads the wrappers.
ACTIVE_CONFIG: ServeConfig | None = None

TopK = Annotated[int, Field(ge=1, le=50)]


class RetrievedChunk(BaseModel):
    chunk_id: str
    source_id: str | None
    score: float | None
    content: str
    meta: dict[str, Any]


class RetrievalResult(BaseModel):
    question: str
    chunks: list[RetrievedChunk]
    timings_ms: dict[str, float]


class _Endpoint(BasePipelineWrapper):
    endpoint_name = ""  # set by the generated subclass

    def setup(self) -> None:
        if ACTIVE_CONFIG is None:
            raise RuntimeError("pmc-rag endpoints are started by `pmc-rag serve` (pmc_rag.serving.app)")
        self.config = ACTIVE_CONFIG
        self.spec = self.config.endpoint(self.endpoint_name)
        self.connection_string = ensure_database().connection_string
        self.declared = load_declared_pipeline(self.spec.pipeline)
        store = document_store_of(self.declared.pipeline)
        if store is not None:  # server start is set-up time: a fresh table gets its BM25 index now, not mid-request
            primary = on_primary(store)
            install_bm25_index(primary)
            with connect(primary) as connection:  # without them, the semantic leg scans every vector
                ensure_filter_statistics(connection, primary.schema_name, primary.table_name)
        self.declared.warm_up()  # models load now, before the port opens; a local model server starts
        # (build_app watches the model servers while the app serves)
        self.history = ConversationStore(self.connection_string, self.config.retention_days)
        self.document_store = store

    def access(self, filters: Any) -> dict[str, Any] | None:
        """What this request may read, given its filters (pmc_rag.serving.access); None: everything."""
        return access_filter(self.document_store, names_collections(filters))

    def _unavailable(self, error: Exception) -> Refused:
        return unavailable(self.spec.name, error, self.connection_string)


class RetrievalEndpoint(_Endpoint):
    @refusals_as_http
    def run_api(self, question: str, filters: SearchFilters | None = None, top_k: TopK | None = None
                ) -> RetrievalResult:
        """
        Ranked chunks for a question, with their metadata and scores; no generation.

        :param question: The question in plain words.
        :param filters: Optional: year range, journal, article type, minimum evidence level, source ids.
        :param top_k: How many chunks to return (1-50; default: the pipeline's).
        """
        question, _ = redact_personal_data(clean_question(question, self.config.max_question_chars))
        started = time.perf_counter()
        haystack_filters = narrowed(to_haystack_filters(filters), self.access(filters))
        try:
            documents = self.declared.run(question=question, filters=haystack_filters, top_k=top_k)["documents"]
            took = round((time.perf_counter() - started) * 1000, 1)
            self.history.audit(self.spec.name, question, 200, timings_ms={"total": took})
        except Exception as error:
            raise self._unavailable(error) from error
        log.info("%s status=200 total_ms=%.0f chunks=%d", self.spec.name, took, len(documents))
        return RetrievalResult(question=question, timings_ms={"total": took}, chunks=[
            RetrievedChunk(chunk_id=d.id, source_id=d.meta.get("source_id"), score=d.score, content=d.content or "",
                           meta=d.meta) for d in documents])


_answer_slots: dict[int, AnswerSlots] = {}


def answer_slots(config: ServeConfig) -> AnswerSlots:
    """One queue for every answer endpoint of the server: they share the model(s) behind them."""
    return _answer_slots.setdefault(id(config), AnswerSlots(
        config.max_running_answers, config.max_queued_answers, config.max_queue_wait_s))


class AnswerEndpoint(_Endpoint):
    """REST and chat over the answering service (pmc_rag.answering.service): parsing requests, rendering replies."""

    def setup(self) -> None:
        super().setup()
        cache = None
        store = document_store_of(self.declared.pipeline)
        if self.config.cache_entries and store is not None:
            # The chunk table's BM25 index counts its changes: a cached answer lives until the next one. Counted
            # where the pipeline reads (a replica, if PG_READ_CONN_STR names one), so that an answer is kept under
            # the generation its chunks came from, not the primary's, which a lagging replica has not reached.
            cache = AnswerCache(store.connection_string.resolve_value(), BM25Tables.of(store),
                                self.config.cache_entries)
        elif self.config.cache_entries:
            log.warning("%s: answer cache off: the pipeline has no document store to watch for changes",
                        self.spec.name)
        self.service = AnswerService(
            self.declared, name=self.spec.name, store=self.history, cache=cache, slots=answer_slots(self.config),
            max_question_chars=self.config.max_question_chars, carried_chunks=self.config.carried_chunks,
            follow_ups_from_topic_papers=self.config.follow_ups_from_topic_papers)

    @refusals_as_http
    def run_api(self, question: str, filters: SearchFilters | None = None, top_k: TopK | None = None,
                conversation_id: str | None = None) -> Answer:
        """
        Answers a question from the indexed literature; every claim carries a checked citation.

        :param question: The question in plain words (personal data is redacted before anything else).
        :param filters: Optional: year range, journal, article type, minimum evidence level, source ids.
        :param top_k: How many excerpts the answer may draw on (1-50; default: the pipeline's).
        :param conversation_id: The id a previous answer returned, to ask a follow-up in that conversation.
        """
        return self.service.answer(question, filters, top_k, conversation_id, access=self.access(filters))

    @refusals_as_http
    def run_chat_completion(self, model: str, messages: list[dict], body: dict, headers: Headers | None = None
                            ) -> str | Generator:
        """OpenAI chat: the last user message is the question; earlier turns come from the conversation id
        (`conversation_id` in the body or in `metadata`) or, without one, from the history the client resent.
        A streamed reply to Open WebUI also carries a `source` event per citation number (see
        pmc_rag.serving.open_webui)."""
        question, conversation_id, history = self._chat_request(messages, body)
        if not body.get("stream"):
            answer = self.service.answer(question, body.get("filters"), body.get("top_k"), conversation_id,
                                         history=history, access=self.access(body.get("filters")))
            return chat_text(answer)
        return self._stream(question, body, conversation_id, history, wants_source_events(headers, body))

    def _chat_request(self, messages: list[dict], body: dict) -> tuple[str, str | None, Any]:
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            raise HTTPException(422, "`messages` holds no user message; the last user message is the question")
        question = _text(users[-1].get("content"))
        conversation_id = body.get("conversation_id") or (body.get("metadata") or {}).get("conversation_id")
        history = None
        if not conversation_id:
            queries: list[str] = []
            for earlier in users[:-1]:
                text, _ = redact_personal_data(" ".join(_text(earlier.get("content")).split()))
                if text:  # in English, as the server keeps a conversation (the model remembers its translations)
                    queries.append(standalone_query(self.service.in_english(text)[0], queries))
            history = (queries, numbers_from_history(messages), cited_per_turn_from_history(messages))
        return question, conversation_id, history

    def _stream(self, question: str, body: dict, conversation_id: str | None, history: Any,
                with_sources: bool = False) -> Generator:
        """The chat stream: nothing the checks have not passed. While the answer is made, Open WebUI gets status
        events (other clients, nothing: their transcript keeps every word sent); then the checked answer with its
        notes and references (or the error) as text, then Open WebUI's source events if asked for."""
        pieces = self.answer_pieces(question, body.get("filters"), body.get("top_k"), conversation_id, history)

        def chat() -> Generator[Any, None, None]:
            for kind, value in pieces:
                if kind == "status":
                    if with_sources:
                        yield status_event(value)
                elif kind == "error":
                    if with_sources:
                        yield status_event("not answered", done=True)
                    yield f"Error: {value}"
                elif kind == "answer":
                    if with_sources:
                        yield status_event("answered", done=True)
                    yield chat_text(value)
                    if with_sources:
                        yield from source_events(value, pieces.stream.numbers)

        return chat()

    def answer_pieces(self, question: str, filters: Any, top_k: int | None, conversation_id: str | None,
                      history: Any = None) -> AnswerPieces:
        """Answers in a thread and yields ("status", what it is doing: searching, reading n passages, writing),
        then ("sentence", each sentence of the checked answer) and ("answer", Answer), or ("error", what to tell
        the client). The model's own words are never yielded: a sentence the checks would remove (an injected
        claim, an uncited verdict) must not reach a reader first. Refuses with 503, before anything starts, when
        the answer queue is full."""
        self.service.slots.refuse_when_full()  # said now, as a 503, while the response has not started yet
        pieces: queue.Queue = queue.Queue()
        stream = AnswerProgress({}, pieces.put)
        access = self.access(filters)

        def work() -> None:
            try:
                pieces.put(("status", "searching the papers"))
                answer = self.service.answer(question, filters, top_k, conversation_id, history=history,
                                             stream=stream, on_token=stream.on_token, access=access)
                pieces.put(("done", answer))
            except Exception as error:  # reported in the stream: the HTTP status is already sent
                pieces.put(("error", error))

        # The thread runs in a copy of this request's context, so it answers as the same caller (its key).
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(work,), daemon=True, name="pmc-rag-stream").start()
        return AnswerPieces(pieces, stream, current_lifetime.get(), self.spec.name)


class AnswerPieces:
    """The items of a streamed answer (see AnswerEndpoint.answer_pieces); `stream` has the conversation's citation
    numbers once the answer is in."""

    def __init__(self, pieces: queue.Queue, stream: AnswerProgress, lifetime: Any, endpoint: str):
        self.pieces, self.stream, self.lifetime, self.endpoint = pieces, stream, lifetime, endpoint

    def __iter__(self) -> Generator[tuple[str, Any], None, None]:
        while True:
            try:  # a model that sends nothing at all is waited for until the deadline, not longer
                kind, value = self.pieces.get(timeout=max(0.0, self.lifetime.seconds_left()) + 5)
            except queue.Empty:
                kind, value = "error", AnswerStopped(f"no answer within {self.lifetime.deadline_s:g} s; ask again", 504)
            if kind == "status":
                yield "status", value
                continue
            if kind == "done":
                for sentence in checked_sentences(value):
                    yield "sentence", sentence
                yield "answer", value
                return
            if isinstance(value, (HTTPException, Refused)):
                detail = value.detail
            else:  # logged with its traceback; the client gets the request id, not the internals
                log.error("%s stream failed request_id=%s", self.endpoint, current_request_id.get(), exc_info=value)
                detail = internal_error_detail()
            yield "error", detail
            return


def checked_sentences(answer: Answer) -> list[str]:
    """The checked answer's text in sentence-sized pieces that join back to it exactly."""
    return [piece for piece in re.split(r"(?<=[.!?\]])(?=\s)", answer.answer) if piece]


def status_event(description: str, done: bool = False) -> Any:
    """Open WebUI's status line above a message being written ("searching the papers")."""
    from hayhooks.open_webui import create_status_event

    return create_status_event(description=description, done=done)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise HTTPException(422, "message `content` must be a string or a list of text parts")


def chat_text(answer: Answer) -> str:
    """The chat message: a crisis line if any, the checked answer with one line of caveat, the references, then
    the other notes and which model answered, folded (`<details>`, which Open WebUI shows closed)."""
    caveat = answer.caveat(more_at="details below")
    parts = ([f"**{answer.safety}**"] if answer.safety else []) + [answer.answer] + ([f"_{caveat}_"] if caveat else [])
    references = answer.reference_lines()
    if references:
        parts.append(references)
    if answer.web_sources:
        parts.append(answer.web_source_lines())
    if answer.kind == "answer" and (len(answer.notes) > 1 or answer.model):
        failed = f" (failed first: {', '.join(answer.failed_generators)})" if answer.failed_generators else ""
        lines = [f"- {note}" for note in answer.notes[1:]] + [f"- Answered by {answer.model or 'no model'}{failed}"]
        parts.append("<details><summary>Details</summary>\n\n" + "\n".join(lines) + "\n</details>")
    if answer.conversation_id:
        parts.append(f"conversation_id: {answer.conversation_id}")
    return "\n\n".join(parts)
