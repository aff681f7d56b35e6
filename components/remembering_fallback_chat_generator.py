"""Haystack's FallbackChatGenerator, remembering which generator just timed out so that the next answers skip it."""

from __future__ import annotations

import copy
import gc
import logging
import threading
import time
import traceback
from typing import Any

from haystack import component
from haystack.components.generators.chat.fallback import FallbackChatGenerator
from haystack.dataclasses import ChatMessage

from pmc_rag.components.recorded_reply_chat_generator import NoRecordedReply

log = logging.getLogger(__name__)


class GenerationStopped(Exception):
    """Raised by a streaming callback to stop generating (its client left, its deadline passed): the generator's
    HTTP stream is closed, so the model server stops too, and no other generator is tried."""


@component
class RememberingFallbackChatGenerator(FallbackChatGenerator):
    """
    Tries its chat generators in order, like `FallbackChatGenerator`, and remembers a timeout: a generator whose
    call ran out of time is skipped for `skip_after_timeout_s` seconds, then tried again. A hung Ollama then costs
    one timeout, not one per question (a circuit breaker). Failures that are quick to find out (a refused
    connection, an error reply) are not remembered: trying again costs nothing.

    A skipped generator is listed in `meta["failed_chat_generators"]`, like one that failed, and in
    `meta["skipped_chat_generators"]`. Only the synchronous `run` remembers; `run_async` is the stock one.

    A streaming callback that raises `GenerationStopped` stops the answer: no other generator is tried, and the
    stopped generator's stream is closed at once, so the model behind it stops generating.

    Usage:
    ```python
    from haystack.components.generators.chat.openai import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack_integrations.components.generators.ollama import OllamaChatGenerator
    from pmc_rag.components.remembering_fallback_chat_generator import RememberingFallbackChatGenerator

    generator = RememberingFallbackChatGenerator(
        chat_generators=[OllamaChatGenerator(model="llama3.1:8b", timeout=120),
                         OpenAIChatGenerator(model="qwen2.5-0.5b-instruct", api_base_url="http://127.0.0.1:1417/v1")],
        skip_after_timeout_s=60)
    reply = generator.run(messages=[ChatMessage.from_user("Say hello.")])["replies"][0]
    ```
    """

    def __init__(self, *, chat_generators: list[Any], skip_after_timeout_s: float = 60.0):
        """
        :param chat_generators: Chat generators to try, in order.
        :param skip_after_timeout_s: How long a generator that timed out is skipped; 0 remembers nothing.
        """
        FallbackChatGenerator.__init__(self, chat_generators=chat_generators)  # (@component rebuilds the class)
        if skip_after_timeout_s < 0:
            raise ValueError(f"skip_after_timeout_s must be 0 or more seconds, not {skip_after_timeout_s!r}")
        self.skip_after_timeout_s = skip_after_timeout_s
        self._timed_out_at: dict[int, float] = {}  # generator index -> when it last timed out
        self._lock = threading.Lock()

    def to_dict(self) -> dict[str, Any]:
        data = FallbackChatGenerator.to_dict(self)
        data["init_parameters"]["skip_after_timeout_s"] = self.skip_after_timeout_s
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RememberingFallbackChatGenerator:
        # The stock from_dict replaces the serialised generators with objects in the dict it is given.
        return FallbackChatGenerator.from_dict.__func__(cls, copy.deepcopy(data))

    @component.output_types(replies=list[ChatMessage], meta=dict[str, Any])
    def run(self, messages: list[ChatMessage] | str, generation_kwargs: dict[str, Any] | None = None,
            tools: Any = None, streaming_callback: Any = None) -> dict[str, Any]:
        """
        :param messages: The conversation so far (a string is one user message).
        :param generation_kwargs: Passed to each generator.
        :param tools: Passed to each generator.
        :param streaming_callback: Passed to each generator.
        :returns: `replies` and `meta` as `FallbackChatGenerator` gives them, plus `skipped_chat_generators`.
        :raises RuntimeError: When every generator failed or was skipped.
        """
        self.warm_up()
        messages = [ChatMessage.from_user(messages)] if isinstance(messages, str) else messages
        failed: list[str] = []
        skipped: list[str] = []
        last_error: Exception | None = None
        for index, generator in enumerate(self.chat_generators):
            name = generator.__class__.__name__
            if self._skipping(index):
                skipped.append(name)
                failed.append(name)
                continue
            try:
                target, kwargs = for_generator(generator, generation_kwargs)
                result = self._run_single_sync(target, messages, kwargs, tools, streaming_callback)
            except GenerationStopped as stop:
                _close_abandoned_stream(stop)
                raise
            except NoRecordedReply:  # a test's recording lacks this prompt: not a model failure to fail over from
                raise
            except Exception as error:  # like the stock component: any failure moves on to the next generator
                log.warning("chat generator %s failed: %s", name, error)
                failed.append(name)
                last_error = error
                if _is_timeout(error):
                    with self._lock:
                        self._timed_out_at[index] = time.monotonic()
                continue
            with self._lock:
                self._timed_out_at.pop(index, None)
            meta = {**result.get("meta", {}), "successful_chat_generator_index": index,
                    "successful_chat_generator_class": name, "total_attempts": index + 1,
                    "failed_chat_generators": failed, "skipped_chat_generators": skipped}
            return {"replies": result.get("replies", []), "meta": meta}
        raise RuntimeError(f"All {len(self.chat_generators)} chat generators failed or were skipped (skipped after "
                           f"a timeout: {skipped}). Last error: {last_error}")

    @component.output_types(replies=list[ChatMessage], meta=dict[str, Any])
    async def run_async(self, messages: list[ChatMessage] | str, generation_kwargs: dict[str, Any] | None = None,
                        tools: Any = None, streaming_callback: Any = None) -> dict[str, Any]:
        """The stock `FallbackChatGenerator.run_async` (it does not remember timeouts)."""
        return await FallbackChatGenerator.run_async(self, messages, generation_kwargs, tools, streaming_callback)

    def _skipping(self, index: int) -> bool:
        with self._lock:
            at = self._timed_out_at.get(index)
        return at is not None and time.monotonic() - at < self.skip_after_timeout_s


def for_generator(generator: Any, generation_kwargs: dict[str, Any] | None) -> tuple[Any, dict[str, Any] | None]:
    """
    The generator and kwargs to run with. A `response_format` (OpenAI's structured-output form, which
    `StructuredAnswerSchema` writes) suits OpenAI-compatible generators as it is; Ollama takes the schema as its
    `format`, which `OllamaChatGenerator` sets at construction only, so a copy of it with that format runs this call
    (the shared instance is left as it is for concurrent questions).
    """
    if not generation_kwargs or "response_format" not in generation_kwargs \
            or type(generator).__name__ != "OllamaChatGenerator":
        return generator, generation_kwargs
    kwargs = dict(generation_kwargs)
    response_format = kwargs.pop("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema") if isinstance(response_format, dict) else None
    call = copy.copy(generator)
    call.response_format = schema or ("json" if response_format else None)
    return call, kwargs


def _close_abandoned_stream(stop: GenerationStopped) -> None:
    """Close the HTTP stream the stopped generator was reading. Haystack's generators do not close it when their
    callback raises; it is a local of theirs, kept alive by the traceback (and, for openai's Stream, by a cycle),
    so: drop the traceback's locals, then collect. Closing the connection is what tells the model server to stop."""
    traceback.clear_frames(stop.__traceback__)
    gc.collect()


def _is_timeout(error: BaseException | None) -> bool:
    """Whether the error, or one it was raised from, is a timeout (httpx's, openai's, ollama's or the standard one)."""
    for _ in range(10):
        if error is None:
            return False
        if isinstance(error, TimeoutError) or "Timeout" in type(error).__name__ or "timed out" in str(error).lower():
            return True
        error = error.__cause__ or error.__context__
    return False
