"""Answering a question with an answering pipeline, and what comes with the answer: timings and sources.

The pipeline (e.g. pipelines/rag.yml) produces the answer object; this adds, from the same run, the time each
stage took (through Haystack's tracing hook) and every retrieved source with the retrievers that found it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from typing import Any

from haystack import Document, tracing
from haystack.tracing import Span, Tracer

from pmc_rag.local_llm.supervisor import LocalModelError, local_model_server
from pmc_rag.pipelines import DeclaredPipeline

# The stages whose documents are reported as sources, when the pipeline has them.
RETRIEVERS = ("semantic", "bm25", "keyword")
PROMPT_STAGE = "budget"

_current_timings: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("timings", default=None)
# Called with the excerpts as soon as the prompt stage has chosen them (before generation starts).
_excerpt_observer: contextvars.ContextVar[Callable[[list[Document]], None] | None] = contextvars.ContextVar(
    "excerpt_observer", default=None)


class _TimingSpan(Span):
    def __init__(self, tags: dict[str, Any]):
        self.tags = dict(tags)

    def set_tag(self, key: str, value: Any) -> None:
        self.tags[key] = value

    def set_content_tag(self, key: str, value: Any) -> None:
        # Haystack offers every component's output here; only the prompt stage's excerpts are of interest.
        observer = _excerpt_observer.get()
        if (observer is not None and key == "haystack.component.output"
                and self.tags.get("haystack.component.name") == PROMPT_STAGE and isinstance(value, dict)):
            observer(value.get("documents") or [])


class StageTimer(Tracer):
    """Records how long each component run takes, per request (a context variable keeps requests apart)."""

    @contextlib.contextmanager
    def trace(self, operation_name: str, tags: dict[str, Any] | None = None,
              parent_span: Span | None = None) -> Iterator[Span]:
        span = _TimingSpan(tags or {})
        started = time.perf_counter()
        try:
            yield span
        finally:
            timings = _current_timings.get()
            name = span.tags.get("haystack.component.name")
            if timings is not None and operation_name == "haystack.component.run" and name:
                timings[name] = timings.get(name, 0.0) + (time.perf_counter() - started) * 1000

    def current_span(self) -> Span | None:
        return None


_timer = StageTimer()


def timed_run(pipeline: DeclaredPipeline, include: set[str] = frozenset(), *,
              component_inputs: dict[str, dict[str, Any]] | None = None, **values: Any
              ) -> tuple[dict[str, Any], dict[str, Any], dict[str, float]]:
    """Run a declared pipeline; return its declared outputs, the raw outputs of the components named in `include`,
    and the milliseconds each component took (`total`: the whole run)."""
    if not isinstance(tracing.tracer.actual_tracer, StageTimer):
        tracing.enable_tracing(_timer)
    timings: dict[str, float] = {}
    token = _current_timings.set(timings)
    started = time.perf_counter()
    try:
        outputs, raw = pipeline.run_with_intermediate(set(include), component_inputs, **values)
    finally:
        _current_timings.reset(token)
    timings = {name: round(ms, 1) for name, ms in timings.items()}
    timings["total"] = round((time.perf_counter() - started) * 1000, 1)
    return outputs, raw, timings


def answer_question(pipeline: DeclaredPipeline, question: str, filters: dict[str, Any] | None = None, *,
                    inputs: dict[str, Any] | None = None, streaming_callback: Callable | None = None,
                    on_excerpts: Callable[[list[Document]], None] | None = None,
                    include: set[str] = frozenset()) -> dict[str, Any]:
    """Run the pipeline on one question; return its answer object with `timings_ms` and `sources` added.

    :param inputs: Values for other declared inputs (`top_k`, `carried_chunk_ids`); None values are left out.
    :param streaming_callback: Given to the generator, which calls it with each token.
    :param on_excerpts: Called with the excerpts the model will see, before generation starts.
    :param include: Components whose raw outputs to return too, under the answer's `intermediate` key.
    """
    stages = set(pipeline.pipeline.graph.nodes)
    wanted = {name for name in (*RETRIEVERS, PROMPT_STAGE) if name in stages}
    component_inputs = {}
    if streaming_callback is not None:
        sockets = pipeline.pipeline.inputs(include_components_with_connected_inputs=True)
        component_inputs = {name: {"streaming_callback": streaming_callback}
                            for name, names in sockets.items() if "streaming_callback" in names}
    values = {name: value for name, value in (inputs or {}).items() if value is not None}
    asked_at = time.time()
    _start_local_model(pipeline)
    observer_token = _excerpt_observer.set(on_excerpts)
    try:
        outputs, raw, timings = timed_run(pipeline, wanted | set(include), component_inputs=component_inputs,
                                          question=question, filters=filters, **values)
    finally:
        _excerpt_observer.reset(observer_token)
    answer = dict(outputs["answer"])
    _note_local_model_trouble(pipeline, answer, asked_at)
    answer["timings_ms"] = timings
    answer["sources"] = _sources(raw)
    if include:
        answer["intermediate"] = {name: raw.get(name, {}) for name in include}
    return answer


def _start_local_model(pipeline: DeclaredPipeline) -> None:
    """Start the pipeline's local model server if it is not running (on demand; under `pmc-rag serve` its watcher
    does this). One that cannot start is not an error here: the generator fails over, and the note says why."""
    if pipeline.local_model is None:
        return
    server = local_model_server(pipeline.local_model)
    if not server.watching and server.may_try_start():
        with contextlib.suppress(LocalModelError):
            server.ensure_running()


def _note_local_model_trouble(pipeline: DeclaredPipeline, answer: dict[str, Any], asked_at: float) -> None:
    """When the pipeline's local model server did not answer because it crashed, hung or could not start, say so
    (cause and fix) in the answer's notes and set the `local_model_failed` flag."""
    spec = pipeline.local_model
    if spec is None or answer.get("model") == spec.model:
        return
    trouble = local_model_server(spec).trouble_since(asked_at)
    if trouble:
        answer["notes"] = [*answer.get("notes", []), trouble]
        answer["flags"] = {**answer.get("flags", {}), "local_model_failed": True}


def _sources(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Each chunk retrieved or shown to the model, once: ids, rank and score per retriever, whether it was shown.

    Chunks the model saw that no retriever returned (neighbours added by context expansion) have no `found_by`.
    """
    prompt = raw.get(PROMPT_STAGE, {}).get("documents", [])
    in_prompt = {d.id for d in prompt}
    sources: dict[str, dict[str, Any]] = {}

    def entry(document) -> dict[str, Any]:
        return sources.setdefault(document.id, {
            "chunk_id": document.id, "source_id": document.meta.get("source_id"),
            "section": document.meta.get("section"), "found_by": {}, "in_prompt": document.id in in_prompt})

    for retriever in RETRIEVERS:
        for rank, document in enumerate(raw.get(retriever, {}).get("documents", []), start=1):
            entry(document)["found_by"][retriever] = {"rank": rank, "score": document.score}
    for document in prompt:
        entry(document)
    return sorted(sources.values(), key=lambda s: (not s["in_prompt"],
                                                   min((r["rank"] for r in s["found_by"].values()), default=999)))
