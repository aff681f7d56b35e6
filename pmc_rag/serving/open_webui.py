"""Open WebUI's `source` events for a cited answer, so that Open WebUI shows each `[n]` as a clickable citation.

Open WebUI reads a streamed chat reply's `data: {"event": {...}}` lines as UI events, and numbers the `source`
events of a message 1, 2, 3 in the order they arrive: the text's `[n]` links to the n-th. So one event goes out
per citation number, in number order, from 1 to the highest number in the reply, with the paper's title, its PMC or
PubMed link and the sentence that supports the claims citing it. Numbers belong to the conversation, so a
follow-up may cite [3] without [1] and [2]; those earlier papers get an event too (id and link), or [3] would
link to the wrong paper.

Other clients (the `openai` package, curl) would read such a line as a chunk without `choices`, which breaks the
usual `chunk.choices[0]` loop, so the events go only to Open WebUI: recognised by the headers it sends, or asked
for explicitly (see `wants_source_events`).

Usage:
```python
if wants_source_events(headers, body):
    for event in source_events(answer, numbers):
        yield event           # Hayhooks writes it as Open WebUI's event line
```
"""

from __future__ import annotations

from typing import Any

from hayhooks.open_webui import OpenWebUIEvent, create_source_event

from pmc_rag.components.answer import Answer, Reference
from pmc_rag.components.references import source_link

# Open WebUI names itself in these headers (the user's name and id, the chat's id) when its
# ENABLE_FORWARD_USER_INFO_HEADERS setting is on; any client can ask with the header below instead.
_OPEN_WEBUI_HEADER_PREFIX = "x-openwebui-"
ASK_HEADER = "x-pmc-rag-sources"  # "open-webui": send source events


def wants_source_events(headers: Any, body: dict[str, Any]) -> bool:
    """Whether the chat client is Open WebUI (or asked for its events): `X-PMC-RAG-Sources: open-webui`, any
    `X-OpenWebUI-*` header, or `"source_events": true` in the request body."""
    if body.get("source_events") is True:
        return True
    if headers is None:
        return False
    names = {name.lower() for name in headers.keys()}
    if str(headers.get(ASK_HEADER, "")).strip().lower() == "open-webui":
        return True
    return any(name.startswith(_OPEN_WEBUI_HEADER_PREFIX) for name in names)


def source_events(answer: Answer, numbers: dict[str, int]) -> list[OpenWebUIEvent]:
    """One `source` event per citation number from 1 to the highest the answer uses, in number order.

    :param answer: The checked answer, numbered in the conversation's numbers.
    :param numbers: The conversation's numbers (paper id -> number), for papers cited in earlier turns.
    """
    references = {reference.number: reference for reference in answer.references}
    if not references:
        return []
    earlier = {number: source_id for source_id, number in numbers.items()}
    events = []
    for number in range(1, max(references) + 1):
        reference = references.get(number) or Reference(
            number=number, source_id=earlier.get(number, f"[{number}]"), url=_link_of(earlier.get(number, "")),
            evidence="Cited in an earlier answer of this conversation.")
        events.append(create_source_event(_source(reference)))
    return events


def _source(reference: Reference) -> dict[str, Any]:
    # Open WebUI groups a message's sources by `metadata.source` (here the paper's link: one citation per paper),
    # shows `metadata.name` on the chip in the text and as the heading of the citation's window, links that heading
    # to `source.url`, and with `external` keeps the name rather than showing the bare link. The chip shows the
    # paper's id, as our citations always have; the window adds title, journal, year and the supporting sentence.
    origin = None if reference.origin == "corpus" else reference.origin
    details = " · ".join(str(part) for part in (reference.title, reference.journal, reference.year,
                                               reference.locator(), origin) if part)
    return {
        "source": {"id": reference.source_id, "name": reference.source_id, "url": reference.url},
        "document": [f"{details or reference.source_id}\n\n{reference.evidence or ''}".strip()],
        "metadata": [{"source": reference.url or reference.source_id, "name": reference.source_id, "external": True,
                      "url": reference.url, "title": reference.title, "number": reference.number,
                      "section": reference.section,
                      # Open WebUI shows "page n+1" for a 0-based `page`
                      **({"page": reference.page - 1} if reference.page is not None else {})}],
    }


def _link_of(source_id: str) -> str | None:
    if source_id.startswith("PMC"):
        return source_link({"pmcid": source_id})
    if source_id.startswith("PMID:"):
        return source_link({"pmid": source_id.removeprefix("PMID:")})
    if source_id.startswith("doi:"):
        return source_link({"doi": source_id.removeprefix("doi:")})
    return None
