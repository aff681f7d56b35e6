"""pmc-rag's local model server: one GGUF model run by llama.cpp, served over the OpenAI chat API.

It runs in a process of its own so that a crash of native code (llama.cpp has segfaulted on some CPUs) costs one
answer, not the server or the CLI that asked: `pmc_rag.local_llm.supervisor` starts, watches and restarts it.
Any OpenAI-compatible client can use it, which is why the pipelines talk to it with Haystack's stock
`OpenAIChatGenerator`. It is our own small server rather than `llama_cpp.server` because that one (0.3.36) can
neither load a model with llama.cpp's weight repacking off nor report token usage in a streamed reply.

    python -m pmc_rag.local_llm.server --model qwen2.5-0.5b-instruct --port 1417 [--n-ctx 4096]

Requests must carry `Authorization: Bearer $PMC_RAG_LLM_API_KEY` when that variable is set. The server exits by
itself after `--idle-minutes` without a request (the supervisor's health checks count as requests).
"""

from __future__ import annotations

import argparse
import copy
import faulthandler
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from pmc_rag.local_llm.reply_memo import ReplyMemo, request_fingerprint

# Sampling settings passed on to llama.cpp; anything else in a request is ignored, as OpenAI-compatible servers do.
_SAMPLING = {"temperature", "top_p", "stop", "seed", "presence_penalty", "frequency_penalty"}


def load_llama(model_path: str, n_ctx: int, n_threads: int | None = None, chat_format: str | None = None,
               prompt_cache_mb: int = 0) -> Any:
    """Load a GGUF with llama.cpp's extra buffer types (weight repacking) off, keeping up to `prompt_cache_mb` of
    recent prompts' states (`pmc_rag.local_llm.prompt_cache`; 0: none).

    With them on, llama.cpp repacks quantised weights for the CPU's widest matrix unit; on Xeons with AMX that
    path (`ggml_backend_amx_mul_mat`) segfaulted with Q4_K weights. `Llama()` has no argument for it, so the
    model parameters it builds are given `use_extra_bufts = False` for the duration of the constructor.
    """
    import llama_cpp.llama_cpp as bindings

    from pmc_rag.local_llm.prompt_cache import LlamaRAMCache, PromptCachingLlama

    default_params = bindings.llama_model_default_params

    def portable_params():
        params = default_params()
        params.use_extra_bufts = False
        return params

    bindings.llama_model_default_params = portable_params
    try:
        # Generation threads: llama-cpp-python's default, half the CPUs. Every core generated 1.5x as fast on a
        # quiet 2-core machine (36 against 24 tokens/s), but llama.cpp's threads wait for each other at every
        # step, so with another busy process (a second model server) it fell to 0.4 tokens/s against 19
        # (evaluation/results/2026-11-26-f16-weights/). Prompts are read with every CPU either way.
        llama = PromptCachingLlama(model_path=model_path, n_ctx=n_ctx, n_threads=n_threads, chat_format=chat_format,
                                   verbose=False)
    finally:
        bindings.llama_model_default_params = default_params
    if prompt_cache_mb > 0:
        llama.set_cache(LlamaRAMCache(capacity_bytes=prompt_cache_mb << 20))
    return llama


def prompt_cache_report(llama: Any) -> dict[str, int] | None:
    """The prompt cache as /health shows it: prompts kept, their bytes, the cap and the hits (None: no cache)."""
    cache = getattr(llama, "cache", None)
    if cache is None:
        return None
    return {"prompts": len(cache.cache_state), "bytes": int(cache.cache_size), "capacity_bytes": cache.capacity_bytes,
            "hits": int(getattr(llama, "prompt_cache_hits", 0))}


class ModelService:
    """One llama.cpp model, one reply at a time (a llama.cpp context is not shared between replies); a request
    asked before with temperature 0 gets the reply written then (`pmc_rag.local_llm.reply_memo`)."""

    def __init__(self, llama: Any, name: str, memo: ReplyMemo | None = None):
        self.llama = llama
        self.name = name
        self.memo = memo or ReplyMemo(max_replies=0)
        self.lock = threading.Lock()
        self.busy_since: float | None = None
        self.last_request = time.monotonic()
        self.replies = 0
        self.tokens_computed = 0
        self.request_id = ""

    def touch(self) -> None:
        self.last_request = time.monotonic()

    def settings(self, body: dict[str, Any]) -> dict[str, Any]:
        settings = {key: body[key] for key in _SAMPLING if body.get(key) is not None}
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        if max_tokens is not None:
            settings["max_tokens"] = int(max_tokens)
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema":  # OpenAI's form, as llama.cpp's grammar wants it
            schema = (response_format.get("json_schema") or {}).get("schema")
            settings["response_format"] = {"type": "json_object", "schema": schema}
        elif response_format.get("type") == "json_object":
            settings["response_format"] = response_format
        return settings

    def complete(self, messages: list[dict[str, Any]], settings: dict[str, Any]) -> dict[str, Any]:
        key = self.memo.key(messages, settings, streamed=False)
        with self.lock:
            computed_before = self._begin(messages, settings)
            usage: dict[str, int] = {}
            kept = reply = self.memo.get(key)
            try:
                if reply is None:
                    reply = self.llama.create_chat_completion(messages=messages, **settings)
                    self.memo.put(key, reply)
                usage = reply.get("usage") or {}
            finally:
                self._end(computed_before, usage.get("prompt_tokens"), usage.get("completion_tokens"),
                          "reply", repeated=kept is not None)
        reply.update(id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()), model=self.name)
        return reply

    def _begin(self, messages: list[dict[str, Any]], settings: dict[str, Any]) -> int:
        self.busy_since = time.monotonic()
        self.request_id = request_fingerprint(messages, settings)
        return getattr(self.llama, "tokens_read", 0)

    def _end(self, computed_before: int, prompt_tokens: int | None, written: int | None, kind: str,
             repeated: bool = False) -> None:
        """One line per reply in the server's log: what it cost. Tokens computed are the prompt's tokens that no
        kept prompt held, plus one per token written; the rest of the prompt was restored. A repeated reply is the
        one kept for the same request, handed back without the model."""
        seconds = time.monotonic() - (self.busy_since or time.monotonic())
        computed = getattr(self.llama, "tokens_read", 0) - computed_before
        self.busy_since = None
        self.replies += 1
        self.tokens_computed += computed
        print(f"pmc-rag-llm: {kind} {self.replies}: {prompt_tokens if prompt_tokens is not None else '?'} prompt "
              f"tokens, {written if written is not None else '?'} written, {computed} computed, {seconds:.1f} s, "
              f"request {self.request_id}{', repeated' if repeated else ''}", flush=True)

    def stream(self, messages: list[dict[str, Any]], settings: dict[str, Any], include_usage: bool
               ) -> Iterator[str]:
        """Server-sent events, one per token; with `include_usage`, a last event with the token counts."""
        key = self.memo.key(messages, settings, streamed=True)
        with self.lock:
            computed_before = self._begin(messages, settings)
            completion_id = f"chatcmpl-{uuid.uuid4().hex}"
            created = int(time.time())
            tokens = 0
            kept = self.memo.get(key)
            prompt = None if kept is None else kept["prompt_tokens"]
            events: list[dict[str, Any]] = []
            stream = iter(kept["events"]) if kept is not None else self.llama.create_chat_completion(
                messages=messages, stream=True, **settings)
            try:
                for event in stream:
                    if prompt is None:  # the first event comes once the prompt is read: the context holds it all
                        prompt = self.llama.n_tokens
                    choice = event["choices"][0]
                    if choice["delta"].get("content"):
                        tokens += 1  # llama.cpp streams one token per event
                    if kept is None:
                        events.append(copy.deepcopy(event))
                    event.update(id=completion_id, created=created, model=self.name)
                    yield f"data: {json.dumps(event)}\n\n"
                if kept is None and events and events[-1]["choices"][0].get("finish_reason"):
                    # kept only when the reply ended by itself: a client that left mid-reply never gets here
                    self.memo.put(key, {"prompt_tokens": prompt, "events": events})
                if include_usage:
                    prompt = prompt or 0
                    usage = {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}
                    yield "data: " + json.dumps({"id": completion_id, "object": "chat.completion.chunk",
                                                 "created": created, "model": self.name, "choices": [],
                                                 "usage": usage}) + "\n\n"
                yield "data: [DONE]\n\n"
            finally:
                if kept is None:
                    stream.close()  # a client that went away stops the generation here
                self._end(computed_before, prompt, tokens, "streamed reply", repeated=kept is not None)


class ClosingEventStream(StreamingResponse):
    """
    Server-sent events from a blocking iterator, which is closed however the response ends: finished, failed, or
    its client gone. Starlette's StreamingResponse leaves an abandoned iterator suspended, and this one holds the
    model: closing it stops llama.cpp at once and frees the model for the next reply.

    Usage: `return ClosingEventStream(service.stream(messages, settings, include_usage=True))`
    """

    def __init__(self, events: Iterator[str]):
        self._events = events
        super().__init__(self._pull(), media_type="text/event-stream")

    async def _pull(self) -> AsyncIterator[str]:
        try:
            while True:
                event = await run_in_threadpool(next, self._events, None)
                if event is None:
                    return
                yield event
        finally:
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(self._events.close)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.body_iterator.aclose()


def build_app(service: ModelService, api_key: str | None, info: dict[str, Any]) -> FastAPI:
    app = FastAPI(title="pmc-rag local model server", docs_url=None, redoc_url=None)

    def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)

    @app.middleware("http")
    async def authorise(request: Request, call_next: Any) -> Any:
        service.touch()
        if api_key and request.headers.get("authorization") != f"Bearer {api_key}":
            return error(401, "missing or wrong API key (Authorization: Bearer $PMC_RAG_LLM_API_KEY)",
                         "authentication_error")
        return await call_next(request)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        busy = service.busy_since
        return {**info, "status": "ok", "busy_s": round(time.monotonic() - busy, 1) if busy else None,
                "replies": service.replies,
                "tokens_computed": service.tokens_computed, "prompt_cache": prompt_cache_report(service.llama),
                "reply_memo": service.memo.report()}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": service.name, "object": "model", "created": 0,
                                            "owned_by": "pmc-rag"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            return error(400, "the body is not valid JSON")
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages:
            return error(400, "`messages` must be a non-empty list of {role, content} objects")
        plain = []
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):  # OpenAI content parts: the text ones
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            if not isinstance(content, str | None):
                return error(400, "each message needs a `role` and a text `content`")
            plain.append({"role": message.get("role", "user"), "content": content or ""})
        settings = service.settings(body)
        try:
            if body.get("stream"):
                # Usage comes last in every stream unless refused (as llama.cpp's llama-server does): Haystack's
                # OpenAIChatGenerator does not ask for it, and a hosted API would reject the option unstreamed.
                include_usage = (body.get("stream_options") or {}).get("include_usage", True) is not False
                return ClosingEventStream(service.stream(plain, settings, include_usage))
            return await run_in_threadpool(service.complete, plain, settings)
        except ValueError as problem:  # llama.cpp: the prompt does not fit the context, a bad setting
            return error(400, str(problem))

    return app


def main(argv: list[str] | None = None) -> int:
    faulthandler.enable()  # a native crash leaves its Python stack in the log before the process dies
    parser = argparse.ArgumentParser(prog="python -m pmc_rag.local_llm.server", description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="a name from pmc_rag.models.EMBEDDED_LLMS")
    parser.add_argument("--model-path", default=None, help="a GGUF file to serve instead of the named model's")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--weights", default="packaged",
                        help="the embedded model's weights as packaged, or re-encoded once: f16 or q8_0 "
                             "(pmc_rag.models.REENCODINGS)")
    parser.add_argument("--n-threads", type=int, default=None,
                        help="threads that generate (default: half the CPUs); prompts are read with every CPU")
    parser.add_argument("--prompt-cache-mb", type=int, default=256,
                        help="memory for the states of recent prompts, so that one read before is not read again "
                             "(default: 256; 0: none)")
    parser.add_argument("--remembered-replies", type=int, default=128,
                        help="replies kept for requests asked again with temperature 0, which get the same reply "
                             "without the model (default: 128; 0: none)")
    parser.add_argument("--idle-minutes", type=float, default=30.0, help="exit after this long unused; 0: never")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="exit when the process that started this one has gone (a `pmc-rag serve` killed -9)")
    args = parser.parse_args(argv)

    started = time.monotonic()
    try:
        from pmc_rag.models import EMBEDDED_LLMS, PACKAGED, ModelError, assemble_llm, reencoded_llm

        weights = asked = PACKAGED if args.model_path else args.weights   # a model_path file is served as it is
        try:
            path = args.model_path or str(reencoded_llm(args.model, weights))
        except ModelError as problem:  # the packaged weights still answer, only slower
            print(f"pmc-rag-llm: warning: {problem}; serving the packaged weights", file=sys.stderr, flush=True)
            weights, path = PACKAGED, str(assemble_llm(args.model))
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no GGUF file at {path}")
        registered = EMBEDDED_LLMS.get(args.model)
        llama = load_llama(path, args.n_ctx, args.n_threads, registered.chat_format if registered else None,
                           args.prompt_cache_mb)
    except Exception as problem:  # reported to the supervisor through this line of the log
        print(f"pmc-rag-llm: error: could not load the model {args.model}: {type(problem).__name__}: {problem}",
              file=sys.stderr, flush=True)
        return 2
    import llama_cpp
    import uvicorn

    info = {"model": args.model, "model_path": path, "pid": os.getpid(), "n_ctx": args.n_ctx,
            "n_threads": llama.n_threads, "n_threads_batch": llama.n_threads_batch,
            "weights_asked": asked, "weights": weights,
            "llama_cpp_python": llama_cpp.__version__, "extra_buffer_types": False,
            "llama_cpp_lib": os.environ.get("LLAMA_CPP_LIB_PATH") or "portable (the installed wheel's)",
            "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
            "load_s": round(time.monotonic() - started, 2)}
    print(f"pmc-rag-llm: loaded {path} in {info['load_s']} s; llama.cpp: {info['system_info']}", flush=True)
    service = ModelService(llama, args.model, ReplyMemo(max_replies=args.remembered_replies))
    server = uvicorn.Server(uvicorn.Config(build_app(service, os.environ.get("PMC_RAG_LLM_API_KEY") or None, info),
                                           host=args.host, port=args.port, log_level="warning"))

    def exit_when_idle() -> None:
        while not server.should_exit:
            time.sleep(5)
            idle = time.monotonic() - service.last_request
            if service.busy_since is None and idle > args.idle_minutes * 60:
                print(f"pmc-rag-llm: unused for {args.idle_minutes:g} min: exiting", flush=True)
                server.should_exit = True

    parent = os.getppid()

    def exit_with_parent() -> None:
        while not server.should_exit:
            time.sleep(1)
            if os.getppid() != parent:  # re-parented: the process that started this one has gone
                print(f"pmc-rag-llm: the process that started this server (pid {parent}) has gone: exiting",
                      flush=True)
                server.should_exit = True

    if args.idle_minutes > 0:
        threading.Thread(target=exit_when_idle, daemon=True).start()
    if args.exit_with_parent:
        threading.Thread(target=exit_with_parent, daemon=True).start()
    print(f"pmc-rag-llm: serving {args.model} on http://{args.host}:{args.port}/v1", flush=True)
    server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
