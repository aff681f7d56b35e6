"""`hayhooks.yml`: what `pmc-rag serve` serves, read and checked before anything starts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pmc_rag.paths import PROJECT_ROOT

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
CLIENT_PARAMETERS = {"filters", "top_k", "conversation_id"}
ENDPOINT_KINDS = {"answer", "retrieval"}


# Set in each worker process of `server.workers` > 1: where its configuration comes from (a JSON of
# load_serve_config's arguments). Its presence says "this is a worker".
WORKER_CONFIG = "PMC_RAG_SERVE_WORKER_CONFIG"


class ServeConfigError(ValueError):
    """hayhooks.yml is not usable; the message names the key and what to write instead."""


@dataclass(frozen=True)
class Endpoint:
    name: str
    pipeline: Path
    kind: str = "answer"
    rest: bool = True
    chat: bool = False
    description: str = ""
    parameters: tuple[str, ...] = ()
    mcp_tool: str | None = None  # the endpoint as a tool of the MCP server at /mcp, under this name


UPLOAD_KEYS = {"pipeline", "max_bytes", "max_files", "read_timeout_s", "read_memory_mb", "max_text_chars"}


@dataclass(frozen=True)
class ServeConfig:
    endpoints: tuple[Endpoint, ...]
    host: str = "127.0.0.1"
    port: int = 1416
    api_key_env: str = "PMC_RAG_API_KEY"
    max_body_bytes: int = 65536
    max_question_chars: int = 2000
    retention_days: float = 30
    carried_chunks: int = 5
    follow_ups_from_topic_papers: bool = True  # a follow-up is answered from the papers its topic question cited
    cache_entries: int = 1000
    cors_origins: tuple[str, ...] = ()  # web pages (origins) allowed to call the server from a browser
    # Host names (the `Host` header) requests may come addressed to, besides the loopback names and `host`: a
    # name this machine is reached by (behind a proxy, on a LAN). Anything else is a 421 (DNS rebinding).
    allowed_hosts: tuple[str, ...] = ()
    max_running_answers: int = 2        # answers generated at once; retrieval and cached answers do not count
    max_queued_answers: int = 8         # answers waiting for a turn; beyond this, 503 with Retry-After
    max_queue_wait_s: float = 60        # an answer that waited this long for a turn gets 503 instead
    answer_deadline_s: float = 240      # an answer not done this long after its request arrived is stopped (504)
    torch_threads: int = 1              # threads each request's model work may use; 0: as many as there are cores
    workers: int = 1                    # processes serving the port, each with all models loaded
    # Uploads (POST /collections/<name>/documents): the indexing pipeline they go through (None: no uploads)
    # and the largest request body taken.
    upload_pipeline: Path | None = None
    max_upload_bytes: int = 20_000_000
    max_upload_files: int = 50
    # Each uploaded file is read in a child process with these limits (a file built to exhaust the reader
    # stops there, not in the server), and an upload may hold at most `max_upload_text_chars` of text.
    upload_read_timeout_s: float = 60
    upload_read_memory_mb: int = 1024
    max_upload_text_chars: int = 10_000_000
    source: Path = field(default=PROJECT_ROOT / "hayhooks.yml")

    @property
    def local_only(self) -> bool:
        return self.host in LOCAL_HOSTS

    def endpoint(self, name: str) -> Endpoint:
        return next(e for e in self.endpoints if e.name == name)


def load_serve_config(path: str | Path | None = None, *, host: str | None = None, port: int | None = None
                      ) -> ServeConfig:
    """Read hayhooks.yml (or `path`); `host` and `port` override the file's."""
    source = Path(path) if path else PROJECT_ROOT / "hayhooks.yml"
    if not source.is_file():
        raise ServeConfigError(f"{source}: no such file; pass the path of your hayhooks.yml")
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise ServeConfigError(f"{source}: not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise ServeConfigError(f"{source}: expected a mapping with `server` and `endpoints`")
    server = _section(data, "server", source)
    conversations = _section(data, "conversations", source)
    cache = _section(data, "cache", source)
    uploads = _section(data, "uploads", source)
    unknown_upload_keys = sorted(set(uploads) - UPLOAD_KEYS)
    if unknown_upload_keys:
        raise ServeConfigError(f"{source}: uploads: unknown {unknown_upload_keys}; choose from {sorted(UPLOAD_KEYS)}")
    endpoints = data.get("endpoints") or []
    if not isinstance(endpoints, list) or not endpoints:
        raise ServeConfigError(f"{source}: `endpoints` must list at least one endpoint (name, pipeline, kind)")
    parsed = tuple(_endpoint(item, index, source) for index, item in enumerate(endpoints))
    names = [e.name for e in parsed]
    if len(set(names)) != len(names):
        raise ServeConfigError(f"{source}: endpoint names must be unique, got {names}")
    tools = [e.mcp_tool for e in parsed if e.mcp_tool]
    if len(set(tools)) != len(tools):
        raise ServeConfigError(f"{source}: `mcp_tool` names must be unique, got {tools}")
    return ServeConfig(
        endpoints=parsed,
        host=str(host or server.get("host", "127.0.0.1")),
        port=int(port or _number(server, "port", 1416, source, "server")),
        api_key_env=str(server.get("api_key_env", "PMC_RAG_API_KEY")),
        max_body_bytes=int(_number(server, "max_body_bytes", 65536, source, "server")),
        max_question_chars=int(_number(server, "max_question_chars", 2000, source, "server")),
        retention_days=float(_number(conversations, "retention_days", 30, source, "conversations")),
        carried_chunks=int(_number(conversations, "carried_chunks", 5, source, "conversations")),
        follow_ups_from_topic_papers=_flag(conversations, "follow_ups_from_topic_papers", True, source),
        cache_entries=int(_number(cache, "max_entries", 1000, source, "cache")),
        cors_origins=_origins(server, source),
        allowed_hosts=_hosts(server, source),
        max_running_answers=max(1, int(_number(server, "max_running_answers", 2, source, "server"))),
        max_queued_answers=int(_number(server, "max_queued_answers", 8, source, "server")),
        max_queue_wait_s=float(_number(server, "max_queue_wait_s", 60, source, "server")),
        answer_deadline_s=float(_number(server, "answer_deadline_s", 240, source, "server")),
        torch_threads=max(0, int(_number(server, "torch_threads", 1, source, "server"))),
        workers=max(1, int(_number(server, "workers", 1, source, "server"))),
        upload_pipeline=_pipeline_path(uploads.get("pipeline"), source, "uploads.pipeline"),
        max_upload_bytes=int(_number(uploads, "max_bytes", 20_000_000, source, "uploads")),
        max_upload_files=int(_number(uploads, "max_files", 50, source, "uploads")),
        upload_read_timeout_s=float(_number(uploads, "read_timeout_s", 60, source, "uploads")),
        upload_read_memory_mb=int(_number(uploads, "read_memory_mb", 1024, source, "uploads")),
        max_upload_text_chars=int(_number(uploads, "max_text_chars", 10_000_000, source, "uploads")),
        source=source,
    )


def _pipeline_path(value: Any, source: Path, where: str) -> Path | None:
    if value is None:
        return None
    path = Path(str(value))
    path = path if path.is_absolute() else source.parent / path
    if not path.is_file():
        raise ServeConfigError(f"{source}: {where}: {path} does not exist; name a YAML file in pipelines/")
    return path


def _origins(server: dict, source: Path) -> tuple[str, ...]:
    return _names(server, "cors_origins", r"https?://[^/\s]+|\*", source,
                  "origins such as \"http://localhost:3000\" (scheme and host, no path), or [\"*\"] for any page")


def _hosts(server: dict, source: Path) -> tuple[str, ...]:
    return tuple(h.lower() for h in _names(server, "allowed_hosts", r"[A-Za-z0-9.:\[\]-]+|\*", source,
                                           "host names such as \"pmc-rag.lab.example\" or \"10.0.0.5\" (no scheme, "
                                           "no port), or [\"*\"] for any"))


def _names(server: dict, key: str, pattern: str, source: Path, what: str) -> tuple[str, ...]:
    """`server.<key>`: a list of strings each matching `pattern`; ServeConfigError saying `what` they must be."""
    names = server.get(key) or []
    if not isinstance(names, list) or not all(isinstance(n, str) and re.fullmatch(pattern, n) for n in names):
        raise ServeConfigError(f"{source}: `server.{key}` must be a list of {what}")
    return tuple(names)


def _section(data: dict, key: str, source: Path) -> dict:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise ServeConfigError(f"{source}: `{key}` must be a mapping")
    return value


def _number(section: dict, key: str, default: float, source: Path, where: str) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ServeConfigError(f"{source}: `{where}.{key}` must be a non-negative number, not {value!r}")
    return value


def _flag(section: dict, key: str, default: bool, source: Path) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise ServeConfigError(f"{source}: `conversations.{key}` must be true or false, not {value!r}")
    return value


def _endpoint(item: Any, index: int, source: Path) -> Endpoint:
    where = f"{source}: endpoints[{index}]"
    if not isinstance(item, dict):
        raise ServeConfigError(f"{where} must be a mapping with name, pipeline and kind")
    name = str(item.get("name", ""))
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name) or name in {"v1", "health", "docs", "openapi"}:
        raise ServeConfigError(f"{where}.name {name!r}: use letters, digits, '_' and '-' (not v1/health/docs)")
    pipeline = Path(str(item.get("pipeline", "")))
    pipeline = pipeline if pipeline.is_absolute() else source.parent / pipeline
    if not pipeline.is_file():
        raise ServeConfigError(f"{where}.pipeline: {pipeline} does not exist; name a YAML file in pipelines/")
    kind = item.get("kind", "answer")
    if kind not in ENDPOINT_KINDS:
        raise ServeConfigError(f"{where}.kind {kind!r}: must be one of {sorted(ENDPOINT_KINDS)}")
    parameters = tuple(item.get("parameters") or ())
    unknown = set(parameters) - CLIENT_PARAMETERS
    if unknown:
        raise ServeConfigError(
            f"{where}.parameters: unknown {sorted(unknown)}; choose from {sorted(CLIENT_PARAMETERS)}")
    if kind == "retrieval" and (item.get("chat") or "conversation_id" in parameters):
        raise ServeConfigError(f"{where}: a retrieval endpoint cannot be a chat model or hold conversations")
    if not item.get("rest", True) and not item.get("chat", False):
        raise ServeConfigError(f"{where}: set `rest: true`, `chat: true` or both")
    mcp_tool = item.get("mcp_tool")
    if mcp_tool is not None and not (isinstance(mcp_tool, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,63}",
                                                                                mcp_tool)):
        raise ServeConfigError(f"{where}.mcp_tool {mcp_tool!r}: a tool name of letters, digits, '_' and '-' "
                               "(starting with a letter), e.g. search_literature")
    if mcp_tool and not str(item.get("description", "")).strip():
        raise ServeConfigError(f"{where}: an MCP tool needs a `description`: it is what an agent reads to choose it")
    return Endpoint(name=name, pipeline=pipeline, kind=kind, rest=bool(item.get("rest", True)),
                    chat=bool(item.get("chat", False)), description=str(item.get("description", "")).strip(),
                    parameters=parameters, mcp_tool=mcp_tool)
