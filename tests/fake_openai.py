"""A FAKE OpenAI-compatible chat server for tests: it stands in for "any OpenAI-compatible server" (llama.cpp's
llama-server, vLLM, LM Studio, a hosted API), none of which can run on CI machines.

It speaks `POST /v1/chat/completions` (plain JSON, or server-sent events with `stream: true`) well enough for the
real `openai` client inside Haystack's `OpenAIChatGenerator`. It does not generate: it answers like
`fake_ollama.fake_reply` (the first excerpt's first sentence, cited with its label) under its own model name, and
refuses requests without `Authorization: Bearer <api_key>`. Request bodies and headers are kept in `requests`.
A slow model is `word_delay_s` seconds per streamed word, with `reply` (any text) in place of the fake answer;
`streams_cut` counts streams whose client hung up before the end.

Usage:
```python
with FakeOpenAI(model="hosted-model", api_key="k") as server:
    ...  # point a YAML's api_base_url at server.url
```
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from fake_http import FakeHTTPServer
from fake_ollama import fake_reply


class FakeOpenAI(FakeHTTPServer):
    base_path = "/v1"

    def __init__(self, model: str = "hosted-model", api_key: str = "fake-key"):
        super().__init__()
        self.model = model
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.reply: str | None = None
        self.word_delay_s = 0.0
        self.streams_cut = 0

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                fake.requests.append({"body": body, "authorization": self.headers.get("Authorization")})
                if self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._send(401, {"error": {"message": "bad key", "type": "authentication_error"}})
                    return
                prompt = "\n".join(m.get("content") or "" for m in body["messages"])
                text = fake.reply or fake_reply(prompt)
                usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                         "total_tokens": len(prompt.split()) + len(text.split())}
                base = {"id": "chatcmpl-fake", "created": 0, "model": fake.model}
                if not body.get("stream"):
                    self._send(200, {**base, "object": "chat.completion", "usage": usage, "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    for word in text.split(" "):
                        event = {**base, "object": "chat.completion.chunk", "choices": [
                            {"index": 0, "finish_reason": None, "delta": {"content": word + " "}}]}
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                        time.sleep(fake.word_delay_s)
                except OSError:  # the client hung up: a real server stops generating here
                    fake.streams_cut += 1
                    return
                done = {**base, "object": "chat.completion.chunk", "choices": [
                    {"index": 0, "finish_reason": "stop", "delta": {}}]}
                self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
