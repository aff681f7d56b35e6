"""`hayhooks.yml`: what `pmc-rag serve` serves, read and checked before anything starts.

Each section is a pydantic model (strict, unknown keys refused), so a wrong type or a typo is an error naming the
key as the file writes it; what pydantic cannot say (a pipeline file that does not exist, an endpoint name taken by
a route) is checked after. The result is the frozen `ServeConfig` the server reads.

    from pmc_rag.serving.config import load_serve_config

    config = load_serve_config("hayhooks.yml")   # ServeConfigError: "hayhooks.yml: `server.port` must be ..."
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

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


class _Section(BaseModel):
    # Strict: `port: "1416"` or `follow_ups_from_topic_papers: yes-please` is an error that names the key, never a
    # silent conversion; a key that is not read (a typo) is an error too.
    model_config = ConfigDict(extra="forbid", strict=True)


Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[int | float, Field(ge=0)]


class _Server(_Section):
    host: str = "127.0.0.1"
    port: Count = 1416
    api_key_env: str = "PMC_RAG_API_KEY"
    max_body_bytes: Count = 65536
    max_question_chars: Count = 2000
    cors_origins: list[str] | None = None
    allowed_hosts: list[str] | None = None
    max_running_answers: Count = 2
    max_queued_answers: Count = 8
    max_queue_wait_s: Seconds = 60
    answer_deadline_s: Seconds = 240
    torch_threads: Count = 1
    workers: Count = 1


class _Conversations(_Section):
    retention_days: Seconds = 30
    carried_chunks: Count = 5
    follow_ups_from_topic_papers: bool = True


class _Cache(_Section):
    max_entries: Count = 1000


class _Uploads(_Section):
    pipeline: str | None = None
    max_bytes: Count = 20_000_000
    max_files: Count = 50
    read_timeout_s: Seconds = 60
    read_memory_mb: Count = 1024
    max_text_chars: Count = 10_000_000


class _Endpoint(_Section):
    name: str
    pipeline: str
    kind: str = "answer"
    rest: bool = True
    chat: bool = False
    description: str = ""
    parameters: list[str] = []
    mcp_tool: str | None = None


class _ServeFile(_Section):
    server: _Server = _Server()
    conversations: _Conversations = _Conversations()
    cache: _Cache = _Cache()
    uploads: _Uploads = _Uploads()
    endpoints: list[_Endpoint]


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
    if not isinstance(data.get("endpoints"), list) or not data["endpoints"]:
        raise ServeConfigError(f"{source}: `endpoints` must list at least one endpoint (name, pipeline, kind)")
    # An empty section (`cache:` with nothing under it) is the defaults, as before.
    data = {key: ({} if value is None and key != "endpoints" else value) for key, value in data.items()}
    try:
        read = _ServeFile.model_validate(data)
    except ValidationError as error:
        raise ServeConfigError(_first_problem(source, error)) from None
    server, conversations, uploads = read.server, read.conversations, read.uploads
    parsed = tuple(_endpoint(item.model_dump(), index, source) for index, item in enumerate(read.endpoints))
    names = [e.name for e in parsed]
    if len(set(names)) != len(names):
        raise ServeConfigError(f"{source}: endpoint names must be unique, got {names}")
    tools = [e.mcp_tool for e in parsed if e.mcp_tool]
    if len(set(tools)) != len(tools):
        raise ServeConfigError(f"{source}: `mcp_tool` names must be unique, got {tools}")
    return ServeConfig(
        endpoints=parsed,
        host=str(host or server.host),
        port=int(port or server.port),
        api_key_env=server.api_key_env,
        max_body_bytes=server.max_body_bytes,
        max_question_chars=server.max_question_chars,
        retention_days=float(conversations.retention_days),
        carried_chunks=conversations.carried_chunks,
        follow_ups_from_topic_papers=conversations.follow_ups_from_topic_papers,
        cache_entries=read.cache.max_entries,
        cors_origins=_origins(server.cors_origins, source),
        allowed_hosts=_hosts(server.allowed_hosts, source),
        max_running_answers=max(1, server.max_running_answers),
        max_queued_answers=server.max_queued_answers,
        max_queue_wait_s=float(server.max_queue_wait_s),
        answer_deadline_s=float(server.answer_deadline_s),
        torch_threads=server.torch_threads,
        workers=max(1, server.workers),
        upload_pipeline=_pipeline_path(uploads.pipeline, source, "uploads.pipeline"),
        max_upload_bytes=uploads.max_bytes,
        max_upload_files=uploads.max_files,
        upload_read_timeout_s=float(uploads.read_timeout_s),
        upload_read_memory_mb=uploads.read_memory_mb,
        max_upload_text_chars=uploads.max_text_chars,
        source=source,
    )


def _first_problem(source: Path, error: ValidationError) -> str:
    """pydantic's first complaint in hayhooks.yml's words: the key as written there, what it must be instead."""
    problem = error.errors()[0]
    location = problem["loc"]
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location).lstrip(".")
    section = _ServeFile
    for part in location[:-1]:
        if isinstance(part, str):
            field = section.model_fields.get(part)
            annotation = getattr(field, "annotation", None)
            section = getattr(annotation, "__args__", (annotation,))[0] if annotation is not None else section
    if problem["type"] == "extra_forbidden":
        known = sorted(getattr(section, "model_fields", {}))
        return f"{source}: `{key}`: unknown key; choose from {known}"
    if problem["type"] == "missing":
        return f"{source}: `{key}` is missing"
    value = problem.get("input")
    if problem["type"].startswith("bool"):
        return f"{source}: `{key}` must be true or false, not {value!r}"
    if problem["type"].startswith(("int", "float", "greater_than")):
        return f"{source}: `{key}` must be a non-negative number, not {value!r}"
    if problem["type"].startswith("model"):
        return f"{source}: `{key}` must be a mapping"
    return f"{source}: `{key}`: {problem['msg']}, not {value!r}"


def _pipeline_path(value: Any, source: Path, where: str) -> Path | None:
    if value is None:
        return None
    path = Path(str(value))
    path = path if path.is_absolute() else source.parent / path
    if not path.is_file():
        raise ServeConfigError(f"{source}: {where}: {path} does not exist; name a YAML file in pipelines/")
    return path


def _origins(names: list[str] | None, source: Path) -> tuple[str, ...]:
    return _names(names, "cors_origins", r"https?://[^/\s]+|\*", source,
                  "origins such as \"http://localhost:3000\" (scheme and host, no path), or [\"*\"] for any page")


def _hosts(names: list[str] | None, source: Path) -> tuple[str, ...]:
    return tuple(h.lower() for h in _names(names, "allowed_hosts", r"[A-Za-z0-9.:\[\]-]+|\*", source,
                                           "host names such as \"pmc-rag.lab.example\" or \"10.0.0.5\" (no scheme, "
                                           "no port), or [\"*\"] for any"))


def _names(names: list[str] | None, key: str, pattern: str, source: Path, what: str) -> tuple[str, ...]:
    """`server.<key>`: strings each matching `pattern`; ServeConfigError saying `what` they must be."""
    names = names or []
    if not all(re.fullmatch(pattern, n) for n in names):
        raise ServeConfigError(f"{source}: `server.{key}` must be a list of {what}")
    return tuple(names)


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
