"""A FAKE web search (no internet here): it stands in for Haystack's `SerperDevWebSearch` in `WebFallback`'s slot,
with the same interface (`run(query) -> documents, links`, each document's `meta` with `title` and `link`)."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict


@component
class FakeWebSearch:
    """Returns `pages` fixed pages for any query, and remembers the queries (`calls`); `fail` raises instead."""

    def __init__(self, pages: int = 2, fail: bool = False):
        self.pages = pages
        self.fail = fail
        self.calls: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, pages=self.pages, fail=self.fail)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FakeWebSearch:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], links=list[str])
    def run(self, query: str) -> dict[str, Any]:
        self.calls.append(query)
        if self.fail:
            raise ConnectionError("the fake web search was told to fail")
        documents = [Document(content=f"<b>Page {n}</b> about: {query}",
                              meta={"title": f"<script>alert({n})</script>Page {n}", "link": f"https://example.org/{n}"})
                     for n in range(1, self.pages + 1)]
        return {"documents": documents, "links": [d.meta["link"] for d in documents]}
