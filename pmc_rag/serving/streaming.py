"""Streaming a model's tokens to a chat client without ever showing a citation the model was not entitled to."""

from __future__ import annotations

import re

from haystack import Document

from pmc_rag.components.structured_answer_reader import structured_text
from pmc_rag.components.citations import BARE_NUMBERS, ID_PATTERN, REFERENCE_HEADING, canonical_id
from pmc_rag.serving.conversation import number_for

_GROUP = re.compile(r"[\[(]([^\[\]()]{0,200})[\])]")
_HOLD_LIMIT = 300  # characters held back waiting for a bracket to close before giving up on it


class CitationStream:
    """
    Rewrites streamed tokens for display: each citation id the model writes becomes the conversation's number
    for that paper ("[PMC4816447]" -> "[1]") if the paper is among the excerpts the model was given, and
    disappears otherwise. Text is held back only while a citation may be in progress (an open bracket, or the
    last, unfinished word), and everything after a reference list the model starts to append is dropped.

    Usage:
    ```python
    stream = CitationStream(numbers={})
    stream.set_excerpts(documents)          # before the first token
    shown = stream.feed("Erlotinib works [PMC4")  # "Erlotinib works "
    shown += stream.feed("816447].") + stream.finish()  # "... [1]."
    ```
    """

    def __init__(self, numbers: dict[str, int]):
        self.numbers = numbers  # shared with the conversation: new papers get the next free number
        self.allowed: set[str] = set()
        self.shown = ""
        self._pending = ""
        self._muted = False

    def set_excerpts(self, documents: list[Document]) -> None:
        self.allowed = {canonical_id(str(d.meta.get("source_id", ""))) for d in documents}

    def feed(self, token: str) -> str:
        if self._muted:
            return ""
        self._pending += token
        cut = self._safe_cut(self._pending)
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._emit(ready)

    def finish(self) -> str:
        rest, self._pending = self._pending, ""
        return "" if self._muted else self._emit(rest)

    @staticmethod
    def _safe_cut(text: str) -> int:
        """End of the longest prefix that holds no unfinished citation: last whitespace outside brackets."""
        depth, cut, opened_at = 0, 0, None
        for position, character in enumerate(text):
            if character in "[(":
                depth += 1
                opened_at = position if depth == 1 else opened_at
            elif character in "])" and depth:
                depth -= 1
            elif character.isspace() and depth == 0:
                cut = position + 1
        if depth and opened_at is not None and len(text) - opened_at > _HOLD_LIMIT:
            return len(text)  # a long parenthesis, not a citation
        return cut

    def _emit(self, text: str) -> str:
        if not text:
            return ""
        heading = REFERENCE_HEADING.search(self.shown[-1:] + text if self.shown.endswith("\n") else text)
        if heading and (heading.start() == 0 or "\n" in text[: heading.start() + 1]):
            text = text[: max(0, heading.start() - (1 if self.shown.endswith("\n") else 0))]
            self._muted = True
        text = _GROUP.sub(self._group, text)
        text = ID_PATTERN.sub(lambda m: self._mark(canonical_id(m.group(0))), text)
        self.shown += text
        return text

    def _group(self, match: re.Match) -> str:
        ids = [canonical_id(m.group(0)) for m in ID_PATTERN.finditer(match.group(1))]
        if not ids:
            # A bare "[2]" names no paper: shown, it would pass for one of our numbers (the checked answer
            # reports it as an invalid citation).
            return "" if BARE_NUMBERS.fullmatch(match.group(0)) else match.group(0)
        return "".join(self._mark(source_id) for source_id in dict.fromkeys(ids))

    def _mark(self, source_id: str) -> str:
        if source_id not in self.allowed:
            return ""
        return f"[{number_for(self.numbers, source_id)}]"


class StructuredTokens:
    """
    Turns the streamed tokens of a structured (JSON) answer into the cited text it stands for, a sentence at a
    time, so a chat client never sees JSON; the tokens of a free-text answer pass through unchanged. Which one a
    reply is shows in its first character.

    Usage:
    ```python
    tokens = StructuredTokens()
    shown = "".join(tokens.feed(t) for t in ['{"verdict": "yes", "sentences": [{"text": "It', ' works.", ',
                                            '"cite": "PMC1"}', ']}'])   # "Yes. It works [PMC1]."
    ```
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._emitted = ""
        self._structured: bool | None = None

    def feed(self, token: str) -> str:
        if self._structured is False:
            return token
        self._buffer += token
        if self._structured is None:
            if not self._buffer.strip():
                return ""
            self._structured = self._buffer.lstrip().startswith("{")
            if not self._structured:
                return self._buffer
        text = structured_text(self._buffer)
        if not text or not text.startswith(self._emitted):
            return ""
        new, self._emitted = text[len(self._emitted):], text
        return new
