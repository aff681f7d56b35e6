"""A claim judge served by Ollama: MiniCheck-style fact checking (`bespoke-minicheck`) or any model that answers
Yes or No."""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citations import best_sentence, support
from pmc_rag.components.claim_signals import (CONTRADICTED, SUPPORTED, UNSUPPORTED, UNVERIFIABLE, check_pairs,
                                              conflicts, without_verdict)


@component
class OllamaSupportJudge:
    """
    Asks a model on Ollama, per (claim, evidence) pair, "Document: ... Claim: ..." (bespoke-minicheck's prompt)
    and reads Yes (**supported**) or No. A No is **contradicted** when the claim also differs from its closest
    evidence sentence in negation, numbers or direction (`claim_signals.conflicts`), else **unsupported**:
    MiniCheck says only whether a document supports a claim. Claims of under three content words are
    **unverifiable** and not sent.

    Usage (in a pipeline's `checker`; `ollama pull bespoke-minicheck` first):
    ```yaml
    judge:
      type: pmc_rag.components.ollama_support_judge.OllamaSupportJudge
      init_parameters: {model: bespoke-minicheck}
    ```
    """

    def __init__(self, *, model: str = "bespoke-minicheck", url: str | None = None, timeout: int = 60,
                 keep_alive: str = "30m"):
        """
        :param model: The Ollama model.
        :param url: Ollama's address; None: `$OLLAMA_HOST`, else http://localhost:11434.
        :param timeout: Seconds per request.
        :param keep_alive: How long Ollama keeps the model loaded between requests.
        """
        self.model = model
        self.url = url
        self.timeout = timeout
        self.keep_alive = keep_alive
        self._generator: Any = None

    def _chat(self) -> Any:
        if self._generator is None:
            from haystack_integrations.components.generators.ollama import OllamaChatGenerator

            kwargs = {"url": self.url} if self.url else {}
            self._generator = OllamaChatGenerator(model=self.model, timeout=self.timeout, keep_alive=self.keep_alive,
                                                  generation_kwargs={"temperature": 0.0, "num_predict": 3,
                                                                     "num_ctx": 4096}, **kwargs)
        return self._generator

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model, url=self.url, timeout=self.timeout,
                               keep_alive=self.keep_alive)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OllamaSupportJudge:
        return default_from_dict(cls, data)

    @component.output_types(judgements=list[dict[str, Any]])
    def run(self, claims: list[str], evidence: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Same contract as `LexicalSupportJudge.run`; `score` is 1.0 for Yes, 0.0 for No."""
        check_pairs(claims, evidence)
        results = []
        for claim, text in zip(claims, evidence):
            claim = without_verdict(claim)
            sentence, alignment = best_sentence(claim, text)
            judged = {"sentence": sentence, "alignment": alignment, "score": None, "reason": ""}
            if support(claim, text) is None:
                results.append({**judged, "label": UNVERIFIABLE, "reason": "too short to check"})
                continue
            prompt = ChatMessage.from_user(f"Document: {text}\nClaim: {claim}")
            reply = (self._chat().run(messages=[prompt])["replies"][0].text or "").strip().lower()
            if reply.startswith("yes"):
                results.append({**judged, "label": SUPPORTED, "score": 1.0})
                continue
            found = conflicts(claim, sentence, text)
            results.append({**judged, "label": CONTRADICTED if found else UNSUPPORTED, "score": 0.0,
                            "reason": "; ".join(found) or f"{self.model} does not find it supported"})
        return {"judgements": results}
