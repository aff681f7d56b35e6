"""Serving in process (FastAPI test client on the hayhooks.yml app): the REST and chat endpoints, what they
refuse and why, the crisis replies, the stream, errors, configuration and health."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from typing import Any

import psycopg
import pytest
import yaml

from conftest import LOCAL_BASE_URL
from served_sample import QUESTION, chat_body, chunk_count


def test_rest_answer_retrieval_models_health_and_openapi(client):
    answer = client.post("/rag/run", json={"question": QUESTION}).json()["result"]
    assert answer["kind"] == "answer" and answer["conversation_id"].startswith("conv-")
    assert "PMC4816447" in [r["source_id"] for r in answer["references"]]
    assert {r["source_id"] for r in answer["references"]} <= {s["source_id"] for s in answer["sources"]
                                                              if s["in_prompt"]}
    chunks = client.post("/retrieve/run", json={"question": QUESTION, "top_k": 3}).json()["result"]["chunks"]
    assert len(chunks) == 3 and chunks[0]["source_id"] == "PMC4816447" and chunks[0]["score"] > 0
    filtered = client.post("/retrieve/run", json={"question": QUESTION, "filters": {"source_ids": ["PMC3166277"]}})
    assert {c["source_id"] for c in filtered.json()["result"]["chunks"]} == {"PMC3166277"}
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == ["rag"]  # retrieval is not a chat model
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["database"] == "ok" and "not reachable" in health["ollama"]
    schema = client.get("/openapi.json").json()
    assert {"/rag/run", "/retrieve/run", "/health"} <= set(schema["paths"])
    assert "/deploy-yaml" not in schema["paths"] and "/deploy_files" not in schema["paths"]
    request = schema["components"]["schemas"]["SearchFilters"]["properties"]
    assert {"year_from", "year_to", "journal", "article_type", "min_evidence_level", "source_ids",
            "collections"} == set(request)


@pytest.mark.parametrize(("body", "status", "message"), [
    ({"question": ""}, 422, "`question` is empty"),
    ({"question": "x" * 301}, 422, "the limit is 300"),
    ({"question": "why\x07?"}, 422, "control characters (U+0007)"),
    ({"question": QUESTION, "colour": "red"}, 422, "unknown field(s) ['colour']"),
    ({"question": QUESTION, "top_k": "five"}, 422, "top_k"),
    ({"question": QUESTION, "top_k": 500}, 422, "less than or equal to 50"),
    ({"question": ["a list"]}, 422, "question"),
    ({"question": QUESTION, "filters": {"journal": "x'; DROP TABLE serving_chunks; --"}}, 422, "journal title"),
    ({"question": QUESTION, "filters": {"source_ids": ["1 OR 1=1"]}}, 422, "not citation ids"),
    ({"question": QUESTION, "filters": {"year_from": "2010; DELETE"}}, 422, "year_from"),
    ({"question": QUESTION, "filters": {"bogus": 1}}, 422, "bogus"),
    ("{not json", 400, "not valid JSON"),
    ("[1, 2]", 422, "must be a JSON object"),
    ({"question": "y" * 5000}, 413, "request body over 4096 bytes"),
], ids=["empty", "too-long", "control-char", "unknown-field", "wrong-type", "top_k-range", "question-type",
        "sql-journal", "sql-ids", "sql-year", "unknown-filter", "malformed-json", "not-object", "oversized"])
def test_bad_input_gets_a_4xx_that_says_what_was_wrong_and_touches_nothing(client, pg_conn_str, body, status,
                                                                           message):
    before = chunk_count(pg_conn_str)
    response = (client.post("/rag/run", content=body, headers={"content-type": "application/json"})
                if isinstance(body, str) else client.post("/rag/run", json=body))
    assert response.status_code == status, response.text
    assert message in json.dumps(response.json()["detail"])
    assert chunk_count(pg_conn_str) == before


def test_chat_requests_are_checked_too(client):
    unknown = client.post("/v1/chat/completions", json={"model": "retrieve", "messages": [{"role": "user",
                                                                                          "content": "hi"}]})
    assert unknown.status_code == 404 and "not a chat model" in unknown.json()["detail"]
    empty = client.post("/v1/chat/completions", json={"model": "rag", "messages": []})
    assert empty.status_code == 422 and "messages" in empty.json()["detail"]


@pytest.mark.parametrize("body, message", [
    ({"model": ["rag"], "messages": [{"role": "user", "content": QUESTION}]}, "`model` must be a string"),
    (chat_body(QUESTION, conversation_id=12345), "`conversation_id` must be a string"),
    (chat_body(QUESTION, metadata="conversation 1"), "`metadata` must be an object"),
    (chat_body(QUESTION, metadata={"conversation_id": 7}), "`metadata` must be an object"),
    (chat_body(QUESTION, top_k=0), "`top_k` must be a whole number from 1 to 50"),
    (chat_body(QUESTION, top_k="5"), "`top_k` must be a whole number from 1 to 50"),
    (chat_body(QUESTION, filters="recent"), "`filters` must be an object"),
    (chat_body(QUESTION, stream="yes"), "`stream` must be true or false"),
    (chat_body(QUESTION, source_events="yes"), "`source_events` must be true or false"),
    (chat_body("first question\x00 with a NUL", QUESTION), "`messages[0]`: `question` contains control characters"),
    (chat_body("why " * 100, QUESTION), "`messages[0]`: `question` is 399 characters; the limit is 300"),
    ({"model": "rag", "messages": [{"content": QUESTION}]}, "`messages[0]` must be an object with a `role`"),
    ({"model": "rag", "messages": [{"role": "user", "content": 42}]}, "`messages[0]`.content must be a string"),
    ({"model": "rag", "messages": ["hello"]}, "`messages[0]` must be an object with a `role`"),
], ids=["model-list", "numeric-conversation", "metadata-string", "metadata-id-number", "top_k-zero", "top_k-string",
        "filters-string", "stream-string", "source-events-string", "nul-earlier", "long-earlier", "no-role", "content-number", "message-str"])
def test_chat_fields_are_checked_as_the_rest_endpoint_checks_its_own(client, body, message):
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 422, response.text
    assert message in response.json()["detail"]


def test_deeply_nested_json_is_a_400_not_a_500(client):
    nested = '{"question": "x", "filters": ' + "[" * 1500 + "]" * 1500 + "}"
    for path in ("/rag/run", "/v1/chat/completions"):
        response = client.post(path, content=nested, headers={"content-type": "application/json"})
        assert response.status_code == 400 and "nested too deeply" in response.json()["detail"]


def test_greetings_emergencies_and_personal_data(client, pg_conn_str):
    hello = client.post("/rag/run", json={"question": "Hello!"}).json()["result"]
    assert hello["kind"] == "small_talk" and not hello["references"]
    urgent = client.post("/rag/run", json={"question": "My father is having chest pain right now, what do I do?"})
    assert urgent.json()["result"]["kind"] == "emergency" and "emergency number" in urgent.json()["result"]["answer"]
    private = client.post("/rag/run", json={
        "question": "My name is Anna Berg, email anna.berg@example.org, MRN 99812345: does erlotinib help in NSCLC?"})
    result = private.json()["result"]
    assert "anna" not in result["question"].lower() and "99812345" not in result["question"]
    assert set(result["redacted"]) == {"[EMAIL]", "[RECORD]", "[NAME]"}
    with psycopg.connect(pg_conn_str) as connection:
        stored = " ".join(str(row) for row in connection.execute(
            "SELECT question, answer::text FROM pmc_rag_turns UNION ALL SELECT question, '' FROM pmc_rag_audit"))
    assert "anna.berg@example.org" not in stored and "99812345" not in stored and "[EMAIL]" in stored


@pytest.mark.parametrize("message, expected", [
    ("I want to kill myself", "988"),
    ("My son has difficulty breathing right now", "emergency number"),
    ("je veux me suicider", "3114"),
    ("Mein Kind hat Tabletten geschluckt", "112"),
])
def test_a_person_in_danger_gets_the_same_reply_from_rest_stream_and_chat(client, message, expected):
    rest = client.post("/rag/run", json={"question": message}).json()["result"]
    assert rest["kind"] == "emergency" and expected in rest["answer"] and not rest["references"]
    with client.stream("POST", "/rag/stream", json={"question": message}) as response:
        streamed = [json.loads(line) for line in response.iter_lines() if line][-1]["answer"]
    assert streamed["kind"] == "emergency" and streamed["answer"] == rest["answer"]
    chat = client.post("/v1/chat/completions", json=chat_body(message)).json()
    assert chat["choices"][0]["message"]["content"].startswith(rest["answer"])
    research = client.post("/rag/run", json={"question": "Does ketamine reduce suicidal ideation?"}).json()
    assert research["result"]["kind"] == "answer"


def _sse(response: Any) -> tuple[str, list[dict]]:
    """A streamed chat reply's text and its custom events (`data: {"event": ...}` lines) but the status lines, in
    order; status lines (while the answer is made) all come before the text, the other events after it."""
    text, events = "", []
    for line in response.iter_lines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        data = json.loads(line.removeprefix("data: "))
        if "event" in data and data["event"]["type"] == "status":
            assert not text, "Open WebUI's status lines come before the text"
        elif "event" in data:
            events.append(data["event"])
        else:
            content = data["choices"][0]["delta"].get("content") or ""
            assert not (events and content), "Open WebUI's events come after the text"
            text += content
    return text, events


def test_open_webui_gets_a_source_event_per_citation_number_and_other_clients_none(client):
    question = "Does erlotinib prolong survival in EGFR-mutant NSCLC compared with chemotherapy?"
    with client.stream("POST", "/v1/chat/completions", json=chat_body(question, stream=True),
                       headers={"X-OpenWebUI-Chat-Id": "chat-1", "X-OpenWebUI-User-Id": "u1"}) as response:
        assert response.status_code == 200
        text, events = _sse(response)
    references = dict(re.findall(r"^\[(\d+)\] (PMC\d+|PMID:\d+)", text, re.MULTILINE))
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", text.split("References:")[0])}
    assert references and cited and cited <= {int(n) for n in references}
    assert [event["type"] for event in events] == ["source"] * max(cited)
    for number, event in enumerate(events, start=1):  # Open WebUI links [n] to the n-th source of the message
        data = event["data"]
        source_id = references[str(number)]
        assert data["metadata"][0]["name"] == source_id and data["metadata"][0]["number"] == number
        assert data["source"]["url"].rstrip("/").endswith(source_id.replace("PMID:", ""))
        assert data["metadata"][0]["source"] == data["source"]["url"]  # one citation per paper
        title, evidence = data["document"][0].split("\n\n", 1)
        assert title.startswith(data["metadata"][0]["title"]) and len(evidence) > 20  # the supporting sentence
    # A follow-up, its history resent as Open WebUI does: numbers continue, and every number has its event.
    history = [{"role": "user", "content": question}, {"role": "assistant", "content": text},
               {"role": "user", "content": "What about its side effects?"}]
    with client.stream("POST", "/v1/chat/completions", json={"model": "rag", "messages": history, "stream": True},
                       headers={"X-PMC-RAG-Sources": "open-webui"}) as response:
        follow_up, follow_up_events = _sse(response)
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", follow_up.split("References:")[0])}
    assert len(follow_up_events) == max(numbers | {0})
    for number in numbers:
        assert follow_up_events[number - 1]["data"]["metadata"][0]["number"] == number
    # Without the headers (the openai client, curl), the stream is as before: no event lines at all.
    with client.stream("POST", "/v1/chat/completions", json=chat_body(question, stream=True)) as response:
        plain, plain_events = _sse(response)
    assert plain_events == [] and "References:" in plain


def test_the_stream_endpoint_sends_status_then_checked_sentences_then_the_answer_object_and_checks_its_input(
        client):
    with client.stream("POST", "/rag/stream", json={"question": QUESTION, "top_k": 5}) as response:
        assert response.status_code == 200 and response.headers["content-type"] == "application/x-ndjson"
        items = [json.loads(line) for line in response.iter_lines() if line]
    kinds = [next(iter(item)) for item in items]
    assert kinds[0] == "status" and kinds[-1] == "answer" and "sentence" in kinds
    assert kinds == sorted(kinds, key=["status", "sentence", "answer"].index)  # in that order, never mixed
    sentences, answer = [item["sentence"] for item in items if "sentence" in item], items[-1]["answer"]
    assert answer["references"] and answer["conversation_id"] and "".join(sentences) == answer["answer"]
    assert "PMC4816447" not in "".join(sentences)  # citations arrive numbered, as the answer shows them
    for body, status, message in [({"question": ""}, 422, "`question` is empty"),
                                  ({"question": QUESTION, "filters": {"year_from": "old"}}, 422, "year_from"),
                                  ({"question": QUESTION, "model": "rag"}, 422, "unknown field(s) ['model']")]:
        response = client.post("/rag/stream", json=body)
        assert response.status_code == status and message in response.json()["detail"], response.text
    assert client.post("/retrieve/stream", json={"question": QUESTION}).status_code in (404, 405)


def test_no_web_page_may_call_the_server_unless_its_origin_is_configured(serve_config, client):
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import ServeConfigError, load_serve_config

    page = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    assert "access-control-allow-origin" not in client.options("/rag/run", headers=page).headers
    assert "access-control-allow-origin" not in client.get("/health", headers={"Origin": "https://evil.example"}).headers

    config = yaml.safe_load(serve_config.read_text())
    config["server"]["cors_origins"] = ["http://localhost:3000"]
    path = serve_config.parent / "hayhooks_cors.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    with TestClient(build_app(load_serve_config(path)), base_url=LOCAL_BASE_URL) as allowed:
        ours = allowed.options("/rag/run", headers={**page, "Origin": "http://localhost:3000"})
        assert ours.headers["access-control-allow-origin"] == "http://localhost:3000"
        assert "access-control-allow-origin" not in allowed.options("/rag/run", headers=page).headers
    config["server"]["cors_origins"] = ["localhost:3000/path"]
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    with pytest.raises(ServeConfigError, match="cors_origins"):
        load_serve_config(path)


def test_an_unexpected_failure_is_a_500_with_a_request_id_and_no_internals(client, monkeypatch, caplog):
    from pmc_rag.answering import service as answer_service
    from pmc_rag.serving import endpoints

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("secret detail: /srv/internal/path password=hunter2")

    monkeypatch.setattr(answer_service, "run_answering", broken)
    monkeypatch.setattr(endpoints.RetrievalEndpoint, "run_api", broken)  # fails inside Hayhooks' own route
    with caplog.at_level("ERROR", logger="pmc_rag.serve"):
        for response in (client.post("/rag/run", json={"question": "Why would this fail?"}),
                         client.post("/retrieve/run", json={"question": "Why would this fail?"})):
            assert response.status_code == 500, response.text
            assert len(response.headers.get_list("x-request-id")) == 1  # Hayhooks' own is replaced
            request_id = response.headers["x-request-id"]
            assert response.json()["detail"].startswith(f"Internal error (request id {request_id})")
            assert "secret" not in response.text and "RuntimeError" not in response.text
            assert any(request_id in record.getMessage() for record in caplog.records)
        streamed = client.post("/v1/chat/completions", json={
            "model": "rag", "stream": True, "messages": [{"role": "user", "content": "Why would this stream fail?"}]})
    assert "Internal error (request id" in streamed.text and "secret" not in streamed.text
    assert any(r.exc_info and "secret detail" in str(r.exc_info[1]) for r in caplog.records)  # the log has it all


def test_serving_config_errors_name_the_key(tmp_path, serve_config):
    from pmc_rag.serving.config import ServeConfigError, load_serve_config

    with pytest.raises(ServeConfigError, match="needs an API key"):
        from pmc_rag.serving.app import build_app

        env = os.environ.pop("PMC_RAG_API_KEY", None)
        try:
            build_app(load_serve_config(serve_config, host="0.0.0.0"))
        finally:
            if env is not None:
                os.environ["PMC_RAG_API_KEY"] = env
    broken = yaml.safe_load(serve_config.read_text())
    broken["endpoints"][0]["pipeline"] = "pipelines/nope.yml"
    path = tmp_path / "hayhooks.yml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"endpoints\[0\].pipeline: .*nope.yml does not exist"):
        load_serve_config(path)
    broken["endpoints"][0]["parameters"] = ["colour"]
    broken["endpoints"][0]["pipeline"] = str(serve_config.parent / "rag.yml")
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"parameters: unknown \['colour'\]"):
        load_serve_config(path)
    broken["endpoints"][0]["parameters"] = []
    broken["conversations"] = {"follow_ups_from_topic_papers": "yes"}
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"conversations.follow_ups_from_topic_papers. must be true or false"):
        load_serve_config(path)
    broken["conversations"] = {"follow_ups_from_topic_papers": False}
    path.write_text(yaml.safe_dump(broken))
    assert load_serve_config(path).follow_ups_from_topic_papers is False
    broken["endpoints"][0].update(mcp_tool="search the literature", description="Searches.")
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"endpoints\[0\].mcp_tool 'search the literature': a tool name"):
        load_serve_config(path)
    broken["endpoints"][0].update(mcp_tool="search_literature", description="")
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"an MCP tool needs a `description`"):
        load_serve_config(path)
    broken["endpoints"][1].update(mcp_tool="search_literature", description="Also searches.")
    broken["endpoints"][0]["description"] = "Searches."
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"`mcp_tool` names must be unique"):
        load_serve_config(path)
    # Read by pydantic models, strictly: a typo or a number written as text names the key, never passes silently.
    broken["endpoints"][1]["mcp_tool"] = "search_more"
    broken["server"] = {"port": "1416"}
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"`server.port` must be a non-negative number, not '1416'"):
        load_serve_config(path)
    broken["server"] = {"port": 1416, "max_body_byte": 100}
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"`server.max_body_byte`: unknown key; choose from .*'max_body_bytes'"):
        load_serve_config(path)
    broken["server"] = {"port": 1416}
    broken["endpoints"][0]["chat"] = "yes"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(ServeConfigError, match=r"`endpoints\[0\].chat` must be true or false"):
        load_serve_config(path)


@pytest.mark.integration  # waits on health checks' time limits against a server that never answers
def test_health_needs_the_key_and_never_holds_up_other_requests(serve_config, monkeypatch):
    """With Ollama hung (it accepts connections and never answers), /health calls take their time in worker
    threads; a retrieval sent after them is not held up behind them. With a key set, /health needs it too."""
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(64)  # connections complete in the kernel's backlog; nothing ever answers
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{hung.getsockname()[1]}")
    monkeypatch.setenv("PMC_RAG_API_KEY", "health-key")
    key = {"Authorization": "Bearer health-key"}
    try:
        with TestClient(build_app(load_serve_config(serve_config)), base_url=LOCAL_BASE_URL) as client:
            refused = client.get("/health")
            assert refused.status_code == 401 and "API key" in refused.json()["detail"]
            finished: list[str] = []

            def check_health() -> None:
                assert client.get("/health", headers=key).status_code == 200
                finished.append("health")

            checks = [threading.Thread(target=check_health) for _ in range(5)]
            for thread in checks:
                thread.start()
            time.sleep(0.3)  # the health checks are under way (waiting on Ollama) before retrieval is asked
            retrieval = client.post("/retrieve/run", json={"question": QUESTION}, headers=key)
            finished.append("retrieve")
            for thread in checks:
                thread.join(timeout=60)
            assert retrieval.status_code == 200 and finished[0] == "retrieve", finished
            assert "not reachable" in client.get("/health", headers=key).json()["ollama"]
    finally:
        hung.close()
