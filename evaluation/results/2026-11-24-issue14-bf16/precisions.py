"""Embedding throughput of all-MiniLM-L6-v2 on our chunks by precision and runtime, against plain Haystack, with
how far each one's vectors are from float32's.

    HF_HUB_OFFLINE=1 .venv/bin/python evaluation/results/2026-11-24-issue14-bf16/precisions.py [--limit 600]

Same chunks as `pmc-rag bench ingest` (an even spread over the sample corpus), all in one process, batches of 16
sorted by length. The ONNX Runtime rows export the model to a temporary folder; int8 is ONNX Runtime's dynamic
quantization (weights per channel, activations per batch). Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime
import torch
from haystack import Document
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder
from onnxruntime.quantization import QuantType, quantize_dynamic
from sentence_transformers import SentenceTransformer

from pmc_rag.components.onnx_text_embedder import _export, _MeanPooled
from pmc_rag.cpu_trial import cpu_flags
from pmc_rag.evaluation.bench_ingest import sample_chunks, with_compute_dtype


class OnnxDocuments:
    """Our texts (title, section, text) through an exported model, sorted by length, batches of 16."""

    def __init__(self, path: Path, tokenizer, max_length: int, meta_fields: list[str]):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = torch.get_num_threads()
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.session.get_inputs()]
        self.tokenizer, self.max_length, self.meta_fields = tokenizer, max_length, meta_fields

    def run(self, documents: list[Document]) -> dict:
        texts = ["\n".join([*(str(d.meta[k]) for k in self.meta_fields if d.meta.get(k) is not None), d.content])
                 for d in documents]
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), 16):
            batch = order[start:start + 16]
            encoded = self.tokenizer([texts[i] for i in batch], truncation=True, max_length=self.max_length,
                                     padding=True, return_tensors="np")
            vectors[batch] = self.session.run(None, {n: encoded[n].astype(np.int64) for n in self.names})[0]
        return {"documents": [Document(content=d.content, embedding=v.tolist()) for d, v in zip(documents, vectors)]}


def export(model_name: str, attention: str, folder: Path) -> Path:
    """The model with this attention implementation, exported as the query embedder exports it."""
    model = SentenceTransformer(model_name, device="cpu", model_kwargs={"attn_implementation": attention})
    return _export(_MeanPooled(model), model, attention, folder=folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=600)
    args = parser.parse_args()

    ours, chunks = sample_chunks(args.limit)
    native = sorted(cpu_flags() & {"avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni", "amx_int8"})
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; CPU flags of note: {native or 'none'}")


    folder = Path(tempfile.mkdtemp())
    tokenizer = SentenceTransformer(ours.model, device="cpu").tokenizer
    candidates = {
        "plain Haystack (defaults, float32, batches of 32)":
            SentenceTransformersDocumentEmbedder(model=ours.model, progress_bar=False),
        "ours, PyTorch float32": with_compute_dtype(ours, "float32"),
        "ours, PyTorch bfloat16": with_compute_dtype(ours, "bfloat16"),
    }
    for attention in ("sdpa", "eager"):
        path = export(ours.model, attention, folder)
        quantized = folder / f"{attention}-int8.onnx"
        quantize_dynamic(str(path), str(quantized), per_channel=True, weight_type=QuantType.QInt8)
        for label, file in ((f"ONNX Runtime float32 ({attention} attention graph)", path),
                            (f"ONNX Runtime int8 ({attention} attention graph)", quantized)):
            candidates[label] = OnnxDocuments(file, tokenizer, 256, ours.meta_fields_to_embed)

    print("\n| embedder | chunks/s | / plain Haystack | cosine to float32: mean | worst |")
    print("|---|---:|---:|---:|---:|")
    plain_rate, reference = None, None
    for label, embedder in candidates.items():
        if hasattr(embedder, "warm_up"):
            embedder.warm_up()
        documents = [Document(content=c.content, meta=c.meta) for c in chunks]
        embedder.run(documents=documents[:32])  # warm the kernels
        started = time.perf_counter()
        vectors = np.array([d.embedding for d in embedder.run(documents=documents)["documents"]])
        rate = len(chunks) / (time.perf_counter() - started)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        plain_rate = plain_rate or rate
        if label.startswith("ours, PyTorch float32"):
            reference = vectors
        cosine = "-" if reference is None else f"{(vectors * reference).sum(1).mean():.5f}"
        worst = "-" if reference is None else f"{(vectors * reference).sum(1).min():.5f}"
        print(f"| {label} | {rate:.1f} | {rate / plain_rate:.2f} | {cosine} | {worst} |", flush=True)
    print(f"\n3x plain Haystack: {3 * plain_rate:.0f} chunks/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
