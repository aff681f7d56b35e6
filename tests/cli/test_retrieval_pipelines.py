"""The retrieval pipelines in pipelines/, run through their declared inputs against a real table."""

from __future__ import annotations

import pytest

from pmc_rag.ingestion.runner import ingest
from pmc_rag.pipelines import PipelineError, load_declared_pipeline

from conftest import CORPUS, pipeline_file_for

PAPERS = [CORPUS / "pmc_oa/1471-2180-11-174.nxml", CORPUS / "pmc_oa/PMC4816447.xml",
          CORPUS / "plos/journal.pmed.1001518.xml", CORPUS / "plos/journal.pone.0152459.xml"]
QUESTION = "Is erlotinib effective as first-line treatment of advanced non-small cell lung cancer?"


@pytest.fixture(scope="session")
def indexed_table(tmp_path_factory, pg_conn_str):
    from conftest import indexing_pipeline_for, make_store

    table = "retrieval_pipelines"
    make_store(table).delete_table()
    ingest([str(p) for p in PAPERS], indexing_pipeline_for(table), progress=False)
    yield table, tmp_path_factory.mktemp("pipelines")
    make_store(table).delete_table()


@pytest.mark.parametrize("name", ["retrieve_semantic", "retrieve_bm25", "retrieve_hybrid", "retrieve_hybrid_mmr"])
def test_each_offline_variant_finds_the_paper(indexed_table, name):
    table, folder = indexed_table
    pipeline = load_declared_pipeline(pipeline_file_for(name, table, folder))
    documents = pipeline.run(question=QUESTION)["documents"]
    assert documents and documents[0].meta["source_id"] == "PMC4816447"
    filtered = pipeline.run(question=QUESTION, filters={"field": "meta.year", "operator": "<", "value": 2016})
    assert filtered["documents"] and all(d.meta["year"] < 2016 for d in filtered["documents"])


def test_the_stock_keyword_retriever_needs_every_word(indexed_table):
    table, folder = indexed_table
    pipeline = load_declared_pipeline(pipeline_file_for("retrieve_keyword_stock", table, folder))
    assert pipeline.run(question=QUESTION)["documents"] == []
    assert pipeline.run(question="erlotinib")["documents"]


def test_undeclared_inputs_are_refused(indexed_table):
    table, folder = indexed_table
    pipeline = load_declared_pipeline(pipeline_file_for("retrieve_bm25", table, folder))
    with pytest.raises(PipelineError, match="no declared input named \\['query'\\]"):
        pipeline.run(query=QUESTION)
