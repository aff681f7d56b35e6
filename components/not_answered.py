"""The answer saying the indexed papers do not answer a question: why, and the closest papers, which are not cited.

Usage:
```python
from haystack import Document
from pmc_rag.components.not_answered import not_answered

closest = [Document(content="...", meta={"source_id": "PMID:123", "title": "Bruxism in adults", "relevance": 0.48})]
answer = not_answered("Is bruxism associated with osteonecrosis?", closest, "No paper names both.")
answer["answer"], answer["flags"]["not_answered"]  # "The indexed papers do not answer this question.", True
```
"""

from __future__ import annotations

from typing import Any

from haystack import Document

from pmc_rag.components.answer import Answer
from pmc_rag.components.references import source_link

NOT_ANSWERED = "The indexed papers do not answer this question."


def not_answered(question: str, closest: list[Document], why: str | None, model_asked: bool = False
                 ) -> dict[str, Any]:
    """The answer object (as a dict) for a question the papers do not answer: flag `not_answered`, the closest
    papers in `not_answering`, and a note saying why, whether a model was asked, and which papers came closest."""
    papers = [{"source_id": d.meta.get("source_id") or d.id, "title": d.meta.get("title"),
               "year": d.meta.get("year"), "url": source_link(d.meta), "relevance": d.meta.get("relevance")}
              for d in closest]
    return Answer(question=question, answer=NOT_ANSWERED, not_answering=papers,
                  flags={"not_answered": True, "extractive_fallback": False, "weak_support": False},
                  notes=[(why or "No indexed passage is close enough to the question to answer it.")
                         + (" Nothing is cited." if model_asked else " No model was asked, and nothing is cited.")
                         + (" The closest papers, which do not answer it: " +
                            "; ".join(f"{p['source_id']} ({p['title'] or 'untitled abstract'})" for p in papers) +
                            "." if papers else "")]).model_dump()
