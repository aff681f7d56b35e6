"""Asks a web search you configure when the indexed papers do not answer a question: offline (no search) by default."""

from __future__ import annotations

import logging
from typing import Any

from haystack import Document, component, default_to_dict
from haystack.core.serialization import component_from_dict, component_to_dict, import_class_by_name

from pmc_rag.components.follow_up_query import follow_up_query

logger = logging.getLogger(__name__)


@component
class WebFallback:
    """
    When the relevance gate finds no indexed passage close enough to answer (its `unanswered` output), asks
    `web_search` and passes on what it found, labelled as web results with a lower confidence than the
    literature. The answer lists them apart, under their own heading; they are never cited, never shown to the
    model and never mixed with the papers' references.

    `web_search` is any Haystack component with `run(query) -> {"documents": [...]}`: Haystack's
    `SerperDevWebSearch` or `SearchApiWebSearch` (each needs an API key from the environment and the internet).
    None (the default) searches nothing: pmc-rag stays offline.

    Usage:
    ```python
    from haystack.components.websearch import SerperDevWebSearch
    from pmc_rag.components.web_fallback import WebFallback

    fallback = WebFallback(web_search=SerperDevWebSearch(top_k=3))
    fallback.run(question="Does high-dose vitamin C improve survival in sepsis?", unanswered=closest_papers)
    # {"web_results": [Document(meta={"source_kind": "web", "url": ..., "title": ..., "confidence": 0.3})],
    #  "web_note": "..."}
    ```
    """

    def __init__(self, *, web_search: Any | None = None, top_k: int = 3, confidence: float = 0.3):
        """
        :param web_search: The web search component; None: no web search (offline).
        :param top_k: The most web results passed on.
        :param confidence: The confidence given to every web result (0-1), shown with it: a web page is not a
            peer-reviewed paper, and nothing checks it against the question.
        """
        if not 0 <= confidence <= 1 or top_k < 1:
            raise ValueError(f"WebFallback needs 0 <= confidence <= 1 and top_k >= 1 (got confidence={confidence}, "
                             f"top_k={top_k})")
        if web_search is not None and not callable(getattr(web_search, "run", None)):
            raise ValueError(f"web_search must be a Haystack component with run(query), not {type(web_search).__name__}")
        self.web_search = web_search
        self.top_k = top_k
        self.confidence = confidence

    def to_dict(self) -> dict[str, Any]:
        search = component_to_dict(self.web_search, "web_search") if self.web_search is not None else None
        return default_to_dict(self, web_search=search, top_k=self.top_k, confidence=self.confidence)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WebFallback:
        parameters = dict(data["init_parameters"])
        search = parameters.get("web_search")
        if search is not None:
            parameters["web_search"] = component_from_dict(import_class_by_name(search["type"]), search, "web_search")
        return cls(**parameters)

    def warm_up(self) -> None:
        if hasattr(self.web_search, "warm_up"):
            self.web_search.warm_up()

    @component.output_types(web_results=list[Document], web_note=str)
    def run(self, question: str, unanswered: list[Document], follow_up_to: str | None = None) -> dict[str, Any]:
        """
        :param question: The user's question, searched as it is.
        :param follow_up_to: In a conversation, the question this one follows up: searched along with it.
        :param unanswered: From `RelevanceGate`: the closest papers, which do not answer the question. This
            component runs only when the gate sends them.
        :returns: `web_results`: web pages, each with `meta` `source_kind` "web", `url`, `title` and
            `confidence`; `web_note`: what was searched and how to read the results (empty when offline).
        """
        if self.web_search is None:
            return {"web_results": [], "web_note": ""}
        name = type(self.web_search).__name__
        try:
            found = self.web_search.run(query=follow_up_query(question, follow_up_to)).get("documents") or []
        except Exception as error:  # a web search that fails leaves the literature's answer as it is
            logger.warning("web search %s failed: %s", name, error)
            return {"web_results": [], "web_note": f"The web search ({name}) failed: {error}."}
        results = [Document(id=f"web:{index}", content=document.content or "",
                            meta={"source_kind": "web", "title": document.meta.get("title"),
                                  "url": document.meta.get("link") or document.meta.get("url"),
                                  "confidence": self.confidence})
                   for index, document in enumerate(found[: self.top_k])]
        note = (f"Web search ({name}): {len(results)} result(s), listed apart under \"Web results\". They are not "
                f"indexed literature and are not cited or checked against the question: confidence "
                f"{self.confidence:.1f}, lower than the papers'.") if results else \
            f"The web search ({name}) found nothing either."
        return {"web_results": results, "web_note": note}
