"""Who is asking, and which request this is: the caller's conversation owner id and the request's id.

The owner is the API key a request presented, as an opaque id for the conversations it starts.

The request gate sets it for the request; the answering service reads it when it loads or saves a conversation,
so that a conversation id works only for the key that started it. With no keys configured, every caller is the
same owner ("") and an unguessable id is what keeps conversations apart.
"""

from __future__ import annotations

import contextvars
import hashlib

current_owner: contextvars.ContextVar[str] = contextvars.ContextVar("pmc_rag_conversation_owner", default="")
# The id the gate gives each request: in its log lines, its X-Request-ID header, and any 5xx it gets.
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("pmc_rag_request_id", default="-")


def internal_error_detail() -> str:
    """What a client is told of an unexpected failure: no internals, only where the operator can look."""
    return (f"Internal error (request id {current_request_id.get()}); the server's log has the details under "
            "that id.")


def owner_of(api_key: str | None) -> str:
    """A stable id for an API key that does not reveal it (stored with each conversation)."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:32] if api_key else ""
