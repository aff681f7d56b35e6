"""The pmc-rag command as a user runs it, and the pipeline YAML files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from haystack import Pipeline

from pmc_rag.pipeline_files import resolve_pipeline_spec
from pmc_rag.pipelines import ALLOWED_MODULES, PipelineError, load_pipeline

from conftest import CORPUS, PROJECT_ROOT, pipeline_file_for, rag_llm_spec

PMC_RAG = [sys.executable, "-m", "pmc_rag.cli"]


def pmc_rag(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*PMC_RAG, *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_dry_run_reports_counts_and_skipped_files_with_exit_code_3(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<article><unclosed></article>")
    result = pmc_rag("ingest", "--dry-run", "--no-progress", str(CORPUS / "pmc_oa" / "*.nxml"), str(bad))
    assert result.returncode == 3, result.stderr
    assert "Files read:        7" in result.stdout
    assert "Articles would be ingested: 6" in result.stdout
    assert f"{bad}: malformed or truncated XML" in result.stdout


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_nothing_to_ingest_is_a_failure_that_says_why():
    result = pmc_rag("ingest", "--dry-run", "--no-progress", "no/such/file.xml")
    assert result.returncode == 1
    assert "no/such/file.xml: no such file or folder" in result.stdout


def test_ctrl_c_stops_a_command_with_one_line_not_a_traceback(monkeypatch, capsys):
    from pmc_rag import cli

    def interrupted(args):
        raise KeyboardInterrupt  # what uvicorn re-raises when Ctrl-C stops `pmc-rag serve`

    monkeypatch.setattr(cli, "_serve", interrupted)
    assert cli.main(["serve"]) == 130
    printed = capsys.readouterr()
    assert printed.err == "pmc-rag: stopped (Ctrl-C); what was stored before stays stored\n" and not printed.out


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_an_unknown_pipeline_is_a_clear_error():
    result = pmc_rag("ingest", "--dry-run", "--pipeline", "nonexistent", str(CORPUS))
    assert result.returncode == 1
    assert "pmc-rag: error: pipeline file nonexistent not found" in result.stderr


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_ingest_and_status_against_a_server_from_pg_conn_str(pg_conn_str, tmp_path, table_name):
    from conftest import indexing_yaml_for, make_store

    yaml_path = tmp_path / "indexing.yml"
    yaml_path.write_text(indexing_yaml_for(table_name))
    env = {"PG_CONN_STR": pg_conn_str, "PMC_RAG_HOME": str(tmp_path / "home")}
    result = pmc_rag("ingest", "--no-progress", "--pipeline", str(yaml_path),
                     str(CORPUS / "plos/journal.pone.0097541.xml"), env=env)
    assert result.returncode == 0, result.stderr
    assert "Database: PostgreSQL at" in result.stdout and "(PG_CONN_STR)" in result.stdout
    assert "Articles ingested: 1" in result.stdout
    status = pmc_rag("status", "--pipeline", str(yaml_path), env=env)
    assert f"Table: public.{table_name} (384-d embeddings)" in status.stdout
    assert "Articles: 1" in status.stdout
    assert "Embedded LLM: missing: run pmc-rag setup" in status.stdout  # this PMC_RAG_HOME has no models yet
    make_store(table_name).delete_table()


@pytest.mark.parametrize("path", sorted((PROJECT_ROOT / "pipelines").glob("*.yml")), ids=lambda p: p.name)
def test_every_pipeline_yaml_loads_and_round_trips(path: Path):
    pipeline = load_pipeline(path)
    again = Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED_MODULES)

    def comparable(spec: dict) -> dict:  # the order of the connection list is not meaningful
        return {**spec, "connections": sorted(map(str, spec["connections"]))}

    assert comparable(again.to_dict()) == comparable(pipeline.to_dict())


def test_indexing_yaml_says_what_it_promises():
    spec = resolve_pipeline_spec(PROJECT_ROOT / "pipelines/indexing.yml")
    components = spec["components"]
    assert components["embedder"]["init_parameters"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    store = components["writer"]["init_parameters"]["document_store"]["init_parameters"]
    assert store["embedding_dimension"] == 384 and store["table_name"] == "pmc_chunks"
    assert "connection_string" not in store, "the connection string comes from PG_CONN_STR, never the YAML"


def test_a_broken_pipeline_file_names_itself(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("components:\n  x:\n    type: no.such.Component\n    init_parameters: {}\n")
    with pytest.raises(PipelineError, match="broken.yml: cannot load the pipeline"):
        load_pipeline(broken)


@pytest.mark.integration  # the real model server starting and writing
def test_setup_prepares_models_and_leaves_a_filled_index_alone(pg_conn_str, tmp_path, table_name):
    from conftest import indexing_yaml_for, make_store

    yaml_path = tmp_path / "indexing.yml"
    yaml_path.write_text(indexing_yaml_for(table_name))
    from pmc_rag.local_llm.spec import API_KEY_ENV, api_key

    # The tests' model server key, so that the server setup starts is one the other tests can use and stop.
    env = {"PG_CONN_STR": pg_conn_str, "PMC_RAG_HOME": str(tmp_path / "home"), API_KEY_ENV: api_key()}

    rag = pipeline_file_for("rag", table_name, tmp_path, real_model=True)  # its model server on the tests' port

    empty = pmc_rag("setup", "--no-sample", "--pipeline", str(yaml_path), "--answer-pipeline", str(rag), env=env)
    assert empty.returncode == 0, empty.stderr
    assert "checksum verified" in empty.stdout and "Index is empty; skipping the sample corpus" in empty.stdout
    # The model server was started and had the model write: a model that crashes on this CPU would show here.
    assert re.search(r"Local model server \(qwen2.5-0.5b-instruct\) at http://127.0.0.1:\d+/v1: answered a test "
                     r"prompt in [\d.]+ s \(\d+ tokens/s\)", empty.stdout), empty.stdout
    assert (tmp_path / "home/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf").is_file()
    # rag.yml's `weights:` (a re-encoding): the copy is made here, once, not at the first question.
    weights = rag_llm_spec().weights
    assert weights != "packaged" and f"Its weights re-encoded as {weights}" in empty.stdout
    assert (tmp_path / f"home/models/qwen2.5-coder-0.5b-instruct-q4_k_m.as-{weights}.gguf").is_file()
    # The crisis check's exemplars are embedded here, once, not in the first question's wait.
    assert re.search(r"Crisis check ready: \d{4} exemplars", empty.stdout), empty.stdout
    assert list((tmp_path / "home/models/crisis").glob("exemplars-*.npy"))
    status = pmc_rag("status", "--pipeline", str(yaml_path), "--answer-pipeline", str(rag), env=env)
    assert re.search(rf"weights: {weights} \(\S+\.as-{weights}\.gguf\), generating with \d+ threads", status.stdout), \
        status.stdout
    # Set-up made the empty table ready to search: the BM25 retriever finds its index (it never builds one).
    from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever

    assert PgvectorBM25Retriever(document_store=make_store(table_name)).run(query="anything")["documents"] == []

    ingested = pmc_rag("ingest", "--no-progress", "--pipeline", str(yaml_path),
                       str(CORPUS / "plos/journal.pone.0097541.xml"), env=env)
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    again = pmc_rag("setup", "--pipeline", str(yaml_path), "--answer-pipeline", str(rag), env=env)
    assert again.returncode == 0, again.stderr
    assert "Index already holds 2 chunks: nothing to ingest." in again.stdout
    assert "Ready. Next" in again.stdout
    make_store(table_name).delete_table()


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_model_list_names_every_embedded_model_and_install_refuses_an_unknown_one():
    listed = pmc_rag("model", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert any(line.startswith("qwen2.5-0.5b-instruct: ") and line.endswith("; installed") for line in lines)
    for name in ("qwen2.5-coder-1.5b-instruct", "smollm2-135m-instruct", "gemma-3-270m"):
        assert any(line.startswith(f"{name}: ") for line in lines), listed.stdout
    unknown = pmc_rag("model", "install", "gpt-9")
    assert unknown.returncode == 1 and "no embedded model is called 'gpt-9'" in unknown.stderr
    unnamed = pmc_rag("model", "install")
    assert unnamed.returncode != 0 and "name the model to install" in unnamed.stderr


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_the_model_server_commands_read_the_yaml_without_loading_haystack_and_errors_stay_one_line():
    """`pmc-rag model status|stop|start` need only the YAML's `local_model:`: building the pipeline cost 6.7 s (its
    imports: Haystack, torch, Sentence Transformers) to print two lines, on a 2-core Xeon."""
    script = ("import sys\n"
              "from pmc_rag.cli import main\n"
              "code = main(['model', 'status'])\n"
              "print('loaded:', sorted(name for name in ('haystack', 'torch', 'sentence_transformers') "
              "if name in sys.modules))\n"
              "sys.exit(code)\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ})
    assert run.returncode == 0, run.stderr
    assert "Local model server (qwen2.5-0.5b-instruct) at http://127.0.0.1:1417/v1: " in run.stdout
    assert "loaded: []" in run.stdout, run.stdout
    wrong = pmc_rag("model", "status", "--pipeline", "indexing")
    assert wrong.returncode == 1 and wrong.stderr.strip().endswith("indexing.yml declares no `local_model:`"), \
        wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_the_declared_document_store_is_built_alone_and_only_from_allowed_modules(tmp_path, table_name):
    """`pmc-rag status` builds the indexing pipeline's store alone, not the pipeline (whose embedder imports
    Sentence Transformers): 12.6 s against 4.7 s on a 2-core Xeon under load."""
    import yaml

    from conftest import indexing_yaml_for
    from pmc_rag.pipelines import declared_document_store

    path = tmp_path / "indexing.yml"
    path.write_text(indexing_yaml_for(table_name))
    store = declared_document_store(path)
    assert type(store).__name__ == "PgvectorDocumentStore" and store.table_name == table_name
    spec = yaml.safe_load(path.read_text())
    for component in spec["components"].values():
        store_spec = (component.get("init_parameters") or {}).get("document_store")
        if store_spec:
            store_spec["type"] = "os.system"
    (tmp_path / "hostile.yml").write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineError, match=r"hostile\.yml: cannot build its document store: DeserializationError"):
        declared_document_store(tmp_path / "hostile.yml")
    (tmp_path / "none.yml").write_text(yaml.safe_dump({"components": {}, "connections": []}))
    with pytest.raises(PipelineError, match=r"none\.yml: no component has a document_store"):
        declared_document_store(tmp_path / "none.yml")


def test_pmc_rag_ask_and_the_served_rag_endpoint_answer_with_the_same_pipeline():
    """The CLI's default and hayhooks.yml's `rag` endpoint (REST, chat, MCP, the page) must not drift apart: the
    same question would get another route, and another answer, depending on where it was asked."""
    import yaml

    from pmc_rag.cli import _parser
    from pmc_rag.paths import DEFAULT_ANSWER_PIPELINE, PIPELINES_DIR, PROJECT_ROOT

    endpoints = yaml.safe_load((PROJECT_ROOT / "hayhooks.yml").read_text())["endpoints"]
    served = next(e for e in endpoints if e["name"] == "rag")["pipeline"]
    assert (PROJECT_ROOT / served).resolve() == (PIPELINES_DIR / f"{DEFAULT_ANSWER_PIPELINE}.yml").resolve()
    assert _parser().parse_args(["ask", "Does aspirin prevent stroke?"]).pipeline == DEFAULT_ANSWER_PIPELINE
