"""Keeps the excerpts given to the model within a token budget, dropping the lowest-ranked first."""

from __future__ import annotations

import math
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict


@component
class ExcerptBudget:
    """
    Passes on the best-ranked excerpts that fit `max_tokens`, so the prompt never exceeds the model's context.

    Ollama silently truncates prompts longer than its context window, and llama.cpp refuses them. Excerpts
    arrive best first; they are kept in order while their estimated tokens fit, and the rest are dropped
    (reported in `dropped`, which the answer turns into a note). Tokens are estimated from characters with
    `chars_per_token`. Measured with Qwen 2.5's tokenizer on the sample corpus, chunks run from 1.8 characters a
    token (tables of numbers in captions) to over 6, median 4.8: the default of 3.0 over-counts typical prose
    but not the densest text, so leave room between `max_tokens` and the context. pipelines/rag.yml's settings
    are tested with the corpus's densest excerpts and a long question, counted with the real tokenizer.

    Usage:
    ```python
    from pmc_rag.components.excerpt_budget import ExcerptBudget

    budget = ExcerptBudget(max_tokens=2500, max_excerpts=6)
    kept = budget.run(documents=ranked_documents)  # {"documents": [...], "dropped": 2}
    ```
    """

    def __init__(self, *, max_tokens: int = 2500, max_excerpts: int = 6, chars_per_token: float = 3.0,
                 tokens_per_excerpt_label: int = 40):
        """
        :param max_tokens: Tokens the excerpts may take in the prompt. Set it to the model's context (`num_ctx`,
            `n_ctx`) minus the system prompt, the question and the answer's `max_tokens`/`num_predict`.
        :param max_excerpts: Most excerpts to pass on, even if more would fit.
        :param chars_per_token: Characters per token for the estimate (lower is more cautious).
        :param tokens_per_excerpt_label: Tokens allowed for each excerpt's label line (id, title, year, section).
        """
        if max_tokens < 1 or max_excerpts < 1 or chars_per_token <= 0:
            raise ValueError("max_tokens and max_excerpts must be at least 1, chars_per_token above 0")
        self.max_tokens = max_tokens
        self.max_excerpts = max_excerpts
        self.chars_per_token = chars_per_token
        self.tokens_per_excerpt_label = tokens_per_excerpt_label

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, max_tokens=self.max_tokens, max_excerpts=self.max_excerpts,
                               chars_per_token=self.chars_per_token,
                               tokens_per_excerpt_label=self.tokens_per_excerpt_label)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExcerptBudget:
        return default_from_dict(cls, data)

    def estimate(self, document: Document) -> int:
        return estimated_tokens(document, self.chars_per_token, self.tokens_per_excerpt_label)

    @component.output_types(documents=list[Document], dropped=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        :param documents: Excerpts, best first.
        :returns: `documents`: those that fit, in the same order; `dropped`: how many were left out.
        """
        kept, used = [], 0
        for document in documents[: self.max_excerpts]:
            cost = self.estimate(document)
            if used + cost > self.max_tokens:
                break
            kept.append(document)
            used += cost
        return {"documents": kept, "dropped": len(documents[: self.max_excerpts]) - len(kept)}


def estimated_tokens(document: Document, chars_per_token: float, tokens_per_excerpt_label: int) -> int:
    """An excerpt's tokens in the prompt, estimated from its characters, with its label line."""
    return math.ceil(len(document.content or "") / chars_per_token) + tokens_per_excerpt_label
