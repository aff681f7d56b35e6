"""ArticleWriter against the real PostgreSQL + pgvector: replacement, atomicity, dimension checks."""

from __future__ import annotations

from dataclasses import replace

import psycopg
import pytest
from haystack import Document, Pipeline

from pmc_rag.components.article_writer import ArticleWriter, EmbeddingDimensionError

from conftest import make_store


def chunk(source_id: str, index: int, text: str = "text", dimension: int = 384) -> Document:
    vector = [0.0] * dimension
    vector[index % dimension] = 1.0
    return Document(id=f"{source_id}-{index}-{text}", content=f"{text} {index}", embedding=vector,
                    meta={"source_id": source_id, "chunk_index": index})


def stored(store) -> dict[str, list[str]]:
    by_source: dict[str, list[str]] = {}
    for document in store.filter_documents():
        by_source.setdefault(document.meta["source_id"], []).append(document.content)
    return {key: sorted(value) for key, value in by_source.items()}


def test_writes_then_replaces_each_article_without_duplicates_or_orphans(store):
    writer = ArticleWriter(document_store=store)
    first = writer.run(documents=[chunk("PMC1", i) for i in range(3)] + [chunk("PMC2", i) for i in range(2)])
    assert first == {"documents_written": 5, "documents_deleted": 0}

    # PMC1 comes back shorter and edited: its old chunks all go, PMC2 is untouched.
    second = writer.run(documents=[chunk("PMC1", i, "new") for i in range(2)])
    assert second == {"documents_written": 2, "documents_deleted": 3}
    assert stored(store) == {"PMC1": ["new 0", "new 1"], "PMC2": ["text 0", "text 1"]}

    # The very same input again: same rows, nothing added.
    writer.run(documents=[chunk("PMC1", i, "new") for i in range(2)])
    assert store.count_documents() == 4


def test_a_failed_write_leaves_the_stored_article_as_it_was(store):
    writer = ArticleWriter(document_store=store)
    writer.run(documents=[chunk("PMC1", i) for i in range(3)])
    # PostgreSQL refuses NUL in text: the second row fails mid-COPY, after the delete and the first row.
    broken = [chunk("PMC1", 0, "new"), replace(chunk("PMC1", 1, "new"), content="bad \x00 byte")]
    with pytest.raises(psycopg.Error):
        writer.run(documents=broken)
    assert stored(store) == {"PMC1": ["text 0", "text 1", "text 2"]}
    # The writer recovers for the next batch.
    assert writer.run(documents=[chunk("PMC3", 0)])["documents_written"] == 1


def test_embedding_of_the_wrong_size_is_a_clear_error_before_anything_is_written(store):
    writer = ArticleWriter(document_store=store)
    writer.run(documents=[chunk("PMC1", 0)])
    with pytest.raises(EmbeddingDimensionError, match=r"holds 384-dimensional .* output dimension is 768"):
        writer.run(documents=[chunk("PMC2", 0, dimension=768)])
    assert stored(store) == {"PMC1": ["text 0"]}


def test_store_configured_for_another_dimension_than_the_table_is_refused_at_warm_up(store):
    ArticleWriter(document_store=store).run(documents=[chunk("PMC1", 0)])
    mismatched = make_store(store.table_name, dimension=768)
    with pytest.raises(EmbeddingDimensionError, match=r"table_name.*embedding_dimension: 768"):
        ArticleWriter(document_store=mismatched).warm_up()


def test_documents_without_embedding_or_source_are_refused(store):
    writer = ArticleWriter(document_store=store)
    with pytest.raises(ValueError, match="has no embedding"):
        writer.run(documents=[Document(content="x", meta={"source_id": "PMC1"})])
    with pytest.raises(ValueError, match="source_id"):
        writer.run(documents=[Document(content="x", embedding=[0.1] * 384)])


def test_serialization_round_trip(store):
    writer = ArticleWriter(document_store=store, source_id_field="pmid")
    data = writer.to_dict()
    assert data["type"] == "pmc_rag.components.article_writer.ArticleWriter"
    assert data["init_parameters"]["source_id_field"] == "pmid"
    assert data["init_parameters"]["document_store"]["init_parameters"]["table_name"] == store.table_name
    restored = ArticleWriter.from_dict(data)
    assert restored.to_dict() == data
    pipeline = Pipeline()
    pipeline.add_component("writer", writer)
    assert Pipeline.loads(pipeline.dumps(), allowed_modules=["components.*"]).get_component(
        "writer").to_dict() == data


def test_the_writer_gives_the_planner_statistics_for_the_semantic_leg_s_filters(store):
    # rag.yml filters every semantic search on meta.word_count and meta.section_kind. Without statistics on that expression PostgreSQL
    # guesses that a third of the rows pass, and on the sample corpus it then scanned and sorted every vector rather
    # than walk the HNSW index (30 ms a question instead of 3).
    import numpy as np
    import yaml

    from conftest import PROJECT_ROOT

    rag = yaml.safe_load((PROJECT_ROOT / "pipelines" / "rag.yml").read_text())
    filters = rag["components"]["semantic"]["init_parameters"]["filters"]

    vectors = np.random.default_rng(7).normal(size=(3000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    writer = ArticleWriter(document_store=store)
    writer.run(documents=[Document(id=f"c{i}", content=f"chunk {i}", embedding=vectors[i].tolist(),
                                   meta={"source_id": f"paper{i // 4}", "word_count": 5 if i % 50 == 0 else 120,
                                         "section_kind": "caption" if i % 40 == 1 else "abstract"})
                          for i in range(len(vectors))])
    writer.close()
    query, params = store._check_and_build_embedding_retrieval_query(  # the very SQL the stock retriever sends
        query_embedding=vectors[0].tolist(), vector_function="cosine_similarity", top_k=20,
        filters=filters)

    def plan() -> tuple[str, int]:
        """The plan of the retriever's query, and how many rows the planner expects the filter to pass."""
        with psycopg.connect(store.connection_string.resolve_value(), autocommit=True) as connection:
            connection.execute(f"ANALYZE {store.table_name}")  # as autovacuum does after a load
            lines = [row[0] for row in connection.execute(b"EXPLAIN " + query.as_bytes(connection), params)]
            where = query.as_bytes(connection).split(b" WHERE ")[1].split(b" ORDER BY ")[0]
            estimate = connection.execute(b"EXPLAIN (FORMAT JSON) SELECT 1 FROM " + store.table_name.encode()
                                          + b" WHERE " + where, params).fetchone()[0][0]["Plan"]["Plan Rows"]
            return "\n".join(lines), estimate

    shown, estimate = plan()
    assert f"Index Scan using {store.hnsw_index_name}" in shown
    assert 2800 <= estimate <= 2930, estimate  # 2,865 chunks pass
    with psycopg.connect(store.connection_string.resolve_value(), autocommit=True) as connection:
        for field in ("word_count", "section_kind"):
            connection.execute(f'DROP STATISTICS "{store.table_name}__{field}_stats"')
    assert plan()[1] < 1100  # the guess the planner made before: a third
