"""A claim judge backed by an entailment (NLI) cross-encoder: sees paraphrase, negation and meaning."""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from pmc_rag.components.citations import best_sentence, support
from pmc_rag.components.claim_signals import (CONTRADICTED, SUPPORTED, UNSUPPORTED, UNVERIFIABLE, check_pairs,
                                              without_verdict)


@component
class CrossEncoderNLIJudge:
    """
    Judges (claim, evidence) pairs with a natural-language-inference cross-encoder (sentence-transformers
    `CrossEncoder`): the evidence is the premise, the claim the hypothesis. **supported** when the entailment
    probability reaches `min_entailment`, **contradicted** when the contradiction probability reaches
    `min_contradiction`, else **unsupported**; claims of under three content words are **unverifiable**. The
    labels are read from the model's own `id2label` (entailment / contradiction / neutral, any case or order).

    Models that work: `cross-encoder/nli-deberta-v3-xsmall` (fast), `cross-encoder/nli-deberta-v3-base`; weights
    download on first use unless `HF_HUB_OFFLINE=1` (pmc-rag's default: fetch them once with it set to 0).

    Usage (in a pipeline's `checker`):
    ```yaml
    judge:
      type: pmc_rag.components.nli_support_judge.CrossEncoderNLIJudge
      init_parameters: {model: cross-encoder/nli-deberta-v3-xsmall, min_entailment: 0.5}
    ```
    """

    def __init__(self, *, model: str = "cross-encoder/nli-deberta-v3-xsmall", min_entailment: float = 0.5,
                 min_contradiction: float = 0.5, max_length: int = 512, device: str | None = None,
                 batch_size: int = 16):
        """
        :param model: A Hugging Face name or a local folder of a cross-encoder NLI model.
        :param min_entailment: Least entailment probability for "supported".
        :param min_contradiction: Least contradiction probability for "contradicted".
        :param max_length: Tokens of evidence and claim together; longer evidence is cut.
        :param device: "cpu", "cuda", ...; None lets sentence-transformers choose.
        :param batch_size: Pairs per forward pass.
        """
        for name, value in (("min_entailment", min_entailment), ("min_contradiction", min_contradiction)):
            if not 0 <= value <= 1:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        self.model = model
        self.min_entailment = min_entailment
        self.min_contradiction = min_contradiction
        self.max_length = max_length
        self.device = device
        self.batch_size = batch_size
        self._encoder: Any = None
        self._labels: dict[str, int] = {}

    def warm_up(self) -> None:
        if self._encoder is None:
            from sentence_transformers import CrossEncoder

            self._encoder = CrossEncoder(self.model, max_length=self.max_length, device=self.device)
            id2label = self._encoder.model.config.id2label
            self._labels = {label.lower(): int(index) for index, label in id2label.items()}
            missing = {"entailment", "contradiction"} - set(self._labels)
            if missing:
                raise ValueError(f"{self.model} is not an NLI model: its labels are {sorted(self._labels)}, "
                                 f"missing {sorted(missing)}")

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model, min_entailment=self.min_entailment,
                               min_contradiction=self.min_contradiction, max_length=self.max_length,
                               device=self.device, batch_size=self.batch_size)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrossEncoderNLIJudge:
        return default_from_dict(cls, data)

    @component.output_types(judgements=list[dict[str, Any]])
    def run(self, claims: list[str], evidence: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Same contract as `LexicalSupportJudge.run`; `score` is the entailment probability."""
        check_pairs(claims, evidence)
        self.warm_up()
        claims = [without_verdict(claim) for claim in claims]
        judged = [i for i, claim in enumerate(claims) if support(claim, evidence[i]) is not None]
        probabilities = self._encoder.predict([(evidence[i], claims[i]) for i in judged], apply_softmax=True,
                                              batch_size=self.batch_size, show_progress_bar=False) if judged else []
        results: list[dict[str, Any]] = []
        for claim, text in zip(claims, evidence):
            sentence, alignment = best_sentence(claim, text)
            results.append({"label": UNVERIFIABLE, "score": None, "reason": "too short to check",
                            "sentence": sentence, "alignment": alignment})
        for i, row in zip(judged, probabilities):
            entail, contradict = float(row[self._labels["entailment"]]), float(row[self._labels["contradiction"]])
            results[i].update(score=entail, reason="")
            if entail >= self.min_entailment:
                results[i]["label"] = SUPPORTED
            elif contradict >= self.min_contradiction:
                results[i].update(label=CONTRADICTED,
                                  reason=f"the entailment model finds it contradicted (p={contradict:.2f})")
            else:
                results[i].update(label=UNSUPPORTED,
                                  reason=f"the entailment model does not find it supported (p={entail:.2f})")
        return {"judgements": results}
