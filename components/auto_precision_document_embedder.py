"""The stock Sentence Transformers document embedder, computing in bfloat16 where the CPU does so natively and in
int8 on other CPUs."""

from __future__ import annotations

import inspect
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from haystack import Document, component
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

from pmc_rag.components.cpu_trial import cpu_flags, cpu_key, trial_once_per_cpu

log = logging.getLogger(__name__)

ComputeDtype = Literal["auto", "float32", "bfloat16", "int8"]

# CPU flags (Linux /proc/cpuinfo) of instructions that multiply bfloat16 natively: AVX-512 BF16 (AMD Zen 4 and
# later, Intel Cooper Lake and later) and AMX (Intel Sapphire Rapids and later).
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")

# The agreement a bfloat16 run must reach with float32 on this CPU before it is used: measured on all-MiniLM-L6-v2
# at cosine 0.9999 (mean) on 600 chunks; a kernel that computes garbage falls far below.
MIN_COSINE = 0.999


@component
class AutoPrecisionDocumentEmbedder(SentenceTransformersDocumentEmbedder):
    """
    `SentenceTransformersDocumentEmbedder` with one more parameter, `compute_dtype`: "auto" computes in bfloat16
    on a CPU that multiplies bfloat16 natively, with int8 weights on other CPUs, and in float32 on a GPU.

    On a 2-core AMD EPYC Zen 4 (AVX-512 BF16), bfloat16 embeds our chunks 1.5-1.7 times as fast as float32, with
    vectors at cosine 0.9999 of the float32 ones and the same retrieval figures on the dev questions (docs,
    Benchmark).
    On a CPU without it, bfloat16 is emulated and about 6 times slower, so "auto" runs the model's matrix products
    with int8 weights there instead (ONNX Runtime, one chunk per call so that no chunk's vector depends on its
    batch: `onnx_int8`), at cosine about 0.99 of float32's, with the held-out retrieval figures checked
    (`evaluation/results/2026-11-29-int8-documents/`); where ONNX Runtime fails its trial on the CPU, float32. On a
    GPU, float32 is fast already. What was chosen, and why, is in `compute_description` (`pmc-rag ingest` prints
    it).

    The choice is not silent and not blind: the first time on a CPU, a child process embeds sample texts both ways
    and bfloat16 is used only if it did not crash (a crash costs the child only) and agreed with float32 to cosine
    0.999. The result is remembered per CPU. Vectors are scaled to length 1 in float32 afterwards (bfloat16's own
    normalization is off by up to 0.4%).

    Usage:
    ```python
    from haystack import Document
    from pmc_rag.components.auto_precision_document_embedder import AutoPrecisionDocumentEmbedder

    embedder = AutoPrecisionDocumentEmbedder(model="sentence-transformers/all-MiniLM-L6-v2",
                                             normalize_embeddings=True, compute_dtype="auto")
    embedder.warm_up()
    print(embedder.compute_description)  # "bfloat16 (this CPU has avx512_bf16; ...)" or "float32 (...)"
    embedder.run(documents=[Document(content="Metformin lowers hepatic glucose output.")])
    ```
    """

    def __init__(self, *, compute_dtype: ComputeDtype = "auto", **stock_parameters: Any):
        """
        :param compute_dtype: "auto" (bfloat16 on a CPU with native bfloat16 that passes the check, int8 on other
            CPUs, float32 on a GPU), "float32", "bfloat16" (always; slow on a CPU without native support) or "int8"
            (ONNX Runtime on the CPU; models of a transformer and mean pooling only). A `torch_dtype` in
            `model_kwargs` takes precedence.
        :param stock_parameters: Those of `SentenceTransformersDocumentEmbedder` (model, batch_size,
            meta_fields_to_embed, normalize_embeddings, device, model_kwargs, ...).
        """
        if compute_dtype not in ("auto", "float32", "bfloat16", "int8"):
            raise ValueError(f"compute_dtype must be 'auto', 'float32', 'bfloat16' or 'int8', not {compute_dtype!r}")
        # The parent is named, not reached by super(): Haystack's @component rebuilds the class it decorates, and
        # zero-argument super() then refers to the class before that.
        SentenceTransformersDocumentEmbedder.__init__(self, **stock_parameters)
        self.compute_dtype = compute_dtype
        self.compute_dtype_used: str | None = None  # set by warm_up
        self.compute_description = ""
        self._int8: Any = None  # the int8 runner (an OnnxTextEmbedder), when warm_up chose int8

    def to_dict(self) -> dict[str, Any]:
        data = SentenceTransformersDocumentEmbedder.to_dict(self)
        data["init_parameters"]["compute_dtype"] = self.compute_dtype
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AutoPrecisionDocumentEmbedder:
        parameters = dict(data["init_parameters"])
        compute_dtype = parameters.pop("compute_dtype", "auto")
        # The stock from_dict deserializes what needs it (device, token, model_kwargs); its instance then hands
        # over its constructor arguments, each kept under its own name.
        stock_class = SentenceTransformersDocumentEmbedder
        stock = stock_class.from_dict({"type": f"{stock_class.__module__}.{stock_class.__name__}",
                                       "init_parameters": parameters})
        names = inspect.signature(stock_class.__init__).parameters.keys() - {"self"}
        return cls(compute_dtype=compute_dtype, **{name: getattr(stock, name) for name in names})

    def warm_up(self) -> None:
        if self.embedding_backend is not None or self._int8 is not None:
            return
        dtype, why = self._choose_dtype()
        if dtype == "int8":
            dtype, why = self._warm_up_int8(why)
        self.compute_dtype_used = dtype
        self.compute_description = f"{dtype} ({why})"
        log.info("Document embedder %s computes in %s", self.model, self.compute_description)
        if dtype == "int8":
            return
        configured = self.model_kwargs
        if dtype == "bfloat16" and not _configured_dtype(configured):
            self.model_kwargs = {**(configured or {}), "torch_dtype": "bfloat16"}
        try:
            SentenceTransformersDocumentEmbedder.warm_up(self)
        finally:
            self.model_kwargs = configured  # to_dict keeps saying what the YAML said

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        :param documents: Documents to embed.
        :returns: `documents`: the documents with embeddings.
        """
        if self.embedding_backend is None and self._int8 is None:
            self.warm_up()
        if self._int8 is not None:
            vectors = self._int8.embed_each([self._text_to_embed(d) for d in documents], workers=self._workers())
            return {"documents": [replace(d, embedding=v) for d, v in zip(documents, vectors, strict=True)]}
        embedded = SentenceTransformersDocumentEmbedder.run(self, documents=documents)["documents"]
        if self.compute_dtype_used != "bfloat16" or not self.normalize_embeddings or not embedded:
            return {"documents": embedded}
        import numpy as np

        vectors = np.asarray([document.embedding for document in embedded], dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return {"documents": [replace(document, embedding=vector.tolist())
                              for document, vector in zip(embedded, vectors, strict=True)]}

    def _text_to_embed(self, document: Document) -> str:
        """The text the stock embedder would embed: the `meta_fields_to_embed` values and the content, joined."""
        values = [str(document.meta[key]) for key in self.meta_fields_to_embed if document.meta.get(key) is not None]
        return self.prefix + self.embedding_separator.join([*values, document.content or ""]) + self.suffix

    @staticmethod
    def _workers() -> int:
        """One int8 session per core PyTorch would use (`torch_threads`, or every core)."""
        import torch

        return max(torch.get_num_threads(), 1)

    def _warm_up_int8(self, why: str) -> tuple[str, str]:
        """Loads the int8 runner; ("float32", the reason) where ONNX Runtime could not run it on this CPU (its
        trial ran in a child process, so a crash cost only that)."""
        from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder

        runner = OnnxTextEmbedder(model=self.model, normalize_embeddings=self.normalize_embeddings, device="cpu",
                                  int8=True)
        runner.warm_up()
        if runner.runtime != "onnxruntime-cpu":
            log.warning("int8 embedding could not run on this CPU; embedding in float32")
            return "float32", "int8 failed its trial on this CPU"
        self._int8 = runner
        return "int8", why

    def _choose_dtype(self) -> tuple[str, str]:
        configured = _configured_dtype(self.model_kwargs)
        if configured:
            return str(configured).removeprefix("torch."), "model_kwargs in the pipeline YAML"
        if self.compute_dtype != "auto":
            return self.compute_dtype, "compute_dtype in the pipeline YAML"
        device = self.device.to_torch_str()
        if not device.startswith("cpu"):
            return "float32", f"on {device}"
        native = native_bf16_flags()
        if not native:
            return "int8", ("this CPU has no native bfloat16 (AVX-512 BF16 or AMX); int8 weights, one chunk per "
                            "call, checked on it")
        problem = _bf16_fails_here(self.model)
        if problem:
            log.warning("bfloat16 embedding failed its check on this CPU (%s); embedding in float32", problem)
            return "float32", f"bfloat16 failed its check on this CPU: {problem}"
        return "bfloat16", f"this CPU has {', '.join(native)}; checked against float32 on it"


def native_bf16_flags() -> list[str]:
    """This CPU's flags of native bfloat16 multiplication (empty: it has none)."""
    return [flag for flag in NATIVE_BF16_FLAGS if flag in cpu_flags()]


def _configured_dtype(model_kwargs: dict[str, Any] | None) -> Any:
    return (model_kwargs or {}).get("torch_dtype") or (model_kwargs or {}).get("dtype")


# Run in a child process by `_bf16_fails_here`: the model in float32 and in bfloat16 on sample texts; exit 1 if
# they disagree. Prints the lowest cosine.
_BF16_TRIAL = f"""
import sys, torch
from sentence_transformers import SentenceTransformer
texts = ["Does metformin reduce cardiovascular events in type 2 diabetes?",
         "Methods. " + "Serum ferritin was measured in 412 patients before and after treatment. " * 12, "x"]
exact = SentenceTransformer(sys.argv[1], device="cpu").encode(texts, convert_to_tensor=True)
fast = SentenceTransformer(sys.argv[1], device="cpu", model_kwargs={{"torch_dtype": torch.bfloat16}})
fast = fast.encode(texts, convert_to_tensor=True).float()
cosine = torch.nn.functional.cosine_similarity(exact, fast).min().item()
print(cosine)
if not cosine >= {MIN_COSINE}:
    print(f"bfloat16 vectors at cosine {{cosine:.4f}} of float32's, below {MIN_COSINE}", file=sys.stderr)
    sys.exit(1)
"""


def _bf16_fails_here(model: str) -> str | None:
    import torch

    from pmc_rag.components.data_home import models_dir

    marker = (models_dir() / "cpu-trials" /
              f"{Path(model).name}-bfloat16-torch{torch.__version__}-works-on-{cpu_key()}")
    result = trial_once_per_cpu(_BF16_TRIAL, [model], marker)
    return None if result.passed else result.problem
