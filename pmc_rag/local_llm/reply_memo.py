"""Replies kept for requests that are asked again, when the model would write the same reply anyway.

With temperature 0 llama.cpp picks the likeliest token at every step, so the same messages with the same settings
get the same reply. Answering them again costs what the first reply cost, less the prompt the prompt cache
restores: on 2 cores a few seconds for every question asked twice (an evaluation run again, the same question
through the CLI and then the page, a client's retry after a timeout). The memo hands back the first reply instead.
It holds only requests decided by the likeliest token (temperature 0) and only replies that ended by themselves
(a stream the client left is not kept), and it lives as long as the server process: a restarted server, or
another model, starts with none.

    memo = ReplyMemo(max_replies=128)
    key = memo.key(messages, settings, streamed=False)
    if key is not None and (reply := memo.get(key)) is not None:
        ...                                 # the reply written the first time
    memo.put(key, reply)
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

__all__ = ["ReplyMemo", "request_fingerprint"]


def request_fingerprint(messages: list[dict[str, Any]], settings: dict[str, Any]) -> str:
    """12 hex digits naming a request's messages and settings: the same request twice has the same fingerprint in
    the server's log, so a repeated question (a retry, the same question through another entry point) shows."""
    text = json.dumps({"messages": messages, "settings": settings}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class ReplyMemo:
    """The last `max_replies` replies to deterministic requests, by request, least recently used first out."""

    def __init__(self, max_replies: int = 128):
        if max_replies < 0:
            raise ValueError(f"max_replies must be 0 (keep none) or more, not {max_replies}")
        self.max_replies = max_replies
        self.hits = 0
        self._replies: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def key(self, messages: list[dict[str, Any]], settings: dict[str, Any], streamed: bool) -> str | None:
        """The request's key, or None when its reply may differ next time (sampling) or nothing is kept."""
        if self.max_replies == 0 or settings.get("temperature") not in (0, 0.0):
            return None
        return f"{'stream' if streamed else 'reply'}:{request_fingerprint(messages, settings)}"

    def get(self, key: str | None) -> Any | None:
        """A copy of the reply kept for `key` (None: none kept)."""
        if key is None:
            return None
        with self._lock:
            if key not in self._replies:
                return None
            self._replies.move_to_end(key)
            self.hits += 1
            return copy.deepcopy(self._replies[key])

    def put(self, key: str | None, reply: Any) -> None:
        if key is None:
            return
        with self._lock:
            self._replies[key] = copy.deepcopy(reply)
            self._replies.move_to_end(key)
            while len(self._replies) > self.max_replies:
                self._replies.popitem(last=False)

    def report(self) -> dict[str, int]:
        """What /health shows: replies kept, the cap and the requests answered from them."""
        with self._lock:
            return {"replies": len(self._replies), "max_replies": self.max_replies, "hits": self.hits}
