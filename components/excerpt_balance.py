"""Makes sure the excerpts of a comparison hold evidence for each subject, and an overview's come from many papers."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.utils.filters import document_matches_filter

from pmc_rag.components.citations import canonical_id, content_words
from pmc_rag.components.section_kinds import is_findings_section, is_readable_evidence


@component
class ExcerptBalance:
    """
    Rearranges the ranked excerpts for the questions that need evidence from several places.

    - `compare` and `several` (with `subqueries`, one search per subject or part): each subject or part gets the
      best excerpt that names it (all its content words, in the excerpt or its paper's title), from the ranked
      excerpts if one is there, else from that subject's own search (`candidates`); one from a section that
      reports findings (results, conclusions, discussion) before any other, then one from a paper not yet
      chosen for another subject (the subject that fewest papers name chooses first). When every subject's
      excerpt comes from one paper, another paper's excerpt naming one of them is added. Those go first, then the
      rest in rank order, then the subject searches' other results; captions and back matter never. A subject that no excerpt names is
      reported in `uncovered`, so the answer can say the papers do not speak to it.
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
            pool: list[Document] | None = None, top_k: int | None = None,
            filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        :param documents: The ranked excerpts, best first.
        :param route: The question's kind (`QuestionRouter`).
        :param subjects: What a comparison compares (matched against excerpts); for `several`, none.
        :param subqueries: One search per subject or part; a part is matched by its own content words.
        :param candidates: The subject searches' results.
        :param pool: More results to draw on (the fused list), for overviews.
        :param top_k: How many excerpts to pass on, this time (None: as initialised).
        :param filters: The request's filters (a year range, a collection): the subject searches do not take them,
            so their results outside them are dropped here.
        """
        top_k = top_k or self.top_k
        if filters and candidates:
            candidates = [d for d in candidates if document_matches_filter(filters, d)]
        if route in ("compare", "several") and subqueries:
            return self._cover(documents, subjects or subqueries, subqueries, candidates or [], top_k,
                               parts=not subjects)
        if route == "overview":
            return {"documents": self._spread(documents, pool or [], top_k), "covering": [], "uncovered": []}
        return {"documents": documents[:top_k], "covering": [], "uncovered": []}

    def _cover(self, documents: list[Document], subjects: list[str], subqueries: list[str],
               candidates: list[Document], top_k: int, *, parts: bool) -> dict[str, Any]:
        readable = list({d.id: d for d in [*documents, *candidates] if is_readable_evidence(d)}.values())
        naming = {subject: _naming(readable, content_words(subject), parts) for subject in subjects}
        # What the comparison is about besides its subjects ("asthma" in "children vs adults in asthma"): a passage
        # on "nurses" in nursing homes is not about nurses measuring blood pressure.
        context = set().union(*(content_words(q) for q in subqueries)) - set().union(
            *(content_words(s) for s in subjects)) if not parts else set()
        chosen: dict[str, Document] = {}
        # The subject fewest papers name chooses first, so that the others can come from other papers.
        for subject in sorted(naming, key=lambda s: len({_paper(d) for d in naming[s]})):
            taken = {d.id for d in chosen.values()}
            papers = {_paper(d) for d in chosen.values()}
            options = [d for d in naming[subject] if d.id not in taken]
            if not options:
                continue
            words = content_words(subject)
            # A finding first (each side of a comparison is shown a finding, not an aim or a method), then one on
            # the question's topic, then one from a paper no other subject's excerpt comes from, then one whose own
            # text names the subject (not only its paper's title), then by rank.
            chosen[subject] = min(options, key=lambda d: (not is_findings_section(d), not _shares(d, context),
                                                         _paper(d) in papers,
                                                         not _names(d, words, parts, with_title=False),
                                                         options.index(d)))
        covering: list[str] = []
        for subject in (s for s in subjects if s in chosen):
            document, words = chosen[subject], content_words(subject)
            covering.append(document.id)
            if not _names(document, words, parts):
                # a finding of a paper that names the subject in another passage: that passage goes too, to show why
                tie = next((d for d in readable if _paper(d) == _paper(document) and _names(d, words, parts)), None)
                if tie is not None and tie.id not in covering:
                    covering.append(tie.id)
        papers = {_paper(d) for d in chosen.values()}
        if not parts and len(chosen) >= 2 and len(papers) == 1:
            # Every subject's excerpt comes from one paper: a comparison also shows another paper's finding on one
            # of them when the excerpts hold one.
            other = [d for s in subjects for d in naming[s] if _paper(d) not in papers and _shares(d, context)]
            if other:
                covering.append(min(other, key=lambda d: (not is_findings_section(d), other.index(d))).id)
        # Then the ranked excerpts, and the subject searches' own results after them; captions and back matter are
        # left out (a table's title is not evidence about either side).
        by_id = {d.id: d for d in readable}
        rest = [d for d in readable if d.id not in covering]
        return {"documents": ([by_id[i] for i in covering] + rest)[: max(top_k, len(covering))],
                "covering": covering, "uncovered": [s for s in subjects if content_words(s) and s not in chosen]}

    def _spread(self, documents: list[Document], pool: list[Document], top_k: int) -> list[Document]:
        per_paper: dict[str, int] = {}
        kept: list[Document] = []
        for document in [*documents, *pool]:
            source_id = _paper(document)
            if document.id in {d.id for d in kept} or per_paper.get(source_id, 0) >= self.max_per_paper:
                continue
            per_paper[source_id] = per_paper.get(source_id, 0) + 1
            kept.append(document)
            if len(kept) >= top_k:
                break
        return kept


def _naming(documents: list[Document], words: set[str], most: bool) -> list[Document]:
    """The excerpts that name the subject, and the findings passages of the papers they come from (a paper's
    conclusion rarely repeats "adult patients", named in its methods)."""
    if not words:
        return []
    named = {_paper(d) for d in documents if _names(d, words, most)}
    return [d for d in documents if _names(d, words, most) or (_paper(d) in named and is_findings_section(d))]


def _shares(document: Document, words: set[str]) -> bool:
    """Whether the passage (or its paper's title) has one of the words, or there are none to have."""
    return not words or bool(words & content_words(f"{document.meta.get('title') or ''} {document.content or ''}"))


def _paper(document: Document) -> str:
    return canonical_id(str(document.meta.get("source_id", "")))


def _names(document: Document, words: set[str], most: bool, with_title: bool = True) -> bool:
    """Whether the excerpt (with its paper's title) names the subject: all its content words (for a question's
    part, most of them: a part is a whole question, not a name)."""
    title = document.meta.get("title") or "" if with_title else ""
    stems = content_words(f"{title} {document.content or ''}")
    found = len(words & stems)
    return found == len(words) if not most else found >= max(1, round(0.6 * len(words)))
