"""PgvectorBM25Retriever: quality on the PubMedQA dev questions, agreement with a reference BM25, consistency."""

from __future__ import annotations

import random
import string
from dataclasses import replace

import bm25s
import psycopg
import pytest
from haystack import Pipeline
from haystack_integrations.components.retrievers.pgvector import PgvectorKeywordRetriever

from pmc_rag.components.article_writer import ArticleWriter
from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever
from pmc_rag.components.section_chunker import SectionChunker
from pmc_rag.ingestion.sources import read_articles

from bm25_helpers import DEV_QUESTIONS, UNIT, dev_questions, exhaustive_twin, papers, ranked
from conftest import CORPUS, make_store


@pytest.fixture(scope="session")
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


def test_pruned_search_ranks_exactly_as_scoring_every_posting(pubmedqa_retriever):
    """Each top_k (1, 10, 20) against the exhaustive ranking's first k: scores every posting once per question
    (the exhaustive search orders ties by chunk number, so its first k are its top k)."""
    exhaustive = exhaustive_twin(pubmedqa_retriever)
    differing = []
    for question in dev_questions():
        reference = ranked(exhaustive, question, top_k=20)
        differing += [(top_k, question) for top_k in (1, 10, 20)
                      if ranked(pubmedqa_retriever, question, top_k=top_k) != reference[:top_k]]
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
