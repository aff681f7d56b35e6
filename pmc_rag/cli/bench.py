"""`pmc-rag bench`: benchmarks that print figures."""

from __future__ import annotations

import argparse
from pathlib import Path


def _bench_ingest(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_ingest import run_benchmark

    return run_benchmark(args.paths, pipeline_name=args.pipeline, limit=args.limit)


def _bench_keyword(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_keyword import run_benchmark

    return run_benchmark(total_chunks=args.chunks)


def _bench_scale(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_scale import run_benchmark

    try:
        sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]
    except ValueError:
        raise SystemExit(f"--sizes takes numbers of chunks separated by commas, e.g. 10000,100000; got {args.sizes!r}")
    if not sizes or min(sizes) < 100:
        raise SystemExit("--sizes needs at least one size of 100 chunks or more")
    return run_benchmark(sizes, args.out, questions=args.questions, recall_questions=args.recall_questions,
                         exact_questions=args.exact_questions, keep=args.keep)


def _bench_llm(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_llm import README_QUESTION, run_benchmark

    return run_benchmark(runs=args.runs, question=args.question or README_QUESTION, max_tokens=args.max_tokens,
                         paths=args.paths)


def _bench_stream(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_stream import run_benchmark

    return run_benchmark(questions=args.questions, start=args.start)


def _bench_embedders(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_embedders import run_benchmark

    return run_benchmark(limit=args.limit)


def _bench_peer(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_peer import run_benchmark

    return run_benchmark(limit=args.limit, offset=args.offset)


def _bench_devices(args: argparse.Namespace) -> int:
    import tempfile

    from pmc_rag.evaluation.bench_embedding_devices import run_benchmark, write_export
    from pmc_rag.evaluation.bench_ingest import chunk_files
    from pmc_rag.ingestion.sources import expand_paths
    from pmc_rag.paths import SAMPLE_CORPUS_DIR
    from pmc_rag.pipelines import load_pipeline

    indexing = load_pipeline("indexing")
    embedder = indexing.get_component("embedder")
    files, _ = expand_paths([str(SAMPLE_CORPUS_DIR)])
    chunks = chunk_files(indexing.get_component("chunker"), files)
    # The text the indexing embedder embeds: its meta fields, then the chunk, joined by its separator.
    fields = getattr(embedder, "meta_fields_to_embed", None) or []
    separator = getattr(embedder, "embedding_separator", "\n")
    texts = [separator.join([str(c.meta[f]) for f in fields if c.meta.get(f) is not None] + [c.content or ""])
             for c in chunks]
    if args.export:
        write_export(texts, embedder.model, args.export)
        print(f"Wrote {len(texts)} chunks' texts and {embedder.model} (float16) to {args.export}; there, run "
              f"python evaluation/bench_embedding_devices.py {args.export}")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        write_export(texts, embedder.model, Path(folder))
        run_benchmark(Path(folder), runs=args.runs, limit=args.limit)
    return 0
