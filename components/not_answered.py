"""The answer saying the indexed papers do not answer a question: why, the closest papers, and, where they speak of
the question's subjects, their findings quoted and labelled as related.

Usage:
```python
from haystack import Document
from pmc_rag.components.not_answered import not_answered

closest = [Document(content="...", meta={"source_id": "PMID:123", "title": "Bruxism in adults", "relevance": 0.48})]
answer = not_answered("Is bruxism associated with osteonecrosis?", closest, "No paper names both.")
answer.answer, answer.flags["not_answered"]  # "The indexed papers do not answer this question.", True
```
"""

from __future__ import annotations

from haystack import Document

from pmc_rag.components.answer import Answer
from pmc_rag.components.claim import Claim
from pmc_rag.components.references import numbered, reference, source_link

NOT_ANSWERED = "The indexed papers do not answer this question."
RELATED = "The closest findings, which may not answer it:"


def not_answered(question: str, closest: list[Document], why: str | None, model_asked: bool = False,
                 related: list[Claim] | None = None, by_id: dict[str, list[Document]] | None = None
                 ) -> Answer:
    """The answer object for a question the papers do not answer: flag `not_answered`, the closest
    papers in `not_answering`, and notes saying why (first), whether a model was asked, and which papers came
    closest.

    With `related` (claims quoted from the closest papers' excerpts, `by_id`: each paper's excerpts by citation
    id), their findings follow the reply, cited, under "The closest findings, which may not answer it:", and the
    flag `related_findings` is set: the papers speak of the question's subjects, though none was judged to answer
    it."""
    papers = [{"source_id": d.meta.get("source_id") or d.id, "title": d.meta.get("title"),
               "year": d.meta.get("year"), "url": source_link(d.meta), "relevance": d.meta.get("relevance")}
              for d in closest]
    sentences, citations, numbers = numbered(related, by_id or {}) if related else ([], [], {})
    listed = "; ".join(f"{p['source_id']} ({p['title'] or 'untitled abstract'})" for p in papers)
    # One note each, the reason first: the reader sees it as the answer's one line of caveat; whether a model was
    # asked and which papers came closest (listed under the answer too) go to --explain, the JSON and the details.
    notes = [why or "No indexed passage is close enough to the question to answer it.",
             "No model was asked: the findings shown are the closest papers' own sentences, quoted, which speak of "
             "the question's subjects but may not answer it." if sentences else
             "Nothing is cited." if model_asked else "No model was asked, and nothing is cited."]
    if papers:
        notes.append(f"The closest papers{'' if sentences else ', which do not answer it'}: {listed}.")
    return Answer(question=question, answer=" ".join([NOT_ANSWERED, RELATED, *sentences]) if sentences
                  else NOT_ANSWERED, not_answering=papers, citations=citations,
                  references=[reference(number, source_id, by_id[source_id][0], citations, by_id[source_id])
                              for source_id, number in numbers.items()] if by_id else [],
                  flags={"not_answered": True, "extractive_fallback": False, "weak_support": False,
                         **({"related_findings": True} if sentences else {})},
                  notes=notes)
