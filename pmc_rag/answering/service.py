"""The answering service: one question in, one answer object out, the same for every caller.

`pmc-rag ask`, the REST endpoint and the chat endpoint are thin adapters over `AnswerService`. It checks the
question (length, control characters; personal data redacted), gives the fixed replies (greetings, emergencies),
loads the conversation and rewrites a follow-up into a standalone query, answers from the cache or runs the
pipeline (in a turn of the answer queue, stopped when its caller leaves or its deadline passes), numbers the
citations for the conversation, saves the turn and writes the audit row.

Refusals are the service's own exceptions (`pmc_rag.answering.refusals`: `InputError` for a bad question, an unknown
conversation id, an answer stopped, the store down); each adapter maps them at its edge: the HTTP endpoints to a
status code with the message (`pmc_rag.serving.http_errors`), the CLI to the message.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from pydantic import ValidationError

from pmc_rag.components.answer import Answer
from pmc_rag.components.question_translator import QuestionTranslator
from pmc_rag.components.remembering_fallback_chat_generator import GenerationStopped
from pmc_rag.answering.pipeline_run import run_answering
from pmc_rag.database import unreachable
from pmc_rag.pipelines import DeclaredPipeline
from pmc_rag.answering.refusals import AnswerStopped, InputError, Refused, Unavailable, UnknownConversationId
from pmc_rag.answering.answer_slots import AnswerSlots
from pmc_rag.answering.cache import AnswerCache
from pmc_rag.answering.caller import current_lifetime, current_owner, current_request_id, internal_error_detail
from pmc_rag.answering.crisis import (CrisisDecision, check_crisis, check_crisis_read_in_english, emergency_reply_for,
                                     exemplar_layer)
from pmc_rag.answering.crisis_replies import crisis_reply, safety_line
from pmc_rag.answering.conversation import (conversation_topic, follow_up_text, is_follow_up, renumber,
                                          standalone_query, topic_papers)
from pmc_rag.answering.guards import (NOT_MEDICAL_ADVICE, SearchFilters, clean_question, fixed_reply,
                                    reads_as_personal, redact_personal_data)
from pmc_rag.answering.history import ConversationState, ConversationStore, UnknownConversation
from pmc_rag.answering.streaming import AnswerProgress

log = logging.getLogger("pmc_rag.serve")


class AnswerService:
    """
    Answers questions with one answering pipeline, for any caller.

    Usage:
    ```python
    service = AnswerService(load_declared_pipeline("rag"), name="cli")       # no conversations, cache or audit
    answer = service.fixed_answer(question) or service.answer(question)    # fixed_answer needs no database
    ```

    :param pipeline: The answering pipeline (warmed up on first use if it is not yet).
    :param name: Its name in logs and the audit table (the endpoint's name).
    :param store: Conversations and the audit table; None: no conversations, no audit (the CLI).
    :param cache: Answers to repeated questions; None: none.
    :param slots: The answer queue; None: no queue (one caller, the CLI).
    :param max_question_chars: Longer questions are refused.
    :param carried_chunks: Earlier cited chunks offered again to a follow-up question's excerpts.
    :param follow_ups_from_topic_papers: A follow-up is answered from the papers cited since the conversation's
        topic question (`pmc_rag.answering.conversation.topic_papers`); False: from every paper.
    """

    def __init__(self, pipeline: DeclaredPipeline, *, name: str, store: ConversationStore | None = None,
                 cache: AnswerCache | None = None, slots: AnswerSlots | None = None, max_question_chars: int = 2000,
                 carried_chunks: int = 5, follow_ups_from_topic_papers: bool = True):
        self.pipeline = pipeline
        self.name = name
        self.store = store
        self.cache = cache
        self.slots = slots
        self.max_question_chars = max_question_chars
        self.carried_chunks = carried_chunks
        self.follow_ups_from_topic_papers = follow_ups_from_topic_papers
        self._translator: QuestionTranslator | bool | None = None  # found in the pipeline when first needed

    def warm_up(self) -> None:
        exemplar_layer()  # the crisis check's model, loaded before the first person who needs it
        if not self.pipeline.warmed_up:
            self.pipeline.warm_up()

    def checked(self, question: Any) -> tuple[str, list[str]]:
        """The question as answered, and the kinds of personal data redacted from it (see `checked_question`)."""
        return checked_question(question, self.max_question_chars)

    def fixed_answer(self, question: Any) -> Answer | None:
        """The answer object of a fixed reply (greeting, emergency) to the question, or None; no database, no
        model. Raises InputError for a question that would be refused."""
        return fixed_answer(question, self.max_question_chars)

    def answer(self, question: Any, filters: SearchFilters | dict | None = None, top_k: int | None = None,
               conversation_id: str | None = None, *, history: tuple[list[str], dict[str, int]] | None = None,
               stream: AnswerProgress | None = None, on_token: Any = None, access: dict | None = None) -> Answer:
        """
        The whole answering flow for one question.

        :param history: A resent chat's earlier (queries, citation numbers), when there is no conversation id.
        :param access: What the caller may read (a Haystack filter, pmc_rag.serving.access), joined to `filters`
            for every search; None: everything.
        :param stream: Told the conversation's citation numbers and the excerpts (to report progress).
        :param on_token: Called with each generated token.
        """
        started = time.perf_counter()
        question, redacted = self.checked(question)
        haystack_filters = narrowed(to_haystack_filters(filters), access)
        if conversation_id is not None and not (0 < len(conversation_id) <= 100 and conversation_id.isprintable()):
            raise InputError("`conversation_id` must be the id a previous answer returned")
        fixed = _fixed(question, redacted, started)
        if fixed and fixed.kind == "emergency" and self._continues_a_conversation(question, conversation_id,
                                                                                     history):
            fixed = _fixed(question, redacted, started, follow_up=True)
        # A question in another language is put into English before the crisis check's second reading and before the
        # conversation reads it, so that a follow-up ("¿Y sus efectos secundarios?") is known as one and its topic is
        # searched in the papers' language. A translation not remembered asks the model, so it waits its turn in the
        # answer queue as the answer does, and the answer goes on in that turn.
        if fixed:
            return self._fixed_reply(question, fixed, conversation_id)
        if self.slots is not None and self._translating_asks_the_model(question):
            with self.slots.turn(current_lifetime.get()):
                return self._read_and_answer(started, question, redacted, haystack_filters, top_k, conversation_id,
                                             history, stream, on_token)
        return self._read_and_answer(started, question, redacted, haystack_filters, top_k, conversation_id, history,
                                     stream, on_token)

    def _read_and_answer(self, started: float, question: str, redacted: list[str], haystack_filters: dict | None,
                         top_k: int | None, conversation_id: str | None, history: Any,
                         stream: AnswerProgress | None, on_token: Any) -> Answer:
        """The question put into English where it is not, checked for danger in both readings, then answered."""
        english, translation_notes = self.in_english(question)
        read = check_crisis_read_in_english(question, english)  # the answer's care notes reuse it
        decision = read
        if decision.crisis and self._continues_a_conversation(english, conversation_id, history):
            decision = check_crisis_read_in_english(question, english, follow_up=True)
        # danger read only in the translation (the typed words alone gave no fixed reply)
        fixed = _fixed(question, redacted, started, decision=decision) if decision.crisis else None
        possible = not fixed and decision.possible
        if possible and self._follows_an_emergency(conversation_id, history):
            # possible danger in a conversation that began in danger ("my wife is bleeding after the birth", then
            # "What about perinatal bleeding?") is that danger still
            fixed = _fixed(question, redacted, started, certain=True)
        if fixed:
            return self._fixed_reply(question, fixed, conversation_id)
        try:
            return self._answer(started, question, (english, translation_notes, read), redacted, haystack_filters,
                                top_k, conversation_id, history, stream, on_token,
                                research_follow_up=possible and self._continues_a_conversation(
                                    question, conversation_id, history))
        except Refused:
            raise
        except Exception as error:  # the database (or a model) failed mid-answer: 503 if the database is down
            stop = _stopped_by(error)
            if stop is not None:
                raise self._stopped(str(stop), question) from None
            raise unavailable(self.name, error) from error

    def _answer(self, started: float, question: str, translated: tuple[str, list[str], CrisisDecision | None],
                redacted: list[str],
                haystack_filters: dict | None, top_k: int | None, conversation_id: str | None, history: Any,
                stream: AnswerProgress | None, on_token: Any, research_follow_up: bool = False) -> Answer:
        state = self._conversation(conversation_id)
        if history is not None:
            state.questions, state.numbers, state.cited_per_turn = history
        if stream is not None:
            stream.numbers = state.numbers
        english, translation_notes, read = translated
        query = standalone_query(english, state.questions)
        papers = topic_papers(state.questions, state.cited_per_turn) if (
            self.follow_ups_from_topic_papers and is_follow_up(query)) else []
        if papers:
            haystack_filters = _within_papers(haystack_filters, papers)
        key = self.cache.key(self.name, query, haystack_filters, top_k) if self.cache else None
        answer = self.cache.get(key) if key and not state.questions else None
        cached = answer is not None
        if answer is None:
            generation = self.cache.generation() if self.cache else 0
            answer = self._run(query, haystack_filters, top_k, state, stream, on_token, papers)
            if papers:
                answer = answer.with_note(
                    "A follow-up question: the papers this conversation is about (" + ", ".join(papers) + ") "
                    + ("do not answer it." if answer.flags.get("not_answered") else "answered it.")
                    + " A question that names its subject searches every paper.")
            degraded = answer.flags.get("local_model_failed") or (answer.model is None and answer.failed_generators)
            if self.cache and not state.questions and not degraded:  # a model that failed may answer next time
                self.cache.put(key, answer, generation)
        for note in reversed(translation_notes):  # after the cache: an answer kept is shared by every language
            if note not in answer.notes:  # a question that could not be translated was tried again by the pipeline
                answer = answer.with_note(note, first=True)
        answer = _with_care_notes(renumber(answer, state.numbers), question, research_follow_up, english,
                                  read).updated(
            kind="answer", question=question, standalone_query=query, redacted=redacted, cached=cached,
            conversation_id=state.conversation_id,
            **({"timings_ms": {"total": round((time.perf_counter() - started) * 1000, 1)}} if cached else {}))
        if self.store is not None:
            self.store.save_turn(state, question, query, answer)
        self._audit(question, 200, answer, state.conversation_id)
        log.info("%s status=200 model=%s cached=%s flags=%s timings_ms={%s} citations=%d", self.name,
                 answer.model, cached, ",".join(f for f, on in answer.flags.items() if on) or "-",
                 ", ".join(f"{stage}: {ms:.0f}" for stage, ms in answer.timings_ms.items()), len(answer.references))
        return answer

    def _fixed_reply(self, question: str, fixed: Answer, conversation_id: str | None) -> Answer:
        self._audit(question, 200, fixed, conversation_id)
        log.info("%s status=200 kind=%s", self.name, fixed.kind)
        return fixed

    def translates(self, question: str) -> bool:
        """Whether the pipeline's `QuestionTranslator` would put the question into English (it is in another
        language); False where the pipeline has none."""
        if self._translator is None:
            self._translator = next((c for _, c in self.pipeline.pipeline.walk() if isinstance(c, QuestionTranslator)),
                                    False)
        return bool(self._translator) and self._translator.language(question) is not None

    def _translating_asks_the_model(self, question: str) -> bool:
        """Whether putting the question into English asks the model: it is in another language, and its
        translation (or a recent failure) is not remembered."""
        return self.translates(question) and not self._translator.remembers(question)

    def in_english(self, question: str) -> tuple[str, list[str]]:
        """The question in English and the note saying so, by the pipeline's `QuestionTranslator`; the question
        as asked and no note when it is English or the pipeline has no translator."""
        if not self.translates(question):
            return question, []
        self.warm_up()
        if not self._translator.remembers(question):
            self.pipeline.start_other_local_models()  # the translator's model, started when first needed
        translated = self._translator.run(question=question)
        return translated["question"], translated["notes"]

    def _continues_a_conversation(self, question: str, conversation_id: str | None, history: Any) -> bool:
        """Whether the question is a follow-up in a conversation about research, none of whose earlier messages was
        an emergency ("My wife is bleeding after the birth", then "What about the bleeding?" is one conversation in
        danger). Asked only of a message the crisis check called an emergency: where the conversation cannot be
        read (the database down), it stays one."""
        if conversation_id is None and history is None:
            return False
        try:
            previous = history[0] if history is not None else self._conversation(conversation_id).questions
            return bool(previous) and is_follow_up(standalone_query(question, previous)) and not any(
                check_crisis(follow_up_text(earlier)).crisis for earlier in previous)
        except Exception:  # an unknown conversation, the database down: the emergency reply stands
            return False

    def _follows_an_emergency(self, conversation_id: str | None, history: Any) -> bool:
        """Whether an earlier message of the conversation was an emergency (where it cannot be read: no)."""
        if conversation_id is None and history is None:
            return False
        try:
            previous = history[0] if history is not None else self._conversation(conversation_id).questions
            return any(check_crisis(follow_up_text(earlier)).crisis for earlier in previous)
        except Exception:  # an unknown conversation, the database down: the answer (with its crisis line) stands
            return False

    def _conversation(self, conversation_id: str | None) -> ConversationState:
        if self.store is None:
            if conversation_id:
                raise InputError("conversations are kept by `pmc-rag serve`; ask without `conversation_id` here")
            return ConversationState(None)
        owner = current_owner.get()
        if not conversation_id:
            return ConversationState(ConversationStore.new_id(), owner=owner)
        try:
            return self.store.load(conversation_id, owner)
        except UnknownConversation:
            raise UnknownConversationId(
                "unknown `conversation_id`: it was not issued to this API key, or it has expired. Ask without one to "
                "start a conversation, then send back the `conversation_id` its answer returns.") from None

    def _run(self, query: str, haystack_filters: dict | None, top_k: int | None, state: ConversationState,
             stream: AnswerProgress | None, on_token: Any, papers: list[str]) -> Answer:
        self.warm_up()
        inputs = {"top_k": top_k}
        if "carried_chunk_ids" in self.pipeline.inputs:
            carried = [c for c in state.cited_chunk_ids if not papers or state.chunk_papers.get(c) in papers]
            inputs["carried_chunk_ids"] = carried[: self.carried_chunks] or None
        asked = query
        if is_follow_up(query) and "follow_up_to" in self.pipeline.inputs:
            # the reader's words and the question they follow up, apart (a pipeline without the input gets both
            # as one text, as pipelines did before it)
            asked, inputs["follow_up_to"] = follow_up_text(query), conversation_topic(state.questions)
        if papers and "topic_question" in self.pipeline.inputs:
            inputs["topic_question"] = conversation_topic(state.questions)
        lifetime = current_lifetime.get()

        def watched(chunk: Any) -> None:  # generation stops at the next token once the caller or time is gone
            why = lifetime.why_stop()
            if why:
                raise GenerationStopped(why)
            if on_token is not None:
                on_token(chunk)

        def run() -> Answer:
            return self._pipeline_answer(asked, haystack_filters, inputs, streaming_callback=watched,
                                         on_excerpts=stream.set_excerpts if stream else None)[0]

        if self.slots is None:
            return run()
        with self.slots.turn(lifetime):  # 503 when the queue is full or the wait too long
            return run()

    def answer_for_evaluation(self, question: str, top_k: int | None = None, streaming_callback: Any = None
                              ) -> tuple[Answer, dict[str, Any]]:
        """The answer object and every declared output of the run (`ranked`, `excerpts`), for `pmc-rag eval`.

        The checks are off: the question goes in as written (no length limit, redaction or fixed reply), so every
        question of a set is scored the same way. No conversation, cache, queue or audit.
        """
        self.warm_up()
        return self._pipeline_answer(question, None, {"top_k": top_k}, streaming_callback=streaming_callback)

    def _pipeline_answer(self, query: str, haystack_filters: dict | None, inputs: dict[str, Any], *,
                         streaming_callback: Any = None, on_excerpts: Any = None
                         ) -> tuple[Answer, dict[str, Any]]:
        return run_answering(self.pipeline, query, haystack_filters, inputs=inputs,
                             streaming_callback=streaming_callback, on_excerpts=on_excerpts)

    def _stopped(self, why: str, question: str) -> AnswerStopped:
        lifetime = current_lifetime.get()
        took = time.monotonic() - lifetime.started
        if why == "client left":  # nobody reads this reply; the log and the audit say what happened
            log.info("%s status=499 the client went away after %.1f s; its answer was stopped", self.name, took)
            self._audit(question, 499, timings_ms={"total": round(took * 1000, 1)})
            return AnswerStopped("the client went away; its answer was stopped", 499)
        log.warning("%s status=504 answer stopped at its deadline (%.0f s, queue included)", self.name, took)
        self._audit(question, 504, timings_ms={"total": round(took * 1000, 1)})
        return AnswerStopped(f"The answer was not finished within {lifetime.deadline_s:g} s of the request (time "
                             "waiting for a turn included), so it was stopped. Ask again when the server is less "
                             "busy; the operator can raise server.answer_deadline_s in hayhooks.yml.", 504)

    def _audit(self, question: str, status: int, answer: Answer | None = None,
               conversation_id: str | None = None, timings_ms: dict[str, float] | None = None) -> None:
        if self.store is not None:
            self.store.audit(self.name, question, status, answer, conversation_id, timings_ms)


def checked_question(question: Any, max_question_chars: int) -> tuple[str, list[str]]:
    """The question as answered: checked (InputError when empty, too long, or holding control characters),
    whitespace normalised, personal data redacted; and the kinds of data redacted."""
    return redact_personal_data(clean_question(question, max_question_chars))


def fixed_answer(question: Any, max_question_chars: int) -> Answer | None:
    """`AnswerService.fixed_answer` before any pipeline is loaded: `pmc-rag ask` gives a person in danger (or a
    greeting, or a refusal) its reply without first spending seconds loading models it will not use."""
    started = time.perf_counter()
    return _fixed(*checked_question(question, max_question_chars), started)


def _fixed(question: str, redacted: list[str], started: float, follow_up: bool = False,
           certain: bool = False, decision: CrisisDecision | None = None) -> Answer | None:
    """The fixed reply's answer object, or None; `certain`: the emergency reply to a message the check found
    possible danger in (a conversation that began with an emergency); `decision`: the emergency reply it says."""
    if decision is not None:
        fixed = ("emergency", crisis_reply(decision))
    else:
        fixed = ("emergency", emergency_reply_for(question)) if certain else fixed_reply(question, follow_up)
    if not fixed:
        return None
    kind, text = fixed
    return Answer(kind=kind, question=question, answer=text, redacted=redacted,
                  timings_ms={"total": round((time.perf_counter() - started) * 1000, 1)})


def _with_care_notes(answer: Answer, question: str, research_follow_up: bool = False,
                     english: str | None = None, read: CrisisDecision | None = None) -> Answer:
    """The answer, with personal data its text holds redacted (as the question's is), and a not-medical-advice
    note for a question about someone's own care; each named in the flags and notes. `read`: the crisis check of
    the question (and its translation `english`) already made, when not a research follow-up."""
    flags, notes = dict(answer.flags), list(answer.notes)
    shown, kinds = redact_personal_data(answer.answer or "")
    if kinds:
        flags["personal_data_removed"] = True
        notes.append("Personal data in the answer's text was replaced (" + ", ".join(kinds) + ").")
    if reads_as_personal(question):
        flags["personal_question"] = True
        notes.insert(0, NOT_MEDICAL_ADVICE)
    # a follow-up in a conversation about research naming no one is judged as the emergency check judges it
    if read is None or research_follow_up:
        read = check_crisis_read_in_english(question, english, follow_up=research_follow_up)
    safety = safety_line(read)
    if safety:  # the question may describe someone in danger now: the crisis line goes above the answer
        flags["possible_emergency"] = True
    return answer.updated(answer=shown if kinds else answer.answer, flags=flags, notes=notes,
                          safety=safety or answer.safety)


def _within_papers(filters: dict[str, Any] | None, papers: list[str]) -> dict[str, Any]:
    """The request's filters, narrowed to these papers."""
    return narrowed(filters, {"field": "meta.source_id", "operator": "in", "value": list(papers)})


def narrowed(filters: dict[str, Any] | None, condition: dict[str, Any] | None) -> dict[str, Any] | None:
    """Haystack filters that hold where both `filters` and `condition` do (either may be None: no condition)."""
    if condition is None or not filters:
        return condition or filters
    return {"operator": "AND", "conditions": [filters, condition]}


def to_haystack_filters(filters: SearchFilters | dict | None) -> dict[str, Any] | None:
    """Request filters (checked: InputError naming the bad field) as a Haystack filter, or None."""
    if filters is None:
        return None
    if isinstance(filters, dict):
        try:
            filters = SearchFilters.model_validate(filters)
        except ValidationError as error:
            raise InputError("`filters`: " + "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())) from error
    elif not isinstance(filters, SearchFilters):
        raise InputError("`filters` must be an object, e.g. {\"year_from\": 2015}")
    return filters.to_haystack()


def unavailable(name: str, error: Exception, connection_string: str | None = None) -> Refused:
    """What a failure mid-request becomes: 503 when the database is not reachable (it says so), else a 500 that
    shows only the request id (the log has the traceback)."""
    if unreachable(connection_string or os.environ.get("PG_CONN_STR", ""), timeout_s=3):
        log.error("%s status=503 database not reachable: %s", name, error)
        return Unavailable("The database is not reachable; try again shortly (the operator should check "
                           "PostgreSQL / PG_CONN_STR).")
    log.error("%s status=500 request_id=%s", name, current_request_id.get(), exc_info=error)
    return Refused(internal_error_detail(), 500)


def _stopped_by(error: BaseException | None) -> GenerationStopped | None:
    """The GenerationStopped that `error` was raised from (Haystack wraps a component's errors), if any."""
    for _ in range(10):
        if error is None or isinstance(error, GenerationStopped):
            return error
        error = error.__cause__ or error.__context__
    return None
