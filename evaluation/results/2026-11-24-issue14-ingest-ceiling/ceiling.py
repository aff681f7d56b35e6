"""How fast can all-MiniLM-L6-v2 embed our chunks on this CPU at best? Compares the arithmetic an embedding run
needs with the rate this CPU multiplies matrices at, to say whether "ingestion 3x plain Haystack" can be reached
by engineering (batching, overlap, runtimes) or only by less arithmetic (another model, lower precision) or
other hardware.

    HF_HUB_OFFLINE=1 .venv/bin/python evaluation/results/2026-11-24-issue14-ingest-ceiling/ceiling.py [--limit 600]

Same chunks as `pmc-rag bench ingest` (an even spread over the sample corpus). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from haystack import Document
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

from pmc_rag.evaluation.bench_ingest import sample_chunks, with_compute_dtype


def matmul_rate(rows: int, width: int, repeats: int = 30) -> float:
    """GFLOP/s of float32 (rows x width) @ (width x 4*width) and (rows x width) @ (width x width): the shapes of a
    BERT layer's feed-forward and projection matrices, at torch's own thread count."""
    rates = []
    for out in (4 * width, width):
        a, b = torch.randn(rows, width), torch.randn(width, out)
        for _ in range(3):
            a @ b
        started = time.perf_counter()
        for _ in range(repeats):
            a @ b
        rates.append(2 * rows * width * out * repeats / (time.perf_counter() - started) / 1e9)
    return max(rates)


def encoder_flops(lengths: list[int], batch_size: int, layers: int, width: int, max_tokens: int) -> float:
    """Floating-point operations of a BERT encoder over texts of these token lengths, batched as Sentence
    Transformers does (longest first, each batch padded to its longest): per token and layer 24*d^2 in the
    matrices (Q, K, V, output: 4 d^2; feed-forward 2 * 4 d^2; 2 FLOPs each), plus 4*L*d in attention."""
    lengths = sorted((min(n, max_tokens) for n in lengths), reverse=True)
    total = 0.0
    for start in range(0, len(lengths), batch_size):
        batch = lengths[start:start + batch_size]
        padded = batch[0]
        total += len(batch) * layers * (24 * padded * width ** 2 + 4 * padded ** 2 * width)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=600)
    args = parser.parse_args()

    ours, chunks = sample_chunks(args.limit)
    ours = with_compute_dtype(ours, "float32")  # the ceiling is float32's; indexing.yml may pick bfloat16
    plain = SentenceTransformersDocumentEmbedder(model=ours.model, progress_bar=False)
    for embedder in (ours, plain):
        embedder.warm_up()

    model = ours.embedding_backend.model
    config = model[0].auto_model.config
    layers, width, max_tokens = config.num_hidden_layers, config.hidden_size, model.max_seq_length
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{layers} layers, width {width}, at most {max_tokens} tokens")
    rate = statistics.median(matmul_rate(16 * 256, width) for _ in range(3))
    print(f"float32 matrix multiply on this CPU: {rate:.0f} GFLOP/s (the ceiling for the encoder's matrices)")

    print("\n| embedder | batch | chunks/s | mean tokens | GFLOP per chunk | achieved GFLOP/s | share of ceiling "
          "| chunks/s at the ceiling |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    results = {}
    for name, embedder in (("ours (title, section, text)", ours), ("plain Haystack (text)", plain)):
        texts: list[str] = []
        backend = embedder.embedding_backend
        original = backend.embed
        backend.embed = lambda data, **kwargs: (texts.extend(data), original(data, **kwargs))[1]
        documents = [Document(id=c.id, content=c.content, meta=c.meta) for c in chunks]
        embedder.run(documents=documents[:32])  # warm the kernels
        texts.clear()
        started = time.perf_counter()
        embedder.run(documents=documents)
        seconds = time.perf_counter() - started
        backend.embed = original
        lengths = [len(ids) for ids in model.tokenizer(texts, add_special_tokens=True)["input_ids"]]
        flops = encoder_flops(lengths, embedder.batch_size, layers, width, max_tokens)
        per_chunk = flops / len(chunks) / 1e9
        achieved = flops / seconds / 1e9
        results[name] = len(chunks) / seconds
        print(f"| {name} | {embedder.batch_size} | {len(chunks) / seconds:.1f} | "
              f"{statistics.mean(min(n, max_tokens) for n in lengths):.0f} | {per_chunk:.2f} | {achieved:.0f} | "
              f"{achieved / rate:.0%} | {rate / per_chunk:.0f} |")
    target = 3 * results["plain Haystack (text)"]
    print(f"\n3x plain Haystack, measured here: {target:.0f} chunks/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
