"""Ingestion benchmark: chunks per second for parsing, embedding and writing, against plain Haystack.

    pmc-rag bench ingest [PATH...] [--limit N]

Both sides get the same chunks, in the same order, in the same process, against the same database:

* ours: the components of `pipelines/indexing.yml` (SectionChunker, the YAML's embedder settings, ArticleWriter);
* plain Haystack: `SentenceTransformersDocumentEmbedder` and `DocumentWriter` with their default settings (only
  the progress bar is off) writing to a `PgvectorDocumentStore` configured like ours.

Model loading is excluded from the timings (both embedders are warmed up first). The writes go to two
temporary tables that are dropped at the end. Prints a markdown table with the ratio ours / plain.
"""

from __future__ import annotations

import resource
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

from pmc_rag.components.article_writer import ArticleWriter
from pmc_rag.components.auto_precision_document_embedder import native_bf16_flags
from pmc_rag.ingestion.runner import entry_socket
from pmc_rag.ingestion.sources import expand_paths, read_articles
from pmc_rag.ingestion.xml import IngestError
from pmc_rag.database import ensure_database
from pmc_rag.paths import SAMPLE_CORPUS_DIR
from pmc_rag.pipelines import load_pipeline


def _timed(label: str, work: Callable[[], object], count: int) -> float:
    print(f"  {label} ...", end="", flush=True)
    started = time.perf_counter()
    work()
    seconds = time.perf_counter() - started
    print(f" {count} chunks in {seconds:.1f} s ({count / seconds:.1f} chunks/s)")
    return count / seconds


def _sample(chunks: list[Document], limit: int) -> list[Document]:
    """An even spread over the corpus (abstracts and full text alike), in corpus order."""
    if len(chunks) <= limit:
        return chunks
    step = len(chunks) / limit
    return [chunks[int(i * step)] for i in range(limit)]


def chunk_files(chunker: Any, files: list) -> list[Document]:
    """The chunks ingestion makes of these files (articles that cannot be read are left out)."""
    sections = [d for f in files for a in read_articles(Path(f)) if not isinstance(a, IngestError)
                for d in a.section_documents()]
    return chunker.run(documents=sections)["documents"]


def sample_chunks(limit: int, pipeline_name: str = "indexing") -> tuple[SentenceTransformersDocumentEmbedder,
                                                                        list[Document]]:
    """The indexing pipeline's embedder, and the chunks this benchmark times by default: `limit` of the sample
    corpus's, spread evenly (for scripts that measure embedding on the same chunks)."""
    pipeline = load_pipeline(pipeline_name)
    chunker, embedder, _ = _stages(pipeline, pipeline_name)
    files, _ = expand_paths([str(SAMPLE_CORPUS_DIR)])
    return embedder, _sample(chunk_files(chunker, files), limit)


def _store_like(template: PgvectorDocumentStore, table: str) -> PgvectorDocumentStore:
    return PgvectorDocumentStore(
        table_name=table,
        embedding_dimension=template.embedding_dimension,
        vector_function=template.vector_function,
        search_strategy=template.search_strategy,
        hnsw_index_creation_kwargs=template.hnsw_index_creation_kwargs,
        hnsw_index_name=f"{table}_hnsw",
        keyword_index_name=f"{table}_keyword",
        language=template.language,
    )


def _stages(pipeline: Pipeline, name: str) -> tuple[Any, SentenceTransformersDocumentEmbedder, ArticleWriter]:
    """The stages timed, found by what they are, not by their YAML names: the entry component (the chunker), the
    Sentence-Transformers embedder, and the ArticleWriter."""
    components = [pipeline.get_component(n) for n in pipeline.graph.nodes]
    embedder = next((c for c in components if isinstance(c, SentenceTransformersDocumentEmbedder)), None)
    writer = next((c for c in components if isinstance(c, ArticleWriter)), None)
    if embedder is None or writer is None:
        raise ValueError(f"pipeline {name}: the ingest benchmark compares a SentenceTransformersDocumentEmbedder and "
                         "an ArticleWriter with plain Haystack's; this pipeline lacks one")
    return pipeline.get_component(entry_socket(pipeline)), embedder, writer


def with_compute_dtype(embedder: SentenceTransformersDocumentEmbedder,
                       dtype: str) -> SentenceTransformersDocumentEmbedder:
    """A copy of `embedder` computing in `dtype`: by `compute_dtype` where it has one, else by `model_kwargs`."""
    spec = embedder.to_dict()
    parameters = spec["init_parameters"]
    if "compute_dtype" in parameters:
        parameters["compute_dtype"] = dtype
    else:
        parameters["model_kwargs"] = {**(parameters.get("model_kwargs") or {}), "torch_dtype": dtype}
    return type(embedder).from_dict(spec)


def run_benchmark(paths: list[str], pipeline_name: str = "indexing", limit: int = 1500) -> int:
    paths = paths or [str(SAMPLE_CORPUS_DIR)]
    print(f"Database: {ensure_database().description}")
    pipeline = load_pipeline(pipeline_name)
    chunker, our_embedder, our_writer = _stages(pipeline, pipeline_name)

    print("Parsing and chunking (ours; plain Haystack has no JATS/PubMed parser to compare with)")
    files, _ = expand_paths(paths)
    holder: dict[str, list] = {}

    def parse_and_chunk() -> None:
        holder["chunks"] = chunk_files(chunker, files)

    started = time.perf_counter()
    parse_and_chunk()
    all_chunks = holder["chunks"]
    parse_rate = len(all_chunks) / (time.perf_counter() - started)
    print(f"  {len(all_chunks)} chunks from {len(files)} files ({parse_rate:.0f} chunks/s)")
    chunks = _sample(all_chunks, limit)
    print(f"Timing {len(chunks)} of them (an even spread over the corpus)")

    plain_embedder = SentenceTransformersDocumentEmbedder(model=our_embedder.model, progress_bar=False)
    print("Loading models ...")
    for embedder in (our_embedder, plain_embedder):
        embedder.warm_up()
    ours_dtype = getattr(our_embedder, "compute_dtype_used", None) or "float32"
    print(f"  ours computes in {getattr(our_embedder, 'compute_description', '') or ours_dtype}")
    # The other precisions, for comparison: float32 and int8 (what "auto" picks on a CPU without native bfloat16),
    # and bfloat16 where the CPU has it natively (emulated, it is 6 times slower: "auto" never picks it there).
    others = [d for d in ("float32", "int8", "bfloat16") if d != ours_dtype and (
        d != "bfloat16" or native_bf16_flags())]
    other_embedders = {d: with_compute_dtype(our_embedder, d) for d in others}
    for embedder in other_embedders.values():
        embedder.warm_up()

    suffix = uuid.uuid4().hex[:8]
    template = our_writer.document_store
    our_store = _store_like(template, f"bench_ours_{suffix}")
    plain_store = _store_like(template, f"bench_plain_{suffix}")
    rates: dict[str, tuple[float, float]] = {}
    try:
        print("Embedding")
        embedded: dict[str, list[Document]] = {}
        ours = _timed(f"ours (indexing.yml settings: {ours_dtype})", lambda: embedded.__setitem__(
            "ours", our_embedder.run(documents=chunks)["documents"]), len(chunks))
        plain = _timed("plain Haystack (defaults)", lambda: embedded.__setitem__(
            "plain", plain_embedder.run(documents=[Document(id=c.id, content=c.content, meta=c.meta)
                                                   for c in chunks])["documents"]), len(chunks))
        rates["embedding"] = (ours, plain)
        other_rates = {d: _timed(f"ours in {d}", lambda e=e: e.run(documents=chunks), len(chunks))
                       for d, e in other_embedders.items()}

        print("Writing")
        writer = ArticleWriter(document_store=our_store)
        writer.warm_up()
        plain_writer = DocumentWriter(document_store=plain_store)
        plain_store.count_documents()  # create the table outside the timing, as warm_up does for ours
        ours = _timed("ours (ArticleWriter: replace per article, COPY)",
                      lambda: writer.run(documents=embedded["ours"]), len(chunks))
        plain = _timed("plain Haystack (DocumentWriter)",
                       lambda: plain_writer.run(documents=embedded["plain"]), len(chunks))
        rates["writing"] = (ours, plain)
        writer.close()
    finally:
        for store in (our_store, plain_store):
            store.delete_table()
            store.close()

    embed_ours, embed_plain = rates["embedding"]
    write_ours, write_plain = rates["writing"]
    def end_to_end(embedding: float, writing: float) -> float:
        return 1 / (1 / parse_rate + 1 / embedding + 1 / writing)

    plain_total = end_to_end(embed_plain, write_plain)
    rows = [
        ("parsing + chunking", parse_rate, None),
        (f"embedding ({ours_dtype}, as configured)", embed_ours, embed_plain),
        *[(f"embedding in {d}, for comparison", rate, embed_plain) for d, rate in other_rates.items()],
        ("writing", write_ours, write_plain),
        (f"all three ({ours_dtype}; same parser for both)", end_to_end(embed_ours, write_ours), plain_total),
        *[(f"all three, embedding in {d}", end_to_end(rate, write_ours), plain_total)
          for d, rate in other_rates.items()],
    ]
    print("\n| stage | ours (chunks/s) | plain Haystack (chunks/s) | ours / plain |")
    print("|---|---:|---:|---:|")
    for stage, ours, plain in rows:
        ratio = f"{ours / plain:.2f}" if plain else "-"
        print(f"| {stage} | {ours:.1f} | {f'{plain:.1f}' if plain else '-'} | {ratio} |")
    words = sum(len(c.content.split()) for c in chunks) / len(chunks)
    print(f"\nMean chunk: {words:.0f} words. Ours embeds title and section with each chunk "
          f"({our_embedder.meta_fields_to_embed}); plain Haystack embeds the text alone.")
    print(f"Peak memory (RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0
