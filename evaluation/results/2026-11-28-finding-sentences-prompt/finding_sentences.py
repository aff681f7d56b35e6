"""Each paper's excerpts, for the model to read, cut down to the sentences that state its findings on the question."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.citations import by_paper, content_words
from pmc_rag.components.claim_signals import finding_rank
from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.components.section_kinds import CONCLUSION_SECTION, is_readable_evidence


@component
class FindingSentences:
    """
    Gives the model, of each paper, one excerpt holding only the sentences that state a finding (a conclusion or
    result, never an aim, a caption, a method or background), those sharing most of the question's words first,
    at most `max_sentences`, in the paper's own order. A paper none of whose sentences states a finding keeps its
    excerpts as they were.

    A 0.5B model restates the question or copies the sentence nearest to it, which is most often the aim or a
    method; the quotation step picks the finding instead. Here the model is given the sentences the quotation
    step would choose from, so that what it writes in its own words is a finding. The citation and claim checks
    keep the whole excerpts: connect this only to the prompt builder.

    Usage:
    ```python
    from haystack import Document
    from pmc_rag.components.finding_sentences import FindingSentences

    aim = Document(content="To examine whether X lowers Y.", meta={"source_id": "PMC1", "section": "Abstract"})
    result = Document(content="X lowered Y by 12% in 200 adults.", meta={"source_id": "PMC1", "section": "Results"})
    FindingSentences().run(question="Does X lower Y?", documents=[aim, result])["documents"][0].content
    # "X lowered Y by 12% in 200 adults."
    ```
    """

    def __init__(self, *, max_sentences: int = 3, min_words: int = 6, routes: list[str] | None = None,
                 source_id_field: str = "source_id"):
        """
        :param max_sentences: The most sentences kept of each paper.
        :param min_words: Shorter sentences (headings, table rows) are not kept.
        :param routes: The router's routes whose excerpts are cut down (default: `single`, a plain question); any
            other route's pass unchanged (a summary reads the paper's methods too). Without a route, all are cut.
        :param source_id_field: The metadata field holding a document's citation id.
        """
        if max_sentences < 1 or min_words < 1:
            raise ValueError("max_sentences and min_words must be at least 1")
        self.max_sentences = max_sentences
        self.min_words = min_words
        self.routes = list(routes) if routes is not None else ["single"]
        self.source_id_field = source_id_field

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, max_sentences=self.max_sentences, min_words=self.min_words,
                               routes=self.routes, source_id_field=self.source_id_field)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FindingSentences:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, question: str, documents: list[Document], route: str | None = None) -> dict[str, list[Document]]:
        """
        :param question: The question the excerpts were found for.
        :param documents: The excerpts, best first.
        :param route: The router's route, if any.
        :returns: `documents`: one excerpt per paper with findings (in the papers' first places), the excerpts of
            papers without as they were.
        """
        if route is not None and route not in self.routes:
            return {"documents": documents}
        asked = content_words(question)
        shown: list[Document] = []
        for chunks in by_paper(documents, self.source_id_field).values():
            findings = [(place, sentence, chunk) for chunk in filter(is_readable_evidence, chunks)
                        for place, sentence in enumerate(split_sentences(" ".join((chunk.content or "").split())))
                        if len(sentence.split()) >= self.min_words and finding_rank(sentence, chunk.meta.get("section"))]
            findings = [f for f in findings if finding_rank(f[1], f[2].meta.get("section")) == 2] or findings
            if not findings:
                shown.extend(chunks)
                continue
            best = sorted(findings, key=lambda f: (-len(asked & content_words(f[1])),
                                                   not CONCLUSION_SECTION.search(str(f[2].meta.get("section") or ""))))
            kept = {id(f) for f in best[: self.max_sentences]}
            order = {id(chunk): n for n, chunk in enumerate(chunks)}
            kept_in_order = sorted((f for f in findings if id(f) in kept), key=lambda f: (order[id(f[2])], f[0]))
            first = kept_in_order[0][2]
            shown.append(Document(id=first.id, content=" ".join(f[1] for f in kept_in_order),
                                  meta={**first.meta, "section": "Findings"}))
        return {"documents": shown}
