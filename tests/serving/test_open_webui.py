"""Open WebUI's source events, built from an answer (no server: see tests/serving/test_serving.py for the stream)."""

from __future__ import annotations

from starlette.datastructures import Headers

from pmc_rag.components.answer import Answer, Reference
from pmc_rag.serving.open_webui import source_events, wants_source_events


def test_every_number_up_to_the_highest_has_its_event_in_order_earlier_papers_included():
    answer = Answer(question="q", answer="Rash is common [3]; so is diarrhoea [4].", references=[
        Reference(number=4, source_id="PMID:10808977", title="Tailored mammography", year=2000,
                  url="https://pubmed.ncbi.nlm.nih.gov/10808977/", evidence="Diarrhoea occurred in 20%."),
        Reference(number=3, source_id="PMC4816447", title="Erlotinib in NSCLC", journal="Lancet Oncol",
                  url="https://pmc.ncbi.nlm.nih.gov/articles/PMC4816447/", evidence="Rash occurred in 60%.")])
    events = [event.to_event_dict() for event in source_events(answer, {"PMC111": 1, "PMID:222": 2})]
    assert [event["type"] for event in events] == ["source"] * 4
    data = [event["data"] for event in events]
    assert [d["metadata"][0]["number"] for d in data] == [1, 2, 3, 4]
    assert [d["metadata"][0]["source"] for d in data] == [
        "https://pmc.ncbi.nlm.nih.gov/articles/PMC111/", "https://pubmed.ncbi.nlm.nih.gov/222/",
        "https://pmc.ncbi.nlm.nih.gov/articles/PMC4816447/", "https://pubmed.ncbi.nlm.nih.gov/10808977/"]
    assert data[2]["metadata"][0]["name"] == "PMC4816447" and data[2]["metadata"][0]["external"]
    assert data[2]["metadata"][0]["title"] == "Erlotinib in NSCLC"
    assert data[2]["document"] == ["Erlotinib in NSCLC · Lancet Oncol\n\nRash occurred in 60%."]
    assert "earlier answer" in data[0]["document"][0]
    assert source_events(Answer(question="q", answer="Hello!", kind="small_talk"), {}) == []


def test_only_open_webui_or_a_client_that_asks_gets_the_events():
    assert wants_source_events(Headers({"X-OpenWebUI-User-Id": "u1"}), {})
    assert wants_source_events(Headers({"X-PMC-RAG-Sources": "open-webui"}), {})
    assert wants_source_events(None, {"source_events": True})
    assert not wants_source_events(Headers({"User-Agent": "OpenAI/Python 1.40"}), {})
    assert not wants_source_events(None, {"stream": True})
