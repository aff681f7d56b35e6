"""Ingestion end to end through pipelines/indexing.yml, the real embedder and the real database."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from haystack import Pipeline
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder
from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever

from pmc_rag.components.article_writer import EmbeddingDimensionError
from pmc_rag.components.bm25_index import BM25Tables, native_scorer_installed, packed_blocks_in_step
from pmc_rag.components.section_chunker import SectionChunker
from pmc_rag.ingestion.runner import ingest
from pmc_rag.ingestion.sources import read_articles
from pmc_rag.pipelines import ALLOWED_MODULES

from conftest import CORPUS, PROJECT_ROOT, indexing_yaml_for, make_store

FULL_TEXT = [CORPUS / "pmc_oa/1471-2180-11-174.nxml", CORPUS / "pmc_oa/PMC4816447.xml",
             CORPUS / "plos/journal.pmed.1001518.xml", CORPUS / "plos/journal.pone.0152459.xml"]


def stored_ids(store) -> Counter:
    return Counter(d.meta["source_id"] for d in store.filter_documents())


def expected_chunks(paths, chunker: SectionChunker) -> Counter:
    documents = [d for p in paths for a in read_articles(Path(p)) for d in a.section_documents()]
    return Counter(c.meta["source_id"] for c in chunker.run(documents=documents)["documents"])


def test_round_trip_finds_the_right_article_by_meaning(store, indexing_pipeline):
    report = ingest([str(p) for p in FULL_TEXT], indexing_pipeline, progress=False)
    assert (report.files, report.articles, report.skipped) == (4, 4, [])
    assert report.chunks == store.count_documents() > 100
    assert stored_ids(store) == expected_chunks(FULL_TEXT, indexing_pipeline.get_component("chunker"))

    chunk = store.filter_documents({"field": "meta.source_id", "operator": "==", "value": "PMC3166277"})[0]
    assert chunk.meta["title"].startswith("Factors influencing lysis time")
    assert chunk.meta["doi"] == "10.1186/1471-2180-11-174" and chunk.meta["license"] == "CC BY 2.0"
    assert chunk.meta["year"] == 2011 and chunk.meta["journal"] == "BMC Microbiology"
    assert len(chunk.embedding) == 384

    query = Pipeline()
    query.add_component("embed", SentenceTransformersTextEmbedder(model="sentence-transformers/all-MiniLM-L6-v2",
                                                                  normalize_embeddings=True, progress_bar=False))
    query.add_component("retrieve", PgvectorEmbeddingRetriever(document_store=store, top_k=3))
    query.connect("embed.embedding", "retrieve.query_embedding")
    questions = {
        "Why does the time of host cell lysis vary between individual phage lambda infections?": "PMC3166277",
        "Is erlotinib effective as first-line treatment of advanced non-small cell lung cancer?": "PMC4816447",
        "Does acupuncture or counselling help patients with depression in primary care?":
            "doi:10.1371/journal.pmed.1001518",
    }
    for question, source_id in questions.items():
        top = query.run({"embed": {"text": question}})["retrieve"]["documents"][0]
        assert top.meta["source_id"] == source_id, question


def test_reingesting_replaces_and_changes_nothing(store, indexing_pipeline):
    paths = [str(p) for p in FULL_TEXT[:2]]
    first = ingest(paths, indexing_pipeline, progress=False)
    ids_before = {d.id for d in store.filter_documents()}
    again = ingest(paths, indexing_pipeline, progress=False)
    assert again.chunks == first.chunks == again.chunks_replaced == store.count_documents()
    assert {d.id for d in store.filter_documents()} == ids_before


def test_dry_run_writes_nothing(store, indexing_pipeline):
    report = ingest([str(FULL_TEXT[0])], indexing_pipeline, dry_run=True, progress=False)
    assert report.articles == 1 and report.chunks > 10
    assert store.count_documents() == 0


def test_bad_files_are_reported_with_reasons_and_the_rest_is_ingested(store, indexing_pipeline, tmp_path,
                                                                     tmp_path_factory, monkeypatch):
    good = CORPUS / "pmc_oa/PMC4816447.xml"
    real = (CORPUS / "pmc_oa/PMC6580637.xml").read_bytes()
    (tmp_path / "good.xml").write_bytes(good.read_bytes())
    (tmp_path / "malformed.xml").write_bytes(b"<article><front><article-meta></front></article>")
    (tmp_path / "truncated.xml").write_bytes(real[: len(real) // 2])
    (tmp_path / "unknown.xml").write_bytes(b"GIF89a not xml at all")  # (PDF bytes would be read as a PDF)
    (tmp_path / "other.xml").write_bytes(b"<rss><channel/></rss>")
    (tmp_path / "latin1.xml").write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?><article><front><article-meta>'
        b'<article-id pub-id-type="pmc">1</article-id></article-meta></front><body><p>caf\xe9</p></body></article>')
    (tmp_path / "notext.xml").write_bytes(
        b'<article><front><article-meta><article-id pub-id-type="pmc">42</article-id><title-group>'
        b"<article-title>Only a title</article-title></title-group></article-meta></front></article>")
    (tmp_path / "dangling.xml").symlink_to(tmp_path / "gone.xml")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    # Valid XML in UTF-16 with its byte order mark is read like any other.
    text = real.decode("utf-8").replace('encoding="UTF-8"', 'encoding="UTF-16"').replace("encoding='UTF-8'",
                                                                                         "encoding='UTF-16'")
    (tmp_path / "utf16.xml").write_bytes(text.encode("utf-16"))
    # 4 MB of zeros in 4 kB: over the 2 MB limit set below, it fails at the limit instead of filling memory.
    (tmp_path / "bomb.xml.gz").write_bytes(gzip.compress(b"<a>" + b"0" * 4_000_000 + b"</a>"))
    monkeypatch.setenv("PMC_RAG_MAX_FILE_MB", "2")
    outside = tmp_path_factory.mktemp("outside")  # named on the command line, not found in a folder
    os.mkfifo(outside / "fifo.xml")
    (outside / "loop.xml").symlink_to(outside / "loop2.xml")
    (outside / "loop2.xml").symlink_to(outside / "loop.xml")

    report = ingest([str(tmp_path), str(tmp_path / "missing.xml"), str(outside / "fifo.xml"),
                     str(outside / "loop.xml")], indexing_pipeline, progress=False)  # returns: the FIFO is not read

    assert report.articles == 2 and stored_ids(store).keys() == {"PMC4816447", "PMC6580637"}
    reasons = "\n".join(report.skipped)
    for expected in [
        "malformed.xml: malformed or truncated XML",
        "truncated.xml: malformed or truncated XML",
        "unknown.xml: unknown format",
        "other.xml: unknown XML format <rss>",
        "latin1.xml: bad character encoding",
        "notext.xml: PMC42 has no text",
        "dangling.xml: a symbolic link to",
        "empty.jsonl: the file is empty",
        "missing.xml: no such file or folder",
        "bomb.xml.gz: more than 2 MB once decompressed (a compressed bomb?)",
        "fifo.xml: not a regular file",
        "loop.xml: a loop of symbolic links",
    ]:
        assert expected in reasons, f"{expected!r} not in:\n{reasons}"
    assert len(report.skipped) == 12


def test_a_repeated_article_is_kept_once_the_last_copy_winning(store, indexing_pipeline, tmp_path):
    copy = tmp_path / "copy-of-PMC4816447.xml"
    copy.write_bytes((CORPUS / "pmc_oa/PMC4816447.xml").read_bytes())
    report = ingest([str(CORPUS / "pmc_oa/PMC4816447.xml"), str(copy)], indexing_pipeline, progress=False)
    assert report.articles == 1 and len(report.superseded) == 1
    assert {d.meta["source_file"] for d in store.filter_documents()} == {str(copy)}


def test_a_store_dimension_that_does_not_match_the_table_stops_before_embedding(store, indexing_pipeline):
    ingest([str(FULL_TEXT[0])], indexing_pipeline, progress=False)
    edited = Pipeline.loads(indexing_yaml_for(store.table_name, **{"store.embedding_dimension": 768}),
                            allowed_modules=ALLOWED_MODULES)
    with pytest.raises(EmbeddingDimensionError, match="embedding_dimension: 768"):
        ingest([str(FULL_TEXT[1])], edited, progress=False)
    assert stored_ids(store).keys() == {"PMC3166277"}


def test_an_embedder_that_does_not_match_the_table_is_a_clear_error(table_name):
    # The YAML promises 768-d vectors for a new table, but the embedder makes 384-d ones.
    pipeline = Pipeline.loads(indexing_yaml_for(table_name, **{"store.embedding_dimension": 768}),
                              allowed_modules=ALLOWED_MODULES)
    with pytest.raises(EmbeddingDimensionError, match="holds 768-dimensional .* output dimension is 384"):
        ingest([str(FULL_TEXT[0])], pipeline, progress=False)
    store = make_store(table_name, dimension=768)
    assert store.count_documents() == 0
    store.delete_table()


@pytest.mark.integration  # a process killed mid-ingestion
def test_killed_ingestion_leaves_every_article_whole_or_absent(store, tmp_path, pg_conn_str):
    yaml_path = tmp_path / "indexing.yml"
    yaml_path.write_text(indexing_yaml_for(store.table_name))
    corpus = CORPUS / "pubmedqa/corpus.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "pmc_rag.cli", "ingest", str(corpus), "--pipeline", str(yaml_path),
         "--batch-words", "1500", "--no-progress"],
        env={**os.environ, "PG_CONN_STR": pg_conn_str}, cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while store.count_documents() < 50 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        assert process.poll() is None, "ingestion finished before it could be interrupted"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)

    stored = stored_ids(store)
    expected = expected_chunks([corpus], SectionChunker(target_words=180, overlap_words=30))
    assert 0 < len(stored) < len(expected)
    incomplete = {source: count for source, count in stored.items() if count != expected[source]}
    assert incomplete == {}


@pytest.fixture(scope="session")
def tiny_sentence_transformer(tmp_path_factory) -> Path:
    """A 32-dimensional Sentence-Transformers model with random weights, built here (nothing to download)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    from pmc_rag.models import seed_embedding_model

    folder = tmp_path_factory.mktemp("tiny-st")
    tokenizer = AutoTokenizer.from_pretrained(str(seed_embedding_model()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256)
    BertModel(config).save_pretrained(folder / "bert")
    tokenizer.save_pretrained(folder / "bert")
    transformer = Transformer(str(folder / "bert"), max_seq_length=128)
    pooling = Pooling(transformer.get_embedding_dimension())
    SentenceTransformer(modules=[transformer, pooling]).save(str(folder / "model"))
    return folder / "model"


def test_another_sentence_transformers_model_is_a_yaml_edit(table_name, tiny_sentence_transformer):
    yaml_text = indexing_yaml_for(table_name, **{"embedder.model": str(tiny_sentence_transformer),
                                                 "store.embedding_dimension": 32})
    pipeline = Pipeline.loads(yaml_text, allowed_modules=ALLOWED_MODULES)
    report = ingest([str(FULL_TEXT[0])], pipeline, progress=False)
    store = make_store(table_name, dimension=32)
    try:
        assert report.articles == 1 and store.count_documents() == report.chunks > 0
        assert len(store.filter_documents()[0].embedding) == 32
    finally:
        store.delete_table()


def test_ollama_embeddings_are_a_yaml_edit_and_an_absent_server_is_a_clear_error(table_name):
    import yaml

    spec = yaml.safe_load(indexing_yaml_for(table_name, **{"store.embedding_dimension": 768}))
    spec["components"]["embedder"] = {
        "type": "haystack_integrations.components.embedders.ollama.document_embedder.OllamaDocumentEmbedder",
        "init_parameters": {"model": "nomic-embed-text", "url": "http://127.0.0.1:9"},  # nothing listens there
    }
    pipeline = Pipeline.loads(yaml.safe_dump(spec), allowed_modules=ALLOWED_MODULES)
    with pytest.raises(Exception, match="Failed to connect to Ollama"):
        ingest([str(FULL_TEXT[0])], pipeline, progress=False)
    store = make_store(table_name, dimension=768)
    assert store.count_documents() == 0
    store.delete_table()


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_two_ingestions_at_once_finish_and_leave_the_statistics_of_one(table_name, tmp_path, pg_conn_str,
                                                                      tiny_sentence_transformer):
    """Two `pmc-rag ingest` processes writing to one table, with 60 articles in both inputs: no deadlock, every
    article once, and BM25 statistics equal to those computed afresh from the stored chunks. The embedder is the
    tiny random model: what is tested is the writers' locking, and MiniLM made this the slowest test (75 s)."""
    store = make_store(table_name, dimension=32)
    lines = (CORPUS / "pubmedqa/corpus.jsonl").read_text().splitlines()[:360]
    (tmp_path / "first.jsonl").write_text("\n".join(lines[:210]) + "\n")
    (tmp_path / "second.jsonl").write_text("\n".join(lines[150:]) + "\n")
    yaml_path = tmp_path / "indexing.yml"
    yaml_path.write_text(indexing_yaml_for(table_name, **{"embedder.model": str(tiny_sentence_transformer),
                                                          "store.embedding_dimension": 32}))
    processes = [subprocess.Popen(
        [sys.executable, "-m", "pmc_rag.cli", "ingest", str(tmp_path / name), "--pipeline", str(yaml_path),
         "--batch-words", "800", "--no-progress"],
        env={**os.environ, "PG_CONN_STR": pg_conn_str}, cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for name in ("first.jsonl", "second.jsonl")]
    outputs = [process.communicate(timeout=600)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs

    everything = tmp_path / "all.jsonl"
    everything.write_text("\n".join(lines) + "\n")
    assert stored_ids(store) == expected_chunks([everything], SectionChunker(target_words=180, overlap_words=30))
    tables = BM25Tables.of(store)
    with psycopg.connect(pg_conn_str) as connection:
        indexed = connection.execute(tables.format("SELECT doc_count, total_len FROM {stats}")).fetchone()
        afresh = connection.execute(tables.format(
            "SELECT count(DISTINCT id), coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) "
            "FROM {chunks} c LEFT JOIN LATERAL unnest(to_tsvector({language}::regconfig, c.content)) u ON true"
        )).fetchone()
        term_df = connection.execute(tables.format(
            "SELECT term, df FROM {terms} WHERE df > 0 ORDER BY term")).fetchall()
        afresh_df = connection.execute(tables.format(
            "SELECT u.lexeme, count(*) FROM {chunks} c, unnest(to_tsvector({language}::regconfig, c.content)) u "
            "GROUP BY u.lexeme ORDER BY u.lexeme")).fetchall()
        blocks_in_step = packed_blocks_in_step(connection, tables) if native_scorer_installed(connection, tables) \
            else True
    store.delete_table()
    assert indexed == afresh
    assert term_df == afresh_df
    assert blocks_in_step
