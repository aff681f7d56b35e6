"""Embedding throughput per device, precision and batch size, with each precision's agreement with float32.

    pmc-rag bench devices                    # this machine, on the ingested corpus's chunks
    pmc-rag bench devices --export DIR       # write the chunks' texts and the model to DIR for another machine
    python evaluation/bench_embedding_devices.py DIR   # there: needs only torch and sentence-transformers

Ingestion's cost is embedding (`pmc-rag bench ingest`), so this is the figure that says how fast a corpus of
millions of chunks goes in on a GPU against the CPU. Each row embeds the same texts (title, section and chunk
text joined as `pipelines/indexing.yml` joins them), after a warm-up, and reports:

* chunks/s, the best of `--runs` passes over all the texts;
* the lowest and mean cosine between its vectors and float32's on the CPU (the vectors the index holds today);
* the GPU's peak memory for that row.

This file imports neither Haystack nor pmc_rag, so it runs on a machine with a GPU where the project is not
installed (its Python has torch and sentence-transformers). The model is exported in float16 to keep the copy
small; every row, float32 included, starts from those same weights.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import statistics
import sys
import time
from pathlib import Path

TEXTS_FILE = "texts.jsonl.gz"
MODEL_FOLDER = "model"
# The stock embedder's own default and pipelines/indexing.yml's CPU choice, then what a GPU can take.
BATCH_SIZES = (16, 64, 256)


def write_export(texts: list[str], model_name: str, folder: Path) -> None:
    """Write the texts and a float16 copy of the model where `run_benchmark` (on any machine) reads them."""
    from sentence_transformers import SentenceTransformer

    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / TEXTS_FILE, "wt", encoding="utf-8") as out:
        for text in texts:
            out.write(json.dumps(text) + "\n")
    model = SentenceTransformer(model_name, device="cpu")
    model.half()
    model.save(str(folder / MODEL_FOLDER), safe_serialization=True)


def read_texts(folder: Path) -> list[str]:
    with gzip.open(folder / TEXTS_FILE, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _rows_to_run(devices: list[str], batch_sizes: tuple[int, ...],
                 cpu_batch_sizes: tuple[int, ...]) -> list[tuple[str, str, int]]:
    rows = []
    for device in devices:
        # float16 is slow or unsupported on most CPUs; bfloat16 is what a CPU with AVX-512 BF16 or AMX runs.
        dtypes = ("float32", "bfloat16") if device == "cpu" else ("float32", "float16", "bfloat16")
        for dtype in dtypes:
            for batch in (cpu_batch_sizes if device == "cpu" else batch_sizes):
                rows.append((device, dtype, batch))
    return rows


def run_benchmark(folder: Path, runs: int = 3, limit: int | None = None, devices: list[str] | None = None,
                  batch_sizes: tuple[int, ...] = BATCH_SIZES, cpu_batch_sizes: tuple[int, ...] = (16, 64),
                  cpu_runs: int | None = None) -> list[dict]:
    """Embed the exported texts in each (device, precision, batch size); print a markdown table; return its rows."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    texts = read_texts(folder)[:limit] if limit else read_texts(folder)
    if devices is None:
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"{len(texts)} chunks; CPU: {_cpu_name()} ({torch.get_num_threads()} threads); GPU: {gpu}; "
          f"torch {torch.__version__}", flush=True)

    def embed(model: SentenceTransformer, batch: int) -> np.ndarray:
        # Scaled to length 1 in float32, as the indexing embedder does: in bfloat16 the norms stray by ~1e-3.
        vectors = model.encode(texts, batch_size=batch, convert_to_tensor=True, show_progress_bar=False)
        return torch.nn.functional.normalize(vectors.float(), dim=-1).cpu().numpy()

    reference = None
    results = []
    for device, dtype, batch in _rows_to_run(devices, batch_sizes, cpu_batch_sizes):
        model = SentenceTransformer(str(folder / MODEL_FOLDER), device=device)
        model.to(getattr(torch, dtype))
        model.encode(texts[:batch * 2], batch_size=batch, show_progress_bar=False)   # warm-up: kernels, caches
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        rates = []
        passes = (cpu_runs or runs) if device == "cpu" else runs
        for _ in range(passes):
            started = time.perf_counter()
            vectors = embed(model, batch)
            if device == "cuda":
                torch.cuda.synchronize()
            rates.append(len(texts) / (time.perf_counter() - started))
        if reference is None:   # the first row is the CPU in float32: the vectors the index holds
            reference = vectors
        cosines = np.sum(vectors * reference, axis=1)
        row = {"device": device, "dtype": dtype, "batch_size": batch, "chunks_per_s": max(rates),
               "chunks_per_s_median": statistics.median(rates), "min_cosine": float(cosines.min()),
               "mean_cosine": float(cosines.mean()),
               "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None}
        results.append(row)
        print(f"  {device} {dtype} batch {batch}: {row['chunks_per_s']:.0f} chunks/s", flush=True)
        del model
    _print_table(results)
    return results


def _print_table(results: list[dict]) -> None:
    baseline = results[0]["chunks_per_s"]
    print("\n| device | precision | batch | chunks/s (best) | x CPU float32 | min cosine | mean cosine | GPU peak |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        peak = f"{r['peak_gpu_mb']:.0f} MB" if r["peak_gpu_mb"] is not None else "-"
        print(f"| {r['device']} | {r['dtype']} | {r['batch_size']} | {r['chunks_per_s']:.0f} | "
              f"{r['chunks_per_s'] / baseline:.1f} | {r['min_cosine']:.5f} | {r['mean_cosine']:.6f} | {peak} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help=f"folder holding {TEXTS_FILE} and {MODEL_FOLDER}/ "
                                                   "(made by `pmc-rag bench devices --export`)")
    parser.add_argument("--runs", type=int, default=3, help="timed passes per row (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, help="embed only the first N texts")
    parser.add_argument("--cpu-batches", default="16,64", help="batch sizes tried on the CPU (default: %(default)s)")
    parser.add_argument("--cpu-runs", type=int, default=None, help="timed passes per CPU row (default: --runs)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    if not (args.folder / TEXTS_FILE).exists():
        print(f"{args.folder / TEXTS_FILE} is missing: make it with `pmc-rag bench devices --export "
              f"{args.folder}`", file=sys.stderr)
        return 2
    rows = run_benchmark(args.folder, runs=args.runs, limit=args.limit, cpu_runs=args.cpu_runs,
                         cpu_batch_sizes=tuple(int(b) for b in args.cpu_batches.split(",")))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
