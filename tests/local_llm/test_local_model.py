"""The local model server: the embedded model in a process of its own, supervised; a crash, a hang or a failed
start costs one flagged answer, never the server. Real model, real HTTP, real signals."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pmc_rag.local_llm.spec import API_KEY_ENV, LocalModelSpec, api_key
from pmc_rag.local_llm.supervisor import LocalModelServer, local_model_server, started_servers

from conftest import (LOCAL_BASE_URL, PROJECT_ROOT, SAMPLE_TABLE, TEST_LLM_URL, free_port, pipeline_file_for,
                      rag_llm_spec)

pytestmark = pytest.mark.integration  # the real model's server: starts, crashes, hangs, restarts

QUESTION = "Is first-line erlotinib effective in advanced non-small cell lung cancer with EGFR mutations?"
TABLE = SAMPLE_TABLE  # read only
MODEL = "qwen2.5-0.5b-instruct"


@pytest.fixture(scope="module")
def folder(tmp_path_factory, pmc_sample_table):
    return tmp_path_factory.mktemp("local_model")


def rag_variant(folder: Path, name: str, change: Any = None) -> Path:
    """rag.yml on the test table, with `change(spec)` applied; Ollama is pointed at a closed port."""
    spec = yaml.safe_load(pipeline_file_for("rag", TABLE, folder, real_model=True, model_always=True).read_text())
    spec["components"]["generator"]["init_parameters"]["chat_generators"][0]["init_parameters"]["url"] = \
        "http://127.0.0.1:9"
    if change:
        change(spec)
    path = folder / f"{name}.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def local_generator(spec: dict) -> dict:
    return spec["components"]["generator"]["init_parameters"]["chat_generators"][1]["init_parameters"]


@pytest.fixture(scope="module")
def client(folder):
    """The served app (in process) with a normal endpoint and one whose model may take only 4 s."""
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    def impatient(spec: dict) -> None:
        local_generator(spec)["timeout"] = 4

    config = {"server": {"host": "127.0.0.1", "port": 1416}, "cache": {"max_entries": 0}, "endpoints": [
        {"name": "rag", "pipeline": str(rag_variant(folder, "rag_served")), "kind": "answer", "rest": True,
         "chat": True},
        {"name": "impatient", "pipeline": str(rag_variant(folder, "impatient", impatient)), "kind": "answer"},
        {"name": "retrieve", "pipeline": str(pipeline_file_for("retrieve_hybrid", TABLE, folder, real_model=True)),
         "kind": "retrieval"}]}
    path = folder / "hayhooks.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    the_server().stop()  # one started by another test's `pmc-rag` process: this app starts (and owns) its own
    with TestClient(build_app(load_serve_config(path)), base_url=LOCAL_BASE_URL) as test_client:
        yield test_client


def the_server() -> LocalModelServer:
    return local_model_server(rag_llm_spec())


def pid_once_generating(server: LocalModelServer, busy_for: float = 0.3, within: float = 60) -> int:
    """The model server's pid, once it has been generating for `busy_for` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        report = server.health(timeout=1)
        if report and report.get("busy_s") is not None and report["busy_s"] >= busy_for:
            return report["pid"]
        time.sleep(0.05)
    raise AssertionError("the model server never started generating")


def wait_for_restart(server: LocalModelServer, old_pid: int, within: float = 90) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        report = server.health(timeout=1)
        if report and report["pid"] != old_pid:
            return report["pid"]
        time.sleep(0.2)
    raise AssertionError(f"the model server was not restarted within {within} s; log: {server.log_tail()[-5:]}")


def streamed_text(lines: Any) -> list[str]:
    """The content pieces of an OpenAI chat stream (server-sent events)."""
    pieces = []
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            for choice in json.loads(line[6:]).get("choices") or []:
                pieces.append((choice.get("delta") or {}).get("content") or "")
    return pieces


def in_background(call: Any) -> tuple[threading.Thread, dict]:
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(value=call()), daemon=True)
    thread.start()
    return thread, result


def test_the_model_server_speaks_the_openai_chat_api_in_its_own_process():
    from openai import AuthenticationError, OpenAI

    server = the_server()
    report = server.ensure_running()
    assert report["pid"] != os.getpid() and report["extra_buffer_types"] is False
    assert report["model"] == MODEL and report["system_info"].startswith("CPU :")
    assert report["n_threads"] == max(1, os.cpu_count() // 2)  # generation: half the CPUs (see load_llama)
    weights = rag_llm_spec().weights
    assert weights != "packaged" and report["weights_asked"] == report["weights"] == weights  # as rag.yml asks
    assert report["model_path"].endswith(f".as-{weights}.gguf")   # re-encoded once, then served
    client = OpenAI(base_url=TEST_LLM_URL, api_key=os.environ[API_KEY_ENV], max_retries=0)
    messages = [{"role": "system", "content": "Answer in one sentence."}, {"role": "user", "content": "What is aspirin?"}]
    reply = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=30, temperature=0)
    text = reply.choices[0].message.content
    assert text and reply.model == MODEL and 0 < reply.usage.completion_tokens <= 30
    assert 15 < reply.usage.prompt_tokens < 60

    chunks = list(client.chat.completions.create(model=MODEL, messages=messages, max_tokens=30, temperature=0,
                                                 stream=True))
    streamed = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(streamed) > 3  # token by token
    usage = chunks[-1].usage  # usage ends the stream
    assert usage.completion_tokens == len(streamed) and usage.prompt_tokens == reply.usage.prompt_tokens

    with pytest.raises(AuthenticationError):
        OpenAI(base_url=TEST_LLM_URL, api_key="wrong", max_retries=0).models.list()
    assert server.status()["state"] == "running"


def test_a_prompt_read_before_is_restored_from_the_prompt_cache_not_read_again():
    """A prompt that another came between is still kept: asked again, its state is restored (a cache hit) and
    the reply is the same. Without the cache llama.cpp keeps only the last prompt, and would read it again.
    The same request a third time is answered from the reply memo: nothing is computed."""
    import httpx
    from openai import OpenAI

    server = the_server()
    server.ensure_running()
    headers = {"Authorization": f"Bearer {os.environ[API_KEY_ENV]}"}

    def health() -> dict:
        return httpx.get(f"{TEST_LLM_URL.removesuffix('/v1')}/health", headers=headers, timeout=30).json()

    def reply(topic: str, seed: int = 1) -> tuple[str, int, int]:
        """The reply, its prompt's tokens and the tokens the model computed for it (from /health). Another seed
        is the same prompt in another request: temperature 0 ignores the seed, the reply memo does not."""
        computed = health()["tokens_computed"]
        messages = [{"role": "user", "content": f"In one sentence, what is {topic}? " + "Answer plainly. " * 40}]
        completion = OpenAI(base_url=TEST_LLM_URL, api_key=os.environ[API_KEY_ENV], max_retries=0
                            ).chat.completions.create(model=MODEL, messages=messages, max_tokens=12, temperature=0,
                                                      seed=seed)
        return (completion.choices[0].message.content, completion.usage.prompt_tokens,
                health()["tokens_computed"] - computed)

    before = health()["prompt_cache"]
    assert before["capacity_bytes"] == rag_llm_spec().prompt_cache_mb << 20
    first, prompt_tokens, computed_first = reply("the prompt cache of test_local_model")
    reply("a different question in between")
    hits = health()["prompt_cache"]["hits"]
    again, _, computed_again = reply("the prompt cache of test_local_model", seed=2)
    assert again == first
    after = health()["prompt_cache"]
    assert after["hits"] == hits + 1 and 0 < after["bytes"] <= after["capacity_bytes"]
    # Read in full the first time (the system prompt aside, which the question in between shares); asked again,
    # only its last token is read again, then one per token written.
    assert computed_first > prompt_tokens // 2 and computed_again <= 12 + 2, (prompt_tokens, computed_first,
                                                                             computed_again)
    memo = health()["reply_memo"]
    third, _, computed_third = reply("the prompt cache of test_local_model", seed=2)
    assert third == again and computed_third == 0 and health()["reply_memo"]["hits"] == memo["hits"] + 1


def test_kill_9_mid_answer_is_one_flagged_answer_and_the_next_comes_from_the_restarted_model(client):
    server = the_server()
    thread, result = in_background(lambda: client.post("/rag/run", json={"question": QUESTION}))
    pid = pid_once_generating(server)
    os.kill(pid, signal.SIGKILL)
    retrieval = client.post("/retrieve/run", json={"question": QUESTION})  # served meanwhile
    assert retrieval.status_code == 200 and retrieval.json()["result"]["chunks"]
    thread.join(timeout=120)
    response = result["value"]
    assert response.status_code == 200, response.text
    answer = response.json()["result"]
    assert answer["model"] is None and answer["flags"]["extractive_fallback"] and answer["flags"]["local_model_failed"]
    assert answer["failed_generators"] == ["OllamaChatGenerator", "OpenAIChatGenerator"]
    assert "stopped while answering: killed by SIGKILL" in " ".join(answer["notes"])
    assert answer["references"][0]["source_id"] == "PMC4816447" and "[1]" in answer["answer"]

    new_pid = wait_for_restart(server, pid)
    assert server.status()["restarts"] >= 1 and "SIGKILL" in server.status()["last_exit"]
    again = client.post("/rag/run", json={"question": "Does erlotinib delay progression in EGFR-mutant NSCLC?"})
    assert again.json()["result"]["model"] == MODEL  # answered by the restarted model
    assert server.health()["pid"] == new_pid


def test_kill_9_mid_stream_ends_the_stream_with_quoted_passages_and_references(client):
    server = the_server()
    body = {"model": "rag", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
    killed: dict = {}

    def kill_when_generating() -> None:
        killed["pid"] = pid_once_generating(server, busy_for=0.5)
        os.kill(killed["pid"], signal.SIGKILL)

    killer = threading.Thread(target=kill_when_generating, daemon=True)
    killer.start()
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        text = "".join(streamed_text(response.iter_lines()))
    killer.join(timeout=60)
    assert killed.get("pid")
    assert "could not be checked against the sources" in text or "No model answer was available" in text
    assert "killed by SIGKILL" in text and "References:" in text and "PMC4816447" in text
    wait_for_restart(server, killed["pid"])
    for _ in range(50):  # /health shows the watcher's last check, made every 2 s
        state = client.get("/health").json()["local_models"][TEST_LLM_URL]["state"]
        if state == "running":
            break
        time.sleep(0.2)
    assert state == "running"


def test_a_hung_model_costs_its_timeout_then_it_is_killed_and_restarted(client):
    server = the_server()
    server.ensure_running()
    thread, result = in_background(lambda: client.post("/impatient/run", json={"question": QUESTION}))
    pid = pid_once_generating(server, busy_for=0.2)
    os.kill(pid, signal.SIGSTOP)  # alive, but never answers again
    try:
        health = client.get("/health")  # does not wait on the hung model (the watcher's last check is shown)
        assert health.status_code == 200
        thread.join(timeout=60)
        answer = result["value"].json()["result"]
        assert answer["flags"]["extractive_fallback"] and answer["flags"]["local_model_failed"]
        assert "stopped answering" in " ".join(answer["notes"])
        new_pid = wait_for_restart(server, pid)  # the watcher killed it after 3 unanswered checks
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert "hung" in server.status()["last_exit"] and new_pid != pid
    again = client.post("/rag/run", json={"question": "Is erlotinib first-line therapy for EGFR-mutant NSCLC?"})
    assert again.json()["result"]["model"] == MODEL


def test_a_model_that_cannot_start_is_named_with_its_fix_in_notes_and_health(folder):
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    broken_file = folder / "not-a-model.gguf"
    broken_file.write_bytes(b"this is not a GGUF file")
    url = f"http://127.0.0.1:{free_port()}/v1"

    def broken(spec: dict) -> None:
        spec["local_model"].update(url=url, model_path=str(broken_file))
        local_generator(spec)["api_base_url"] = url

    config = {"cache": {"max_entries": 0}, "endpoints": [
        {"name": "rag", "pipeline": str(rag_variant(folder, "rag_broken", broken)), "kind": "answer"}]}
    path = folder / "hayhooks_broken.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    with TestClient(build_app(load_serve_config(path)), base_url=LOCAL_BASE_URL) as client:  # the server starts all the same
        watched = [server for server in started_servers() if server.spec.url == url]
        assert len(watched) == 1 and watched[0].watching   # it is tried again now and then while the app serves
        health = client.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        local = health.json()["local_models"][url]
        assert local["state"] == "failed"
        assert "could not start" in local["problem"] and "model_path" in local["problem"]
        # the fix, and where to find the log, but no file path of the server's (the problem reaches answers' notes)
        assert "Fix:" in local["problem"] and "`pmc-rag model status` shows its log" in local["problem"]
        assert local["log"].endswith("server.log")
        answer = client.post("/rag/run", json={"question": QUESTION}).json()["result"]
        assert answer["flags"]["extractive_fallback"] and answer["flags"]["local_model_failed"]
        assert any("could not start" in note and "Fix:" in note for note in answer["notes"]), answer["notes"]
        assert answer["references"][0]["source_id"] == "PMC4816447"
    # and no longer once it has shut down: nothing keeps restarting a model server for an app that is gone
    assert not watched[0].watching


def test_pointing_the_generator_at_another_openai_compatible_server_is_a_yaml_edit(folder, monkeypatch):
    from fake_openai import FakeOpenAI

    from pmc_rag.answering.pipeline_run import answer_question
    from pmc_rag.pipelines import load_declared_pipeline

    monkeypatch.setenv("HOSTED_API_KEY", "hosted-secret")
    with FakeOpenAI(model="hosted-model", api_key="hosted-secret") as hosted:
        def hosted_generator(spec: dict) -> None:
            del spec["local_model"]  # nothing for pmc-rag to start
            local_generator(spec).update(api_base_url=hosted.url, model="hosted-model",
                                         api_key={"type": "env_var", "env_vars": ["HOSTED_API_KEY"], "strict": True})

        pipeline = load_declared_pipeline(rag_variant(folder, "rag_hosted", hosted_generator))
        assert pipeline.local_model is None
        pipeline.warm_up()
        tokens: list[str] = []
        answer = answer_question(pipeline, QUESTION,
                                 streaming_callback=lambda chunk: tokens.append(chunk.content)).model_dump()
    assert answer["model"] == "hosted-model" and answer["failed_generators"] == ["OllamaChatGenerator"]
    assert hosted.requests[-1]["authorization"] == "Bearer hosted-secret" and hosted.requests[-1]["body"]["stream"]
    assert len([t for t in tokens if t]) > 3 and answer["references"][0]["source_id"] == "PMC4816447"
    assert not answer["flags"]["extractive_fallback"]


def test_pmc_rag_ask_makes_the_servers_checks_before_any_search():
    env = {**os.environ, "PG_CONN_STR": "postgresql://nobody@127.0.0.1:9/none"}  # never reached
    emergency = subprocess.run(
        [sys.executable, "-m", "pmc_rag.cli", "ask", "my father has crushing chest pain right now, what do I do"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert emergency.returncode == 0, emergency.stderr
    assert "emergency" in emergency.stdout and "References" not in emergency.stdout
    suicidal = subprocess.run([sys.executable, "-m", "pmc_rag.cli", "ask", "i feel sucidal"], cwd=PROJECT_ROOT,
                              env=env, capture_output=True, text=True, timeout=120)
    assert suicidal.returncode == 0 and "988" in suicidal.stdout and "References" not in suicidal.stdout
    too_long = subprocess.run([sys.executable, "-m", "pmc_rag.cli", "ask", "why " * 1000], cwd=PROJECT_ROOT,
                              env=env, capture_output=True, text=True, timeout=120)
    assert too_long.returncode == 1 and "characters" in too_long.stderr


def test_a_hung_ollama_costs_one_timeout_not_one_per_question(folder, monkeypatch):
    from fake_ollama import FakeOllama

    from pmc_rag.answering.pipeline_run import answer_question
    from pmc_rag.pipelines import load_declared_pipeline

    def short_ollama_timeout(spec: dict) -> None:
        generator = spec["components"]["generator"]["init_parameters"]
        generator["chat_generators"][0]["init_parameters"].update(url=None, timeout=3)
        # Ollama stays skipped for this long after its timeout: long enough for the embedded model to answer the
        # first two questions on a loaded 2-core machine (60 s, as in rag.yml, was not: it was asked again).
        generator["skip_after_timeout_s"] = 900

    with FakeOllama(model="llama3.1:8b") as ollama:
        ollama.hang_s = 30  # accepts the request, never answers in time
        monkeypatch.setenv("OLLAMA_HOST", ollama.url)
        pipeline = load_declared_pipeline(rag_variant(folder, "rag_hung_ollama", short_ollama_timeout))
        pipeline.warm_up()
        answers = [answer_question(pipeline, question).model_dump() for question in (
            # (each answerable from the indexed text; the erlotinib paper says "rash" only in a table, which is not
            # indexed, so the relevance gate refuses "Does erlotinib cause rash?")
            QUESTION, "Does erlotinib prolong progression-free survival?",
            "Is erlotinib better than chemotherapy for EGFR-mutant NSCLC?")]
    assert len(ollama.requests) == 1  # asked once; the two later questions skipped it
    assert all(a["model"] == MODEL and a["failed_generators"] == ["OllamaChatGenerator"] for a in answers), [
        (a["model"], a["failed_generators"], a["flags"].get("not_answered")) for a in answers]
    assert "did not answer (not reachable" in " ".join(answers[0]["notes"])
    assert "skipped: it timed out on a recent question" in " ".join(answers[1]["notes"])


def test_serve_stopped_with_sigterm_stops_the_model_server_it_started(folder, pg_conn_str):
    port, model_port = free_port(), free_port()

    def own_model_server(spec: dict) -> None:
        url = f"http://127.0.0.1:{model_port}/v1"
        spec["local_model"]["url"] = url
        local_generator(spec)["api_base_url"] = url

    config = {"server": {"host": "127.0.0.1"}, "endpoints": [
        {"name": "rag", "pipeline": str(rag_variant(folder, "rag_own_model", own_model_server)), "kind": "answer"}]}
    path = folder / "hayhooks_own_model.yml"
    path.write_text(yaml.safe_dump(config))
    serve = subprocess.Popen([sys.executable, "-m", "pmc_rag.cli", "serve", "--config", str(path), "--port",
                              str(port)], cwd=PROJECT_ROOT, env={**os.environ, "PG_CONN_STR": pg_conn_str},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    model = local_model_server(LocalModelSpec(model=MODEL, url=f"http://127.0.0.1:{model_port}/v1"))
    try:
        for line in serve.stdout:  # the port opens once every model is warm: the model server is running
            if line.startswith("Serving rag"):
                break
        report = model.health(timeout=5)
        assert report is not None, "serve did not start its model server"
        serve.terminate()  # SIGTERM, as a service manager stops it
        serve.wait(timeout=60)
        deadline = time.monotonic() + 15
        while model.health(timeout=1) is not None:
            assert time.monotonic() < deadline, "the model server outlived the pmc-rag serve that started it"
            time.sleep(0.3)
    finally:
        serve.kill()
        if model.health(timeout=1):
            os.kill(model.health(timeout=1)["pid"], signal.SIGKILL)


def test_kill_9_of_serve_leaves_no_model_server_or_postgres_and_a_second_serve_on_its_port_is_refused(tmp_path):
    """`pmc-rag serve` on an embedded PostgreSQL of its own, with a model server of its own, killed with -9."""
    import psutil

    from pmc_rag.models import assemble_llm

    model_port, port = free_port(), free_port()
    url = f"http://127.0.0.1:{model_port}/v1"

    def own_model_server(spec: dict) -> None:
        spec["local_model"].update(url=url, model_path=str(assemble_llm(MODEL)))  # the tmp home has no models
        local_generator(spec)["api_base_url"] = url

    config = {"server": {"host": "127.0.0.1"}, "endpoints": [
        {"name": "rag", "pipeline": str(rag_variant(tmp_path, "rag_kill_9", own_model_server)), "kind": "answer"}]}
    path = tmp_path / "hayhooks.yml"
    path.write_text(yaml.safe_dump(config))
    env = {key: value for key, value in os.environ.items() if key != "PG_CONN_STR"}
    env.update(PMC_RAG_HOME=str(tmp_path / "home"), **{API_KEY_ENV: api_key()})  # so that this test may ask it
    command = [sys.executable, "-m", "pmc_rag.cli", "serve", "--config", str(path), "--port", str(port)]
    serve = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    model = LocalModelServer(LocalModelSpec(model=MODEL, url=url))
    try:
        for line in serve.stdout:  # the port opens once every model is warm
            if line.startswith("Serving rag"):
                break
        report = model.health(timeout=5)
        assert report is not None, "serve did not start its model server"
        second = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode != 0 and f"cannot serve on 127.0.0.1:{port}" in second.stderr, second.stderr
        postmaster = int((tmp_path / "home" / "pgdata" / "postmaster.pid").read_text().split()[0])
        serve.kill()  # kill -9: no cleanup of its own runs
        serve.wait(timeout=30)
        for pid, what in ((report["pid"], "the model server"), (postmaster, "PostgreSQL")):
            with contextlib.suppress(psutil.NoSuchProcess, psutil.TimeoutExpired):
                psutil.Process(pid).wait(timeout=60)  # waits for the process's exit, however long that takes
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, (
                f"{what} outlived the pmc-rag serve killed with -9")
    finally:
        serve.kill()
        with contextlib.suppress(Exception):
            os.kill(model.health(timeout=1)["pid"], signal.SIGKILL)


def test_a_model_server_of_another_home_on_the_port_stops_the_start_and_gets_no_prompt(folder, tmp_path,
                                                                                        monkeypatch):
    """Two data folders, one port: the second never sends its prompts to the first's server (which would refuse
    them with 401), counts no restarts, and says what to do without naming any file of either folder."""
    from pmc_rag.local_llm.spec import ForeignModelServer
    from pmc_rag.models import assemble_llm
    from pmc_rag.pipelines import load_declared_pipeline

    url = f"http://127.0.0.1:{free_port()}/v1"
    spec = LocalModelSpec(model=MODEL, url=url, model_path=str(assemble_llm(MODEL)), idle_minutes=1)
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path / "first"))
    monkeypatch.setenv(API_KEY_ENV, "the-first-home-s-key")
    first = LocalModelServer(spec)
    first.ensure_running()
    try:
        monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path / "second"))
        monkeypatch.setenv(API_KEY_ENV, "the-second-home-s-key")
        second = LocalModelServer(spec)
        with pytest.raises(ForeignModelServer, match="another data folder") as raised:
            second.ensure_running()
        assert str(tmp_path) not in str(raised.value) and "local_model.url" in str(raised.value)
        for _ in range(3):  # the watcher's steps: nothing of its own ran, so nothing restarted
            second.check_once(retry_start_after=0)
        assert second.restarts == 0 and second.status()["state"] == "failed"
        assert str(tmp_path) not in second.status()["problem"]

        def on_that_port(yaml_spec: dict) -> None:
            yaml_spec["local_model"].update(url=url, model_path=spec.model_path)
            local_generator(yaml_spec)["api_base_url"] = url

        pipeline = load_declared_pipeline(rag_variant(folder, "rag_foreign_port", on_that_port))
        with pytest.raises(ForeignModelServer):
            pipeline.warm_up()  # `pmc-rag serve` and `ask` stop here, before any prompt is sent
        assert not any("reply" in line for line in first.log_tail()), first.log_tail()
    finally:
        monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path / "first"))
        monkeypatch.setenv(API_KEY_ENV, "the-first-home-s-key")
        first.stop()
