"""Checks a model's citations against the excerpts it was actually given."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citations import (by_paper, normalise_text, shown_text, split_cited_sentences,
                                         strip_reference_list, support)
from pmc_rag.components.claim import Claim


@component
class CitationVerifier:
    """
    Turns a model's reply into claims with verified citations.

    * Citations are read from the answer text only: a reference list the model appends is cut off first.
    * A citation counts only if it names one of `documents` (the excerpts in the prompt); any other id, and any
      bare bracketed number ("[2]", which names no paper), is removed from the claim and reported in
      `invalid_citations`, so it can never be shown as a source.
    * A sentence left without a valid citation (uncited, or citing only papers the model was not shown) gets the
      citation of the excerpt that supports it best, if that support reaches `attribution_threshold`; such
      citations are listed in the claim's `attached`.
    * Each claim gets a lexical support score: the share of its content words found in its best cited excerpt
      (the excerpt's title, shown in its label, included).

    Usage:
    ```python
    from haystack import Document
    from haystack.dataclasses import ChatMessage
    from pmc_rag.components.citation_verifier import CitationVerifier

    verifier = CitationVerifier(attribution_threshold=0.6)
    excerpt = Document(content="Erlotinib prolonged survival in EGFR-mutant lung cancer.", meta={"source_id": "PMC1"})
    result = verifier.run(replies=[ChatMessage.from_assistant("Erlotinib prolonged survival [PMC1] [PMC999].")],
                          documents=[excerpt])
    result["claims"][0]["cited"], result["invalid_citations"]  # ["PMC1"], ["PMC999"]
    ```
    """

    def __init__(self, *, attribution_threshold: float | None = 0.6, source_id_field: str = "source_id"):
        """
        :param attribution_threshold: The least support (share of a sentence's content words found in an excerpt)
            for attaching a citation to a sentence the model left uncited; `None` turns attaching off.
        :param source_id_field: The metadata field holding a document's citation id.
        """
        if attribution_threshold is not None and not 0 <= attribution_threshold <= 1:
            raise ValueError(f"attribution_threshold must be between 0 and 1, got {attribution_threshold}")
        self.attribution_threshold = attribution_threshold
        self.source_id_field = source_id_field

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, attribution_threshold=self.attribution_threshold,
                               source_id_field=self.source_id_field)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CitationVerifier:
        return default_from_dict(cls, data)

    @component.output_types(claims=list[Claim], invalid_citations=list[str], raw_answer=str)
    def run(self, replies: list[ChatMessage], documents: list[Document]) -> dict[str, Any]:
        """
        :param replies: The generator's replies; the first one's text is the answer.
        :param documents: The excerpts the model was shown, in prompt order.
        :returns: `claims`: one per sentence, `{"text", "cited", "attached", "support", "invalid"}`;
            `invalid_citations`: ids cited that were not among the excerpts, in order; `raw_answer`: the reply.
        """
        raw = (replies[0].text or "") if replies else ""
        answer, _appended_references = strip_reference_list(normalise_text(raw))
        given = by_paper(documents, self.source_id_field)

        claims, invalid = [], []
        for sentence in split_cited_sentences(answer):
            valid = [cid for cid in sentence.cited if cid in given]
            rejected = [cid for cid in sentence.cited if cid not in given] + sentence.bare
            invalid += [cid for cid in rejected if cid not in invalid]
            attached: list[str] = []
            if not valid and self.attribution_threshold is not None:  # uncited, or cited only papers not shown
                best_id, best_support = self._best_excerpt(sentence.text, given)
                if best_id and best_support is not None and best_support >= self.attribution_threshold:
                    attached = [best_id]
            cited = valid or attached
            scores = [s for cid in cited for d in given[cid] if (s := support(sentence.text, shown_text(d)))
                      is not None]
            claims.append({
                "text": sentence.text,
                "cited": cited,
                "attached": attached,
                "invalid": rejected,
                "support": max(scores) if scores else None,
            })
        return {"claims": claims, "invalid_citations": invalid, "raw_answer": raw}

    @staticmethod
    def _best_excerpt(text: str, given: dict[str, list[Document]]) -> tuple[str | None, float | None]:
        best_id, best = None, None
        for source_id, documents in given.items():
            for document in documents:
                score = support(text, shown_text(document))
                if score is not None and (best is None or score > best):
                    best_id, best = source_id, score
        return best_id, best

