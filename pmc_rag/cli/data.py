"""Commands on the data: setup, ingest, collections, status, and showing a pipeline file."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from pmc_rag.cli.common import EXIT_FAILED, EXIT_PARTIAL, _writer
from pmc_rag.cli.models import _check_local_model, _local_model_lines

if TYPE_CHECKING:
    from pmc_rag.local_llm.spec import LocalModelSpec


def _pipeline(args: argparse.Namespace) -> int:
    """Print the resolved YAML: what `Pipeline.loads` and Hayhooks get, a variant's base and changes applied."""
    import yaml

    from pmc_rag.pipelines import pipeline_spec

    print(yaml.safe_dump(pipeline_spec(args.name)[1], sort_keys=False, width=120), end="")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from pmc_rag.database import ensure_database
    from pmc_rag.ingestion.runner import ingest
    from pmc_rag.pipelines import load_pipeline

    pipeline = load_pipeline(args.pipeline)
    if not args.dry_run:
        print(f"Database: {ensure_database().description}")
    report = ingest(args.paths, pipeline, dry_run=args.dry_run, batch_words=args.batch_words,
                    progress=not args.no_progress, collection=args.collection)
    print(report.summary())
    if report.interrupted:
        return 130
    if report.articles == 0:
        return EXIT_FAILED
    return EXIT_PARTIAL if report.skipped else 0


def _collections(args: argparse.Namespace) -> int:
    from pmc_rag.database import ensure_database
    from pmc_rag.ingestion.collections import delete_collection, list_collections
    from pmc_rag.pipelines import document_store_of, load_pipeline

    ensure_database()
    store = document_store_of(load_pipeline(args.pipeline))
    if args.action == "delete":
        if not args.name:
            print("name the collection to delete: pmc-rag collections delete NAME", file=sys.stderr)
            return EXIT_FAILED
        deleted = delete_collection(store, args.name)
        print(f"Deleted collection {args.name}: {deleted['documents']} document(s), {deleted['chunks']} chunk(s)")
        return 0 if deleted["chunks"] else EXIT_PARTIAL
    rows = list_collections(store)
    if not rows:
        print("No collections (pmc-rag ingest --collection NAME PATH... makes one)")
    for row in rows:
        print(f"{row['collection']}: {row['documents']} document(s), {row['chunks']} chunk(s)")
    return 0


def _setup(args: argparse.Namespace) -> int:
    from pmc_rag.database import ensure_database
    from pmc_rag.ingestion.runner import ingest
    from pmc_rag.models import DEFAULT_LLM, EMBEDDED_LLMS, assemble_llm, seed_embedding_model
    from pmc_rag.paths import SAMPLE_CORPUS_DIR
    from pmc_rag.pipelines import load_declared_pipeline, load_pipeline

    print(f"Embedding model ready: {seed_embedding_model()}")
    answering = load_declared_pipeline(args.answer_pipeline)
    declared = answering.local_model
    name = declared.model if declared and not declared.model_path else DEFAULT_LLM  # the one the YAML names
    print(f"Embedded LLM ready ({EMBEDDED_LLMS[name].description}): checksum verified, {assemble_llm(name)}")
    if declared:
        _reencode(declared)
    for other in answering.other_local_models:
        _prepare_other_model(other)
    _check_local_model(args.answer_pipeline)
    print(f"Database: {ensure_database().description}")
    pipeline = load_pipeline(args.pipeline)
    writer = _writer(pipeline)
    if hasattr(writer, "warm_up"):  # set-up time: the writer creates the table and its BM25 index if missing
        writer.warm_up()
    chunks = writer.document_store.count_documents()
    if chunks:
        print(f"Index already holds {chunks} chunks: nothing to ingest.")
    elif args.no_sample:
        print("Index is empty; skipping the sample corpus as asked.")
    else:
        print(f"Index is empty: ingesting the sample corpus from {SAMPLE_CORPUS_DIR}")
        report = ingest([str(SAMPLE_CORPUS_DIR)], pipeline)
        print(report.summary())
        if report.interrupted or report.articles == 0:
            return EXIT_FAILED
    print(f"BM25: {_bm25_scorer_line(writer.document_store)}")
    _prepare_crisis_check()
    print(
        "\nReady. Next (with .venv/bin on your PATH):\n"
        "  pmc-rag ask \"QUESTION\"         a cited answer\n"
        "  pmc-rag serve                  REST and OpenAI-compatible chat on http://127.0.0.1:1416\n"
        "  pmc-rag status                 what is indexed\n"
        "  pmc-rag ingest PATH...         add PMC/JATS, PubMed XML, PubMedQA JSONL, PDF or text files\n"
        "  scripts/test.sh                run the test suite"
    )
    if args.serve:
        from pmc_rag.serving.app import serve
        from pmc_rag.serving.config import load_serve_config

        print("\nStarting the server (scripts/setup.sh --no-serve sets up without serving)...", flush=True)
        serve(load_serve_config())
    return 0


def _reencode(spec: LocalModelSpec) -> None:
    """The declared model's weights re-encoded once, here, rather than at the first question."""
    from pmc_rag.models import PACKAGED, ModelError, reencoded_llm

    if spec.model_path or spec.weights == PACKAGED:
        return
    try:
        print(f"Its weights re-encoded as {spec.weights} ({spec.model}, `weights:`): "
              f"{reencoded_llm(spec.model, spec.weights)}")
    except ModelError as problem:
        print(f"warning: {problem}; the packaged weights will answer", file=sys.stderr)


def _prepare_other_model(spec: LocalModelSpec) -> None:
    """A model another component asks (the translator's), installed from its packages when missing. Not fatal:
    without it that component fails over to the answering model, as its YAML says."""
    from pmc_rag.models import EMBEDDED_LLMS, ModelError, assemble_llm, install_llm

    if spec.model_path:
        return
    model = EMBEDDED_LLMS[spec.model]
    try:
        try:
            path = assemble_llm(spec.model)
        except ModelError:  # its packages are not installed: they are not dependencies of pmc-rag
            print(f"Installing {spec.model} ({model.description}) for {spec.url}...", flush=True)
            path = install_llm(spec.model)
    except ModelError as problem:
        print(f"warning: {problem}; the components that ask it fail over to the answering model", file=sys.stderr)
        return
    print(f"Embedded LLM ready ({model.description}): checksum verified, {path}")
    _reencode(spec)


def _prepare_crisis_check() -> None:
    """Embeds the crisis check's exemplars once, here, rather than in the first question's wait (6 s for 2,367 on
    2 cores, 2026-11-29); saved in the models folder, read back in 2 s after that."""
    import time

    from pmc_rag.answering.crisis import exemplar_layer

    started = time.perf_counter()
    layer = exemplar_layer()
    if layer is None:
        print("Crisis check: its exemplar layer could not be loaded; the rules and the classifier decide")
    else:
        print(f"Crisis check ready: {layer.size} exemplars ({time.perf_counter() - started:.0f} s)")


def _status(args: argparse.Namespace) -> int:
    from pmc_rag.database import ensure_database
    from pmc_rag.models import DEFAULT_LLM, EMBEDDED_LLMS, EMBEDDING_MODEL, cached_embedding_model, is_verified
    from pmc_rag.pipelines import declared_document_store

    missing = "missing: run pmc-rag setup"
    cached = cached_embedding_model()
    print(f"Embedding model {EMBEDDING_MODEL}: {f'in the local cache, {cached}' if cached else missing}")
    llm = EMBEDDED_LLMS[DEFAULT_LLM]
    print(f"Embedded LLM: {f'{llm.path} (checksum verified)' if is_verified(llm) else missing}")
    for line in _local_model_lines(args.answer_pipeline):
        print(line)
    print(f"Database: {ensure_database().description}")
    store = declared_document_store(args.pipeline)
    store.count_documents()  # creates the table if missing, so the query below can run
    print(f"Table: {store.schema_name}.{store.table_name} ({store.embedding_dimension}-d embeddings)")
    rows = store.count_unique_metadata_by_filter(filters={}, metadata_fields=["source_id"])
    print(f"Chunks: {store.count_documents()}  Articles: {rows.get('source_id', 0)}")
    print(f"BM25: {_bm25_scorer_line(store)}")
    return 0


def _bm25_scorer_line(store: Any) -> str:
    from pmc_rag.components import bm25_native_scorer as native
    from pmc_rag.components.bm25_index import BM25Tables, bm25_index_exists, native_scorer_installed
    from pmc_rag.components.store_connection import connect

    with connect(store) as connection:
        tables = BM25Tables.of(store)
        if not bm25_index_exists(connection, tables):
            return "no index yet (the first ingestion builds it)"
        if native_scorer_installed(connection, tables):
            return "native scorer (C, components/resources/bm25_scan.c) over packed postings"
    why = "the native scorer is turned off by PMC_RAG_BM25_NATIVE" if not native.enabled() else \
        ("the native scorer is not installed; `pmc-rag setup` installs it where it can be built (a C compiler is "
         "needed) and the server can load it, and logs why not")
    return f"SQL search (MaxScore): {why}"
