"""`pmc-rag bench peer`: one judge for both pipelines, from the text a reader is shown, against the gold."""

from __future__ import annotations

from pmc_rag.evaluation.bench_peer import judged, stock_pipeline, table

GOLD = "PMID:1"
CONCLUSION = "Erlotinib prolonged progression-free survival in EGFR-mutant lung cancer."


def result(text: str, shown=("PMID:1", "PMC2"), cited=None, seconds=1.0):
    from pmc_rag.evaluation.bench_peer import _cited_ids

    return {"seconds": seconds, "text": text, "shown": list(shown),
            "cited": _cited_ids(text) if cited is None else cited}


def test_a_cited_statement_of_the_finding_counts_for_the_stock_pipeline():
    row = judged(result("Yes. Erlotinib prolonged progression-free survival in lung cancer [PMID:1]."), GOLD,
                 CONCLUSION, "yes")
    assert row["cites_gold"] and row["gold_shown"] and row["states_finding"]
    assert not row["invalid"] and not row["wrong_verdict"] and row["uncited_sentences"] == 0


def test_a_paper_the_model_was_not_shown_an_uncited_sentence_and_a_wrong_verdict_are_counted():
    row = judged(result("No, it did not help [PMC999]. Survival was the same in both groups."), GOLD, CONCLUSION,
                 "yes")
    assert row["invalid"] and row["wrong_verdict"] and row["uncited_sentences"] == 1
    assert not row["cites_gold"] and not row["states_finding"]


def test_our_numbered_citations_are_judged_by_the_references():
    row = judged(result("Erlotinib prolonged progression-free survival in EGFR-mutant lung cancer [1].",
                        cited=["PMID:1"]), GOLD, CONCLUSION, "maybe")
    assert row["cites_gold"] and row["states_finding"] and row["uncited_sentences"] == 0


def test_the_table_gives_the_ratio_of_the_medians():
    rows = {"ours": [judged(result("A [PMID:1] b c.", seconds=s), GOLD, CONCLUSION, "yes") for s in (1, 2, 3)],
            "stock": [judged(result("A [PMID:1] b c.", seconds=s), GOLD, CONCLUSION, "yes") for s in (4, 4, 4)]}
    text = table(rows)
    assert "| ours | 3 | 2.0 s |" in text and "ours / stock: 0.50" in text


def test_the_stock_pipeline_is_stock_haystack_components_only():
    from haystack.utils import Secret
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    # Not connected until used: building the pipeline reads no table.
    store = PgvectorDocumentStore(connection_string=Secret.from_token("postgresql://nobody@127.0.0.1:1/none"),
                                  embedding_dimension=384)
    pipeline = stock_pipeline(store, {"model": "m", "api_base_url": "http://127.0.0.1:1/v1",
                                      "generation_kwargs": {"max_tokens": 400}})
    modules = {type(pipeline.get_component(name)).__module__.split(".")[0] for name in pipeline.graph.nodes}
    assert modules <= {"haystack", "haystack_integrations"}, modules
