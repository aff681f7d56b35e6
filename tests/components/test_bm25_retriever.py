"""PgvectorBM25Retriever: quality on the PubMedQA dev questions, agreement with a reference BM25, consistency."""

from __future__ import annotations

import json
import random
import shutil
import string
from dataclasses import replace

import bm25s
import psycopg
import pytest
from haystack import Document, Pipeline
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.components.retrievers.pgvector import PgvectorKeywordRetriever

from pmc_rag.components.article_writer import ArticleWriter
from pmc_rag.components.bm25_index import (BLOCK_SIZE, BM25IndexMissing, install_bm25_index,
                                           native_scorer_installed, packed_blocks_in_step)
from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever
from pmc_rag.components.section_chunker import SectionChunker
from pmc_rag.ingestion.sources import read_articles

from conftest import CORPUS, PROJECT_ROOT, make_store

DEV_QUESTIONS = json.loads((PROJECT_ROOT / "evaluation/datasets/pubmedqa_dev_questions.json").read_text())
UNIT = [0.0] * 383 + [1.0]  # BM25 needs no embeddings; the table still wants one per chunk


def chunk(source_id: str, text: str, index: int = 0) -> Document:
    return Document(id=f"{source_id}-{index}", content=text, embedding=UNIT,
                    meta={"source_id": source_id, "year": 2000 + index})


@pytest.fixture(scope="module")
def pubmedqa_retriever(pg_conn_str):
    """The 1,000 PubMedQA abstracts chunked as indexing.yml does, in a table of their own."""
    store = make_store("bm25_pubmedqa")
    articles = list(read_articles(CORPUS / "pubmedqa/corpus.jsonl"))
    chunks = SectionChunker().run(documents=[d for a in articles for d in a.section_documents()])["documents"]
    ArticleWriter(document_store=store).run(documents=[replace(c, embedding=UNIT) for c in chunks])
    retriever = PgvectorBM25Retriever(document_store=store, top_k=10)
    retriever.warm_up()
    yield retriever
    retriever.close()
    store.delete_table()


def papers(documents: list[Document]) -> list[str]:
    return list(dict.fromkeys(d.meta["source_id"] for d in documents))


def test_right_paper_in_top_5_for_at_least_97_percent_of_dev_questions(pubmedqa_retriever):
    hits = sum(f"PMID:{pmid}" in papers(pubmedqa_retriever.run(query=q["QUESTION"], top_k=20)["documents"])[:5]
               for pmid, q in DEV_QUESTIONS.items())
    assert hits / len(DEV_QUESTIONS) >= 0.97, hits


def test_ranking_agrees_with_a_reference_bm25_on_the_same_tokens(pubmedqa_retriever, pg_conn_str):
    """bm25s (Lucene variant, k1=1.2, b=0.75) over PostgreSQL's own tokens: mean top-10 overlap >= 0.9."""
    tables = pubmedqa_retriever.tables
    with psycopg.connect(pg_conn_str) as connection:
        rows = connection.execute(tables.format(
            "SELECT id, array_agg(lexeme ORDER BY lexeme), array_agg(coalesce(array_length(positions, 1), 1) "
            "ORDER BY lexeme) FROM {chunks}, unnest(to_tsvector({language}::regconfig, content)) GROUP BY id"
        )).fetchall()
        ids = [row[0] for row in rows]
        corpus_tokens = [[lexeme for lexeme, tf in zip(row[1], row[2]) for _ in range(tf)] for row in rows]
        reference = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        reference.index(corpus_tokens, show_progress=False)
        overlaps = []
        for question in (q["QUESTION"] for q in DEV_QUESTIONS.values()):
            tokens = [r[0] for r in connection.execute(
                "SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))", (question,)).fetchall()]
            known = [t for t in tokens if t in reference.vocab_dict]
            if not known:
                continue
            expected, _ = reference.retrieve([known], k=10, show_progress=False)
            ours = [d.id for d in pubmedqa_retriever.run(query=question, top_k=10)["documents"]]
            overlaps.append(len({ids[i] for i in expected[0]} & set(ours)) / 10)
    assert len(overlaps) >= 490
    assert sum(overlaps) / len(overlaps) >= 0.9


def test_any_matching_word_is_enough_unlike_the_stock_retriever(pubmedqa_retriever):
    question = "Do mitochondria xyzzyplugh remodelling lace plant leaves?"  # a word no chunk has
    found = pubmedqa_retriever.run(query=question)["documents"]
    assert found and found[0].meta["source_id"] == "PMID:21645374"
    stock = PgvectorKeywordRetriever(document_store=pubmedqa_retriever.document_store)
    assert stock.run(query=question)["documents"] == []


def test_words_no_chunk_contains_are_reported_in_the_question_s_order(pubmedqa_retriever):
    found = pubmedqa_retriever.run(query="Does Xyzzyplugh or lecanemab remodel lace plant leaves in the treatment-"
                                         "resistant xyzzyplugh?")
    assert found["documents"]  # the known words still find chunks
    # stop words are not words the corpus lacks; "treatment-resistant" is known by its parts
    assert found["unknown_words"] == ["Xyzzyplugh", "lecanemab"]
    assert pubmedqa_retriever.run(query="mitochondria in lace plant leaves")["unknown_words"] == []


def test_each_question_word_comes_with_the_share_of_chunks_that_contain_it(pubmedqa_retriever):
    shares = pubmedqa_retriever.run(query="Do the patients' lace plant leaves have xyzzyplugh?")["word_shares"]
    assert list(shares) == ["patients", "lace", "plant", "leaves", "xyzzyplugh"]  # stop words have no share
    assert shares["xyzzyplugh"] == 0 and 0 < shares["lace"] <= shares["plant"] < shares["patients"] < 1


def test_a_british_spelling_finds_and_counts_the_american_one(pubmedqa_retriever):
    american = pubmedqa_retriever.run(query="Outcomes of hemodialysis")
    british = pubmedqa_retriever.run(query="Outcomes of haemodialysis")   # no chunk spells it so
    assert british["unknown_words"] == [] and list(british["word_shares"]) == ["Outcomes", "haemodialysis"]
    assert british["word_shares"]["haemodialysis"] == american["word_shares"]["hemodialysis"] > 0
    assert [d.id for d in british["documents"]] == [d.id for d in american["documents"]]
    both = pubmedqa_retriever.run(query="haemodialysis or hemodialysis")["word_shares"]
    assert list(both) == ["haemodialysis", "hemodialysis"]   # a spelling asked for is kept


def test_long_questions_and_sql_in_the_text_are_harmless(pubmedqa_retriever):
    long_question = " ".join(["intubation helicopter airway"] * 2000) + " lace plant mitochondria"
    assert pubmedqa_retriever.run(query=long_question)["documents"]
    hostile = "'); DROP TABLE bm25_pubmedqa; -- \\ $$ :: %s %(x)s"
    pubmedqa_retriever.run(query=hostile)  # its words ("drop", "table") may match; it must not run as SQL
    assert pubmedqa_retriever.document_store.count_documents() > 4000
    assert pubmedqa_retriever.run(query="")["documents"] == []


def test_thousands_of_distinct_words_or_one_enormous_token_are_answered_not_a_crash(pubmedqa_retriever):
    rng = random.Random(31)
    many = " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(9)) for _ in range(5000))
    found = pubmedqa_retriever.run(query=many + " intubation helicopter airway")
    assert found["documents"] and len(found["unknown_words"]) == 5000  # the rare words score; the rest are named
    assert pubmedqa_retriever.run(query="x" * 1_000_000)["documents"] == []  # no chunk has it; nothing breaks
    assert pubmedqa_retriever.run(query="intubation helicopter")["documents"]  # and the next question is answered


def test_filters_apply_before_top_k(pubmedqa_retriever):
    year_filter = {"field": "meta.year", "operator": "<", "value": 2000}
    found = pubmedqa_retriever.run(query="diabetes insulin glucose", filters=year_filter, top_k=5)["documents"]
    assert len(found) == 5 and all(d.meta["year"] < 2000 for d in found)
    scores = [d.score for d in found]
    assert scores == sorted(scores, reverse=True)


def exhaustive_twin(retriever: PgvectorBM25Retriever) -> PgvectorBM25Retriever:
    """The same retriever scoring every posting: the reference the pruned search must equal."""
    twin = PgvectorBM25Retriever.from_dict({**retriever.to_dict(), "init_parameters": {
        **retriever.to_dict()["init_parameters"], "exhaustive": True}})
    assert twin.exhaustive and not retriever.exhaustive
    return twin


def ranked(retriever: PgvectorBM25Retriever, question: str, **kwargs) -> list[tuple[str, float]]:
    return [(d.id, round(d.score, 6)) for d in retriever.run(query=question, **kwargs)["documents"]]


@pytest.mark.parametrize("top_k", [1, 10, 20])
def test_pruned_search_ranks_exactly_as_scoring_every_posting(pubmedqa_retriever, top_k):
    exhaustive = exhaustive_twin(pubmedqa_retriever)
    questions = [q["QUESTION"] for q in DEV_QUESTIONS.values()]
    differing = [q for q in questions if ranked(pubmedqa_retriever, q, top_k=top_k) != ranked(exhaustive, q,
                                                                                              top_k=top_k)]
    assert differing == []


def test_pruned_search_with_a_filter_few_chunks_pass_equals_the_exhaustive_one(pubmedqa_retriever):
    """Filters are applied after the search, so the search asks for more until enough pass, or falls back."""
    exhaustive = exhaustive_twin(pubmedqa_retriever)
    one_year = {"field": "meta.year", "operator": "==", "value": 1996}
    nowhere = {"field": "meta.year", "operator": "==", "value": 1066}
    for question in [q["QUESTION"] for q in DEV_QUESTIONS.values()][:40]:
        found = ranked(pubmedqa_retriever, question, filters=one_year, top_k=10)
        assert found == ranked(exhaustive, question, filters=one_year, top_k=10)
        assert ranked(pubmedqa_retriever, question, filters=nowhere) == []


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
    questions = [q["QUESTION"] for q in DEV_QUESTIONS.values()][:150] + ["mitochondria dysfunction"]
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
    questions = [q["QUESTION"] for q in DEV_QUESTIONS.values()][:60] + ["mitochondria dysfunction"]
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


def test_serialization_round_trip(store):
    retriever = PgvectorBM25Retriever(document_store=store, top_k=7, k1=1.5, b=0.6, max_query_terms=12,
                                      filters={"field": "meta.year", "operator": ">", "value": 2010},
                                      filter_policy="merge")
    data = retriever.to_dict()
    assert data["type"] == "pmc_rag.components.bm25_retriever.PgvectorBM25Retriever"
    assert data["init_parameters"]["filter_policy"] == "merge" and data["init_parameters"]["k1"] == 1.5
    assert data["init_parameters"]["exhaustive"] is False
    assert PgvectorBM25Retriever.from_dict(data).to_dict() == data
    pipeline = Pipeline()
    pipeline.add_component("bm25", retriever)
    assert Pipeline.loads(pipeline.dumps(), allowed_modules=["components.*"]).get_component("bm25").to_dict() == data


@pytest.mark.parametrize("filters", [
    {"field": "meta.year", "operator": "<", "value": 2000},
    {"field": "meta.year", "operator": "==", "value": 2005},
    {"field": "meta.year", "operator": "!=", "value": 2005},
    {"field": "meta.section", "operator": "in", "value": ["Abstract: Conclusions", "Abstract: Results"]},
    {"field": "meta.section", "operator": "not in", "value": ["Abstract: Conclusions", "Abstract: Results"]},
    {"field": "meta.word_count", "operator": ">=", "value": 8},
    {"field": "meta.no_such_field", "operator": "==", "value": None},
    {"operator": "OR", "conditions": [{"field": "meta.year", "operator": "<=", "value": 1995},
                                      {"operator": "AND", "conditions": [
                                          {"field": "meta.year", "operator": ">", "value": 2010},
                                          {"field": "meta.section", "operator": "==", "value": "Abstract: Results"}]}]},
])
def test_our_sql_filters_select_what_the_stores_own_filters_select(pubmedqa_retriever, pg_conn_str, filters):
    """components/sql_filters.py, which the BM25 retriever uses, agrees with the pgvector store row for row."""
    from psycopg import sql

    from pmc_rag.components.sql_filters import filter_condition

    store = pubmedqa_retriever.document_store
    expected = {d.id for d in store.filter_documents(filters)}
    condition, params = filter_condition(filters, table_alias="chunks")
    with psycopg.connect(pg_conn_str) as connection:
        rows = connection.execute(sql.SQL("SELECT chunks.id FROM {} chunks WHERE {}").format(
            sql.Identifier(store.table_name), condition), params).fetchall()
    assert {row[0] for row in rows} == expected and expected


def test_a_malformed_filter_is_refused_with_its_field_named():
    from haystack.errors import FilterError

    from pmc_rag.components.sql_filters import filter_condition

    with pytest.raises(FilterError, match="unknown operator `~` on `meta.year`"):
        filter_condition({"field": "meta.year", "operator": "~", "value": 1})
    with pytest.raises(FilterError, match="needs a list"):
        filter_condition({"field": "meta.section", "operator": "in", "value": "Results"})
    with pytest.raises(FilterError, match="non-empty `conditions`"):
        filter_condition({"operator": "AND", "conditions": []})


def test_embeddings_come_back_as_lists_of_floats_when_asked_for(pubmedqa_retriever):
    with_embeddings = PgvectorBM25Retriever(document_store=pubmedqa_retriever.document_store, top_k=3,
                                            return_embedding=True)
    with_embeddings.warm_up()
    documents = with_embeddings.run(query="erlotinib lung cancer")["documents"]
    assert documents and all(len(d.embedding) == 384 and isinstance(d.embedding[0], float) for d in documents)
    assert all(d.embedding is None for d in pubmedqa_retriever.run(query="erlotinib lung cancer")["documents"])
