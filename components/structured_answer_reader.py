"""Turns a structured (JSON) answer back into the cited text the citation checks read."""

from __future__ import annotations

import json
import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from pmc_rag.components.section_chunker import split_sentences


@component
class StructuredAnswerReader:
    """
    Renders a reply written to `StructuredAnswerSchema` as text: "Yes. First sentence [PMC1]. Second [PMID:2]."
    A reply cut off mid-JSON (the token limit) keeps its complete sentences; a reply that is not JSON at all passes
    through unchanged, so the citation checks still see what the model wrote. The rendered reply keeps the
    original's `meta` (model, usage), with `structured_answer` saying whether the JSON was read.

    Usage:
    ```python
    reader = StructuredAnswerReader()
    reply = ChatMessage.from_assistant('{"verdict": "yes", "sentences": [{"text": "It works.", "cite": "PMC1"}]}')
    reader.run(replies=[reply])["replies"][0].text   # "Yes. It works [PMC1]."
    ```
    """

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StructuredAnswerReader:
        return default_from_dict(cls, data)

    @component.output_types(replies=list[ChatMessage])
    def run(self, replies: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        """:returns: `replies`: the replies as cited text."""
        return {"replies": [self._render(reply) for reply in replies]}

    def _render(self, reply: ChatMessage) -> ChatMessage:
        raw = reply.text or ""
        text = structured_text(raw)
        return ChatMessage.from_assistant(raw if text is None else text,
                                          meta={**reply.meta, "structured_answer": text is not None})


def structured_text(raw: str) -> str | None:
    """The cited text a structured answer stands for (as far as it is complete), or None if it is not one."""
    answer = _parse(raw)
    if answer is None:
        return None
    parts = []
    verdict = answer.get("verdict")
    if isinstance(verdict, str) and verdict.strip():
        parts.append(verdict.strip().capitalize() + ".")
    for sentence in answer.get("sentences") or []:
        if not isinstance(sentence, dict) or not str(sentence.get("text", "")).strip():
            continue
        cite = sentence.get("cite")
        # A "text" may hold several sentences: the citation goes with each, as the checks read one at a time.
        for text in split_sentences(" ".join(str(sentence["text"]).split())):
            text = text if text[-1] in ".!?" else text + "."
            parts.append(f"{text[:-1]} [{cite}]{text[-1]}" if cite else text)
    return " ".join(parts)


def _parse(raw: str) -> dict[str, Any] | None:
    """The JSON object of the reply; for a reply cut off mid-way, the object up to its last complete sentence."""
    text = raw.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
        return value if isinstance(value, dict) else None
    except json.JSONDecodeError:
        pass
    # Cut off: close the array after the last complete sentence object.
    for match in reversed(list(re.finditer(r"\}", text))):
        try:
            value = json.loads(text[:match.end()] + "]}")
            return value if isinstance(value, dict) else None
        except json.JSONDecodeError:
            continue
    return None
