"""AutoPrecisionDocumentEmbedder: bfloat16 only where the CPU computes it natively and a child process has checked
it against float32; int8 on other CPUs, one chunk at a time, after its own trial; float32 where asked or where a
trial fails, with the stock embedder's vectors; the choice is reported, never silent."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

from pmc_rag.components import auto_precision_document_embedder as module
from pmc_rag.components.auto_precision_document_embedder import AutoPrecisionDocumentEmbedder
from pmc_rag.environment import ALLOWED_MODULES
from pmc_rag.models import EMBEDDING_MODEL

DOCUMENTS = [
    Document(content="Metformin lowers hepatic glucose output in type 2 diabetes.", meta={"title": "Metformin"}),
    Document(content="Serum ferritin was measured before and after treatment. " * 30, meta={"title": "Iron"}),
    Document(content="x", meta={}),
]
SETTINGS = {"model": EMBEDDING_MODEL, "normalize_embeddings": True, "meta_fields_to_embed": ["title"],
            "batch_size": 2, "progress_bar": False, "device": None}


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def vectors(embedder) -> np.ndarray:
    return np.array([d.embedding for d in embedder.run(documents=[Document(content=d.content, meta=d.meta)
                                                                  for d in DOCUMENTS])["documents"]])


def trial_markers(home):
    return list((home / "models" / "cpu-trials").glob("*")) if (home / "models" / "cpu-trials").exists() else []


def test_float32_gives_the_stock_embedders_vectors(fresh_home):
    stock = SentenceTransformersDocumentEmbedder(**SETTINGS)
    ours = AutoPrecisionDocumentEmbedder(compute_dtype="float32", **SETTINGS)
    ours.warm_up()
    assert ours.compute_dtype_used == "float32"
    assert ours.compute_description == "float32 (compute_dtype in the pipeline YAML)"
    assert np.abs(vectors(ours) - vectors(stock)).max() < 1e-6


@pytest.mark.integration  # its int8 trial runs ONNX Runtime in another process
def test_auto_uses_int8_on_a_cpu_without_native_bfloat16_one_chunk_at_a_time(fresh_home, monkeypatch):
    monkeypatch.setattr(module, "cpu_flags", lambda: {"avx2", "fma"})
    embedder = AutoPrecisionDocumentEmbedder(**SETTINGS)
    embedder.warm_up()
    assert embedder.compute_dtype_used == "int8"
    assert "no native bfloat16" in embedder.compute_description
    assert trial_markers(fresh_home) == []  # no bfloat16 check run
    exact = AutoPrecisionDocumentEmbedder(compute_dtype="float32", **SETTINGS)
    exact.warm_up()
    int8, float32 = vectors(embedder), vectors(exact)
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    cosines = (int8 * float32).sum(axis=1)
    assert cosines.min() > 0.98 and cosines.mean() > 0.99
    assert np.abs(int8 - float32).max() > 1e-4   # really another computation, not the float32 one
    # each chunk's vector is its own: the same alone as among others (no activation scale shared by a batch)
    alone = embedder.run(documents=[Document(content=DOCUMENTS[0].content, meta=DOCUMENTS[0].meta)])["documents"]
    assert np.array_equal(np.array(alone[0].embedding), int8[0])


def test_int8_falls_back_to_float32_where_onnx_runtime_fails_its_trial(fresh_home, monkeypatch, caplog):
    from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder

    def trial_failed(runner):  # what OnnxTextEmbedder.warm_up does when its child process crashed on this CPU
        runner.runtime = "torch-cpu"

    monkeypatch.setattr(OnnxTextEmbedder, "warm_up", trial_failed)
    embedder = AutoPrecisionDocumentEmbedder(compute_dtype="int8", **SETTINGS)
    with caplog.at_level(logging.WARNING):
        embedder.warm_up()
    assert embedder.compute_dtype_used == "float32"
    assert "int8 failed its trial on this CPU" in embedder.compute_description
    assert "int8 embedding could not run on this CPU" in caplog.text
    assert len(vectors(embedder)) == len(DOCUMENTS)


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_auto_uses_bfloat16_on_a_cpu_with_it_after_checking_it_once(fresh_home, monkeypatch):
    # The flags are made up, the check is real: a child process embeds in both precisions (emulated bfloat16 is
    # slow but exact enough on any CPU, so this runs everywhere).
    monkeypatch.setattr(module, "cpu_flags", lambda: {"avx512_bf16"})
    embedder = AutoPrecisionDocumentEmbedder(**SETTINGS)
    embedder.warm_up()
    assert embedder.compute_dtype_used == "bfloat16"
    assert "avx512_bf16" in embedder.compute_description
    assert len(trial_markers(fresh_home)) == 1

    fast = vectors(embedder)
    exact = vectors(AutoPrecisionDocumentEmbedder(compute_dtype="float32", **SETTINGS))
    assert np.allclose(np.linalg.norm(fast, axis=1), 1, atol=1e-5)  # scaled in float32, not in bfloat16
    assert (fast * exact).sum(axis=1).min() > 0.999
    assert embedder.run(documents=[]) == {"documents": []}

    def no_second_trial(*args, **kwargs):
        raise AssertionError("the check ran again on the same CPU")

    monkeypatch.setattr("pmc_rag.components.cpu_trial.subprocess.run", no_second_trial)
    again = AutoPrecisionDocumentEmbedder(**{**SETTINGS, "batch_size": 3})
    again.warm_up()
    assert again.compute_dtype_used == "bfloat16"


def test_a_crash_in_the_bfloat16_check_falls_back_to_float32(fresh_home, monkeypatch, caplog):
    # As llama.cpp's AMX kernel crashed on a Xeon: the crash costs the child process, and float32 takes over.
    monkeypatch.setattr(module, "cpu_flags", lambda: {"amx_bf16"})
    monkeypatch.setattr(module, "_BF16_TRIAL", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    embedder = AutoPrecisionDocumentEmbedder(**SETTINGS)
    with caplog.at_level(logging.WARNING):
        embedder.warm_up()
    assert embedder.compute_dtype_used == "float32"
    assert "killed by signal 11" in embedder.compute_description
    assert "killed by signal 11" in caplog.text
    assert trial_markers(fresh_home) == []  # a failure is not remembered as a pass
    assert vectors(embedder).shape == (3, 384)


def test_a_bfloat16_check_that_disagrees_with_float32_falls_back(fresh_home, monkeypatch):
    monkeypatch.setattr(module, "cpu_flags", lambda: {"avx512_bf16"})
    monkeypatch.setattr(module, "_BF16_TRIAL", "import sys; print('vectors at cosine 0.31', file=sys.stderr); "
                                               "sys.exit(1)")
    embedder = AutoPrecisionDocumentEmbedder(**SETTINGS)
    embedder.warm_up()
    assert embedder.compute_dtype_used == "float32"
    assert "exit status 1: vectors at cosine 0.31" in embedder.compute_description


def test_a_dtype_in_model_kwargs_takes_precedence(fresh_home, monkeypatch):
    monkeypatch.setattr(module, "cpu_flags", lambda: {"avx512_bf16"})
    embedder = AutoPrecisionDocumentEmbedder(compute_dtype="auto", **{**SETTINGS, "model_kwargs": {"torch_dtype":
                                                                                                   "float32"}})
    embedder.warm_up()
    assert embedder.compute_description == "float32 (model_kwargs in the pipeline YAML)"


def test_refuses_an_unknown_compute_dtype():
    with pytest.raises(ValueError, match="compute_dtype must be 'auto', 'float32', 'bfloat16' or 'int8', not 'fp8'"):
        AutoPrecisionDocumentEmbedder(compute_dtype="fp8", **SETTINGS)


def test_to_dict_and_from_dict_round_trip_and_load_from_yaml():
    embedder = AutoPrecisionDocumentEmbedder(compute_dtype="bfloat16", **SETTINGS)
    data = embedder.to_dict()
    assert data["init_parameters"]["compute_dtype"] == "bfloat16"
    assert data["init_parameters"]["meta_fields_to_embed"] == ["title"]
    again = AutoPrecisionDocumentEmbedder.from_dict(data)
    assert again.to_dict() == data
    assert isinstance(again, SentenceTransformersDocumentEmbedder)

    pipeline = Pipeline()
    pipeline.add_component("embedder", embedder)
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED_MODULES).get_component("embedder")
    assert loaded.to_dict() == data
