"""`other_local_models:`: model servers a pipeline declares beside `local_model:` (the translator's), read and started
only when asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pmc_rag.local_llm.spec import ForeignModelServer
from pmc_rag.local_llm.supervisor import LocalModelServer
from pmc_rag.pipelines import DeclaredPipeline, PipelineError, declared_local_models

from conftest import PROJECT_ROOT, free_port

# Ports no server of the user's listens on: the tests' session stops the model servers its processes looked up
# (a developer's at the shipped 1417 and 1418 are spared, `stopped_by_the_tests`, but these tests start none).
PORTS = {free_port()}
while len(PORTS) < 2:
    PORTS.add(free_port())
MAIN = {"model": "qwen2.5-0.5b-instruct", "url": f"http://127.0.0.1:{min(PORTS)}/v1"}
HELPER = {"model": "qwen2.5-coder-1.5b-instruct", "url": f"http://127.0.0.1:{max(PORTS)}/v1"}


def _pipeline_file(folder: Path, **top_level) -> Path:
    """A retrieval pipeline (no model asked) with these top-level sections."""
    spec = {"extends": str(PROJECT_ROOT / "pipelines" / "retrieve_bm25.yml"), **top_level}
    path = folder / "with_models.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_other_local_models_are_read_after_local_model(tmp_path):
    path = _pipeline_file(tmp_path, local_model=MAIN, other_local_models=[{**HELPER, "weights": "q8_0"}])
    specs = declared_local_models(path)
    assert [s.model for s in specs] == ["qwen2.5-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"]
    assert specs[1].url == HELPER["url"] and specs[1].weights == "q8_0"


def test_a_helper_at_the_answering_models_address_is_that_server(tmp_path):
    """The tests' copies point every model at one server: the helper is then that server, not a second start."""
    path = _pipeline_file(tmp_path, local_model=MAIN, other_local_models=[{**HELPER, "url": MAIN["url"]}])
    assert [s.url for s in declared_local_models(path)] == [MAIN["url"]]


def test_two_helpers_on_one_port_and_a_section_that_is_no_list_are_refused_with_the_fix(tmp_path):
    path = _pipeline_file(tmp_path, local_model=MAIN, other_local_models=[HELPER, {**HELPER, "model":
                                                                                    "smollm2-135m-instruct"}])
    with pytest.raises(PipelineError, match="give each its own port"):
        declared_local_models(path)
    path = _pipeline_file(tmp_path, other_local_models=HELPER)
    with pytest.raises(PipelineError, match="must be a list"):
        declared_local_models(path)
    path = _pipeline_file(tmp_path, other_local_models=[{**HELPER, "model": "no-such-model"}])
    with pytest.raises(PipelineError, match="is not an embedded model"):
        declared_local_models(path)


def test_helpers_start_when_asked_for_not_when_the_pipeline_warms_up(tmp_path, monkeypatch):
    """An English question never waits for the translator's model: warming up starts `local_model` only."""
    from haystack import Pipeline

    import pmc_rag.pipelines as pipelines

    started = []
    monkeypatch.setattr(pipelines, "_start_or_warn", lambda spec: started.append(spec.model))
    monkeypatch.setattr(LocalModelServer, "ensure_running", lambda server: started.append(server.spec.model))
    main, helper = declared_local_models(_pipeline_file(tmp_path, local_model=MAIN, other_local_models=[HELPER]))
    pipeline = DeclaredPipeline(tmp_path / "with_models.yml", Pipeline(), {}, {}, main, (helper,))
    assert [s.model for s in pipeline.local_models] == [MAIN["model"], HELPER["model"]]
    pipeline.warm_up()
    assert started == [MAIN["model"]]
    pipeline.start_other_local_models()
    assert started == [MAIN["model"], HELPER["model"]]

    def foreign(server):
        started.append("refused")
        raise ForeignModelServer("another pmc-rag model server, started from another data folder, answers there")

    monkeypatch.setattr(LocalModelServer, "ensure_running", foreign)
    pipeline.start_other_local_models()  # not fatal: the translator fails over to the answering model
    assert started[-1] == "refused"


def test_the_tests_leave_a_developers_server_at_a_shipped_address_running(tmp_path):
    """The session's end stops the servers the tests looked up, but not one at rag.yml's own addresses that this
    process did not start: a test that only looked one up stopped a developer's 1.5B (2026-11-30)."""
    from conftest import SHIPPED_LLM_URLS, stopped_by_the_tests

    shipped = LocalModelServer(declared_local_models(PROJECT_ROOT / "pipelines" / "rag.yml")[1])
    assert shipped.spec.url in SHIPPED_LLM_URLS and shipped.process is None
    assert not stopped_by_the_tests(shipped)
    shipped.process = object()  # type: ignore[assignment]  # as if this process had started it
    assert stopped_by_the_tests(shipped)
    tests_own = LocalModelServer(declared_local_models(_pipeline_file(tmp_path, local_model=MAIN))[0])
    assert stopped_by_the_tests(tests_own)
