"""A FAKE Ollama server for tests: there is no Ollama on CI machines, and a real one needs a multi-GB model.

It speaks just enough of Ollama's HTTP API (`GET /api/tags`, `POST /api/chat`, streamed as NDJSON or not)
for the real `ollama` client inside `OllamaChatGenerator` to talk to it over real HTTP. It does not generate:
it answers with the first sentence of the first excerpt in the prompt, cited with that excerpt's label, so
a test can tell its answers from the embedded model's; in JSON mode (an LLM judge) it answers `json_reply`; to
a MiniCheck prompt ("Document: ...\nClaim: ...") it answers Yes when every word of the claim is in the document.
Every request body is kept in `requests`, so tests can check what the pipeline sent (model, options such as
`num_ctx`).

Usage:
```python
with FakeOllama(model="llama3.1:8b") as ollama:
    os.environ["OLLAMA_HOST"] = ollama.url
    ...
```
"""

from __future__ import annotations

import json
import re
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from fake_http import FakeHTTPServer

EXCERPT_LABEL = re.compile(r"^\[(?P<label>[^\]]+)\][^\n]*\n(?P<text>[^\n]+)", re.MULTILINE)


def fake_reply(prompt: str) -> str:
    match = EXCERPT_LABEL.search(prompt)
    if not match:
        return "The excerpts do not answer the question."
    first_sentence = re.split(r"(?<=[.!?])\s+", match["text"].strip())[0].rstrip(".!?")
    return f"{first_sentence} [{match['label']}]."


def fake_minicheck(prompt: str) -> str | None:
    """Yes/No for a MiniCheck-style prompt (no model: every claim word must appear in the document); else None."""
    match = re.match(r"Document: (?P<document>.*)\nClaim: (?P<claim>.*)$", prompt, re.DOTALL)
    if not match:
        return None
    words = lambda text: set(re.findall(r"[a-z0-9]+", text.lower()))  # noqa: E731
    return "Yes" if words(match["claim"]) <= words(match["document"]) else "No"


class FakeOllama(FakeHTTPServer):
    def __init__(self, model: str = "llama3.1:8b"):
        super().__init__()
        self.model = model
        # What a request in JSON mode (an LLM judge's) gets back: two statements, one supported.
        self.json_reply = json.dumps({"statements": ["first claim", "second claim"], "statement_scores": [1, 0]})
        self.requests: list[dict[str, Any]] = []
        self.hang_s = 0.0  # > 0: chat requests are held this long before any answer (a hung Ollama)
        self.reply: str | None = None  # set: every chat request gets this reply (an injected claim, say)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    self._send(200, json.dumps({"models": [{"name": fake.model, "model": fake.model}]}).encode())
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                fake.requests.append(request)
                if self.path != "/api/chat":
                    self._send(404, b'{"error": "not found"}')
                    return
                if request.get("model") != fake.model:
                    self._send(404, json.dumps({"error": f"model '{request.get('model')}' not found"}).encode())
                    return
                if fake.hang_s:
                    time.sleep(fake.hang_s)
                    return
                prompt = "\n".join(m.get("content", "") for m in request.get("messages", []))
                reply = fake.reply or (fake.json_reply if request.get("format") == "json" else
                                       fake_minicheck(prompt) or fake_reply(prompt))
                final = {"model": fake.model, "created_at": "2026-01-01T00:00:00Z", "done": True,
                         "done_reason": "stop", "prompt_eval_count": len(prompt.split()),
                         "eval_count": len(reply.split())}
                if not request.get("stream", True):
                    self._send(200, json.dumps({**final, "message": {"role": "assistant", "content": reply}}
                                               ).encode())
                    return
                pieces = [word + " " for word in reply.split()]
                lines = [{"model": fake.model, "created_at": "2026-01-01T00:00:00Z", "done": False,
                          "message": {"role": "assistant", "content": piece}} for piece in pieces]
                lines.append({**final, "message": {"role": "assistant", "content": ""}})
                self._send(200, "".join(json.dumps(line) + "\n" for line in lines).encode(),
                           "application/x-ndjson")

        return Handler
