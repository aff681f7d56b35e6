"""OnnxTextEmbedder: the stock Sentence Transformers embedder's vectors from ONNX Runtime, an export made once and
rebuilt when damaged, and a clear refusal of models it cannot run."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder

from pmc_rag.components import onnx_text_embedder
from pmc_rag.components.onnx_text_embedder import OnnxEmbedderError, OnnxTextEmbedder
from pmc_rag.models import EMBEDDING_MODEL, cached_embedding_model

TEXTS = [
    "Does metformin reduce cardiovascular events in type 2 diabetes?",
    "Is there a role for aspirin in the primary prevention of colorectal cancer?",
    "x",
    "BRCA1 " + "tumour suppressor gene expression in breast tissue " * 80,  # longer than the model's 256 tokens
]


@pytest.fixture(scope="session")
def stock() -> SentenceTransformersTextEmbedder:
    embedder = SentenceTransformersTextEmbedder(model=EMBEDDING_MODEL, normalize_embeddings=True, progress_bar=False,
                                               device=None)
    embedder.warm_up()
    return embedder


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def exported_files(home):
    return sorted((home / "models" / "onnx").glob("*.onnx"))


def test_gives_the_stock_embedders_vectors(fresh_home, stock):
    embedder = OnnxTextEmbedder(model=EMBEDDING_MODEL, normalize_embeddings=True, threads=1)
    embedder.warm_up()
    assert embedder.runtime == "onnxruntime-cpu"
    [path] = exported_files(fresh_home)
    assert len(list(path.parent.glob(f"{path.name}.works-on-*"))) == 1  # checked in a child process, once
    for text in TEXTS:
        ours = np.array(embedder.run(text=text)["embedding"])
        theirs = np.array(stock.run(text=text)["embedding"])
        assert ours.shape == (384,)
        assert abs(np.linalg.norm(ours) - 1) < 1e-5
        assert np.abs(ours - theirs).max() < 1e-5, text[:40]


def test_many_short_texts_at_once_give_each_one_s_vector(fresh_home, stock):
    """`embed_many` (the relevance gate's word checks) groups texts by length in tokens; each vector must still be
    the stock embedder's for that text alone, whatever its group."""
    embedder = OnnxTextEmbedder(model=EMBEDDING_MODEL, normalize_embeddings=True, threads=1)
    words = ["kids", "children", "gastric", "semaglutide", "proton pump inhibitors", "x", TEXTS[0]]
    many = np.array(embedder.embed_many(words))
    assert many.shape == (len(words), 384)
    for word, vector in zip(words, many):
        assert np.abs(vector - np.array(stock.run(text=word)["embedding"])).max() < 1e-5, word
    assert embedder.embed_many([]) == []


def test_prefix_and_no_normalization_follow_the_stock_parameters(fresh_home):
    plain = SentenceTransformersTextEmbedder(model=EMBEDDING_MODEL, prefix="query: ", progress_bar=False)
    plain.warm_up()
    embedder = OnnxTextEmbedder(model=EMBEDDING_MODEL, prefix="query: ")
    ours = np.array(embedder.run(text=TEXTS[0])["embedding"])  # warms up on first use
    assert np.abs(ours - np.array(plain.run(text=TEXTS[0])["embedding"])).max() < 1e-5


def test_exports_once_and_rebuilds_a_damaged_file(fresh_home, stock):
    OnnxTextEmbedder(model=EMBEDDING_MODEL).warm_up()
    [path] = exported_files(fresh_home)
    first = path.stat()
    OnnxTextEmbedder(model=EMBEDDING_MODEL).warm_up()
    assert exported_files(fresh_home) == [path] and path.stat().st_mtime_ns == first.st_mtime_ns  # reused

    path.write_bytes(path.read_bytes()[:1000])  # cut short, as by a full disk
    embedder = OnnxTextEmbedder(model=EMBEDDING_MODEL, normalize_embeddings=True)
    embedder.warm_up()
    assert path.stat().st_size == first.st_size
    assert not list(path.parent.glob("*.part"))
    ours = np.array(embedder.run(text=TEXTS[1])["embedding"])
    assert np.abs(ours - np.array(stock.run(text=TEXTS[1])["embedding"])).max() < 1e-5


# Warms an embedder up in a process of its own and prints whether Sentence Transformers was imported, and vectors.
_WARM_UP_ELSEWHERE = """
import json, sys
from pmc_rag.environment import configure_environment
configure_environment()
from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder
embedder = OnnxTextEmbedder(model=sys.argv[1], normalize_embeddings=True)
embedder.warm_up()
print(json.dumps({"sentence_transformers": "sentence_transformers" in sys.modules, "runtime": embedder.runtime,
                  "vectors": [embedder.run(text=text)["embedding"] for text in json.loads(sys.argv[2])]}))
"""


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_a_later_process_opens_the_recorded_export_without_loading_sentence_transformers(fresh_home, stock,
                                                                                          tmp_path):
    model = tmp_path / "model"
    shutil.copytree(cached_embedding_model(), model)  # a folder of its own, to change below
    texts = [*TEXTS, "Œdème pulmonaire aigu à l'hôpital: naïve café", ""]

    def warm_up_elsewhere():
        done = subprocess.run([sys.executable, "-c", _WARM_UP_ELSEWHERE, str(model), json.dumps(texts)],
                              env={**os.environ, "PMC_RAG_HOME": str(fresh_home)}, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.splitlines()[-1])

    first, second = warm_up_elsewhere(), warm_up_elsewhere()
    assert first["sentence_transformers"] and not second["sentence_transformers"]
    assert first["runtime"] == second["runtime"] == "onnxruntime-cpu"
    for text, before, after in zip(texts, first["vectors"], second["vectors"]):
        theirs = np.array(stock.run(text=text)["embedding"])
        assert np.abs(np.array(after) - np.array(before)).max() < 1e-6, text[:40]
        assert np.abs(np.array(after) - theirs).max() < 1e-5, text[:40]

    assert onnx_text_embedder._recorded_export(str(model)) is not None
    os.utime(model / "model.safetensors", ns=(1, 1))  # another copy of the weights: warm up in full again
    assert onnx_text_embedder._recorded_export(str(model)) is None


def test_falls_back_to_pytorch_when_onnx_runtime_crashes_on_this_cpu(fresh_home, stock, monkeypatch, caplog):
    # As llama.cpp's AMX kernels crashed on a Xeon: the crash must cost the child process, not the caller.
    monkeypatch.setattr(onnx_text_embedder, "_PROBE", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    embedder = OnnxTextEmbedder(model=EMBEDDING_MODEL, normalize_embeddings=True)
    with caplog.at_level(logging.WARNING):
        embedder.warm_up()
    assert embedder.runtime == "torch-cpu"
    assert "killed by signal 11" in caplog.text and "PyTorch instead" in caplog.text
    [path] = exported_files(fresh_home)
    assert not list(path.parent.glob("*.works-on-*"))  # tried again next time
    ours = np.array(embedder.run(text=TEXTS[0])["embedding"])
    assert np.abs(ours - np.array(stock.run(text=TEXTS[0])["embedding"])).max() < 1e-5


def test_refuses_a_model_that_does_not_pool_by_the_mean(fresh_home, tmp_path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling

    model = SentenceTransformer(str(cached_embedding_model()), device="cpu")
    cls_pooled = SentenceTransformer(modules=[model[0], Pooling(384, pooling_mode="cls")], device="cpu")
    cls_pooled.save(str(tmp_path / "cls-model"))
    with pytest.raises(OnnxEmbedderError, match="pools by 'cls'.*SentenceTransformersTextEmbedder"):
        OnnxTextEmbedder(model=str(tmp_path / "cls-model")).warm_up()
    assert exported_files(fresh_home) == []


def test_refuses_a_list(fresh_home):
    with pytest.raises(TypeError, match="document embedder"):
        OnnxTextEmbedder(model=EMBEDDING_MODEL).run(text=["two", "texts"])


def test_serialization_round_trip():
    embedder = OnnxTextEmbedder(model=EMBEDDING_MODEL, normalize_embeddings=True, prefix="q: ", threads=2,
                                device="cpu", int8=True)
    data = embedder.to_dict()
    assert data["type"] == "pmc_rag.components.onnx_text_embedder.OnnxTextEmbedder"
    again = OnnxTextEmbedder.from_dict(data)
    assert again.to_dict() == data
    assert (again.model, again.normalize_embeddings, again.prefix, again.threads, again.device, again.int8) == (
        EMBEDDING_MODEL, True, "q: ", 2, "cpu", True)


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_onnx_runtime_and_hayhooks_write_their_caches_in_pmc_rag_home_not_the_user_s(tmp_path):
    """ONNX Runtime may write a device id and a telemetry store under ~/.cache when imported (it did on the AMD
    EPYC dev machine, not on CI); every entry point's environment sends it (and Hayhooks' token) to
    PMC_RAG_HOME/cache, and Hugging Face's cache stays put."""
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key not in ("XDG_CACHE_HOME", "HF_HOME")}
    env.update(HOME=str(tmp_path / "user"), PMC_RAG_HOME=str(tmp_path / "pmc-home"))
    script = ("from pmc_rag.environment import configure_environment; configure_environment()\n"
              "import os, onnxruntime\n"
              "from hayhooks.dashboard_auth import local_dashboard_token; local_dashboard_token(create=True)\n"
              "print(os.environ['HF_HOME'])")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "user" / ".cache" / "huggingface")
    assert not (tmp_path / "user" / ".cache").exists() or not any((tmp_path / "user" / ".cache").rglob("*"))
    written = {p.relative_to(tmp_path / "pmc-home" / "cache").parts[0] for p in
               (tmp_path / "pmc-home" / "cache").rglob("*") if p.is_file()}
    assert "hayhooks" in written and written <= {"Microsoft", "hayhooks"}, written


@pytest.mark.integration  # its trial runs ONNX Runtime in another process
def test_int8_weights_leave_the_feed_forward_down_projections_in_float32(fresh_home, stock):
    from pmc_rag.components.onnx_int8 import int8_copy, narrowing_products

    embedder = OnnxTextEmbedder(model=EMBEDDING_MODEL, normalize_embeddings=True, int8=True, device="cpu")
    embedder.warm_up()
    assert embedder.runtime == "onnxruntime-cpu" and embedder._path.name.endswith("-int8v1.onnx")
    exported = embedder._path.with_name(embedder._path.name.replace("-int8v1", ""))
    narrowing = narrowing_products(exported)
    assert len(narrowing) == 6 and all("/output/dense/" in name for name in narrowing)  # one per MiniLM layer
    assert int8_copy(exported) == embedder._path                                           # made once, reused
    question = "Does metformin reduce cardiovascular events?"
    exact = stock.run(text=question)["embedding"]
    vector = embedder.run(text=question)["embedding"]
    assert 0.99 < sum(a * b for a, b in zip(exact, vector)) < 0.99999
    # many texts, each alone on sessions of its own, give each text's own vector
    texts = [question, "Erlotinib in EGFR-mutant lung cancer.", "x"]
    assert embedder.embed_each(texts, workers=2) == [embedder.run(text=t)["embedding"] for t in texts]
