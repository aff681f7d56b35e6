"""A chat generator that replays replies recorded from a real model: answering tests without the model's time."""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.core.serialization import component_from_dict, component_to_dict, import_class_by_name
from haystack.dataclasses import ChatMessage, StreamingChunk


class NoRecordedReply(LookupError):
    """A prompt the recording holds no reply for: the prompt changed since it was recorded."""


@component
class RecordedReplyChatGenerator:
    """
    Replays the replies a real chat generator gave to the same messages, recorded in a JSON-lines file.

    Tests that are not about the model's own behaviour answer with it: the pipeline, the checks and the server run
    as they do with the model, in a fraction of the time. A prompt it has no reply for fails loudly (`NoRecordedReply`,
    naming the prompt's start and the command that records again); it never makes a reply up. With `record_with`
    (a chat generator's `to_dict`), it asks that generator instead and appends its reply to the file:
    `scripts/record_replies.sh` runs the test suite so.

    Usage:
    ```python
    from pmc_rag.components.recorded_reply_chat_generator import RecordedReplyChatGenerator

    generator = RecordedReplyChatGenerator(replies="tests/fixtures/recorded_replies.jsonl")
    generator.run(messages=[ChatMessage.from_user("Is erlotinib effective?")])   # the recorded reply, or raises
    ```
    """

    def __init__(self, *, replies: str, model: str | None = None, record_with: Any = None):
        """
        :param replies: The JSON-lines file of recorded replies (one object per prompt: its `key`, `prompt_start`
            and `reply`, a ChatMessage's dict).
        :param model: The model whose replies these are (what an evaluation names as the pipeline's model).
        :param record_with: A chat generator (or its `to_dict`) to ask and record instead of replaying.
        """
        self.replies = replies
        self.model = model
        if isinstance(record_with, dict):  # Haystack builds a nested component's dict itself; a caller may not
            record_with = component_from_dict(import_class_by_name(record_with["type"]), record_with, "recorder")
        self.record_with = record_with

    def to_dict(self) -> dict[str, Any]:
        recorder = component_to_dict(self.record_with, "recorder") if self.record_with is not None else None
        return default_to_dict(self, replies=self.replies, model=self.model, record_with=recorder)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecordedReplyChatGenerator:
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if self.record_with is not None and hasattr(self.record_with, "warm_up"):
            self.record_with.warm_up()

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None,
            tools: Any = None, streaming_callback: Any = None) -> dict[str, Any]:
        """
        :param messages: The prompt.
        :param generation_kwargs: Part of what a reply is recorded for (a different `max_tokens` is another prompt).
        :param tools: Not supported: a recorded reply is text.
        :param streaming_callback: Given the recorded reply word by word, as a streaming model would send it.
        :returns: `replies`: the recorded reply, its `meta` (the model's name) as recorded.
        :raises NoRecordedReply: No reply is recorded for these messages.
        """
        key = prompt_key(messages, generation_kwargs)
        if self.record_with is not None:
            reply = self.record_with.run(messages=messages, generation_kwargs=generation_kwargs,
                                       streaming_callback=streaming_callback)["replies"][0]
            self._append(key, messages, reply)
            return {"replies": [reply]}
        recorded = _recorded(self.replies).get(key)
        if recorded is None:
            raise NoRecordedReply(
                f"No reply recorded in {self.replies} for this prompt ({key[:12]}; it starts "
                f"{_start(messages)!r}). The prompt changed since the replies were recorded: record them again "
                "with scripts/record_replies.sh (the real model answers every test once).")
        reply = ChatMessage.from_dict(recorded)
        if streaming_callback is not None:
            for piece in re.findall(r"\S+\s*|\s+", reply.text or ""):
                streaming_callback(StreamingChunk(content=piece, meta={"model": reply.meta.get("model")}))
        return {"replies": [reply]}

    def _append(self, key: str, messages: list[ChatMessage], reply: ChatMessage) -> None:
        line = json.dumps({"key": key, "prompt_start": _start(messages), "reply": reply.to_dict()},
                          ensure_ascii=False) + "\n"
        path = Path(self.replies)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as file:  # tests in server processes record at the same time
            fcntl.flock(file, fcntl.LOCK_EX)
            file.write(line)
            fcntl.flock(file, fcntl.LOCK_UN)
        _cache.clear()


def prompt_key(messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None) -> str:
    """What a reply is recorded under: the messages' roles and texts and the generation settings, hashed."""
    content = [[m.role.value, m.text or ""] for m in messages]
    return hashlib.sha256(json.dumps([content, generation_kwargs or {}], sort_keys=True).encode()).hexdigest()


def _start(messages: list[ChatMessage]) -> str:
    last = next((m.text for m in reversed(messages) if m.text), "")
    return " ".join(last.split())[:120]


_cache: dict[tuple[str, float], dict[str, dict[str, Any]]] = {}


def _recorded(path: str) -> dict[str, dict[str, Any]]:
    """The file's replies by key (read again when the file changes); the last recorded reply for a key wins."""
    file = Path(path)
    stamp = file.stat().st_mtime if file.exists() else 0.0
    if (path, stamp) not in _cache:
        replies: dict[str, dict[str, Any]] = {}
        if file.exists():
            for line in file.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = json.loads(line)
                    replies[entry["key"]] = entry["reply"]
        _cache.clear()
        _cache[(path, stamp)] = replies
    return _cache[(path, stamp)]


def recorded_chat_generator(generator: dict[str, Any], replies: str, record: bool) -> dict[str, Any]:
    """A chat generator's dict replaced by this component's: replaying `replies`, or recording what it says."""
    model = (generator.get("init_parameters") or {}).get("model")
    return component_to_dict(RecordedReplyChatGenerator(replies=replies, model=model,
                                                        record_with=generator if record else None), "generator")
