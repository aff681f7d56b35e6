"""Adds each retrieved paper's own statement of what it found, for the questions that must show a finding per paper."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_to_dict
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

from pmc_rag.components.citations import by_paper
from pmc_rag.components.section_kinds import is_findings_section, is_plain_abstract, is_readable_evidence
from pmc_rag.components.store_connection import with_store_from_dict


@component
class PaperFindings:
    """
    For each paper among the retrieved chunks that has none from a findings section, adds its first conclusions
    chunk (else its first results chunk) from the store.

    A search for "adults asthma" finds a paper by its methods ("adult patients with asthma"), and a methods
    passage answers nothing; the paper's conclusion does, and it rarely repeats the words searched for. Used
    before `ExcerptBalance`, so that each side of a comparison can be shown what a paper found about it; and,
    `in_place` for `routes: [overview]`, after the relevance gate, so that an overview is written from what each
    paper found rather than from its aims and background (the passages closest to a topic).

    Usage:
    ```python
    from pmc_rag.components.paper_findings import PaperFindings

    findings = PaperFindings(document_store=store)
    findings.run(documents=subject_results)
    # {"documents": [*subject_results, <the conclusions of each paper found only by its methods or background>]}
    PaperFindings(document_store=store, routes=["overview"], in_place=True).run(documents=one_per_paper,
                                                                              route="overview")
    # {"documents": [<each paper's conclusion where its excerpt was its aims or background>]}
    ```
    """

    def __init__(self, *, document_store: PgvectorDocumentStore, max_papers: int = 10, routes: list[str] | None = None,
                 in_place: bool = False, missing: str = "findings"):
        """
        :param document_store: The store the chunks live in.
        :param max_papers: The most papers looked up (the first in the documents' order): one query in all.
        :param routes: Only for questions of these kinds (`QuestionRouter`'s `route`); the others' chunks pass as
            they are. None: every question.
        :param in_place: The findings chunk takes the place of the paper's first chunk, and its other chunks go,
            instead of being added at the end: one finding per paper, in the papers' order (an overview).
        :param missing: Which papers are looked up: `"findings"`, those with no chunk from a results, discussion or
            conclusions section; `"conclusion"`, those with no chunk from a conclusions section (a full-text paper
            found by its results and discussion gets its own summary of them: its conclusions, or where it has
            none, the end of an abstract without headings).
        """
        if missing not in _MISSING:
            raise ValueError(f"missing must be one of {_MISSING}, not {missing!r}")
        self.document_store = document_store
        self.max_papers = max_papers
        self.routes = routes
        self.in_place = in_place
        self.missing = missing

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict(), max_papers=self.max_papers,
                               routes=self.routes, in_place=self.in_place, missing=self.missing)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PaperFindings:
        return cls(**with_store_from_dict(data)["init_parameters"])

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], route: str | None = None) -> dict[str, Any]:
        """
        :param documents: Retrieved chunks.
        :param route: The question's kind, when `routes` says which kinds this is for.
        :returns: `documents`: the same chunks, then the findings chunks added (at most one per paper); with
            `in_place`, each paper's chunks without a finding replaced by its findings chunk.
        """
        if self.routes is not None and route not in self.routes:
            return {"documents": documents}
        has_it = is_findings_section if self.missing == "findings" else _is_conclusion
        wanted = [chunks[0].meta["source_id"] for chunks in by_paper(documents).values()
                  if chunks[0].meta.get("source_id") and not any(has_it(d) for d in chunks)]
        wanted = wanted[: self.max_papers]
        if not wanted:
            return {"documents": documents}
        # "Conclusions", "Abstract: Conclusions", "Results / Efficacy": LIKE is case-sensitive, so no capital
        sections = [{"field": "meta.section", "operator": "like", "value": "%onclu%"},
                    {"field": "meta.section", "operator": "like", "value": "%esult%"}]
        if self.missing == "conclusion":  # a paper whose abstract has no headings concludes at its end
            sections.append({"field": "meta.section", "operator": "==", "value": "Abstract"})
        found = self.document_store.filter_documents({"operator": "AND", "conditions": [
            {"field": "meta.source_id", "operator": "in", "value": wanted},
            {"operator": "OR", "conditions": sections}]})
        found.sort(key=_summary_first)
        has_findings = {chunks[0].meta.get("source_id") for chunks in by_paper(documents).values()
                        if any(is_findings_section(d) for d in chunks)}
        added: dict[str, Document] = {}
        for document in found:
            if not _stands_for_conclusion(document) and document.meta["source_id"] in has_findings:
                continue  # its results are among the chunks already: only its conclusion would add to them
            if is_readable_evidence(document) and document.meta["source_id"] not in added:
                added[document.meta["source_id"]] = document
        have = {d.id for d in documents}
        if self.in_place:
            replaced: list[Document] = []
            for document in documents:
                source_id = document.meta.get("source_id")
                if source_id not in added:
                    replaced.append(document)
                elif added[source_id].id not in {d.id for d in replaced}:
                    replaced.append(added[source_id])
            return {"documents": replaced}
        return {"documents": [*documents, *(d for d in added.values() if d.id not in have)]}


_MISSING = ("findings", "conclusion")


def _is_conclusion(document: Document) -> bool:
    return "onclu" in str(document.meta.get("section") or "")


def _stands_for_conclusion(document: Document) -> bool:
    return _is_conclusion(document) or is_plain_abstract(document.meta.get("section"))


def _summary_first(document: Document) -> tuple[int, int]:
    """Conclusions first; then, for a paper without a conclusions section, the last chunk of an abstract without
    headings (where a paper says what it concluded); then results, in the paper's order."""
    index = int(document.meta.get("chunk_index") or 0)
    if _is_conclusion(document):
        return 0, index
    return (1, -index) if is_plain_abstract(document.meta.get("section")) else (2, index)
