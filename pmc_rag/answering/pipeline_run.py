"""Answering a question with an answering pipeline, and what comes with the answer: timings and sources.

The pipeline (e.g. pipelines/rag.yml) produces the answer object; this adds, from the same run, the time each
stage took and every retrieved source with the retrievers that found it. What it reads comes from the outputs
the YAML declares, never from component names:

    outputs:
      answer: answer_builder.answer        # the answer object
      excerpts: budget.documents           # what the model is shown (streamed citations are checked against it)
      retrieved_semantic: semantic.documents   # each retriever's list: `sources` says which found each chunk
      retrieved_bm25: bm25.documents

Stage timings come from Haystack's tracing hook. pmc-rag adds its timer in front of whatever tracer is set
(OpenTelemetry, Langfuse, ...), which still gets every span; it never replaces it.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from haystack import Document, tracing
from haystack.tracing import Span, Tracer

from pmc_rag.components.answer import Answer
from pmc_rag.components.question_translator import QuestionTranslator
from pmc_rag.local_llm.spec import LocalModelError
from pmc_rag.local_llm.supervisor import local_model_server
from pmc_rag.pipelines import EXCERPTS, OBJECTED, RELATED, RETRIEVED_PREFIX, DeclaredPipeline

_current_timings: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("timings", default=None)
# (component, output socket, callback): the callback gets the excerpts as soon as that component has chosen them,
# before generation starts.
_excerpt_observer: contextvars.ContextVar[tuple[str, str, Callable[[list[Document]], None]] | None] = \
    contextvars.ContextVar("excerpt_observer", default=None)


class _TimingSpan(Span):
    """Keeps the tags it needs and passes everything on to the span of the tracer behind it."""

    def __init__(self, tags: dict[str, Any], inner: Span):
        self.tags = dict(tags)
        self.inner = inner

    def set_tag(self, key: str, value: Any) -> None:
        self.tags[key] = value
        self.inner.set_tag(key, value)

    def set_content_tag(self, key: str, value: Any) -> None:
        # Haystack offers every component's output here; only the excerpts' component's is of interest.
        observer = _excerpt_observer.get()
        if (observer is not None and key == "haystack.component.output"
                and self.tags.get("haystack.component.name") == observer[0] and isinstance(value, dict)):
            component, socket, callback = observer
            callback(value.get(socket) or [])
        self.inner.set_content_tag(key, value)  # the tracer behind decides whether it records content

    def raw_span(self) -> Any:
        return self.inner.raw_span()

    def get_correlation_data_for_logs(self) -> dict[str, Any]:
        return self.inner.get_correlation_data_for_logs()


class StageTimer(Tracer):
    """Records how long each component run takes, per request (a context variable keeps requests apart), in front
    of the tracer that was set before it, which gets every span as if the timer were not there."""

    def __init__(self, behind: Tracer):
        self.behind = behind

    @contextlib.contextmanager
    def trace(self, operation_name: str, tags: dict[str, Any] | None = None,
              parent_span: Span | None = None) -> Iterator[Span]:
        inner_parent = parent_span.inner if isinstance(parent_span, _TimingSpan) else parent_span
        started = time.perf_counter()
        with self.behind.trace(operation_name, tags, inner_parent) as inner:
            span = _TimingSpan(tags or {}, inner)
            try:
                yield span
            finally:
                timings = _current_timings.get()
                name = span.tags.get("haystack.component.name")
                if timings is not None and operation_name == "haystack.component.run" and name:
                    timings[name] = timings.get(name, 0.0) + (time.perf_counter() - started) * 1000

    def current_span(self) -> Span | None:
        return self.behind.current_span()


def _ensure_timer() -> None:
    """Put the stage timer in front of the current tracer, unless it is there already (if someone set another
    tracer since, the timer goes in front of that one)."""
    current = tracing.tracer.actual_tracer
    if not isinstance(current, StageTimer):
        tracing.tracer.actual_tracer = StageTimer(current)


def timed_run(pipeline: DeclaredPipeline, *, component_inputs: dict[str, dict[str, Any]] | None = None,
              **values: Any) -> tuple[dict[str, Any], dict[str, float]]:
    """Run a declared pipeline; return its declared outputs and the milliseconds each component took (`total`:
    the whole run)."""
    _ensure_timer()
    timings: dict[str, float] = {}
    token = _current_timings.set(timings)
    started = time.perf_counter()
    try:
        outputs = pipeline.run(component_inputs=component_inputs, **values)
    finally:
        _current_timings.reset(token)
    timings = {name: round(ms, 1) for name, ms in timings.items()}
    timings["total"] = round((time.perf_counter() - started) * 1000, 1)
    return outputs, timings


def answer_question(pipeline: DeclaredPipeline, question: str, filters: dict[str, Any] | None = None, *,
                    inputs: dict[str, Any] | None = None, streaming_callback: Callable | None = None,
                    on_excerpts: Callable[[list[Document]], None] | None = None) -> Answer:
    """Run the pipeline on one question; return its answer object with `timings_ms` and `sources` filled in."""
    return run_answering(pipeline, question, filters, inputs=inputs, streaming_callback=streaming_callback,
                         on_excerpts=on_excerpts)[0]


def run_answering(pipeline: DeclaredPipeline, question: str, filters: dict[str, Any] | None = None, *,
                  inputs: dict[str, Any] | None = None, streaming_callback: Callable | None = None,
                  on_excerpts: Callable[[list[Document]], None] | None = None
                  ) -> tuple[Answer, dict[str, Any]]:
    """Like `answer_question`, and also return all the pipeline's declared outputs (`ranked`, `excerpts`...).

    An English question the relevance gate turned away for some of its words (declared output `objected`) is asked
    once more when the pipeline's `QuestionTranslator` rewords (`reword_unanswered`): reworded in the papers' terms
    by its model, and only if the rewording replaces one of those words. The second answer is kept only when it
    answers (neither not answered nor related only), with a note saying how it was searched.

    :param inputs: Values for other declared inputs (`top_k`, `carried_chunk_ids`); None values are left out.
    :param streaming_callback: Given to every component that takes one (the generator), called with each token.
    :param on_excerpts: Called with the excerpts the model will see, before generation starts.
    """
    component_inputs = {}
    if streaming_callback is not None:
        sockets = pipeline.pipeline.inputs(include_components_with_connected_inputs=True)
        component_inputs = {name: {"streaming_callback": streaming_callback}
                            for name, names in sockets.items() if "streaming_callback" in names}
    values = {name: value for name, value in (inputs or {}).items() if value is not None}
    asked_at = time.time()
    _start_local_model(pipeline)
    component, _, socket = pipeline.outputs[EXCERPTS].partition(".")

    def run(asked: str) -> tuple[Answer, dict[str, Any]]:
        observer_token = _excerpt_observer.set((component, socket, on_excerpts) if on_excerpts else None)
        try:
            outputs, timings = timed_run(pipeline, component_inputs=component_inputs, question=asked,
                                         filters=filters, **values)
        finally:
            _excerpt_observer.reset(observer_token)
        answer = _local_model_trouble_noted(pipeline, outputs["answer"], asked_at)
        return answer.updated(timings_ms=timings, sources=_sources(outputs)), outputs

    answer, outputs = run(question)
    if not answer.flags.get("not_answered") or not outputs.get(OBJECTED):
        return answer, outputs
    translator = _rewording_translator(pipeline, question)
    if translator is None:
        return answer, outputs
    rewording_started = time.perf_counter()
    pipeline.start_other_local_models()  # the translator's model, started when first needed
    reworded = translator.reworded(question)
    took = {"rewording": round((time.perf_counter() - rewording_started) * 1000, 1)}
    # Only a rewording that replaces a word the gate objected to is asked: one that keeps them all ("Does
    # adrenalectomy impact appendectomy outcomes?") could pass only by its phrasing, not by the papers' words.
    if reworded and _replaces_one(outputs[OBJECTED], reworded):
        again, again_outputs = run(reworded)
        # kept only as an answer: related findings alone say no more than the first run's
        if not again.flags.get("not_answered") and not again.flags.get("related_only"):
            return again.with_note(
                f'Not answered as asked; searched and answered as "{reworded}" (a model\'s rewording in the '
                "papers' terms).", "reworded", first=True).updated(
                timings_ms={**again.timings_ms, **took, "total": round((time.time() - asked_at) * 1000, 1)}
            ), again_outputs
    return answer.updated(timings_ms={**answer.timings_ms, **took}), outputs


def _replaces_one(objected: list[str], reworded: str) -> bool:
    """Whether the rewording leaves out at least one of the objected words (as written, any case)."""
    words = {w.lower() for w in re.findall(r"[\w-]+", reworded)}
    return any(w.lower() not in words for w in objected)


def _rewording_translator(pipeline: DeclaredPipeline, question: str) -> QuestionTranslator | None:
    """The pipeline's `QuestionTranslator` when it rewords what is not answered (`reword_unanswered`) and the
    question is English (one in another language was translated, into the papers' terms, already)."""
    translator = next((c for _, c in pipeline.pipeline.walk() if isinstance(c, QuestionTranslator)), None)
    if translator is None or not translator.reword_unanswered or translator.language(question) is not None:
        return None
    return translator


def _start_local_model(pipeline: DeclaredPipeline) -> None:
    """Start the pipeline's local model server if it is not running (on demand; under `pmc-rag serve` its watcher
    does this). One that cannot start is not an error here: the generator fails over, and the note says why."""
    if pipeline.local_model is None:
        return
    server = local_model_server(pipeline.local_model)
    if not server.watching and server.may_try_start():
        with contextlib.suppress(LocalModelError):
            server.ensure_running()


def _local_model_trouble_noted(pipeline: DeclaredPipeline, answer: Answer, asked_at: float) -> Answer:
    """The answer; when the pipeline's local model server did not answer because it crashed, hung or could not
    start, with a note saying so (cause and fix) and the `local_model_failed` flag."""
    spec = pipeline.local_model
    if spec is None or answer.model == spec.model:
        return answer
    trouble = local_model_server(spec).trouble_since(asked_at)
    return answer.with_note(trouble, "local_model_failed") if trouble else answer


def _sources(outputs: dict[str, Any]) -> list[dict[str, Any]]:
    """Each chunk retrieved, shown to the model or quoted as a related finding, once: ids, rank and score per
    retriever, whether the model was shown it, whether it was one of the related papers' excerpts.

    The retrievers are the declared outputs named `retrieved_<name>`; `found_by` uses <name>. Chunks the model saw
    that no retriever returned (neighbours added by context expansion) have no `found_by`.
    """
    shown = outputs.get(EXCERPTS) or []
    in_prompt = {d.id for d in shown}
    related = outputs.get(RELATED) or []
    quoted_as_related = {d.id for d in related}
    sources: dict[str, dict[str, Any]] = {}

    def entry(document) -> dict[str, Any]:
        return sources.setdefault(document.id, {
            "chunk_id": document.id, "source_id": document.meta.get("source_id"),
            "section": document.meta.get("section"), "found_by": {}, "in_prompt": document.id in in_prompt,
            "related": document.id in quoted_as_related})

    for name, documents in outputs.items():
        if name.startswith(RETRIEVED_PREFIX):
            for rank, document in enumerate(documents or [], start=1):
                entry(document)["found_by"][name.removeprefix(RETRIEVED_PREFIX)] = {"rank": rank,
                                                                                   "score": document.score}
    for document in [*shown, *related]:
        entry(document)
    return sorted(sources.values(), key=lambda s: (not s["in_prompt"],
                                                   min((r["rank"] for r in s["found_by"].values()), default=999)))
