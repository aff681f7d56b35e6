"""The in-process llama.cpp chat generator: names its model instead of a file path, and stops at a deadline."""

from __future__ import annotations

import threading
import time
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack.dataclasses.streaming_chunk import ComponentInfo

from pmc_rag.models import EMBEDDED_LLMS, ModelError, assemble_llm


class GenerationTimeout(RuntimeError):
    """The model was still writing when its time ran out."""


@component
class EmbeddedChatGenerator:
    """
    Runs one of pmc-rag's embedded GGUF models (see `pmc_rag.models.EMBEDDED_LLMS`) with llama.cpp in process.

    It is the generator that answers when no Ollama server is reachable. Two things set it apart from the stock
    `LlamaCppChatGenerator`, which is why it owns its `llama_cpp.Llama` instead of wrapping that component:

    - it takes the model's *name* and finds (or assembles and verifies) the file under `PMC_RAG_HOME/models/`,
      so the YAML is the same on every machine;
    - it has a `timeout`: tokens are read one by one and, once the time is up, generation stops with
      `GenerationTimeout`. In a `FallbackChatGenerator` the next generator then answers (in `rag.yml`, the
      empty last resort, so the answer quotes passages and says so). Reading prompt tokens is not interruptible,
      so the check starts with the first generated token.

    Usage:
    ```python
    from haystack.dataclasses import ChatMessage
    from components.embedded_chat_generator import EmbeddedChatGenerator

    generator = EmbeddedChatGenerator(model="qwen2.5-0.5b-instruct", n_ctx=4096, timeout=60,
                                      generation_kwargs={"max_tokens": 300, "temperature": 0.0})
    generator.warm_up()
    reply = generator.run(messages=[ChatMessage.from_user("Say hello.")])["replies"][0].text
    ```
    """

    def __init__(self, model: str = "qwen2.5-0.5b-instruct", n_ctx: int = 4096, timeout: float | None = 60.0,
                 generation_kwargs: dict[str, Any] | None = None):
        """
        :param model: A name from `pmc_rag.models.EMBEDDED_LLMS`.
        :param n_ctx: The context window in tokens (prompt and answer together).
        :param timeout: Seconds the model may spend on one reply; `None` for no limit.
        :param generation_kwargs: llama.cpp sampling settings, e.g. `{"max_tokens": 300, "temperature": 0.0}`.
        """
        if model not in EMBEDDED_LLMS:
            raise ModelError(
                f"unknown embedded model {model!r}: the generator's `model` must be one of {sorted(EMBEDDED_LLMS)}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds or null, not {timeout!r}")
        self.model = model
        self.n_ctx = n_ctx
        self.timeout = timeout
        self.generation_kwargs = generation_kwargs or {}
        self._llama: Any = None
        self._lock = threading.Lock()  # one llama.cpp context: one reply at a time

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model, n_ctx=self.n_ctx, timeout=self.timeout,
                               generation_kwargs=self.generation_kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddedChatGenerator:
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if self._llama is not None:
            return
        from llama_cpp import Llama  # imported here: loading the native library takes a moment

        self._llama = Llama(model_path=str(assemble_llm(self.model)), n_ctx=self.n_ctx, verbose=False)

    @component.output_types(replies=list[ChatMessage], meta=dict[str, Any])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None,
            tools: Any = None, streaming_callback: Any = None) -> dict[str, Any]:
        """
        :param messages: The conversation so far.
        :param generation_kwargs: Overrides of the init settings for this call.
        :param tools: Not supported (accepted so that FallbackChatGenerator can pass it); must be empty.
        :param streaming_callback: Called with a `StreamingChunk` for each token as it is generated.
        :returns: `replies`: the model's reply; `meta`: the model's name and token usage.
        :raises GenerationTimeout: When the reply takes longer than `timeout` seconds.
        """
        if tools:
            raise ValueError("EmbeddedChatGenerator does not support tools")
        self.warm_up()
        with self._lock:
            return self._generate(messages, generation_kwargs, streaming_callback)

    def _generate(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None,
                  streaming_callback: Any) -> dict[str, Any]:
        started = time.monotonic()
        settings = {**self.generation_kwargs, **(generation_kwargs or {})}
        stream = self._llama.create_chat_completion(
            messages=[{"role": message.role.value, "content": message.text or ""} for message in messages],
            stream=True, **settings)
        info = ComponentInfo.from_component(self)
        pieces: list[str] = []
        finish_reason = None
        for event in stream:
            choice = event["choices"][0]
            finish_reason = choice.get("finish_reason") or finish_reason
            piece = choice["delta"].get("content") or ""
            if piece:
                pieces.append(piece)
                if streaming_callback is not None:
                    streaming_callback(StreamingChunk(content=piece, component_info=info, start=len(pieces) == 1))
            if self.timeout is not None and time.monotonic() - started > self.timeout:
                stream.close()
                raise GenerationTimeout(f"{self.model} was still writing after {self.timeout:g} s "
                                        f"({len(pieces)} tokens); raise `timeout` in the YAML to allow longer")
        # llama.cpp streams one token per event; what the context holds beyond those is the prompt.
        usage = {"completion_tokens": len(pieces), "prompt_tokens": max(0, self._llama.n_tokens - len(pieces))}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        reply = ChatMessage.from_assistant("".join(pieces), meta={"model": self.model, "finish_reason": finish_reason,
                                                                   "usage": usage})
        return {"replies": [reply], "meta": {"model": self.model, "usage": usage}}
