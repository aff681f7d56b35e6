"""The web fallback: offline by default; set in the YAML, a web search is asked only when the papers do not answer,
and what it finds is labelled and listed apart from the papers."""

from __future__ import annotations

import pytest

from pmc_rag.answering.pipeline_run import answer_question
from pmc_rag.components.answer import Answer
from pmc_rag.pipelines import load_declared_pipeline

from conftest import passage, pipeline_file_for


def test_the_web_fallback_is_offline_by_default_labels_what_a_web_search_finds_and_survives_its_failure(
        monkeypatch):
    from fake_web_search import FakeWebSearch
    from haystack.core.errors import DeserializationError

    from pmc_rag.components.web_fallback import WebFallback

    closest = [passage("a", "PMC1", "A wrist fracture trial.")]
    assert WebFallback().run(question="q", unanswered=closest) == {"web_results": [], "web_note": ""}
    search = FakeWebSearch(pages=5)
    found = WebFallback(web_search=search, top_k=3, confidence=0.2).run(question="vitamin C in sepsis",
                                                                        unanswered=closest)
    assert search.calls == ["vitamin C in sepsis"] and len(found["web_results"]) == 3
    assert all(d.meta["source_kind"] == "web" and d.meta["confidence"] == 0.2 and d.meta["url"].startswith("https://")
               for d in found["web_results"])
    assert "not indexed literature" in found["web_note"]
    failed = WebFallback(web_search=FakeWebSearch(fail=True)).run(question="q", unanswered=closest)
    assert failed["web_results"] == [] and "told to fail" in failed["web_note"]
    with pytest.raises(ValueError, match="confidence"):
        WebFallback(confidence=2)
    data = WebFallback(web_search=FakeWebSearch(pages=1), top_k=2).to_dict()
    with pytest.raises(DeserializationError, match="fake_web_search"):  # a YAML names only trusted modules
        WebFallback.from_dict(data)
    allowed = __import__("os").environ.get("HAYSTACK_DESERIALIZATION_ALLOWLIST", "")
    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", f"{allowed},fake_web_search".strip(","))
    assert WebFallback.from_dict(data).to_dict() == data and WebFallback.from_dict(
        WebFallback().to_dict()).web_search is None


def test_a_web_search_set_in_the_yaml_is_asked_only_when_the_papers_do_not_answer_and_is_listed_apart(
        pmc_sample_table, tmp_path, monkeypatch):
    import yaml

    allowed = __import__("os").environ.get("HAYSTACK_DESERIALIZATION_ALLOWLIST", "")
    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", f"{allowed},fake_web_search".strip(","))
    path = pipeline_file_for("rag", pmc_sample_table, tmp_path)
    config = yaml.safe_load(path.read_text())
    config["components"]["web_fallback"]["init_parameters"]["web_search"] = {
        "type": "fake_web_search.FakeWebSearch", "init_parameters": {"pages": 2}}
    path.write_text(yaml.safe_dump(config))
    pipeline = load_declared_pipeline(path)
    pipeline.warm_up()
    search = pipeline.pipeline.get_component("web_fallback").web_search

    unanswered = answer_question(pipeline, "Does high-dose vitamin C improve survival in sepsis?").model_dump()
    assert unanswered["flags"]["not_answered"] and unanswered["flags"]["web_results"]
    assert search.calls == ["Does high-dose vitamin C improve survival in sepsis?"]
    assert unanswered["references"] == [] and "[" not in unanswered["answer"]  # nothing cited
    assert [w["url"] for w in unanswered["web_sources"]] == ["https://example.org/1", "https://example.org/2"]
    assert all(w["confidence"] == 0.3 for w in unanswered["web_sources"])
    text = Answer.model_validate(unanswered).as_text()
    assert "Web results (not indexed literature, not cited, not checked; lower confidence):" in text
    answered = answer_question(pipeline,
                               "Is first-line erlotinib effective in advanced NSCLC with EGFR mutations?").model_dump()
    assert not answered["flags"].get("not_answered") and answered.get("web_sources", []) == []
    assert len(search.calls) == 1  # the papers answered: no web search
