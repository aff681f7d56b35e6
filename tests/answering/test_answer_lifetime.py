"""An answer's work stops when its client goes away or its deadline passes: in the queue, during generation
(streamed or not), and inside the local model server. Real HTTP servers (uvicorn), real disconnects; the model is
the FAKE OpenAI-compatible server, slowed down so that a disconnect comes mid-answer."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
import yaml
from pmc_rag.answering.refusals import AnswerStopped, Unavailable

from pmc_rag.answering.answer_slots import AnswerSlots
from pmc_rag.answering.caller import RequestLifetime

from conftest import SAMPLE_TABLE, free_port, pipeline_file_for

pytestmark = pytest.mark.integration  # real HTTP servers, and deadlines waited out

TABLE = SAMPLE_TABLE  # read only
QUESTION = "Is first-line erlotinib effective in advanced non-small cell lung cancer with EGFR mutations?"
DEADLINE_S = 15
LONG_REPLY = " ".join(f"word{i}" for i in range(400))  # 400 words at 0.1 s: 40 s, well past the deadline


@contextlib.contextmanager
def uvicorn_serving(app: Any) -> Iterator[str]:
    """`app` on a real HTTP server in this process (TestClient cannot hang up mid-response)."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 240
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def slow_model():
    from fake_openai import FakeOpenAI

    with FakeOpenAI(model="slow-model", api_key="slow-key") as fake:
        fake.reply, fake.word_delay_s = LONG_REPLY, 0.1
        yield fake


@pytest.fixture(scope="module")
def base_url(tmp_path_factory, pmc_sample_table, slow_model):
    """The served app (hayhooks.yml with a 15 s answer deadline) whose rag pipeline's one model is `slow_model`."""
    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    folder = tmp_path_factory.mktemp("lifetime")
    spec = yaml.safe_load(pipeline_file_for("rag", TABLE, folder, real_model=True, model_always=True).read_text())
    del spec["local_model"]
    chain = spec["components"]["generator"]["init_parameters"]["chat_generators"]
    openai = next(g for g in chain if g["type"].endswith("OpenAIChatGenerator"))
    openai["init_parameters"].update(api_base_url=slow_model.url, model="slow-model", timeout=60, api_key={
        "type": "env_var", "env_vars": ["SLOW_MODEL_KEY"], "strict": True})
    chain[:] = [openai]
    rag = folder / "rag_slow.yml"
    rag.write_text(yaml.safe_dump(spec, sort_keys=False))
    config = {"server": {"host": "127.0.0.1", "answer_deadline_s": DEADLINE_S}, "cache": {"max_entries": 0},
              "endpoints": [{"name": "rag", "pipeline": str(rag), "kind": "answer", "rest": True, "chat": True}]}
    path = folder / "hayhooks.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLOW_MODEL_KEY", "slow-key")
        with uvicorn_serving(build_app(load_serve_config(path))) as url:
            yield url


def wait_for_cut(fake: Any, before: int, within: float = 10) -> float:
    """Seconds until the fake model saw one more stream cut short; fails if it did not within `within`."""
    started = time.monotonic()
    while fake.streams_cut <= before:
        assert time.monotonic() - started < within, "the model went on generating for a client that had left"
        time.sleep(0.05)
    return time.monotonic() - started


def last_audit_id(pg_conn_str: str) -> int:
    with psycopg.connect(pg_conn_str) as connection:
        return connection.execute("SELECT coalesce(max(id), 0) FROM pmc_rag_audit").fetchone()[0]


def next_audit_status(pg_conn_str: str, after_id: int, within: float = 60) -> int:
    """The status of the first audit row written after `after_id`, waited for (the row is written once the
    server has noticed the hang-up, later on a loaded machine); fails if none comes within `within` seconds."""
    started = time.monotonic()
    with psycopg.connect(pg_conn_str, autocommit=True) as connection:
        while True:
            row = connection.execute("SELECT status FROM pmc_rag_audit WHERE id > %s ORDER BY id LIMIT 1",
                                     (after_id,)).fetchone()
            if row:
                return row[0]
            assert time.monotonic() - started < within, "no audit row was written for the request"
            time.sleep(0.05)


def test_a_streaming_client_that_hangs_up_stops_the_generation(base_url, slow_model, pg_conn_str):
    before, audited = slow_model.streams_cut, last_audit_id(pg_conn_str)
    body = {"model": "rag", "stream": True, "source_events": True,  # status lines while the model writes
            "messages": [{"role": "user", "content": QUESTION}]}
    with httpx.stream("POST", f"{base_url}/v1/chat/completions", json=body, timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: {") and "writing and checking the answer" in line:
                break  # hang up mid-answer (the stream shows no word before the answer is checked)
    wait_for_cut(slow_model, before)
    assert len(slow_model.requests) and slow_model.requests[-1]["body"]["stream"]
    assert next_audit_status(pg_conn_str, audited) == 499


def test_a_rest_client_that_hangs_up_stops_the_generation(base_url, slow_model, pg_conn_str):
    before, audited = slow_model.streams_cut, last_audit_id(pg_conn_str)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{base_url}/rag/run", json={"question": QUESTION}, timeout=4)
    wait_for_cut(slow_model, before)
    assert next_audit_status(pg_conn_str, audited) == 499


def test_an_answer_past_its_deadline_is_a_504_that_says_so_and_its_generation_stops(base_url, slow_model):
    before = slow_model.streams_cut
    started = time.monotonic()
    response = httpx.post(f"{base_url}/rag/run", json={"question": QUESTION}, timeout=60)
    took = time.monotonic() - started
    assert response.status_code == 504, response.text
    assert "answer_deadline_s" in response.json()["detail"] and response.headers["x-request-id"]
    assert DEADLINE_S - 1 < took < DEADLINE_S + 10
    wait_for_cut(slow_model, before, within=3)


def test_an_answer_whose_client_left_leaves_the_queue_and_one_past_its_deadline_is_refused():
    slots = AnswerSlots(running=1, queued=2, max_wait_s=60)
    holding, release = threading.Event(), threading.Event()

    def hold_the_only_turn() -> None:
        with slots.turn(RequestLifetime(deadline_s=60)):
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold_the_only_turn, daemon=True)
    holder.start()
    assert holding.wait(5)
    try:
        waiting = RequestLifetime(deadline_s=60)
        threading.Timer(0.5, waiting.client_left).start()
        started = time.monotonic()
        with pytest.raises(AnswerStopped) as left:
            with slots.turn(waiting):
                pass
        assert left.value.status_code == 499 and time.monotonic() - started < 2

        with pytest.raises(Unavailable) as late:  # its deadline (1 s, from its arrival) comes before a turn
            with slots.turn(RequestLifetime(deadline_s=1)):
                pass
        assert late.value.status_code == 503 and late.value.headers["Retry-After"]
    finally:
        release.set()
        holder.join(5)
    with slots.turn(RequestLifetime(deadline_s=1)):  # both left the queue: the turn is free again
        pass


class _SlowLlama:
    """A FAKE llama_cpp.Llama for the model server: streams a token every 0.1 s, notes when its stream is closed."""

    n_tokens = 10

    def __init__(self) -> None:
        self.closed = threading.Event()

    def create_chat_completion(self, messages: list, stream: bool = False, **settings: Any) -> Iterator[dict]:
        try:
            for index in range(600):
                time.sleep(0.1)
                yield {"object": "chat.completion.chunk", "choices": [
                    {"index": 0, "delta": {"content": f"t{index} "}, "finish_reason": None}]}
        finally:
            self.closed.set()


def test_the_model_server_stops_generating_and_frees_the_model_when_its_client_hangs_up():
    from pmc_rag.local_llm.server import ModelService, build_app

    llama = _SlowLlama()
    service = ModelService(llama, "slow")
    with uvicorn_serving(build_app(service, None, {"model": "slow"})) as url:
        body = {"model": "slow", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as response:
            for index, _line in enumerate(line for line in response.iter_lines() if line.startswith("data:")):
                if index == 2:
                    break
        assert llama.closed.wait(5), "llama.cpp went on generating for a client that had left"
        assert service.lock.acquire(timeout=5), "the model was not freed for the next reply"
        service.lock.release()
        assert service.busy_since is None
