"""Keeping llama.cpp's state after recent prompts, so that a prompt read before is not read again.

On a 2-core CPU the embedded model reads a prompt at about 100 tokens a second, so reading an answer's prompt
(system prompt, excerpts, question: 500 to 2,500 tokens) is most of an answer's time. llama-cpp-python reuses what
the previous prompt has in common with the next one, but only the previous one: a router or rewriter request in
between, or a question asked again through another process (`pmc-rag ask`, then the server; a retry after a
timeout), is read from its first token. With the cache, a prompt is read only from where it leaves the longest
prompt kept.

llama-cpp-python has the cache (`Llama.set_cache(LlamaRAMCache(...))`), but its saved state copies every row of
the logits buffer (n_batch x vocabulary: 311 MB for Qwen2.5) and its cache does not count them, so each kept
prompt cost 0.9 s to save, 1.9 s to load and an uncounted 311 MB of memory. `PromptCachingLlama` keeps one row
and never restores it: llama.cpp reads a restored prompt's last token again, which computes the logits afresh.

    llama = PromptCachingLlama(model_path="model.gguf", n_ctx=4096, verbose=False)
    llama.set_cache(LlamaRAMCache(capacity_bytes=256 << 20))
    llama.create_chat_completion(messages=first)    # read from its first token
    llama.create_chat_completion(messages=second)   # another prompt: the context now holds this one
    llama.create_chat_completion(messages=first)    # restored from the cache: only its last token is read again
    llama.prompt_cache_hits                         # 1
"""

from __future__ import annotations

import ctypes

import llama_cpp
from llama_cpp import LlamaRAMCache

__all__ = ["LlamaRAMCache", "PromptCachingLlama"]


class PromptCachingLlama(llama_cpp.Llama):
    """`llama_cpp.Llama` whose saved states hold the context's memory and one row of logits, not n_batch rows."""

    prompt_cache_hits = 0
    tokens_read = 0  # every token llama.cpp has computed: prompts' tokens not restored, then one per token written

    def eval(self, tokens: list[int]) -> None:
        self.tokens_read += len(tokens)
        super().eval(tokens)

    def save_state(self) -> llama_cpp.LlamaState:
        size = llama_cpp.llama_state_get_size(self._ctx.ctx)
        buffer = (ctypes.c_uint8 * int(size))()
        written = int(llama_cpp.llama_state_get_data(self._ctx.ctx, buffer, size))
        if written > int(size):
            raise RuntimeError("llama.cpp wrote more state than it said it would")
        return llama_cpp.LlamaState(input_ids=self.input_ids.copy(), scores=self._scores[-1:, :].copy(),
                                    n_tokens=self.n_tokens, llama_state=ctypes.string_at(buffer, written),
                                    llama_state_size=written, seed=self._seed)

    def load_state(self, state: llama_cpp.LlamaState) -> None:
        # Called by llama-cpp-python only when a kept prompt shares more with the new one than the context does.
        self.prompt_cache_hits += 1
        self.input_ids = state.input_ids.copy()
        self.n_tokens = state.n_tokens
        self._seed = state.seed
        self._requires_eval = True  # the logits are stale: llama.cpp reads the last token again before sampling
        data = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
        if llama_cpp.llama_state_set_data(self._ctx.ctx, data, state.llama_state_size) != state.llama_state_size:
            raise RuntimeError("llama.cpp could not restore a kept prompt's state")
