"""Embeds a question with a Sentence Transformers model run by ONNX Runtime: the vectors of the stock
`SentenceTransformersTextEmbedder`, for about half its CPU time per question."""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import warnings
from pathlib import Path
from typing import Any, Callable

from haystack import component, default_from_dict, default_to_dict

from pmc_rag.components.cpu_trial import cpu_key, trial_once_per_cpu

log = logging.getLogger(__name__)

# Part of the exported file's name: a change to how the graph is built must not reuse files built the old way.
_EXPORT_VERSION = "1"


class OnnxEmbedderError(RuntimeError):
    """The model cannot be run this way; the message says why and what to use instead."""


@component
class OnnxTextEmbedder:
    """
    Embeds a text (a question) with a Sentence Transformers model, running its float32 weights with ONNX Runtime
    on the CPU.

    One short question at a time is where PyTorch spends as much on the work around the arithmetic as on the
    arithmetic: with all-MiniLM-L6-v2 on one core, 17 ms of CPU per dev question against 8 ms here. The weights,
    tokenizer, truncation and pooling are the model's own, so the vectors equal the stock
    `SentenceTransformersTextEmbedder`'s (cosine > 0.99999) and match chunks embedded by the stock document
    embedder. Mean pooling and normalization are part of the exported graph.

    On first use the model is exported once to `PMC_RAG_HOME/models/onnx/`, under a name that carries a digest of
    its weights, and the file is reused after that (by every server worker too). The export is recorded with the
    model's files as they were: while they stay so, a later start opens it with the model's own tokenizer file and
    neither imports Sentence Transformers nor loads the weights (about 5 s of every process start on 2 cores). Where
    PyTorch sees a CUDA GPU the model runs there with PyTorch instead, as the stock component would: `runtime` says
    which was chosen.

    Native kernels are chosen by the CPU they run on, so the first run on a CPU is made in a child process: if it
    crashes there (as llama.cpp's AMX kernels once did on a Xeon), the warning says so and PyTorch embeds instead,
    and the server lives on. A CPU that passed is remembered next to the exported file.

    Usage:
    ```python
    from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder

    embedder = OnnxTextEmbedder(model="sentence-transformers/all-MiniLM-L6-v2", normalize_embeddings=True)
    embedder.warm_up()
    embedder.run(text="Does metformin reduce cardiovascular events?")  # {"embedding": [0.021, -0.043, ...]}
    ```
    """

    def __init__(self, *, model: str = "sentence-transformers/all-MiniLM-L6-v2", normalize_embeddings: bool = False,
                 prefix: str = "", suffix: str = "", threads: int | None = None, device: str | None = None,
                 progress_bar: bool = False, int8: bool = False):
        """
        :param model: A Sentence Transformers model (hub name or local folder) made of a transformer and mean
            pooling, optionally normalized, like all-MiniLM-L6-v2. Others are refused with a clear error: use the
            stock `SentenceTransformersTextEmbedder` for them.
        :param normalize_embeddings: Scale each vector to length 1, as the stock parameter of that name does.
        :param prefix: Text put before the text to embed (some models expect an instruction).
        :param suffix: Text put after it.
        :param threads: CPU threads for one text; None: as many as PyTorch uses (`pmc-rag serve` sets that from
            hayhooks.yml's `torch_threads`).
        :param device: None picks a CUDA GPU if PyTorch sees one, else the CPU; "cuda" or "cuda:N" runs PyTorch
            there; anything else uses ONNX Runtime on the CPU.
        :param progress_bar: Accepted for the stock component's sake; one text shows no progress.
        :param int8: Run int8 weights (`onnx_int8.int8_copy`) instead of float32: vectors at cosine about 0.99 of
            the exact ones, for embedding many documents on a CPU without native bfloat16; never for questions.
        """
        self.model = model
        self.normalize_embeddings = normalize_embeddings
        self.prefix = prefix
        self.suffix = suffix
        self.threads = threads
        self.int8 = int8
        self.device = device
        self.progress_bar = progress_bar
        self.runtime: str | None = None  # "onnxruntime-cpu", "torch-cuda" or "torch-cpu" once warmed up
        self._session: Any = None
        self._torch_model: Any = None
        self._tokenizer: Any = None
        self._max_length = 512
        self._input_names: list[str] = []
        self._path: Path | None = None  # the ONNX file the session runs
        self._spare_sessions: queue.Queue[Any] = queue.Queue()  # one-thread sessions of `embed_each`
        self._sessions_opened = 0

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model, normalize_embeddings=self.normalize_embeddings,
                               prefix=self.prefix, suffix=self.suffix, threads=self.threads, device=self.device,
                               progress_bar=self.progress_bar, int8=self.int8)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OnnxTextEmbedder:
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if self.runtime is not None:
            return
        import torch

        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        use_cuda = device.startswith("cuda")
        # The record names the float32 file that questions use: an int8 embedder finds its own file each time.
        if not use_cuda and not self.int8 and self._open_recorded_export(torch.get_num_threads()):
            return
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(self.model, device=device if use_cuda else "cpu")
        self._tokenizer = model.tokenizer
        self._max_length = model.max_seq_length
        if use_cuda:
            self._torch_model, self.runtime = model, "torch-cuda"
            log.info("Query embedder: %s with PyTorch on the GPU", self.model)
            return
        graph = _MeanPooled(model)
        path = self._weights(_export(graph, model, self.model))
        try:
            problem = _fails_on_this_cpu(path)
        except _UnreadableExport as error:  # damaged or cut short: build it again once
            log.warning("Could not load %s (%s); exporting it again", path, error)
            path.unlink(missing_ok=True)
            path = self._weights(_export(graph, model, self.model, again=True))
            problem = _fails_on_this_cpu(path)
        if problem:
            log.warning("ONNX Runtime could not embed with %s on this CPU (%s); the query embedder runs %s with "
                        "PyTorch instead (same vectors, about twice the CPU per question)", path.name, problem,
                        self.model)
            self._torch_model, self.runtime = model, "torch-cpu"
            return
        self._session = _open_session(path, self.threads or torch.get_num_threads())
        self._input_names = [i.name for i in self._session.get_inputs()]
        self.runtime, self._path = "onnxruntime-cpu", path
        if not self.int8:
            _record_export(self.model, path, self._max_length)
        log.info("Embedder: %s with ONNX Runtime (%s)", self.model, path.name)

    def _weights(self, exported: Path) -> Path:
        from pmc_rag.components.onnx_int8 import int8_copy  # imported here: it imports this module

        return int8_copy(exported) if self.int8 else exported

    def _open_recorded_export(self, default_threads: int) -> bool:
        """Opens the file a previous warm-up exported for this model, if its record still matches the model's files
        and this CPU passed its trial, with the model's own tokenizer file: no Sentence Transformers import, no
        weights loaded or hashed (about 5 s of every process start on 2 cores)."""
        record = _recorded_export(self.model)
        if record is None:
            return False
        path, folder, max_length = record
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.no_padding()
        self._tokenizer = _EncodingsAsArrays(tokenizer)
        self._max_length = max_length
        self._session = _open_session(path, self.threads or default_threads)
        self._input_names = [i.name for i in self._session.get_inputs()]
        self.runtime, self._path = "onnxruntime-cpu", path
        log.info("Query embedder: %s with ONNX Runtime (%s, as recorded)", self.model, path.name)
        return True

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        """
        :param text: The text to embed.
        :returns: `embedding`: its vector.
        :raises TypeError: `text` is not a string (a list of documents wants a document embedder).
        """
        if not isinstance(text, str):
            raise TypeError("OnnxTextEmbedder expects a string as input; to embed a list of documents, use a "
                            "document embedder such as SentenceTransformersDocumentEmbedder.")
        if self.runtime is None:
            self.warm_up()
        text = self.prefix + text + self.suffix
        if self._torch_model is not None:
            vector = self._torch_model.encode([text], normalize_embeddings=self.normalize_embeddings,
                                              show_progress_bar=False)[0]
            return {"embedding": vector.tolist()}
        return {"embedding": self._onnx_vector(self._session, text)}

    def _onnx_vector(self, session: Any, text: str) -> list[float]:
        import numpy as np

        encoded = self._tokenizer([text], truncation=True, max_length=self._max_length, return_tensors="np")
        vector = session.run(None, {name: encoded[name].astype(np.int64) for name in self._input_names})[0][0]
        if self.normalize_embeddings:
            vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
        return vector.tolist()

    def embed_each(self, texts: list[str], workers: int) -> list[list[float]]:
        """The vectors of many texts, each alone as `run()` would (an int8 vector depends on its own text only), on
        `workers` one-thread sessions at once, kept: on 2 cores 100 chunks/s, against 72 with one of two threads."""
        if self.runtime is None:
            self.warm_up()
        if self._path is None or workers < 2:
            return [self.run(text=text)["embedding"] for text in texts]
        from concurrent.futures import ThreadPoolExecutor

        for _ in range(workers - self._sessions_opened):  # opening one takes 0.1-0.3 s: once per embedder
            self._spare_sessions.put(_open_session(self._path, 1))
        self._sessions_opened = max(self._sessions_opened, workers)

        def embed(text: str) -> list[float]:
            session = self._spare_sessions.get()
            try:
                return self._onnx_vector(session, self.prefix + text + self.suffix)
            finally:
                self._spare_sessions.put(session)

        # The first alone: a tokenizer sets its truncation on its first call, racing no encoding then.
        with ThreadPoolExecutor(workers) as pool:
            return [embed(texts[0]), *pool.map(embed, texts[1:])] if texts else []

    def embed_many(self, texts: list[str]) -> list[list[float]]:
        """The vectors of many short texts (single words: `WordMeaning`), as `run()` would give them one by one.

        Texts of the same length in tokens go through the model together, so no padding is needed and each vector
        equals its `run()` vector; many single words take a few model calls, not one each."""
        if self.runtime is None:
            self.warm_up()
        texts = [self.prefix + text + self.suffix for text in texts]
        if self._torch_model is not None:
            vectors = self._torch_model.encode(texts, normalize_embeddings=self.normalize_embeddings,
                                               show_progress_bar=False, batch_size=64)
            return [v.tolist() for v in vectors]
        import numpy as np

        encoded = [self._tokenizer([text], truncation=True, max_length=self._max_length, return_tensors="np")
                   for text in texts]
        by_length: dict[int, list[int]] = {}
        for index, one in enumerate(encoded):
            by_length.setdefault(one["input_ids"].shape[1], []).append(index)
        vectors: list[Any] = [None] * len(texts)
        for indices in by_length.values():
            for start in range(0, len(indices), 256):
                batch = indices[start:start + 256]
                inputs = {name: np.concatenate([encoded[i][name] for i in batch]).astype(np.int64)
                          for name in self._input_names}
                for i, vector in zip(batch, self._session.run(None, inputs)[0]):
                    if self.normalize_embeddings:
                        vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
                    vectors[i] = vector.tolist()
        return vectors


def _module_kinds(model: Any) -> list[str]:
    return [type(module).__name__ for module in model]


class _MeanPooled:
    """The model's transformer, mean pooling and (if the model has it) normalization, as one torch module to
    export; refuses models built otherwise."""

    def __init__(self, model: Any):
        import torch

        kinds = _module_kinds(model)
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            raise OnnxEmbedderError(
                f"OnnxTextEmbedder runs models made of a transformer and mean pooling; this one is {kinds}. Use "
                "haystack_integrations...SentenceTransformersTextEmbedder for it in the pipeline YAML.")
        pooling = model[1].get_config_dict().get("pooling_mode")
        if pooling != "mean":
            raise OnnxEmbedderError(
                f"OnnxTextEmbedder runs models with mean pooling; this one pools by {pooling!r}. Use "
                "haystack_integrations...SentenceTransformersTextEmbedder for it in the pipeline YAML.")
        transformer = model[0].auto_model.eval()
        normalize = kinds[-1] == "Normalize"

        class Graph(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.transformer = transformer

            def forward(self, input_ids, attention_mask, token_type_ids=None):  # type: ignore[no-untyped-def]
                extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
                tokens = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                          **extra).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
                pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, p=2, dim=1) if normalize else pooled

        self.module = Graph()
        self.input_names = [name for name in ("input_ids", "attention_mask", "token_type_ids")
                            if name in model.tokenizer.model_input_names]

    def digest(self) -> str:
        """Of the weights and the graph's shape: a changed model never reuses another's file."""
        sha = hashlib.sha256(f"{_EXPORT_VERSION}:{','.join(self.input_names)}".encode())
        for name, tensor in sorted(self.module.state_dict().items()):
            sha.update(name.encode())
            sha.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return sha.hexdigest()[:16]


def _export(graph: _MeanPooled, model: Any, name: str, again: bool = False, folder: Path | None = None) -> Path:
    """The exported file for `graph` in `folder` (default: PMC_RAG_HOME/models/onnx), made now if missing (or if
    `again`), written under a temporary name and then renamed, so a worker never opens a half-written file."""
    import torch

    from pmc_rag.components.data_home import models_dir

    folder = folder or models_dir() / "onnx"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{Path(name).name}-{graph.digest()}.onnx"
    if path.exists() and not again:
        return path
    log.info("Exporting %s to ONNX (once): %s", name, path)
    sample = model.tokenizer(["a question about medicine"], return_tensors="pt")

    def export_to(partial: Path) -> None:
        # The tracer's warnings are about shapes this graph does not depend on (batch sizes, padding).
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(graph.module, tuple(sample[n] for n in graph.input_names), str(partial),
                              input_names=graph.input_names, output_names=["embedding"],
                              dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in graph.input_names},
                                            "embedding": {0: "batch"}},
                              opset_version=17, dynamo=False)

    _write_then_rename(path, export_to)
    return path


def _write_then_rename(path: Path, write: Callable[[Path], None], suffix: str = ".part") -> None:
    """`write` fills a temporary file beside `path`, which is then renamed to it: a reader (another server
    worker) never opens a half-written file, and a failed write leaves nothing behind."""
    partial = path.with_name(f"{path.name}.{os.getpid()}{suffix}")
    try:
        write(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


class _EncodingsAsArrays:
    """The model's tokenizer file read by the `tokenizers` library, called as `run()` calls the Transformers one."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer

    def __call__(self, texts: list[str], **_: Any) -> dict[str, Any]:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        return {"input_ids": np.array([e.ids for e in encodings]),
                "attention_mask": np.array([e.attention_mask for e in encodings]),
                "token_type_ids": np.array([e.type_ids for e in encodings])}


def _model_folder(model: str) -> Path | None:
    """The local folder holding `model` (a folder, or a hub name already in the local cache), else None."""
    if Path(model).is_dir():
        return Path(model)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # not cached (yet): the full warm-up downloads it where it may
        return None


def _files_fingerprint(folder: Path) -> str:
    """Each file of the model folder with its size and time: a changed or replaced model no longer matches."""
    sha = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        sha.update(f"{path.relative_to(folder)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return sha.hexdigest()[:16]


def model_files_fingerprint(model: str) -> str | None:
    """A digest of the local files of `model` (a folder or a cached hub name), or None if it has none yet: what a
    result computed with the model can be saved under."""
    folder = _model_folder(model)
    return None if folder is None else _files_fingerprint(folder)


def embedded_once(model: str, texts: list[str], kind: str) -> Any:
    """The normalised vectors of `texts` by `model` (an OnnxTextEmbedder's), as a float32 array: saved in
    PMC_RAG_HOME/models/<kind>/ the first time for this version of the model's files and these texts, and read
    back after that (a damaged file is embedded again). For fixed example sets that every process start would
    otherwise embed again (the router's and the crisis check's, 1.4 s and 2.9 s on 2 cores)."""
    import numpy as np

    from pmc_rag.components.data_home import models_dir

    fingerprint = model_files_fingerprint(model)
    saved = None
    if fingerprint is not None:
        key = hashlib.sha256("\n".join([model, fingerprint, *texts]).encode()).hexdigest()[:16]
        saved = models_dir() / kind / f"exemplars-{key}.npy"
        try:
            vectors = np.load(saved)
            if vectors.shape[0] == len(texts):
                return vectors
        except (OSError, ValueError):  # missing or damaged
            pass
    embedder = OnnxTextEmbedder(model=model, normalize_embeddings=True)
    embedder.warm_up()
    vectors = np.asarray(embedder.embed_many(texts), dtype="float32")  # 2.5x one by one, the same vectors
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        _write_then_rename(saved, lambda partial: np.save(partial, vectors), suffix=".part.npy")  # np.save adds .npy
    return vectors


def _record_path(model: str) -> Path:
    from pmc_rag.components.data_home import models_dir

    return models_dir() / "onnx" / f"{Path(model).name}.recorded.json"


def _record_export(model: str, path: Path, max_length: int) -> None:
    """Remembers which exported file serves `model` as its files are now, for `_recorded_export`."""
    import json

    folder = _model_folder(model)
    if folder is None or not (folder / "tokenizer.json").is_file():
        return
    text = json.dumps({"model": model, "folder": str(folder), "files": _files_fingerprint(folder),
                       "export": path.name, "max_length": max_length, "cpu": cpu_key()})
    _write_then_rename(_record_path(model), lambda partial: partial.write_text(text))


def _recorded_export(model: str) -> tuple[Path, Path, int] | None:
    """(exported file, model folder, max length) if a full warm-up recorded them for `model`, the model's files are
    unchanged since, the exported file is there and passed its trial on this CPU; else None."""
    import json

    try:
        record = json.loads(_record_path(model).read_text())
        folder, path = _model_folder(model), _record_path(model).with_name(record["export"])
        usable = (folder is not None and str(folder) == record["folder"] and record["model"] == model
                  and record["cpu"] == cpu_key() and path.is_file() and (folder / "tokenizer.json").is_file()
                  and _files_fingerprint(folder) == record["files"] and _trial_marker(path).exists())
        return (path, folder, int(record["max_length"])) if usable else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _open_session(path: Path, threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Threads that spin while waiting for work would take the cores from the server's other requests.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class _UnreadableExport(RuntimeError):
    """ONNX Runtime cannot load the exported file (a Python error in the child, not a crash)."""


_UNREADABLE_EXIT_STATUS = 3

# Run in a child process by `_fails_on_this_cpu`: load the exported file and embed a made-up question with it.
_PROBE = f"""
import sys, numpy, onnxruntime
try:
    session = onnxruntime.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
except Exception as error:
    print(str(error)[:500], file=sys.stderr)
    sys.exit({_UNREADABLE_EXIT_STATUS})
feed = {{i.name: numpy.ones((1, 8), dtype=numpy.int64) for i in session.get_inputs()}}
assert numpy.isfinite(session.run(None, feed)[0]).all(), "the embedding is not finite"
"""


def _trial_marker(path: Path) -> Path:
    """Made when `path`, as it is now, passed its trial on this CPU."""
    return path.with_name(f"{path.name}.works-on-{cpu_key()}-{path.stat().st_mtime_ns}")


def _fails_on_this_cpu(path: Path) -> str | None:
    """None if ONNX Runtime loads `path` and embeds with it in a child process on this CPU, else what went wrong (a
    crash there costs the child only). Passing is remembered per CPU and per version of the file, so the check runs
    once.

    :raises _UnreadableExport: The file cannot be loaded: export it again.
    """
    result = trial_once_per_cpu(_PROBE, [str(path)], _trial_marker(path))
    if result.returncode == _UNREADABLE_EXIT_STATUS:
        raise _UnreadableExport(result.last_line)
    return None if result.passed else result.problem
