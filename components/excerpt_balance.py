"""Makes sure the excerpts of a comparison hold evidence for each subject, and an overview's come from many papers."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.citations import canonical_id, content_words
from pmc_rag.components.section_kinds import is_findings_section



@component
class ExcerptBalance:
    """
    Rearranges the ranked excerpts for the questions that need evidence from several places.

    - `compare` and `several` (with `subqueries`, one search per subject or part): each subject or part gets the
      best excerpt that names it (all its content words, in the excerpt or its paper's title), from the ranked
      excerpts if one is there, else from that subject's own search (`candidates`); one from a section that
      reports findings (results, conclusions, discussion) before any other. Those go first, one per
      subject, then the rest in rank order. A subject that no excerpt names is reported in `uncovered`, so the
      answer can say the papers do not speak to it.
    - `overview`: at most `max_per_paper` excerpts of one paper, the places freed filled from the wider `pool`
      (the fused results), so an overview draws on several papers.
    - any other route: the excerpts pass as they are.

    `covering` lists the excerpts chosen for a subject: the relevance gate does not hold those back for being
    less close to the whole question than the best match.

    Usage:
    ```python
    from pmc_rag.components.excerpt_balance import ExcerptBalance

    balance = ExcerptBalance(top_k=5)
    balance.run(documents=ranked, route="compare", subqueries=["erlotinib ...", "osimertinib ..."],
                subjects=["erlotinib", "osimertinib"], candidates=per_subject_results)
    # {"documents": [erlotinib excerpt, osimertinib excerpt, ...], "covering": [...], "uncovered": []}
    ```
    """

    def __init__(self, *, top_k: int = 5, max_per_paper: int = 1):
        """
        :param top_k: How many excerpts to pass on.
        :param max_per_paper: For overviews: the most excerpts of one paper.
        """
        self.top_k = top_k
        self.max_per_paper = max_per_paper

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, top_k=self.top_k, max_per_paper=self.max_per_paper)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExcerptBalance:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], covering=list[str], uncovered=list[str])
    def run(self, documents: list[Document], route: str = "single", subjects: list[str] | None = None,
            subqueries: list[str] | None = None, candidates: list[Document] | None = None,
            pool: list[Document] | None = None, top_k: int | None = None) -> dict[str, Any]:
        """
        :param documents: The ranked excerpts, best first.
        :param route: The question's kind (`QuestionRouter`).
        :param subjects: What a comparison compares (matched against excerpts); for `several`, none.
        :param subqueries: One search per subject or part; a part is matched by its own content words.
        :param candidates: The subject searches' results.
        :param pool: More results to draw on (the fused list), for overviews.
        :param top_k: How many excerpts to pass on, this time (None: as initialised).
        """
        top_k = top_k or self.top_k
        if route in ("compare", "several") and subqueries:
            return self._cover(documents, subjects or subqueries, candidates or [], top_k, parts=not subjects)
        if route == "overview":
            return {"documents": self._spread(documents, pool or [], top_k), "covering": [], "uncovered": []}
        return {"documents": documents[:top_k], "covering": [], "uncovered": []}

    def _cover(self, documents: list[Document], subjects: list[str], candidates: list[Document], top_k: int, *,
               parts: bool
               ) -> dict[str, Any]:
        chosen: list[Document] = []
        uncovered: list[str] = []
        for subject in subjects:
            words = content_words(subject)
            if not words:
                continue
            naming = [d for d in [*documents, *candidates]
                      if d.id not in {c.id for c in chosen} and _names(d, words, parts)]
            # from a findings section when one names it: each side of a comparison is shown a finding, not an aim
            match = next((d for d in naming if is_findings_section(d)),
                         naming[0] if naming else None)
            if match is None:
                uncovered.append(subject)
            else:
                chosen.append(match)
        covering = [d.id for d in chosen]
        rest = [d for d in documents if d.id not in covering]
        return {"documents": (chosen + rest)[: max(top_k, len(chosen))], "covering": covering,
                "uncovered": uncovered}

    def _spread(self, documents: list[Document], pool: list[Document], top_k: int) -> list[Document]:
        per_paper: dict[str, int] = {}
        kept: list[Document] = []
        for document in [*documents, *pool]:
            source_id = canonical_id(str(document.meta.get("source_id", "")))
            if document.id in {d.id for d in kept} or per_paper.get(source_id, 0) >= self.max_per_paper:
                continue
            per_paper[source_id] = per_paper.get(source_id, 0) + 1
            kept.append(document)
            if len(kept) >= top_k:
                break
        return kept


def _names(document: Document, words: set[str], most: bool) -> bool:
    """Whether the excerpt (with its paper's title) names the subject: all its content words (for a question's
    part, most of them: a part is a whole question, not a name)."""
    stems = content_words(f"{document.meta.get('title') or ''} {document.content or ''}")
    found = len(words & stems)
    return found == len(words) if not most else found >= max(1, round(0.6 * len(words)))
