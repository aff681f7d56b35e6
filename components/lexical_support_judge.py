"""The offline claim judge: word overlap for support, plus negation, numbers and direction for contradiction."""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from pmc_rag.components.citations import best_sentence, content_words, support
from pmc_rag.components.claim_signals import (CONTRADICTED, SUPPORTED, UNSUPPORTED, UNVERIFIABLE, check_pairs,
                                              conflicts, is_negated, states_an_aim, without_verdict)
from pmc_rag.components.section_chunker import split_sentences


@component
class LexicalSupportJudge:
    """
    Judges whether an excerpt supports a claim, with no model: fast, deterministic, and blind to paraphrase.

    For each (claim, evidence) pair:
    * **contradicted** if the evidence sentence closest to the claim (of those stating findings, not a study's
      aim: "To assess whether ...") shares at least `conflict_overlap` of the
      claim's content words and the two differ in negation, in a number or unit, or in direction of change
      (`claim_signals.conflicts`): "X was not associated with Y" against "X was associated with Y";
    * also **contradicted** if the claim says "not" or "no", no sentence of the evidence sharing at least
      `min_support` of its words does, and a finding shares that many ("no evidence of toxicity" against
      "Toxicity was well tolerated with manageable toxicity"); **unsupported** when only an aim or nothing does;
    * else **supported** if at least `min_support` of the claim's content words are in the evidence;
    * else **unsupported**; **unverifiable** for a claim of under three content words ("Yes.").

    Every judge (this one, `CrossEncoderNLIJudge`, `OllamaSupportJudge`) has this `run()`, so `ClaimChecker`
    takes any of them from YAML.

    Usage:
    ```python
    from pmc_rag.components.lexical_support_judge import LexicalSupportJudge

    judge = LexicalSupportJudge(min_support=0.35)
    judge.run(claims=["Metformin did not lower HbA1c."], evidence=["Metformin lowered HbA1c by 1.1%."])
    # {"judgements": [{"label": "contradicted", "score": 1.0, "reason": "negation: ...", "sentence": "..."}]}
    ```
    """

    def __init__(self, *, min_support: float = 0.35, conflict_overlap: float = 0.5):
        """
        :param min_support: Least share of the claim's content words found in the evidence for "supported".
        :param conflict_overlap: Least share of the claim's content words in the evidence's closest sentence for
            a difference in negation, numbers or direction to count as a contradiction (below it, the sentence is
            about something else).
        """
        for name, value in (("min_support", min_support), ("conflict_overlap", conflict_overlap)):
            if not 0 <= value <= 1:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        self.min_support = min_support
        self.conflict_overlap = conflict_overlap

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, min_support=self.min_support, conflict_overlap=self.conflict_overlap)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LexicalSupportJudge:
        return default_from_dict(cls, data)

    @component.output_types(judgements=list[dict[str, Any]])
    def run(self, claims: list[str], evidence: list[str]) -> dict[str, list[dict[str, Any]]]:
        """
        :param claims: Claims, one per pair.
        :param evidence: The evidence text for each claim (same length).
        :returns: `judgements`: per pair, `{"label", "score" (0-1 or None), "reason", "sentence", "alignment"}`;
            `sentence` is the evidence sentence closest to the claim, `alignment` the share of the claim's content
            words in it (which of a paper's excerpts the claim comes from).
        """
        check_pairs(claims, evidence)
        return {"judgements": [self._judge(claim, text) for claim, text in zip(claims, evidence)]}

    def _judge(self, claim: str, evidence: str) -> dict[str, Any]:
        claim = without_verdict(claim)
        score = support(claim, evidence)
        sentence, overlap = best_sentence(claim, evidence)
        judged = {"sentence": sentence, "alignment": overlap, "score": score, "reason": ""}
        if score is None:
            return {**judged, "label": UNVERIFIABLE, "reason": "too short to check"}
        # A claim about a study's aim is compared with aims; any other, with findings only.
        finding, finding_overlap = best_sentence(claim, evidence,
                                                 exclude=None if states_an_aim(claim) else states_an_aim)
        if finding and finding_overlap >= self.conflict_overlap:
            found = conflicts(claim, finding, evidence)
            if found:
                return {**judged, "label": CONTRADICTED, "reason": "; ".join(found), "sentence": finding,
                        "alignment": finding_overlap}
        # A claim that something did not happen ("no evidence of toxicity") is read in the words it shares with an
        # excerpt that never says so ("Toxicity was scored every four weeks"; a follow-up, 2026-11-27): a "not"
        # no source sentence has is the claim's own. It contradicts a finding on its subject; an aim says nothing
        # either way.
        if score >= self.min_support and is_negated(claim) and not self._negated_alike(claim, evidence):
            reason = "negation: the claim says 'not' or 'no', and no source sentence sharing its words does"
            on_its_subject = finding and finding_overlap >= self.min_support
            return {**judged, "label": CONTRADICTED if on_its_subject else UNSUPPORTED, "reason": reason}
        if score >= self.min_support:
            return {**judged, "label": SUPPORTED}
        return {**judged, "label": UNSUPPORTED,
                "reason": f"{score:.0%} of its words are in the source (needs {self.min_support:.0%})"}

    def _negated_alike(self, claim: str, evidence: str) -> bool:
        """Whether a negated sentence of the evidence shares at least `min_support` of the claim's words."""
        words = content_words(claim)
        return any(is_negated(sentence) and len(words & content_words(sentence)) >= self.min_support * len(words)
                   for sentence in split_sentences(" ".join(evidence.split())))
