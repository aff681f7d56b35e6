"""PgvectorPooledEmbeddingRetriever against the real PostgreSQL + pgvector: what the stock retriever returns, and
safe under requests running side by side."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psycopg
import pytest
from haystack import Document
from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever

from pmc_rag.components.article_writer import ArticleWriter
from pmc_rag.components.pooled_embedding_retriever import PgvectorPooledEmbeddingRetriever

from conftest import make_store

VECTORS = np.random.default_rng(3).normal(size=(300, 384)).astype(np.float32)
VECTORS /= np.linalg.norm(VECTORS, axis=1, keepdims=True)


@pytest.fixture
def filled_store(store):
    writer = ArticleWriter(document_store=store)
    writer.run(documents=[Document(id=f"c{i}", content=f"chunk {i}", embedding=VECTORS[i].tolist(),
                                   meta={"source_id": f"paper{i // 3}", "year": 1990 + i % 30, "word_count": i % 12})
                          for i in range(len(VECTORS))])
    writer.close()
    return store


def queries(count: int) -> list[list[float]]:
    return np.random.default_rng(11).normal(size=(count, 384)).astype(np.float32).tolist()


@pytest.mark.parametrize("vector_function", ["cosine_similarity", "inner_product", "l2_distance"])
def test_returns_what_the_stock_retriever_returns(filled_store, vector_function):
    filters = {"operator": "AND", "conditions": [{"field": "meta.word_count", "operator": ">=", "value": 8},
                                                 {"field": "meta.year", "operator": "<", "value": 2010}]}
    stock = PgvectorEmbeddingRetriever(document_store=filled_store, top_k=7, vector_function=vector_function)
    ours = PgvectorPooledEmbeddingRetriever(document_store=filled_store, top_k=7, vector_function=vector_function)
    for query in queries(10):
        for run_filters in (None, filters):
            expected = stock.run(query_embedding=query, filters=run_filters)["documents"]
            found = ours.run(query_embedding=query, filters=run_filters)["documents"]
            assert [d.id for d in found] == [d.id for d in expected] and len(found) == 7
            assert [d.score for d in found] == pytest.approx([d.score for d in expected], abs=1e-6)
            assert [d.meta for d in found] == [d.meta for d in expected]
            assert np.allclose([d.embedding for d in found], [d.embedding for d in expected])
    ours.close()


def test_without_embeddings_when_not_asked_for(filled_store):
    retriever = PgvectorPooledEmbeddingRetriever(document_store=filled_store, top_k=3, return_embedding=False)
    documents = retriever.run(query_embedding=VECTORS[5].tolist())["documents"]
    assert documents[0].id == "c5" and documents[0].score == pytest.approx(1.0)
    assert all(d.embedding is None for d in documents)
    retriever.close()


def test_requests_side_by_side_each_get_their_own_results_even_when_sessions_are_lost(filled_store, pg_conn_str):
    retriever = PgvectorPooledEmbeddingRetriever(document_store=filled_store, top_k=5)
    asked = queries(50)
    expected = [[d.id for d in retriever.run(query_embedding=q)["documents"]] for q in asked]

    def ask(index: int) -> list[str]:
        return [d.id for d in retriever.run(query_embedding=asked[index % len(asked)])["documents"]]

    for _ in range(2):
        with ThreadPoolExecutor(16) as pool:
            found = list(pool.map(ask, range(400)))
        assert found == [expected[i % len(asked)] for i in range(400)]
        with psycopg.connect(pg_conn_str, autocommit=True) as admin:  # as the idle timeout or a restart would
            ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                  "WHERE application_name = 'pmc-rag semantic'").fetchone()[0]
        assert ended >= 1
    retriever.close()


def test_a_query_of_the_wrong_size_is_a_clear_error(filled_store):
    with pytest.raises(ValueError, match="3 dimensions; the store has 384"):
        PgvectorPooledEmbeddingRetriever(document_store=filled_store).run(query_embedding=[0.1, 0.2, 0.3])


def test_serialization_round_trip(store):
    retriever = PgvectorPooledEmbeddingRetriever(document_store=store, top_k=4, filter_policy="merge",
                                                 filters={"field": "meta.year", "operator": ">", "value": 2000},
                                                 return_embedding=False)
    data = retriever.to_dict()
    again = PgvectorPooledEmbeddingRetriever.from_dict(data)
    assert again.to_dict() == data
    assert (again.top_k, again.filter_policy.value, again.return_embedding) == (4, "merge", False)
    assert again.vector_function == store.vector_function
    assert again.document_store.table_name == store.table_name
