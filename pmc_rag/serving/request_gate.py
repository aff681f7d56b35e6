"""The request gate: every request is checked here before Hayhooks sees it.

Host and Origin (a page elsewhere is refused), the API key, the body's size and JSON, and for `/{endpoint}/run` and
the chat route the fields (a 422 that names the field). The question is redacted of personal data before any log
sees it, each response carries an `X-Request-ID`, a 5xx shows no internals, and a client that goes away stops its
answer's work. `build_app` (app.py) adds it as middleware:

```python
app.add_middleware(RequestGate, config=config, api_key=os.environ.get(config.api_key_env))
```
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

from pmc_rag.answering.caller import (
    RequestLifetime,
    current_lifetime,
    current_owner,
    current_request_id,
    internal_error_detail,
    keys_in_use,
    owner_of,
)
from pmc_rag.answering.guards import InputError, clean_question, redact_personal_data
from pmc_rag.serving.browsers import BrowserPolicy
from pmc_rag.serving.config import ServeConfig

log = logging.getLogger("pmc_rag.serve")


class RequestGate:
    """
    Checks every request before Hayhooks sees it: API key, body size, JSON, and for `/{endpoint}/run` the
    fields (unknown ones are a 422 that lists the accepted ones). Checking here keeps the messages ours
    and stops a bad request before anything is logged or run.
    """

    def __init__(self, app: Any, config: ServeConfig, api_key: str | None):
        self.app = app
        self.config = config
        # Several keys, comma-separated, give several users conversations of their own.
        self.api_keys = {key.strip() for key in (api_key or "").split(",") if key.strip()}
        self.run_paths = {f"/{e.name}/{route}": e for e in config.endpoints if e.rest
                          for route in (("run", "stream") if e.kind == "answer" else ("run",))}
        self.chat_models = {e.name for e in config.endpoints if e.chat}
        self.browsers = BrowserPolicy(config.host, config.allowed_hosts, config.cors_origins)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex[:12]
        current_request_id.set(request_id)
        lifetime = RequestLifetime(self.config.answer_deadline_s)
        current_lifetime.set(lifetime)
        send = _with_request_id(send, request_id, f"{scope['method']} {scope['path']}")
        path = scope["path"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        # Before the key: a page elsewhere (or a rebound DNS name) is refused whether or not it guessed a key.
        refused = self.browsers.host_refusal(headers)
        if refused:
            await _reject(send, 421, refused)
            return
        refused = self.browsers.origin_refusal(scope["method"], headers)
        if refused:
            await _reject(send, 403, refused)
            return
        # Every route needs a key when keys are set, /health too: it names the database, models and their logs.
        presented = bearer_token(headers.get("authorization", ""))
        page = scope["method"] == "GET" and path == "/"  # the page holds no data; it asks for the key itself
        if self.api_keys and presented not in self.api_keys and not page:
            await _reject(send, 401, f"missing or wrong API key: send 'Authorization: Bearer <key>' "
                                     f"(the key is in {self.config.api_key_env} on the server)")
            return
        if path == "/mcp" and "mcp-session-id" in headers:
            # Stateless: every MCP request is checked by its own key and runs as it; a session id would suggest
            # that one key's session could be carried on with another.
            await _reject(send, 400, "this MCP server is stateless and issues no sessions: send requests without "
                                     "an Mcp-Session-Id header (each is checked by its own API key)")
            return
        current_owner.set(owner_of(presented if self.api_keys else None))  # whose conversations these are
        keys_in_use.set(bool(self.api_keys))
        if scope["method"] not in ("POST", "PUT"):
            await self.app(scope, receive, send)
            return
        upload = path.startswith("/collections/")
        limit = self.config.max_upload_bytes if upload else self.config.max_body_bytes
        too_large = (f"upload over {limit} bytes (uploads.max_bytes in hayhooks.yml); send fewer or smaller files"
                     if upload else f"request body over {limit} bytes; send a shorter question")
        if int(headers.get("content-length") or 0) > limit:
            await _reject(send, 413, too_large)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > limit:
                await _reject(send, 413, too_large)
                return
            if not message.get("more_body"):
                break
        problem = self._check(path, body)
        if problem:
            await _reject(send, *problem)
            return
        body = self._redacted(path, body)
        scope = {**scope, "headers": [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
                 + [(b"content-length", str(len(body)).encode())]}
        await _run_watching_for_disconnect(self.app, scope, body, receive, send, lifetime)

    def _check(self, path: str, body: bytes) -> tuple[int, str] | None:
        if path not in self.run_paths and path not in ("/v1/chat/completions", "/chat/completions"):
            return None
        try:
            data = json.loads(body or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            return 400, f"the body is not valid JSON ({error}); send a JSON object"
        except RecursionError:
            return 400, "the body's JSON is nested too deeply; send a flat JSON object"
        if not isinstance(data, dict):
            return 422, "the body must be a JSON object, e.g. {\"question\": \"...\"}"
        if path in self.run_paths:
            accepted = {"question", *self.run_paths[path].parameters}
            unknown = sorted(set(data) - accepted)
            if unknown:
                return 422, f"unknown field(s) {unknown}; {path} accepts {sorted(accepted)}"
            return None
        if not isinstance(data.get("model"), str):
            return 422, "`model` must be a string naming a chat model; GET /v1/models lists them"
        if data["model"] not in self.chat_models:
            return 404, f"model {data.get('model')!r} is not a chat model here; GET /v1/models lists them"
        return check_chat_fields(data, self.config.max_question_chars)


    def _redacted(self, path: str, body: bytes) -> bytes:
        """The body with personal data redacted from the question, so that not even Hayhooks' log sees it."""
        if path not in self.run_paths and path not in ("/v1/chat/completions", "/chat/completions"):
            return body
        data = json.loads(body)
        if isinstance(data.get("question"), str):
            data["question"] = redact_personal_data(data["question"])[0]
        for message in data.get("messages") or []:
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                message["content"] = redact_personal_data(message["content"])[0]
        return json.dumps(data).encode()


def bearer_token(authorization: str) -> str:
    """The key of an `Authorization: Bearer <key>` header; "" for any other form (a bare key, Basic, ...)."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


_ROLES = {"system", "user", "assistant", "developer", "tool"}


def check_chat_fields(data: dict[str, Any], max_question_chars: int) -> tuple[int, str] | None:
    """The fields of a chat request that pmc-rag reads, checked as the REST endpoint checks its own: a 422 that
    names the field, never a 500 further in. Other OpenAI fields (temperature, ...) are accepted and ignored."""
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        return 422, "`messages` must be a non-empty list of {role, content} objects"
    for index, message in enumerate(messages):
        where = f"`messages[{index}]`"
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            return 422, f"{where} must be an object with a `role` ({', '.join(sorted(_ROLES))}) and a `content`"
        content = message.get("content")
        if isinstance(content, list):
            if not all(isinstance(part, dict) and isinstance(part.get("text", ""), str) for part in content):
                return 422, f"{where}.content: each part must be an object with a text `text`"
            content = " ".join(part.get("text", "") for part in content)
        elif content is not None and not isinstance(content, str):
            return 422, f"{where}.content must be a string or a list of text parts"
        if message["role"] == "user" and (content or "").strip():
            try:  # every question of the conversation, not only the last, reaches retrieval and the model
                clean_question(content, max_question_chars)
            except InputError as error:
                return 422, f"{where}: {error.detail}"
    if data.get("conversation_id") is not None and not isinstance(data["conversation_id"], str):
        return 422, "`conversation_id` must be a string (the id a previous answer returned)"
    metadata = data.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict) or not isinstance(
            metadata.get("conversation_id", ""), str)):
        return 422, "`metadata` must be an object; its `conversation_id`, if any, a string"
    top_k = data.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 50):
        return 422, "`top_k` must be a whole number from 1 to 50"
    if data.get("filters") is not None and not isinstance(data["filters"], dict):
        return 422, "`filters` must be an object, e.g. {\"year_from\": 2015}"
    if not isinstance(data.get("stream", False), bool):
        return 422, "`stream` must be true or false"
    if not isinstance(data.get("source_events", False), bool):
        return 422, "`source_events` must be true or false (true: Open WebUI's citation events in the stream)"
    return None


async def _run_watching_for_disconnect(app: Any, scope: dict, body: bytes, receive: Any, send: Any,
                                       lifetime: RequestLifetime) -> None:
    """Run the app on a body already read, and meanwhile wait for the client to disconnect, so that an answer's
    work (its wait for a turn, its generation) stops when its client goes away. Starlette notices a disconnect
    only while it streams, and tells no one; here it is noticed for plain answers too."""

    async def listen() -> dict:
        message = await receive()  # with the body read, what comes next is the disconnect
        if message["type"] == "http.disconnect":
            lifetime.client_left()
        return message

    listener = asyncio.ensure_future(listen())
    body_given = False

    async def replay() -> dict:
        nonlocal body_given
        if body_given:  # Starlette's own disconnect watch, while streaming: the same message
            return await asyncio.shield(listener)
        body_given = True
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        await app(scope, replay, send)
    finally:
        listener.cancel()


def _with_request_id(send: Any, request_id: str, what: str) -> Any:
    """`send`, adding an X-Request-ID header to the response, and replacing any 5xx but 501s and our own 503s,
    504s and 507s (whose messages are written for clients) by one that shows no internals (Hayhooks' own 500s carry
    exception text)."""
    replaced = False

    async def send_checked(message: dict) -> None:
        nonlocal replaced
        if message["type"] == "http.response.start":
            if message["status"] >= 500 and message["status"] not in (501, 503, 504, 507):
                replaced = True
                log.error("%s status=%d request_id=%s (the client was shown no details)", what, message["status"],
                          request_id)
                body = json.dumps({"detail": internal_error_detail()}).encode()
                await send({"type": "http.response.start", "status": message["status"], "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"x-request-id", request_id.encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            # One id per response: Hayhooks adds one of its own (its log lines'), replaced by the gate's.
            headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-request-id"]
            message = {**message, "headers": [*headers, (b"x-request-id", request_id.encode())]}
        elif replaced:
            return  # the original body, with whatever it said
        await send(message)

    return send_checked


async def _reject(send: Any, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
