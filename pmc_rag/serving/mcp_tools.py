"""The MCP server `pmc-rag serve` mounts at `/mcp` (streamable HTTP), built with Hayhooks' MCP support.

Each endpoint of hayhooks.yml with an `mcp_tool` name becomes a tool of that name, described by its `description`
(the description is all an agent reads to choose a tool, so hayhooks.yml says there what each is for and what it
returns) and taking the endpoint's REST fields. A call runs the endpoint exactly as its REST route does (the same
checks, redaction, cache, queue and audit) and returns compact JSON an agent can use: for an answer, its text, the
references with their supporting sentences, the notes and the conversation id; for a search, the ranked chunks
with their ids. The same API key as every other route is required.

Usage (from hayhooks.yml, in `build_app`):
```python
mount_mcp(app, config)      # tools listed and called at POST /mcp
```
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from hayhooks.server.pipelines.models import create_pipeline_metadata
from hayhooks.server.pipelines.registry import ImmutablePipelineRegistry, PipelineRegistration
from hayhooks.server.utils.base_pipeline_wrapper import BasePipelineWrapper
from hayhooks.server.utils.mcp_utils import create_mcp_server, list_pipelines_as_tools
from starlette.routing import Route

from pmc_rag.serving.config import ServeConfig


class _ToolCall(BasePipelineWrapper):
    """What one MCP tool runs: its endpoint's own `run_api`, the result made compact for an agent."""

    def __init__(self, endpoint: BasePipelineWrapper, kind: str):
        super().__init__()
        self.endpoint, self.kind = endpoint, kind
        self._is_run_api_implemented = True

    def setup(self) -> None:  # the endpoint was set up when the server loaded it
        pass

    def run_api(self, **arguments: Any) -> dict[str, Any]:
        result = self.endpoint.run_api(**arguments)
        return compact_answer(result) if self.kind == "answer" else compact_chunks(result)


def compact_answer(answer: Any) -> dict[str, Any]:
    """An answer as an agent needs it: the cited text, one reference per [n] with its supporting sentence."""
    return {
        "kind": answer.kind,  # `emergency`: a person may be in danger; the answer is where to get help, not papers
        "route": answer.route,  # which path answered (a routed pipeline): summarise, compare, ...
        "safety": answer.safety,  # a crisis line to show above the answer (the question may describe danger)
        "answer": answer.answer,
        "references": [{"number": r.number, "source_id": r.source_id, "title": r.title, "journal": r.journal,
                        "year": r.year, "url": r.url, "origin": r.origin, "supporting_sentence": r.evidence,
                        "sections": answer.cited_sections(r.number)}
                       for r in sorted(answer.references, key=lambda r: r.number)],
        "notes": answer.notes,
        "flags": sorted(name for name, on in answer.flags.items() if on),
        "not_answering": [p.model_dump(mode="json") for p in answer.not_answering],
        "web_sources": [w.model_dump(mode="json") for w in answer.web_sources],
        "model": answer.model,
        "conversation_id": answer.conversation_id,
    }


def compact_chunks(result: Any) -> dict[str, Any]:
    """Ranked chunks with the ids an agent cites them by, and the metadata it needs to judge them."""
    return {"question": result.question, "chunks": [
        {"rank": rank, "chunk_id": chunk.chunk_id, "source_id": chunk.source_id, "score": chunk.score,
         "title": chunk.meta.get("title"), "journal": chunk.meta.get("journal"), "year": chunk.meta.get("year"),
         "section": chunk.meta.get("section"), "evidence_level": chunk.meta.get("evidence_level"),
         "content": chunk.content}
        for rank, chunk in enumerate(result.chunks, start=1)]}


def mcp_registry(config: ServeConfig, endpoints: Any) -> ImmutablePipelineRegistry:
    """The tools: one per endpoint with an `mcp_tool` name, over the endpoint wrappers Hayhooks loaded."""
    registrations = []
    for endpoint in config.endpoints:
        if not endpoint.mcp_tool:
            continue
        wrapper = endpoints.get(endpoint.name)
        metadata = {**create_pipeline_metadata(endpoint.mcp_tool, wrapper), "description": endpoint.description}
        registrations.append(PipelineRegistration(endpoint.mcp_tool, _ToolCall(wrapper, endpoint.kind), metadata))
    return ImmutablePipelineRegistry(registrations)


class _StreamableHttp:
    """The ASGI app behind /mcp (a class, so Starlette's Route hands it the raw request)."""

    def __init__(self, manager: Any):
        self.manager = manager

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        await self.manager.handle_request(scope, receive, send)


def mount_mcp(app: FastAPI, config: ServeConfig) -> None:
    """Serve the tools at /mcp for as long as the app runs (nothing when no endpoint names a tool)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    registry = mcp_registry(config, app.state.pipeline_registry)
    if not registry.get_names():
        return
    server = create_mcp_server("pmc-rag", registry=registry)

    # Hayhooks also lists its read-only status tools; an agent choosing between ours does better without them.
    @server.list_tools()
    async def list_tools() -> list[Any]:
        return await list_pipelines_as_tools(registry)

    # Stateless: any worker process can answer any request, and there are no sessions to expire.
    manager = StreamableHTTPSessionManager(app=server, event_store=None, stateless=True)
    app.router.routes.insert(0, Route("/mcp", endpoint=_StreamableHttp(manager), methods=["GET", "POST", "DELETE"]))
    running = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: Any) -> Any:
        async with manager.run(), running(application) as state:
            yield state

    app.router.lifespan_context = lifespan
