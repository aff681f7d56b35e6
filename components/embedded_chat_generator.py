"""The in-process llama.cpp chat generator, naming its model instead of a file path."""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage
from haystack_integrations.components.generators.llama_cpp import LlamaCppChatGenerator

from pmc_rag.models import EMBEDDED_LLMS, ModelError, assemble_llm


@component
class EmbeddedChatGenerator:
    """
    Runs one of pmc-rag's embedded GGUF models (see `pmc_rag.models.EMBEDDED_LLMS`) with llama.cpp in process.

    `LlamaCppChatGenerator` needs the model's file path, which differs from machine to machine; this component
    takes the model's name, finds (or assembles and verifies) its file under `PMC_RAG_HOME/models/`, and hands
    the rest to `LlamaCppChatGenerator`. It is the generator that answers when no Ollama server is reachable.

    Usage:
    ```python
    from haystack.dataclasses import ChatMessage
    from components.embedded_chat_generator import EmbeddedChatGenerator

    generator = EmbeddedChatGenerator(model="qwen2.5-0.5b-instruct", n_ctx=4096,
                                      generation_kwargs={"max_tokens": 300, "temperature": 0.0})
    generator.warm_up()
    reply = generator.run(messages=[ChatMessage.from_user("Say hello.")])["replies"][0].text
    ```
    """

    def __init__(self, model: str = "qwen2.5-0.5b-instruct", n_ctx: int = 4096,
                 generation_kwargs: dict[str, Any] | None = None):
        """
        :param model: A name from `pmc_rag.models.EMBEDDED_LLMS`.
        :param n_ctx: The context window in tokens (prompt and answer together).
        :param generation_kwargs: llama.cpp sampling settings, e.g. `{"max_tokens": 300, "temperature": 0.0}`.
        """
        if model not in EMBEDDED_LLMS:
            raise ModelError(
                f"unknown embedded model {model!r}: the generator's `model` must be one of {sorted(EMBEDDED_LLMS)}")
        self.model = model
        self.n_ctx = n_ctx
        self.generation_kwargs = generation_kwargs or {}
        self._generator: LlamaCppChatGenerator | None = None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model, n_ctx=self.n_ctx, generation_kwargs=self.generation_kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddedChatGenerator:
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if self._generator is not None:
            return
        path = assemble_llm(self.model)
        generator = LlamaCppChatGenerator(model=str(path), n_ctx=self.n_ctx,
                                          generation_kwargs=self.generation_kwargs,
                                          model_kwargs={"verbose": False})
        generator.warm_up()
        self._generator = generator

    @component.output_types(replies=list[ChatMessage], meta=dict[str, Any])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None,
            tools: Any = None, streaming_callback: Any = None) -> dict[str, Any]:
        """
        :param messages: The conversation so far.
        :param generation_kwargs: Overrides of the init settings for this call.
        :param tools: Not supported (accepted so that FallbackChatGenerator can pass it); must be empty.
        :param streaming_callback: Called with each token as it is generated.
        :returns: `replies`: the model's reply; `meta`: the model's name and token usage.
        """
        if tools:
            raise ValueError("EmbeddedChatGenerator does not support tools")
        self.warm_up()
        assert self._generator is not None
        result = self._generator.run(messages=messages, generation_kwargs=generation_kwargs,
                                     streaming_callback=streaming_callback)
        reply_meta = result["replies"][0].meta if result["replies"] else {}
        return {"replies": result["replies"],
                "meta": {"model": self.model, "usage": reply_meta.get("usage", {})}}
