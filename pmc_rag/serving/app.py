"""Builds the HTTP app from hayhooks.yml: Hayhooks' app with pmc-rag's endpoints, gate and health check.

Hayhooks reads its settings once; this sets them from hayhooks.yml, writes one small folder per endpoint for
Hayhooks to load, and creates the app in Hayhooks' durable mode, which loads that fixed set one after another,
stops on the first that fails, and has no code-deployment routes. Then it adds what Hayhooks lacks: the request
gate (API key, body size, JSON, unknown fields), `/health`, and a `/v1/models` that lists only chat endpoints.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route

from pmc_rag.answering.guards import clean_question
from pmc_rag.answering.service import to_haystack_filters
from pmc_rag.database import unreachable
from pmc_rag.local_llm.spec import LocalModelError, LocalModelSpec
from pmc_rag.local_llm.supervisor import local_model_server, port_taken
from pmc_rag.paths import home
from pmc_rag.pipelines import declared_local_models
from pmc_rag.running_server import forget_server, record_server
from pmc_rag.serving import endpoints
from pmc_rag.serving.config import WORKER_CONFIG, ServeConfig, ServeConfigError
from pmc_rag.serving.http_errors import add_refusal_handler
from pmc_rag.serving.mcp_tools import mount_mcp
from pmc_rag.serving.page import page_html
from pmc_rag.serving.request_gate import RequestGate
from pmc_rag.serving.uploads import add_upload_routes

log = logging.getLogger("pmc_rag.serve")

_WRAPPER = '''# Written by `pmc-rag serve` from {source}; edit that file, not this one.
from pmc_rag.serving.endpoints import {base}


class PipelineWrapper({base}):
    endpoint_name = "{name}"
'''


def write_wrapper_folders(config: ServeConfig) -> Path:
    """One folder per endpoint with its `pipeline_wrapper.py`, under PMC_RAG_HOME/hayhooks/<pid>/: each server
    process has its own (worker processes start at once, and servers on other ports may share PMC_RAG_HOME);
    those of processes no longer running are removed."""
    import psutil

    for stale in (home() / "hayhooks").glob("*"):
        if not (stale.name.isdigit() and psutil.pid_exists(int(stale.name))):
            shutil.rmtree(stale, ignore_errors=True)
    folder = home() / "hayhooks" / str(os.getpid())
    shutil.rmtree(folder, ignore_errors=True)
    for endpoint in config.endpoints:
        base = "AnswerEndpoint" if endpoint.kind == "answer" else "RetrievalEndpoint"
        (folder / endpoint.name).mkdir(parents=True)
        (folder / endpoint.name / "pipeline_wrapper.py").write_text(
            _WRAPPER.format(source=config.source, base=base, name=endpoint.name), encoding="utf-8")
    return folder


def build_app(config: ServeConfig) -> FastAPI:
    """The served app; every endpoint's pipeline is loaded and warmed up when this returns."""
    api_key = os.environ.get(config.api_key_env, "").strip() or None
    if not config.local_only and not api_key:
        raise ServeConfigError(
            f"serving on {config.host} (not only this machine) needs an API key: set {config.api_key_env} "
            f"in the environment, or serve on 127.0.0.1")
    from hayhooks.settings import settings  # settings are read at import; set them before the app is made

    settings.pipelines_dir = str(write_wrapper_folders(config))
    settings.durable_mode = True            # fixed endpoints, loaded in order, all or nothing, no deploy routes
    settings.host, settings.port = config.host, config.port
    settings.tracing_enabled = False        # pmc-rag times stages itself; Hayhooks' tracer would replace ours
    settings.monitoring_enabled = False
    settings.show_tracebacks = False
    # No browser page may call the server unless hayhooks.yml names its origin (Hayhooks' default is any page).
    settings.cors_allow_origins = list(config.cors_origins)
    settings.cors_allow_methods = ["GET", "POST"]
    settings.cors_allow_headers = ["Authorization", "Content-Type"]
    endpoints.ACTIVE_CONFIG = config
    from hayhooks.server.app import create_app

    log_fields_safely()
    app = create_app()
    add_refusal_handler(app)  # the service's refusals in pmc-rag's own routes (/<endpoint>/stream, ...)
    for endpoint in config.endpoints:
        if not endpoint.rest:
            app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", "") != f"/{endpoint.name}/run"]
    app.state.local_models = local_model_specs(config)  # read once: /health reports them, serve stops them
    _watch_local_models_while_serving(app)
    _add_routes(app, config)
    add_upload_routes(app, config)
    mount_mcp(app, config)
    app.add_middleware(RequestGate, config=config, api_key=api_key)
    app.openapi_schema = None
    return app


def _watch_local_models_while_serving(app: FastAPI) -> None:
    """Restart the endpoints' model servers when they die or hang, for as long as the app serves; its shutdown
    ends the watching, so an app run inside another process (a test client, an app mounted in another) leaves no
    restart loop behind. With several worker processes, the process that started them watches them instead."""
    if os.environ.get(WORKER_CONFIG):
        return
    servers = [local_model_server(spec) for spec in app.state.local_models]
    for server in servers:
        server.watch()
    serving = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(served: Any) -> AsyncIterator[Any]:
        try:
            async with serving(served) as state:
                yield state
        finally:
            for server in servers:
                server.unwatch()

    app.router.lifespan_context = lifespan


def _add_routes(app: FastAPI, config: ServeConfig) -> None:
    chat_models = [e.name for e in config.endpoints if e.chat]

    async def list_chat_models(request: Any = None) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "pmc-rag"} for name in chat_models]})

    async def health() -> JSONResponse:
        # Off the event loop: the database and Ollama checks block, and other requests must not wait on them.
        report = await run_in_threadpool(health_report, config, app.state.local_models)
        # 503 only when nothing can be answered; a failed local model still leaves quoted answers ("degraded").
        return JSONResponse(report, status_code=503 if report["status"] == "unavailable" else 200)

    # Ahead of Hayhooks' own /v1/models, which lists every pipeline, chat or not.
    app.router.routes.insert(0, Route("/v1/models", list_chat_models, methods=["GET"]))
    # Hayhooks' own would answer "processed" and store nothing (files), or an error with no word of what to use.
    for path, instead in _NOT_SUPPORTED.items():
        app.router.routes.insert(0, Route(path, _not_supported(path, instead), methods=["GET", "POST"]))
    app.router.routes.insert(0, Route("/models", list_chat_models, methods=["GET"]))
    app.add_api_route("/health", health, methods=["GET"], summary="Database, models and generators reachable?")
    for endpoint in config.endpoints:
        if endpoint.kind == "answer" and endpoint.rest:
            app.add_api_route(f"/{endpoint.name}/stream", _answer_stream(app, config, endpoint.name), methods=["POST"],
                              summary=f"{endpoint.name}, streamed (JSON lines): {{\"status\": ...}} while the answer "
                                      "is made, then its checked sentences ({\"sentence\": ...}), then {\"answer\": "
                                      "the answer object} or {\"error\": ...}")
    answering = [e.name for e in config.endpoints if e.kind == "answer" and e.rest]
    if answering:
        page = page_html(answering[0])

        async def home_page(request: Any = None) -> HTMLResponse:
            return HTMLResponse(page)

        app.router.routes.insert(0, Route("/", home_page, methods=["GET"]))


_UPLOADS_INSTEAD = ("to add documents, send them to POST /collections/<name>/documents (PDF, .txt/.md, "
                    "PMC/PubMed XML), then ask with filters {\"collections\": [\"<name>\"]}")
_CHAT_INSTEAD = "ask through POST /v1/chat/completions (GET /v1/models lists the models) or POST /<endpoint>/run"
_NOT_SUPPORTED = {"/v1/files": _UPLOADS_INSTEAD, "/files": _UPLOADS_INSTEAD,
                  "/v1/responses": _CHAT_INSTEAD, "/responses": _CHAT_INSTEAD}


def _not_supported(path: str, instead: str) -> Any:
    async def answer(request: Any = None) -> JSONResponse:
        return JSONResponse({"detail": f"{path} is not supported by pmc-rag; {instead}"}, status_code=501)

    return answer


def _answer_stream(app: FastAPI, config: ServeConfig, name: str) -> Any:
    """POST /<endpoint>/stream: the REST request's fields; the reply is JSON lines: {"status": text} while the answer
    is made (searching, reading, writing and checking), then {"sentence": text} for each sentence of the checked
    answer, then {"answer": the answer object}; or {"error": what went wrong}. The model's unchecked words are never
    sent (see AnswerEndpoint.answer_pieces)."""

    async def stream(request: Request) -> StreamingResponse:
        data = await request.json()
        wrapper = app.state.pipeline_registry.get(name)
        question = clean_question(data.get("question"), config.max_question_chars)  # a 422 now, not mid-stream
        to_haystack_filters(data.get("filters"))
        pieces = await run_in_threadpool(wrapper.answer_pieces, question, data.get("filters"), data.get("top_k"),
                                         data.get("conversation_id"))

        def lines() -> Any:
            for kind, value in pieces:
                value = {"answer": value.model_dump(mode="json")} if kind == "answer" else {kind: value}
                yield json.dumps(value) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    return stream


def local_model_specs(config: ServeConfig) -> list[LocalModelSpec]:
    """The local model servers the endpoints' pipelines declare (each address once)."""
    specs: dict[str, LocalModelSpec] = {}
    for endpoint in config.endpoints:
        for spec in declared_local_models(endpoint.pipeline):
            specs.setdefault(spec.url, spec)
    return list(specs.values())


def health_report(config: ServeConfig, local_models: list[LocalModelSpec]) -> dict[str, Any]:
    from pmc_rag.models import EMBEDDED_LLMS, is_verified

    report: dict[str, Any] = {"status": "ok"}
    problem = unreachable(os.environ.get("PG_CONN_STR", ""))
    report["database"] = f"unreachable: {problem}" if problem else "ok"
    if problem:
        report["status"] = "unavailable"
    report["endpoints"] = {e.name: "loaded" for e in config.endpoints}  # setup() warmed each up or the start failed
    # From the watcher's last check (every 2 s), so /health never waits on a busy or hung model server.
    local = {spec.url: local_model_server(spec).status() for spec in local_models}
    if local:
        report["local_models"] = local
        if report["status"] == "ok" and any(entry["state"] != "running" for entry in local.values()):
            report["status"] = "degraded"
    report["embedded_models"] = {name: "ready" if is_verified(model) else "missing"
                                 for name, model in EMBEDDED_LLMS.items()}
    report["ollama"] = _ollama_state()
    import torch

    report["torch_threads"] = torch.get_num_threads()  # hayhooks.yml server.torch_threads, as the models run
    report["process"] = os.getpid()  # with server.workers > 1: which worker answered
    return report


def _ollama_state(timeout: float = 1.0) -> str:
    """Whether Ollama answers; a hung one costs this check `timeout`, in a worker thread, not the event loop."""
    from urllib.request import urlopen

    address = os.environ.get("OLLAMA_HOST") or "http://localhost:11434"
    address = address if "://" in address else f"http://{address}"
    try:
        with urlopen(f"{address.rstrip('/')}/api/tags", timeout=timeout) as response:
            return "reachable" if response.status == 200 else f"HTTP {response.status}"
    except OSError:
        return f"not reachable at {address}: the embedded model answers instead"


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _keep_embedded_database_up(stop: threading.Event, every_s: float = 2.0) -> None:
    """Start the embedded PostgreSQL again when it stops under the running server (someone sent it SIGTERM, it
    crashed): meanwhile requests get 503s that say the database is not reachable, afterwards answers again."""
    from pmc_rag.database import keep_embedded_running

    while not stop.wait(every_s):
        try:
            done = keep_embedded_running()
            if done:
                log.warning("the embedded PostgreSQL was not running normally: %s", done)
        except Exception as error:  # said every time it fails: the operator must act
            log.error("the embedded PostgreSQL has stopped and could not be started again: %s", error)


def serve(config: ServeConfig) -> None:
    """Build the app (every model warmed up) and serve it until interrupted: in this process, or in
    `config.workers` processes sharing the port."""
    from pmc_rag.database import ensure_database

    _log_requests()
    taken = port_taken(config.host, config.port)
    if taken:  # found now, not after a minute of loading models (a second `pmc-rag serve` on the same port)
        raise ServeConfigError(f"cannot serve on {config.host}:{config.port}: {taken} (another pmc-rag serve or "
                               "another program listens there); stop it, or choose another port with --port")
    database = ensure_database()
    print(f"Database: {database.description}", flush=True)
    local_models = local_model_specs(config)
    for spec in local_models:  # the model servers this server starts go with it, even if it is killed -9
        local_model_server(spec).exit_with_this_process = True
    stop_watching = threading.Event()
    if database.embedded:
        threading.Thread(target=_keep_embedded_database_up, args=(stop_watching,), daemon=True,
                         name="pmc-rag-database-watch").start()
    # Uvicorn shuts down gracefully on SIGTERM, then raises the signal again; with the default handler the process
    # would die right there, before the cleanup below and the embedded database's, leaving the model server behind.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    # `pmc-rag ask` on this data folder asks this server instead of loading the pipeline itself
    host = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
    record_server(f"http://{host}:{config.port}",
                  {e.name: e.pipeline for e in config.endpoints if e.kind == "answer" and e.rest})
    try:
        if config.workers > 1:
            _serve_in_workers(config, local_models)
        else:
            _use_torch_threads(config)
            _Server(uvicorn_config(build_app(config), config), _ready_lines(config)).run()
    finally:
        forget_server()
        stop_watching.set()
        for spec in local_models:  # the model servers this server started go with it
            local = local_model_server(spec)
            local.stop_watching()
            if local.process is not None:
                local.stop()


def _serve_in_workers(config: ServeConfig, local_models: list[LocalModelSpec]) -> None:
    """`config.workers` processes, each with the whole app, accept on one socket: requests spread over the cores
    instead of waiting for one process's interpreter lock. This process starts the model servers they share (one
    start, not one per worker at once) and watches them; each worker's limits (answers at once, queue) are its own."""
    from uvicorn.supervisors import Multiprocess

    for spec in local_models:
        local = local_model_server(spec)
        try:
            local.ensure_running()
        except LocalModelError as error:  # as in one process: answers fail over to the next generator
            log.warning("%s", error)
        local.watch()
    os.environ[WORKER_CONFIG] = json.dumps({"path": str(config.source), "host": config.host, "port": config.port})
    settings = uvicorn_config("pmc_rag.serving.app:worker_app", config, factory=True, workers=config.workers)
    print(f"Starting {config.workers} worker processes; each says when it serves.", flush=True)
    Multiprocess(settings, sockets=[settings.bind_socket()]).run()


def worker_app() -> FastAPI:
    """The app of one worker process of `_serve_in_workers` (uvicorn calls this in the new process)."""
    from pmc_rag.serving.config import load_serve_config

    _log_requests()
    config = load_serve_config(**json.loads(os.environ[WORKER_CONFIG]))
    _use_torch_threads(config)
    for spec in local_model_specs(config):  # one this worker restarts goes with it, as its parent's go with that
        local_model_server(spec).exit_with_this_process = True
    app = build_app(config)
    # The socket is open already (the parent process opened it); this worker accepts on it once this returns.
    print(f"[worker process {os.getpid()}] {_ready_lines(config)}", flush=True)
    return app


def uvicorn_config(app: Any, config: ServeConfig, **options: Any) -> uvicorn.Config:
    return uvicorn.Config(app, host=config.host, port=config.port, log_level="warning", **options)


def _use_torch_threads(config: ServeConfig) -> None:
    if config.torch_threads:
        import torch

        # Requests run side by side in threads: one thread each keeps every core busy with whole requests, where
        # several threads per small matrix product mostly wait for each other (measured: docs, "Throughput").
        torch.set_num_threads(config.torch_threads)


def log_fields_safely() -> None:
    """Hayhooks logs each request's fields with its line, in a coloured format that reads '<...>' as markup: a
    question holding "<>" broke the line, and a 60 KB field was written whole. Each field is logged shortened, with
    its angle brackets shown as ‹ ›."""
    from loguru import logger

    logger.configure(patcher=_loggable_extras)


def _loggable_extras(record: Any) -> None:
    for name, value in list(record["extra"].items()):
        if name != "request_id":
            record["extra"][name] = _Shown(loggable(value))


def loggable(value: Any, limit: int = 300) -> str:
    """A value as a log line may show it: its repr, at most `limit` characters, no angle brackets."""
    text = repr(value)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} characters)"
    return text.replace("<", "‹").replace(">", "›")


class _Shown(str):
    """A string whose repr is itself (Hayhooks' format writes each field's repr)."""

    def __repr__(self) -> str:
        return str(self)


def _log_requests() -> None:
    if not log.handlers:  # one line per request: timings, the model that answered, the answer's flags
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)-8s | %(name)s | %(message)s",
                                               "%Y-%m-%d %H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)


def _ready_lines(config: ServeConfig) -> str:
    base = f"http://{config.host}:{config.port}"
    answer = next((e.name for e in config.endpoints if e.kind == "answer" and e.rest), None)
    ready = [f"Serving {', '.join(e.name for e in config.endpoints)} on {base} (OpenAPI: {base}/docs; "
             f"chat models: {base}/v1/models). Ctrl-C stops it."]
    if answer:
        ready.append(f"Try, from another terminal:\n  curl -s {base}/{answer}/run -H 'Content-Type: application/json'"
                     " -d '{\"question\": \"Is first-line erlotinib effective in EGFR-mutant lung cancer?\"}'")
    return "\n".join(ready)


class _Server(uvicorn.Server):
    """Says it serves once the port is open."""

    def __init__(self, config: uvicorn.Config, ready: str):
        super().__init__(config)
        self.ready = ready

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(self.ready, flush=True)
