"""Who is asking, which request this is, and when it must stop: the caller's conversation owner id, the request's
id, and its lifetime (the client still there? the deadline not yet passed?).

The owner is the API key a request presented, as an opaque id for the conversations it starts.

The request gate sets it for the request; the answering service reads it when it loads or saves a conversation,
so that a conversation id works only for the key that started it. With no keys configured, every caller is the
same owner ("") and an unguessable id is what keeps conversations apart.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
import time

current_owner: contextvars.ContextVar[str] = contextvars.ContextVar("pmc_rag_conversation_owner", default="")
# Whether the server takes API keys: with them, uploaded collections belong to keys and are read by their readers;
# without them (on loopback only), every caller is this machine's user ("local") and reads everything.
keys_in_use: contextvars.ContextVar[bool] = contextvars.ContextVar("pmc_rag_keys_in_use", default=False)
LOCAL_OWNER = "local"
# The id the gate gives each request: in its log lines, its X-Request-ID header, and any 5xx it gets.
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("pmc_rag_request_id", default="-")


def internal_error_detail() -> str:
    """What a client is told of an unexpected failure: no internals, only where the operator can look."""
    return (f"Internal error (request id {current_request_id.get()}); the server's log has the details under "
            "that id.")


def current_uploader() -> str:
    """Who owns what this request uploads: its key's owner id, or "local" on a server without keys."""
    return current_owner.get() if keys_in_use.get() else LOCAL_OWNER


def owner_of(api_key: str | None) -> str:
    """A stable id for an API key that does not reveal it (stored with each conversation)."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:32] if api_key else ""


class RequestLifetime:
    """
    When a request's work must stop: its client went away (the request gate sees the disconnect), or its
    deadline, counted from when the request arrived and so including time spent queueing, has passed.

    Usage:
    ```python
    lifetime = RequestLifetime(deadline_s=240)
    ...                                  # the gate calls lifetime.client_left() on a disconnect
    if lifetime.why_stop():              # None while the work should go on
        raise GenerationStopped(lifetime.why_stop())
    ```
    """

    def __init__(self, deadline_s: float):
        self.deadline_s = deadline_s
        self.started = time.monotonic()
        self._left = threading.Event()

    def client_left(self) -> None:
        self._left.set()

    @property
    def gone(self) -> bool:
        return self._left.is_set()

    def seconds_left(self) -> float:
        return self.started + self.deadline_s - time.monotonic()

    def why_stop(self) -> str | None:
        """Why the work should stop now ("client left", "deadline"), or None."""
        if self._left.is_set():
            return "client left"
        if self.seconds_left() <= 0:
            return "deadline"
        return None


# Set by the gate for each request; the default never stops (work run outside a served request, e.g. in tests).
current_lifetime: contextvars.ContextVar[RequestLifetime] = contextvars.ContextVar(
    "pmc_rag_request_lifetime", default=RequestLifetime(deadline_s=float("inf")))
