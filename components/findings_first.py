"""Within each paper's places in the ranking, puts its excerpts that report findings first."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.section_kinds import is_findings_section, is_readable_evidence


@component
class FindingsFirst:
    """
    Each paper keeps the places its excerpts had in the ranking; within them, its excerpts from a section that
    reports findings (conclusions, results, discussion) come first, then its other running text (aims, methods,
    background), then its captions and back matter, each group in the order it arrived.

    A ranker orders excerpts by closeness to the question, and the passages closest to a question are often its
    restatement: the aim ("To examine whether ..."), a method, a trial's registration line. The model reads the
    excerpts in the order given and leans on the first. Papers are not reordered: moving every finding ahead of
    every aim put other papers' findings before the paper that answers the question (on 60 dev questions the
    gold paper was cited 3 times less often). Nothing is dropped; put it before the prompt budget, which drops
    from the end.

    Usage:
    ```python
    from haystack import Document
    from pmc_rag.components.findings_first import FindingsFirst

    aim = Document(content="To examine ...", meta={"source_id": "PMC1", "section": "Abstract: Aims"})
    result = Document(content="X lowered Y.", meta={"source_id": "PMC1", "section": "Abstract: Results"})
    FindingsFirst().run(documents=[aim, result])  # {"documents": [result, aim]}
    ```
    """

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FindingsFirst:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        :param documents: The excerpts, best first.
        :returns: `documents`: the same excerpts, each paper's findings first in the places that paper had.
        """
        def group(document: Document) -> int:
            if not is_readable_evidence(document):
                return 2
            return 0 if is_findings_section(document) else 1

        places: dict[Any, list[int]] = {}
        for place, document in enumerate(documents):
            places.setdefault(document.meta.get("source_id"), []).append(place)
        ordered = list(documents)
        for paper_places in places.values():
            # sorted() is stable: within a group, the ranker's order.
            for place, document in zip(paper_places, sorted((documents[p] for p in paper_places), key=group)):
                ordered[place] = document
        return {"documents": ordered}
