"""Run ingestion: files in, articles parsed, the indexing pipeline run batch by batch, a report out.

Articles are read lazily, a window at a time, so memory stays flat however many files there are. Each batch
(whole articles, about `batch_words` words) is one pipeline run and one database transaction, so an
interrupted run leaves every article either fully stored or not stored.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from haystack import Document, Pipeline
from haystack.core.errors import PipelineRuntimeError
from tqdm import tqdm

from pmc_rag.components.article_writer import ArticleWriter, EmbeddingDimensionError
from pmc_rag.ingestion.article import Article
from pmc_rag.ingestion.documents import check_collection
from pmc_rag.ingestion.sources import expand_paths, read_articles
from pmc_rag.ingestion.xml import IngestError


@dataclass
class IngestReport:
    files: int = 0
    articles: int = 0
    chunks: int = 0
    chunks_replaced: int = 0
    skipped: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    seconds: float = 0.0
    dry_run: bool = False
    interrupted: bool = False
    embedding: str = ""  # the arithmetic the embedder chose, e.g. "bfloat16 (this CPU has avx512_bf16; ...)"

    def summary(self) -> str:
        verb = "would be ingested" if self.dry_run else "ingested"
        rate = f" ({self.chunks / self.seconds:.1f} chunks/s)" if self.seconds and self.chunks else ""
        lines = [
            f"Files read:        {self.files}",
            f"Articles {verb}: {self.articles}",
            f"Chunks {'planned' if self.dry_run else 'written'}:    {self.chunks}{rate}",
        ]
        if not self.dry_run:
            lines.append(f"Old chunks replaced: {self.chunks_replaced}")
        lines.append(f"Skipped:           {len(self.skipped)}")
        lines += [f"  - {reason}" for reason in self.skipped]
        if self.superseded:
            lines.append(f"Repeated articles (the last copy read was kept): {len(self.superseded)}")
            lines += [f"  - {note}" for note in self.superseded]
        if self.embedding:
            lines.append(f"Embedding in:      {self.embedding}")
        lines.append(f"Time:              {self.seconds:.1f} s")
        if self.interrupted:
            lines.append("Interrupted: the articles counted above are stored completely; nothing else was stored.")
        return "\n".join(lines)


def entry_socket(pipeline: Pipeline) -> str:
    """The component whose unconnected `documents` input takes the section Documents."""
    entries = [name for name, sockets in pipeline.inputs().items() if "documents" in sockets]
    if len(entries) != 1:
        raise ValueError(
            "the indexing pipeline needs exactly one component with an unconnected `documents` input (the "
            f"chunker); found {entries or 'none'}"
        )
    return entries[0]


def ingest(
    paths: Iterable[str],
    pipeline: Pipeline,
    *,
    dry_run: bool = False,
    batch_words: int = 20_000,
    window_articles: int = 2_000,
    progress: bool = True,
    collection: str | None = None,
) -> IngestReport:
    """Ingest every article found under `paths` with the indexing `pipeline` and report what happened.

    :param dry_run: Parse and chunk only: no embedding, nothing written.
    :param batch_words: Words of section text per pipeline run (and per transaction); whole articles only.
    :param window_articles: Articles read ahead at a time (the progress bar's total grows window by window).
    :param progress: Show a progress bar (on stderr).
    :param collection: Put every document into this collection (`meta.collection`), to search or delete
        them together.
    """
    if collection is not None:
        check_collection(collection)
    started = time.perf_counter()
    report = IngestReport(dry_run=dry_run)
    files, problems = expand_paths(paths)
    report.files = len(files)
    report.skipped += [str(p) for p in problems]
    return _ingest(_articles(files, report, collection), pipeline, report, started, dry_run=dry_run,
                   batch_words=batch_words, window_articles=window_articles, progress=progress)


def ingest_articles(articles: Iterable[Article], pipeline: Pipeline, *, batch_words: int = 20_000,
                    collection: str | None = None) -> IngestReport:
    """Ingest articles already read (an upload's, read in a contained process), without a progress bar."""
    if collection is not None:
        check_collection(collection)
    collected = []
    for article in articles:
        article.collection = collection or article.collection
        collected.append(article)
    report = IngestReport()
    return _ingest(iter(collected), pipeline, report, time.perf_counter(), batch_words=batch_words,
                   window_articles=max(len(collected), 1), progress=False)


def _ingest(articles: Iterator[Article], pipeline: Pipeline, report: IngestReport, started: float, *,
            dry_run: bool = False, batch_words: int, window_articles: int, progress: bool) -> IngestReport:
    entry = entry_socket(pipeline)
    if not dry_run:
        pipeline.warm_up()
        # An embedder that picks its precision by the machine says what it picked (AutoPrecisionDocumentEmbedder).
        described = (getattr(pipeline.get_component(name), "compute_description", "") for name in pipeline.graph.nodes)
        report.embedding = "; ".join(description for description in described if description)
        _check_dimensions_first(pipeline)

    # The bar counts words, not articles: a full-text paper takes a hundred times longer than an abstract,
    # and words keep the time estimate honest whatever the mix.
    bar = tqdm(total=0, unit="word", unit_scale=True, disable=not progress, dynamic_ncols=True, desc="Ingesting")
    try:
        while window := list(islice(articles, window_articles)):
            sized = [(article, _words(article)) for article in _latest_copies(window, report)]
            bar.total += sum(words for _, words in sized)
            bar.refresh()
            for batch, words in _batches(sized, batch_words):
                documents = [doc for article in batch for doc in article.section_documents()]
                if dry_run:
                    report.chunks += len(pipeline.get_component(entry).run(documents=documents)["documents"])
                else:
                    outputs = _run(pipeline, entry, documents)
                    report.chunks += sum(o.get("documents_written", 0) for o in outputs.values())
                    report.chunks_replaced += sum(o.get("documents_deleted", 0) for o in outputs.values())
                report.articles += len(batch)
                bar.set_postfix(articles=report.articles, chunks=report.chunks, skipped=len(report.skipped),
                                refresh=False)
                bar.update(words)
    except KeyboardInterrupt:
        report.interrupted = True
    finally:
        bar.close()
        report.seconds = time.perf_counter() - started
    return report


def _check_dimensions_first(pipeline: Pipeline) -> None:
    """An embedder whose vectors do not fit the table its writer fills is an error before anything is embedded,
    not after the first batch: one short text goes through the component that feeds each `ArticleWriter`."""
    for name, writer in pipeline.walk():
        if not isinstance(writer, ArticleWriter):
            continue
        for sender, _, data in pipeline.graph.in_edges(name, data=True):
            if data.get("to_socket") is None or data["to_socket"].name != "documents":
                continue
            probe = [Document(content="dimension check", meta={"title": "", "section": ""})]
            try:
                embedded = pipeline.get_component(sender).run(documents=probe).get("documents") or []
            except Exception:  # noqa: BLE001 - not an embedder this can ask alone: the writer checks at writing
                continue
            if embedded and embedded[0].embedding is not None:
                writer.check_dimension(len(embedded[0].embedding), "the embedder's output dimension")


def _run(pipeline: Pipeline, entry: str, documents: list) -> dict:
    try:
        return pipeline.run({entry: {"documents": documents}})
    except PipelineRuntimeError as error:
        # A dimension mismatch already says which YAML keys to change: show it without Haystack's wrapper.
        if isinstance(error.__cause__, EmbeddingDimensionError):
            raise error.__cause__ from None
        raise


def _articles(files: list, report: IngestReport, collection: str | None) -> Iterator[Article]:
    for path in files:
        for item in read_articles(path):
            if isinstance(item, IngestError):
                report.skipped.append(str(item))
            else:
                item.collection = collection or item.collection
                yield item


def _latest_copies(window: list[Article], report: IngestReport) -> list[Article]:
    """One article per source id: a later copy (a re-exported file, say) replaces an earlier one.

    Within a window this is reported; across windows the later copy simply replaces the stored one.
    """
    latest: dict[str, Article] = {}
    for article in window:
        earlier = latest.pop(article.source_id, None)
        if earlier is not None:
            report.superseded.append(
                f"{article.source_id}: {earlier.source_file} was replaced by {article.source_file}")
        latest[article.source_id] = article
    return list(latest.values())


def _words(article: Article) -> int:
    return sum(len(section.text.split()) for section in article.sections)


def _batches(sized: list[tuple[Article, int]], batch_words: int) -> Iterator[tuple[list[Article], int]]:
    """Whole articles in groups of about `batch_words` words, each with its word count."""
    batch: list[Article] = []
    words = 0
    for article, article_words in sized:
        batch.append(article)
        words += article_words
        if words >= batch_words:
            yield batch, words
            batch, words = [], 0
    if batch:
        yield batch, words

