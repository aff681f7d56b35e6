"""The last resort of a FallbackChatGenerator: an empty reply, so that the answer falls back to quotations."""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage


@component
class EmptyReplyGenerator:
    """
    A chat generator that always succeeds with an empty reply.

    Put it last in a `FallbackChatGenerator`: when every real generator has failed or timed out, the pipeline
    still completes, and `CitedAnswerBuilder`, seeing no answer, quotes the best passages with their citations
    and says so. Without it the whole request would fail.

    Usage:
    ```python
    from pmc_rag.components.empty_reply_generator import EmptyReplyGenerator

    EmptyReplyGenerator().run(messages=[])  # {"replies": [ChatMessage(text="")], "meta": {"model": None}}
    ```
    """

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmptyReplyGenerator:
        return default_from_dict(cls, data)

    @component.output_types(replies=list[ChatMessage], meta=dict[str, Any])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None,
            tools: Any = None, streaming_callback: Any = None) -> dict[str, Any]:
        """:returns: `replies`: one empty assistant message; `meta`: `{"model": None}`."""
        return {"replies": [ChatMessage.from_assistant("")], "meta": {"model": None}}
