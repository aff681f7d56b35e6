"""Checks each claim against what its cited excerpt says, and repairs or removes the ones that fail."""

from __future__ import annotations

import copy
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict
from haystack.utils import deserialize_component_inplace

from pmc_rag.components.citations import by_paper, content_words, quoted_words, shown_text
from pmc_rag.components.claim import Claim
from pmc_rag.components.claim_signals import CONTRADICTED, SUPPORTED, UNSUPPORTED, UNVERIFIABLE
from pmc_rag.components.lexical_support_judge import LexicalSupportJudge

# When one paper's excerpts disagree on a claim, the excerpt the claim is closest to (the highest `alignment`:
# the one it was taken from) speaks for the paper; between equally close ones a contradiction outweighs support.
_PREFERENCE = {CONTRADICTED: 3, SUPPORTED: 2, UNVERIFIABLE: 1, UNSUPPORTED: 0}


@component
class ClaimChecker:
    """
    Keeps a claim only with a citation whose excerpt supports it, as judged by a pluggable support judge.

    Takes the claims of `CitationVerifier` (every citation already names an excerpt the model was shown) and asks
    the judge about each claim against every shown excerpt. Then, per claim:
    * a cited excerpt **supports** it: kept, citing only the excerpts that support it (others are dropped and
      listed in the claim's `dropped`);
    * none of its cited excerpts does, **another shown excerpt does** and none contradicts it: **re-cited** to
      the best of those (`recited_from` names what the model cited); likewise when another excerpt supports it
      better than the cited one by `recite_margin`;
    * no cited excerpt supports it and a shown one **contradicts** it (negation, a changed number, a reversed direction;
      or the judge's own verdict): **removed** from the answer and reported in `removed_claims`;
    * no excerpt supports or contradicts it: kept and marked `unsupported` (the answer is flagged weak), or
      removed too when `remove_unsupported` is set: a lexical judge cannot tell a paraphrase from an invention,
      an entailment model can.
    Claims without a citation, or too short to judge ("Yes."), pass as they are.

    Usage:
    ```python
    from haystack import Document
    from pmc_rag.components.claim_checker import ClaimChecker
    from pmc_rag.components.lexical_support_judge import LexicalSupportJudge

    checker = ClaimChecker(judge=LexicalSupportJudge(min_support=0.35))
    excerpts = [Document(content="Metformin lowered HbA1c by 1.1%.", meta={"source_id": "PMC1"})]
    claims = [{"text": "Metformin did not lower HbA1c.", "cited": ["PMC1"], "attached": [], "support": 1.0}]
    checker.run(claims=claims, documents=excerpts)["removed_claims"][0]["reason"]  # "negation: ..."
    ```
    """

    def __init__(self, *, judge: Any = None, remove_unsupported: bool = False, recite_margin: float | None = 0.3,
                 source_id_field: str = "source_id", specific_word_max_share: float | None = None):
        """
        :param judge: A support judge component (`run(claims, evidence) -> {"judgements": [...]}`); by default
            `LexicalSupportJudge()`. In YAML: `{type: ..., init_parameters: {...}}`.
        :param remove_unsupported: Remove claims no shown excerpt supports, not only contradicted ones.
        :param recite_margin: Re-cite a claim whose cited excerpt supports it when another shown excerpt supports it
            better by at least this much (judge scores, 0-1): a sentence copied from one paper, cited to another
            on the same subject, shares many words with both. None: only unsupported claims are re-cited.
        :param source_id_field: The metadata field holding a document's citation id.
        :param specific_word_max_share: Claims must name what their source names: a word of the question that at
            most this share of the chunks contain (by the BM25 retriever's `word_shares`: a condition, a drug, a
            population) and that the claim repeats must be in the paper's shown excerpts or title, or that paper
            does not support the claim, whatever the judge says; a claim no paper can support then is removed.
            None: no such rule.
        """
        if specific_word_max_share is not None and not 0 <= specific_word_max_share <= 1:
            raise ValueError("specific_word_max_share must be between 0 and 1 (or None)")
        self.specific_word_max_share = specific_word_max_share
        self.judge = judge if judge is not None else LexicalSupportJudge()
        self.remove_unsupported = remove_unsupported
        self.recite_margin = recite_margin
        self.source_id_field = source_id_field

    def warm_up(self) -> None:
        if hasattr(self.judge, "warm_up"):
            self.judge.warm_up()

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, judge=component_to_dict(obj=self.judge, name="judge"),
                               remove_unsupported=self.remove_unsupported, recite_margin=self.recite_margin,
                               source_id_field=self.source_id_field,
                               specific_word_max_share=self.specific_word_max_share)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClaimChecker:
        data = copy.deepcopy(data)  # the judge is deserialised in place; the caller's dict stays as it was
        parameters = data.get("init_parameters", {})
        if isinstance(parameters.get("judge"), dict):
            deserialize_component_inplace(parameters, key="judge")
        return default_from_dict(cls, data)

    @component.output_types(claims=list[Claim], removed_claims=list[dict[str, Any]])
    def run(self, claims: list[Claim], documents: list[Document],
            word_shares: dict[str, float] | None = None) -> dict[str, list[dict[str, Any]]]:
        """
        :param claims: From `CitationVerifier`: `{"text", "cited", "attached", "support", ...}` per sentence.
        :param documents: The excerpts the model was shown.
        :param word_shares: The question's words with the share of chunks containing each (`PgvectorBM25Retriever`),
            for `specific_word_max_share`.
        :returns: `claims`: the claims kept, each with `judgement` (supported, unsupported, unverifiable or
            unchecked), `support` (the judge's score for its citation), `reason`, `recited_from` and `dropped`;
            `removed_claims`: `{"text", "cited", "source_id", "reason", "evidence"}` per claim removed.
        """
        by_id = by_paper(documents, self.source_id_field)
        to_judge = [claim for claim in claims if claim.get("cited")]
        pairs = [(claim["text"], source_id, shown_text(document))
                 for claim in to_judge for source_id, chunks in by_id.items() for document in chunks]
        judged = self.judge.run(claims=[p[0] for p in pairs], evidence=[p[2] for p in pairs])["judgements"] \
            if pairs else []
        per_claim: dict[str, dict[str, dict[str, Any]]] = {}
        for (text, source_id, _), judgement in zip(pairs, judged):
            best = per_claim.setdefault(text, {}).get(source_id)
            if best is None or _rank(judgement) > _rank(best):
                per_claim[text][source_id] = judgement

        self._require_specific_words(to_judge, by_id, word_shares or {}, per_claim)
        kept, removed = [], []
        for claim in claims:
            if not claim.get("cited"):
                kept.append({**claim, "judgement": "unchecked"})
                continue
            outcome = self._decide(claim, per_claim.get(claim["text"], {}))
            (removed if "removed" in outcome else kept).append(outcome.pop("removed", None) or outcome)
        return {"claims": kept, "removed_claims": removed}

    def _require_specific_words(self, claims: list[Claim], by_id: dict[str, list[Document]],
                                word_shares: dict[str, float],
                                per_claim: dict[str, dict[str, dict[str, Any]]]) -> None:
        """A paper whose excerpts and title lack a specific word the claim names does not support the claim: its
        judgement becomes a contradiction-free `unsupported` with the reason, and `absent_words` say which."""
        if self.specific_word_max_share is None:
            return
        specific = [w for w, share in word_shares.items() if share <= self.specific_word_max_share and content_words(w)]
        if not specific:
            return
        named_by = {source_id: content_words(" ".join([str(chunks[0].meta.get("title") or "")]
                                                       + [shown_text(d) for d in chunks]))
                    for source_id, chunks in by_id.items()}
        for claim in claims:
            said = content_words(claim["text"])
            named = [w for w in specific if content_words(w) <= said]
            for source_id, judgement in per_claim.get(claim["text"], {}).items():
                absent = [w for w in named if not content_words(w) <= named_by.get(source_id, set())]
                if absent and judgement["label"] == SUPPORTED:
                    per_claim[claim["text"]][source_id] = {
                        **judgement, "label": UNSUPPORTED, "score": 0.0, "absent_words": absent,
                        "reason": f"names {quoted_words(absent)}, which this paper's excerpts do not"}

    def _decide(self, claim: dict[str, Any], by_source: dict[str, dict[str, Any]]) -> dict[str, Any]:
        cited = [source_id for source_id in claim["cited"] if source_id in by_source]
        if by_source and all(j["label"] == UNVERIFIABLE for j in by_source.values()):
            return {**claim, "judgement": UNVERIFIABLE, "reason": "too short to check"}
        supporting = [s for s in cited if by_source[s]["label"] == SUPPORTED]
        elsewhere = sorted((s for s, j in by_source.items() if j["label"] == SUPPORTED and s not in cited),
                           key=lambda s: -(by_source[s]["score"] or 0))
        if supporting:
            cited_best = max(by_source[s]["score"] or 0 for s in supporting)
            if elsewhere and self.recite_margin is not None and \
                    (by_source[elsewhere[0]]["score"] or 0) - cited_best >= self.recite_margin:
                return self._kept(claim, elsewhere[:1], by_source, recited_from=claim["cited"])
            return self._kept(claim, supporting, by_source, recited_from=[])
        against = [s for s in cited if by_source[s]["label"] == CONTRADICTED] or \
                  [s for s, j in by_source.items() if j["label"] == CONTRADICTED]
        if elsewhere and not against:  # a claim some excerpt contradicts is not re-cited to one sharing its words
            return self._kept(claim, elsewhere[:1], by_source, recited_from=claim["cited"])
        misnamed = [s for s in cited if by_source[s].get("absent_words")]
        if misnamed and not supporting:  # a claim about a subject its source never names is not a finding of it
            judgement = by_source[misnamed[0]]
            return {"removed": {"text": claim["text"], "cited": claim["cited"], "source_id": misnamed[0],
                                "judgement": UNSUPPORTED, "reason": judgement["reason"], "evidence": ""}}
        if against or self.remove_unsupported:
            source_id = (against or cited or list(by_source))[0]
            judgement = by_source.get(source_id, {})
            return {"removed": {"text": claim["text"], "cited": claim["cited"], "source_id": source_id,
                                "judgement": CONTRADICTED if against else UNSUPPORTED,
                                "reason": judgement.get("reason") or "no excerpt supports it",
                                "evidence": judgement.get("sentence") or ""}}
        best = max(cited, key=lambda s: by_source[s]["score"] or 0) if cited else None
        return {**claim, "judgement": UNSUPPORTED, "support": by_source[best]["score"] if best else None,
                "reason": by_source[best]["reason"] if best else "", "recited_from": [], "dropped": []}

    @staticmethod
    def _kept(claim: Claim, cited: list[str], by_source: dict[str, dict[str, Any]],
              recited_from: list[str]) -> dict[str, Any]:
        return {**claim, "cited": cited, "judgement": SUPPORTED,
                "attached": [s for s in claim.get("attached", []) if s in cited],
                "support": max(by_source[s]["score"] or 0 for s in cited), "reason": "",
                "recited_from": recited_from,
                "dropped": [s for s in claim["cited"] if s not in cited] if not recited_from else []}


def kind_of_disagreement(reason: str) -> str:
    """What kind of disagreement a check found ("negation", "numbers", "words its excerpts do not contain"), from
    a removed claim's `reason`, without the claim's own words (what the answer's notes may say of it)."""
    if reason.startswith("names "):
        return "words its excerpts do not contain"
    return reason.split(":", 1)[0].strip() or "not supported"


def _rank(judgement: dict[str, Any]) -> tuple[float, int, float]:
    return (round(judgement.get("alignment") or 0.0, 6), _PREFERENCE.get(judgement["label"], 1),
            judgement.get("score") or 0.0)

