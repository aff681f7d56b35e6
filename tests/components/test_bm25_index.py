"""The BM25 index kept by the writer: the native scorer and its blocks, exact after deletes, updates and racing
writes, without a compiler, upgraded, rebuilt and dropped whole."""

from __future__ import annotations

import shutil
from dataclasses import replace

import psycopg
import pytest
from haystack.document_stores.types import DuplicatePolicy

from pmc_rag.components.article_writer import ArticleWriter
from pmc_rag.components.bm25_index import (BLOCK_SIZE, BM25IndexMissing, install_bm25_index, native_scorer_installed,
                                           packed_blocks_in_step)
from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever
from pmc_rag.components.section_chunker import SectionChunker
from pmc_rag.ingestion.sources import read_articles

from bm25_helpers import DEV_QUESTIONS, UNIT, chunk, dev_questions, exhaustive_twin, papers, ranked
from conftest import CORPUS


def skip_without_a_compiler() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the native scorer cannot be built (apt-get install gcc)")


@pytest.fixture(params=["native", "sql"])
def scorer(request, monkeypatch) -> str:
    """Both ways of scoring: the C scorer over packed blocks (where a C compiler is), and the SQL search."""
    if request.param == "sql":
        monkeypatch.setenv("PMC_RAG_BM25_NATIVE", "off")
    else:
        skip_without_a_compiler()
    return request.param


def assert_scorer(store, scorer: str) -> None:
    tables = PgvectorBM25Retriever(document_store=store).tables
    with psycopg.connect(store.connection_string.resolve_value()) as connection:
        assert native_scorer_installed(connection, tables) == (scorer == "native")


def test_pruned_search_stays_exact_after_deletes_updates_and_reinserts(store, scorer):
    """Deletes leave a term's bounds as they were (looser, still bounds), so results must not change; the native
    scorer's blocks are re-packed by the same writes."""
    articles = list(read_articles(CORPUS / "pubmedqa/corpus.jsonl"))[:300]
    chunks = [replace(c, embedding=UNIT) for c in SectionChunker().run(
        documents=[d for a in articles for d in a.section_documents()])["documents"]]
    writer = ArticleWriter(document_store=store)
    writer.run(documents=chunks)
    store.delete_documents([c.id for c in chunks[::2]])  # half gone, among them the longest and richest chunks
    store.write_documents([replace(c, content=(c.content or "") + " mitochondria") for c in chunks[1:200:2]],
                          policy=DuplicatePolicy.OVERWRITE)  # updates through the stock store
    writer.run(documents=chunks[:100:2])  # re-ingested: new docnos
    assert_scorer(store, scorer)
    retriever = PgvectorBM25Retriever(document_store=store, top_k=10)
    exhaustive = exhaustive_twin(retriever)
    questions = dev_questions(150) + ["mitochondria dysfunction"]
    assert [ranked(retriever, q) for q in questions] == [ranked(exhaustive, q) for q in questions]


def test_blocks_kept_in_step_by_writes_equal_blocks_packed_afresh(store):
    """Inserts, upserts, deletes and re-ingestion spanning several blocks re-pack exactly the blocks they touch."""
    skip_without_a_compiler()
    articles = list(read_articles(CORPUS / "pubmedqa/corpus.jsonl"))[:120]
    chunks = [replace(c, embedding=UNIT) for c in SectionChunker().run(
        documents=[d for a in articles for d in a.section_documents()])["documents"]]
    writer = ArticleWriter(document_store=store)
    writer.run(documents=chunks)
    tables = PgvectorBM25Retriever(document_store=store).tables
    url = store.connection_string.resolve_value()
    with psycopg.connect(url, autocommit=True) as connection:
        # chunk numbers beyond the first blocks, as after years of re-ingestion
        connection.execute("SELECT setval(pg_get_serial_sequence(%s, 'docno'), %s)",
                           (f"{store.table_name}__bm25_docs", 3 * BLOCK_SIZE - 40))
    store.delete_documents([c.id for c in chunks[::3]])
    store.write_documents([replace(c, content=(c.content or "") + " mitochondria") for c in chunks[1:90:3]],
                          policy=DuplicatePolicy.OVERWRITE)
    writer.run(documents=chunks[:120:3])  # re-ingested: new chunk numbers, across a block boundary
    assert_scorer(store, "native")
    with psycopg.connect(url) as connection:
        assert packed_blocks_in_step(connection, tables)
        blocks = {row[0] for row in connection.execute(tables.format("SELECT DISTINCT block FROM {blocks}"))}
        damaged = connection.execute(tables.format(
            "UPDATE {blocks} SET postings = substring(postings from 9) WHERE (term_id, block) = "
            "(SELECT term_id, block FROM {blocks} WHERE length(postings) > 8 LIMIT 1)")).rowcount
        assert damaged == 1
        assert not packed_blocks_in_step(connection, tables)  # the check can fail
        connection.rollback()
    assert {0, 2, 3} <= blocks
    retriever = PgvectorBM25Retriever(document_store=store, top_k=10)
    questions = dev_questions(60) + ["mitochondria dysfunction"]
    assert [ranked(retriever, q) for q in questions] == [ranked(exhaustive_twin(retriever), q) for q in questions]


def test_turning_the_native_scorer_off_and_on_drops_and_repacks_its_blocks(store, monkeypatch):
    skip_without_a_compiler()
    writer = ArticleWriter(document_store=store)
    writer.run(documents=[chunk("PMC1", "Malaria vaccine trial in Kenya with malaria cases.", 0),
                          chunk("PMC2", "Dengue vaccine in Brazil.", 1)])
    assert_scorer(store, "native")
    monkeypatch.setenv("PMC_RAG_BM25_NATIVE", "off")
    assert install_bm25_index(store) is False  # nothing rebuilt: only the blocks dropped
    assert_scorer(store, "sql")
    writer.run(documents=[chunk("PMC3", "Malaria in Kenya, no vaccine.", 2)])  # written while off
    retriever = PgvectorBM25Retriever(document_store=store)
    by_sql = ranked(retriever, "malaria vaccine")
    assert sorted(document_id for document_id, _ in by_sql) == ["PMC1-0", "PMC2-1", "PMC3-2"]
    monkeypatch.delenv("PMC_RAG_BM25_NATIVE")
    assert install_bm25_index(store) is True  # blocks packed from the postings
    assert_scorer(store, "native")
    assert ranked(retriever, "malaria vaccine") == by_sql


def test_the_native_scorer_refuses_damaged_blocks_with_an_error_not_a_crash(store):
    skip_without_a_compiler()
    ArticleWriter(document_store=store).run(documents=[chunk("PMC1", "Malaria vaccine trial.")])
    assert_scorer(store, "native")
    tables = PgvectorBM25Retriever(document_store=store).tables
    scan = "SELECT {scan}(%s::int[], %s::bytea[], %s::float8[], 5, 1.2, 0.75, 10.0, {block_size})"
    one = bytes.fromhex("0000000100000001")
    cases = [([0], [one[:7]], [1.0], "not 8 per posting"),
             ([0], [bytes.fromhex("FFFF000100000001")], [1.0], "outside a block"),
             ([1, 0], [one, one], [1.0, 1.0], "ascending order"),
             ([0], [one], [1.0, 2.0], "differ in length"),
             ([0], [None], [1.0], "must not contain NULL")]
    with psycopg.connect(store.connection_string.resolve_value(), autocommit=True) as connection:
        for blocks, lists, idfs, message in cases:
            with pytest.raises(psycopg.Error, match=message):
                connection.execute(tables.format(scan), (blocks, lists, idfs))
        assert connection.execute(tables.format(scan), ([0, 7], [one, one], [1.0, 2.0])).fetchone()[0][0] \
            == 7 * BLOCK_SIZE  # the same session goes on: nothing crashed


def test_searches_racing_writes_never_fail_and_end_as_exact_as_a_fresh_search(store):
    """Readers while a writer re-ingests, updates and deletes the same terms: each search is an answer from one
    consistent state (a snapshot), never an error, and once the writes stop the native search equals the SQL one."""
    import threading

    skip_without_a_compiler()
    articles = list(read_articles(CORPUS / "pubmedqa/corpus.jsonl"))[:200]
    chunks = [replace(c, embedding=UNIT) for c in SectionChunker().run(
        documents=[d for a in articles for d in a.section_documents()])["documents"]]
    writer = ArticleWriter(document_store=store)
    writer.run(documents=chunks[:100])
    assert_scorer(store, "native")
    retriever = PgvectorBM25Retriever(document_store=store, top_k=10)
    questions = [q["QUESTION"] for q in DEV_QUESTIONS.values()][:20] + ["mitochondria dysfunction"]
    written_ids = {c.id for c in chunks}
    failures: list[BaseException] = []
    writing = threading.Event()
    writing.set()

    def search() -> None:
        reader = PgvectorBM25Retriever(document_store=store, top_k=10)
        while writing.is_set():
            for question in questions:
                try:
                    found = ranked(reader, question)
                    assert {document_id for document_id, _ in found} <= written_ids
                    assert all(score == score and score > 0 for _, score in found)  # no NaN, no garbage
                except BaseException as error:  # noqa: BLE001 - reported by the main thread
                    failures.append(error)
                    return

    readers = [threading.Thread(target=search) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for start in range(0, 200, 20):  # re-ingest, add, update and delete while they read
            writer.run(documents=chunks[start:start + 40])
            store.write_documents([replace(c, content=(c.content or "") + " mitochondria")
                                   for c in chunks[start:start + 10]], policy=DuplicatePolicy.OVERWRITE)
            store.delete_documents([c.id for c in chunks[start + 10:start + 15]])
    finally:
        writing.clear()
        for reader in readers:
            reader.join(timeout=120)
    assert not failures, failures[0]
    assert [ranked(retriever, q) for q in questions] == [ranked(exhaustive_twin(retriever), q) for q in questions]


def test_without_a_compiler_the_sql_search_is_used_and_says_why(store, monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path))  # no library built there yet
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    with caplog.at_level("INFO"):
        ArticleWriter(document_store=store).run(documents=[chunk("PMC1", "Malaria vaccine trial.")])
    assert_scorer(store, "sql")
    assert "the SQL search is used instead" in caplog.text
    assert papers(PgvectorBM25Retriever(document_store=store).run(query="malaria")["documents"]) == ["PMC1"]


def test_an_index_from_before_the_bounds_is_upgraded_in_place(store):
    """Indexes built by earlier versions have no per-term bounds and a postings key without tf and doc_len."""
    from pmc_rag.components.bm25_index import install_bm25_index

    ArticleWriter(document_store=store).run(documents=[
        chunk("PMC1", "Malaria vaccine trial in Kenya with malaria cases.", 0),
        chunk("PMC2", "Dengue vaccine in Brazil.", 1)])
    retriever = PgvectorBM25Retriever(document_store=store)
    with psycopg.connect(store.connection_string.resolve_value(), autocommit=True) as connection:
        connection.execute(retriever.tables.format("UPDATE {terms} SET max_tf = NULL, min_len = NULL"))
        connection.execute(retriever.tables.format(
            'ALTER TABLE {postings} DROP CONSTRAINT "' + store.table_name + '__bm25_postings_pkey", '
            "ADD PRIMARY KEY (term_id, docno)"))
        assert install_bm25_index(store) is True  # upgraded, not rebuilt from the text
        bounds = connection.execute(retriever.tables.format(
            "SELECT max_tf, min_len FROM {terms} WHERE term = 'malaria'")).fetchone()
        covering = connection.execute("SELECT indnatts - indnkeyatts FROM pg_index WHERE indrelid = %s::regclass "
                                      "AND indisprimary", (f"{store.table_name}__bm25_postings",)).fetchone()[0]
    assert bounds == (2, 6) and covering == 2
    assert papers(retriever.run(query="malaria vaccine")["documents"]) == ["PMC1", "PMC2"]


def test_index_follows_inserts_updates_deletes_and_truncates(store):
    writer = ArticleWriter(document_store=store)
    writer.warm_up()  # installs the index, which its triggers then keep current
    retriever = PgvectorBM25Retriever(document_store=store, top_k=5)
    retriever.warm_up()
    writer.run(documents=[chunk("PMC1", "Metformin lowers glucose in type 2 diabetes."),
                          chunk("PMC2", "Statins reduce cholesterol and cardiovascular events.")])
    assert papers(retriever.run(query="metformin")["documents"]) == ["PMC1"]

    writer.run(documents=[chunk("PMC1", "Aspirin prevents clotting.")])  # PMC1 replaced: its old words go
    assert retriever.run(query="metformin")["documents"] == []
    assert papers(retriever.run(query="aspirin clotting")["documents"]) == ["PMC1"]

    store.write_documents([replace(chunk("PMC2", "Insulin pumps for children."), id="PMC2-0")],
                          policy=DuplicatePolicy.OVERWRITE)  # an upsert through the stock store: the UPDATE path
    assert papers(retriever.run(query="insulin children")["documents"]) == ["PMC2"]
    assert retriever.run(query="statins cholesterol")["documents"] == []

    store.delete_documents(["PMC2-0"])
    assert retriever.run(query="insulin")["documents"] == []
    with psycopg.connect(store.connection_string.resolve_value()) as connection:
        connection.execute(retriever.tables.format("TRUNCATE {chunks}"))
        stats = connection.execute(retriever.tables.format("SELECT doc_count, total_len FROM {stats}")).fetchone()
    assert stats == (0, 0)
    assert retriever.run(query="aspirin")["documents"] == []


def test_writers_that_touch_the_same_terms_in_opposite_orders_wait_rather_than_deadlock(store):
    """A deletes a malaria chunk (locking 'malaria'), B inserts 'dengue malaria' (locks 'dengu', waits for
    'malaria'), then A inserts 'dengue' (would wait for B): without the writer lock, PostgreSQL aborts one."""
    import threading

    ArticleWriter(document_store=store).run(documents=[chunk("PMC1", "Malaria vaccine trial.")])
    url = store.connection_string.resolve_value()
    tables = PgvectorBM25Retriever(document_store=store).tables
    insert = tables.format("INSERT INTO {chunks} (id, content, embedding, meta) VALUES (%s, %s, %s, '{{}}')")
    vector = str(UNIT).replace(" ", "")
    errors: list[BaseException] = []

    def second_writer() -> None:
        try:
            with psycopg.connect(url) as connection:
                connection.execute(insert, ("PMC2-0", "Dengue and malaria in Brazil.", vector))
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    with psycopg.connect(url) as first:
        first.execute(tables.format("DELETE FROM {chunks} WHERE id = 'PMC1-0'"))
        thread = threading.Thread(target=second_writer)
        thread.start()
        thread.join(timeout=1.5)  # long enough for it to block
        try:
            first.execute(insert, ("PMC3-0", "Dengue fever vaccine.", vector))
            first.commit()
        except psycopg.errors.DeadlockDetected as error:
            errors.append(error)
        thread.join(timeout=30)
    assert errors == []
    retriever = PgvectorBM25Retriever(document_store=store)
    assert sorted(d.id for d in retriever.run(query="dengue")["documents"]) == ["PMC2-0", "PMC3-0"]
    with psycopg.connect(url) as connection:
        assert connection.execute(tables.format("SELECT df FROM {terms} WHERE term = 'malaria'")).fetchone() == (1,)


def test_an_index_that_no_longer_matches_its_table_is_rebuilt_when_the_writer_warms_up(store):
    ArticleWriter(document_store=store).run(documents=[chunk("PMC1", "Malaria vaccine trial in Kenya.")])
    first = PgvectorBM25Retriever(document_store=store)
    first.warm_up()
    assert papers(first.run(query="malaria vaccine")["documents"]) == ["PMC1"]
    first.close()
    with psycopg.connect(store.connection_string.resolve_value(), autocommit=True) as connection:
        connection.execute(first.tables.format("ALTER TABLE {chunks} DISABLE TRIGGER ALL"))
        connection.execute(first.tables.format("DELETE FROM {chunks}"))
        connection.execute(first.tables.format("ALTER TABLE {chunks} ENABLE TRIGGER ALL"))
    ArticleWriter(document_store=store).run(documents=[chunk("PMC9", "Dengue fever outbreak in Brazil.")])
    second = PgvectorBM25Retriever(document_store=store)
    second.warm_up()
    assert papers(second.run(query="malaria dengue")["documents"]) == ["PMC9"]


def test_dropping_the_index_removes_side_tables_triggers_and_function(store):
    from pmc_rag.components.bm25_index import drop_bm25_index

    ArticleWriter(document_store=store).warm_up()
    retriever = PgvectorBM25Retriever(document_store=store)
    retriever.warm_up()
    with psycopg.connect(store.connection_string.resolve_value(), autocommit=True) as connection:
        drop_bm25_index(connection, retriever.tables)
        left = connection.execute("SELECT count(*) FROM pg_class WHERE relname LIKE %s",
                                  (f"{store.table_name}__bm25%",)).fetchone()[0]
        triggers = connection.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE %s",
                                      (f"{store.table_name}__bm25%",)).fetchone()[0]
    assert (left, triggers) == (0, 0)
    retriever.close()
    with pytest.raises(BM25IndexMissing, match="pmc-rag setup"):  # the read path never builds it
        PgvectorBM25Retriever(document_store=store).warm_up()
    with psycopg.connect(store.connection_string.resolve_value(), autocommit=True) as connection:
        assert connection.execute("SELECT count(*) FROM pg_class WHERE relname LIKE %s",
                                  (f"{store.table_name}__bm25%",)).fetchone()[0] == 0
    ArticleWriter(document_store=store).run(documents=[chunk("PMC1", "The writer installs the index again.")])
    assert papers(PgvectorBM25Retriever(document_store=store).run(query="writer installs")["documents"]) == ["PMC1"]
