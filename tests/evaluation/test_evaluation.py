"""Evaluation: every metric on small hand-computed cases, question files in both formats, and the runner end to end."""

from __future__ import annotations

import json
import math

import pytest
from haystack import Document

from pmc_rag.evaluation.metrics import (
    answer_chunk_scores,
    citation_scores,
    confusion_matrix,
    paper_scores,
    percentile,
    predicted_verdict,
    summarise,
)
from pmc_rag.evaluation.questions import QuestionFileError, load_questions

from conftest import CORPUS, PROJECT_ROOT, pipeline_file_for, rag_llm_spec


def chunk(chunk_id: str, source_id: str) -> Document:
    return Document(id=chunk_id, content=chunk_id, meta={"source_id": source_id})


def test_paper_level_scores_count_each_paper_once_at_its_best_rank():
    # Chunks of papers A, A, B, C, D: as papers, A B C D. Gold: C (paper rank 3) and E (not found).
    ranked = [chunk("a1", "A"), chunk("a2", "A"), chunk("b1", "B"), chunk("c1", "C"), chunk("d1", "D")]
    scores = paper_scores(ranked, ["C", "E"])
    assert scores["paper_recall@1"] == 0 and scores["paper_recall@5"] == 0.5 and scores["paper_recall@10"] == 0.5
    assert scores["paper_mrr"] == pytest.approx(1 / 3)  # paper rank 3, although it is the 4th chunk
    # DCG = 1/log2(3+1) = 0.5; ideal DCG with two gold papers = 1/log2(2) + 1/log2(3) = 1.6309
    assert scores["paper_ndcg@10"] == pytest.approx(0.5 / (1 + 1 / math.log2(3)))


def test_paper_level_perfect_and_empty_rankings():
    perfect = paper_scores([chunk("x1", "X"), chunk("y1", "Y")], ["X"])
    assert perfect == {"paper_recall@1": 1.0, "paper_recall@5": 1.0, "paper_recall@10": 1.0, "paper_mrr": 1.0,
                       "paper_ndcg@10": 1.0}
    assert set(paper_scores([], ["X"]).values()) == {0.0}


def test_answer_chunk_scores_use_chunk_ranks_and_any_answer_chunk_is_a_hit():
    ranked = [chunk("a1", "A"), chunk("g1", "G"), chunk("g2", "G"), chunk("b1", "B")]
    # The gold paper's conclusion is g2 (chunk rank 3); g1 is the same paper but not the answer.
    scores = answer_chunk_scores(ranked, ["g2", "g9"])
    assert scores["chunk_recall@1"] == 0 and scores["chunk_recall@5"] == 1.0  # one answer chunk is enough
    assert scores["chunk_mrr"] == pytest.approx(1 / 3)
    # DCG = 1/log2(4) = 0.5; ideal DCG for two answer chunks = 1 + 1/log2(3)
    assert scores["chunk_ndcg@10"] == pytest.approx(0.5 / (1 + 1 / math.log2(3)))


def test_rankings_are_cut_at_ten():
    ranked = [chunk(f"c{i}", f"P{i}") for i in range(11)]
    scores = paper_scores(ranked, ["P10"])  # the 11th paper
    assert scores["paper_recall@10"] == 0 and scores["paper_mrr"] == 0 and scores["paper_ndcg@10"] == 0


def test_citation_scores():
    answer = {
        "citations": [{"source_id": "PMC1", "support": 0.8}, {"source_id": "PMC2", "support": 0.4},
                      {"source_id": "PMC9", "support": None}],
        "references": [{"source_id": "PMC1"}, {"source_id": "PMC2"}, {"source_id": "PMC9"}],
        "sources": [{"source_id": "PMC1", "in_prompt": True}, {"source_id": "PMC2", "in_prompt": True},
                    {"source_id": "PMC9", "in_prompt": False}],
        "flags": {"extractive_fallback": False},
    }
    scores = citation_scores(answer, ["PMC2"])
    assert scores == {"citations": 3, "citations_valid": 2, "cites_gold": True, "support_mean": pytest.approx(0.6),
                      "extractive_fallback": False}
    assert not citation_scores(answer, ["PMC7"])["cites_gold"]


def test_verdicts_and_confusion_matrix():
    assert predicted_verdict("Yes, erlotinib works [1].") == "yes"
    assert predicted_verdict("**No**. It does not [2].") == "no"
    assert predicted_verdict("Maybe: the evidence is mixed.") == "maybe"
    assert predicted_verdict("Yesterday's trial showed...") is None  # a word boundary, not a prefix
    assert predicted_verdict("The excerpts do not answer it.") is None
    assert predicted_verdict("No technical problems with INR testing were uncovered [1].") is None  # a finding
    assert predicted_verdict("No - it does not [1].") == "no" and predicted_verdict("No") == "no"
    matrix = confusion_matrix([("yes", "yes"), ("yes", None), ("no", "yes"), ("maybe", "no")])
    assert matrix["yes"] == {"yes": 1, "no": 0, "maybe": 0, "none": 1}
    assert matrix["no"]["yes"] == 1 and matrix["maybe"]["no"] == 1


def test_percentiles_interpolate_between_ranks():
    assert percentile([10, 20, 30, 40], 50) == 25
    assert percentile([10, 20, 30, 40], 95) == pytest.approx(38.5)  # 30 + 0.85 * 10
    assert percentile([7], 95) == 7 and percentile([], 50) is None


def test_summary_sums_up_records():
    def record(valid: int, shown: int, gold: bool, verdict: str, predicted: str | None, total: float) -> dict:
        return {"retrieval": {"paper_mrr": 1.0 if gold else 0.0}, "timings_ms": {"total": total, "bm25": 10.0},
                "gold_verdict": verdict, "predicted_verdict": predicted, "usage": {"prompt_tokens": 100,
                                                                                   "completion_tokens": 20},
                "citations": {"citations": shown, "citations_valid": valid, "cites_gold": gold,
                              "support_mean": 0.5, "extractive_fallback": not gold}}

    summary = summarise([record(2, 2, True, "yes", "yes", 1000), record(1, 2, False, "no", "yes", 3000),
                         {"error": "boom"}])
    assert summary["questions"] == 3 and summary["errors"] == 1
    assert summary["retrieval"]["paper_mrr"] == 0.5
    assert summary["citations"]["validity"] == 0.75 and summary["citations"]["invalid"] == 1
    assert summary["citations"]["gold_cited_rate"] == 0.5 and summary["citations"]["extractive_fallback_rate"] == 0.5
    assert summary["verdicts"]["accuracy"] == 0.5 and summary["verdicts"]["confusion"]["no"]["yes"] == 1
    assert summary["timings_ms"]["total"] == {"p50": 2000, "p95": 2900}
    assert summary["tokens"] == {"in_mean": 100, "out_mean": 20}
    assert summary["always_yes_accuracy"] == 0.5  # one of the two judged questions is a "yes"


def test_question_files_in_both_formats(tmp_path):
    pubmedqa = tmp_path / "pubmedqa.json"
    pubmedqa.write_text(json.dumps({"123": {"QUESTION": "Does X help?", "final_decision": "no", "LONG_ANSWER": "No."}}))
    [question] = load_questions(pubmedqa)
    assert question.gold_source_ids == ["PMID:123"] and question.gold_verdict == "no"
    assert question.is_answer_section("Abstract: Conclusions") and not question.is_answer_section("Abstract: Results")

    jsonl = tmp_path / "mine.jsonl"
    jsonl.write_text('# my questions\n{"question": "Is Y safe?", "gold_source_ids": ["pmc42", 77], '
                     '"gold_verdict": "Maybe", "answer_sections": ["Results"]}\n\n'
                     '{"question": "Why Z?", "gold_source_ids": "doi:10.1/z"}\n')
    first, second = load_questions(jsonl)
    assert first.gold_source_ids == ["PMC42", "PMID:77"] and first.gold_verdict == "maybe"
    assert first.answer_sections == ["results"] and first.id == "2"
    assert second.gold_source_ids == ["doi:10.1/z"] and second.gold_verdict is None and not second.answer_sections


@pytest.mark.parametrize(("text", "message"), [
    ('{"question": "Q?"}\n', "line 1: `gold_source_ids` must be a non-empty list"),
    ('{"question": "", "gold_source_ids": ["PMC1"]}\n', "line 1: `question` must be a non-empty string"),
    ('{"question": "Q?", "gold_source_ids": ["PMC1"]}\n{oops\n', "line 2: not valid JSON"),
    ('{"question": "Q?", "gold_source_ids": ["PMC1"], "gold_verdict": "probably"}\n', "`gold_verdict` must be one"),
    ('{"123": {"CONTEXTS": []}}', "entry '123' has no QUESTION"),
    ("\n# nothing\n", "holds no questions"),
])
def test_bad_question_files_say_what_to_fix(tmp_path, text, message):
    path = tmp_path / "questions.jsonl"
    path.write_text(text)
    with pytest.raises(QuestionFileError, match=message.replace("(", r"\(").replace("`", "`")):
        load_questions(path)


@pytest.fixture(scope="session")
def eval_table(pg_conn_str, tmp_path_factory):
    """Some sample PubMedQA abstracts (and one PMC article) in a table of their own."""
    from pmc_rag.ingestion.runner import ingest
    from pmc_rag.paths import DEV_QUESTIONS

    from conftest import indexing_pipeline_for, make_store

    table, folder = "eval_chunks", tmp_path_factory.mktemp("eval")
    # The abstracts of the first five dev questions among 60 others (the whole 1,000 would take minutes).
    gold = set(list(json.loads(DEV_QUESTIONS.read_text()))[:5])
    lines = (CORPUS / "pubmedqa" / "corpus.jsonl").read_text().splitlines()
    subset = [line for line in lines if json.loads(line)["pmid"] in gold] + lines[:60]
    (folder / "abstracts.jsonl").write_text("\n".join(dict.fromkeys(subset)) + "\n")
    make_store(table).delete_table()
    ingest([str(folder / "abstracts.jsonl"), str(CORPUS / "pmc_oa" / "PMC4816447.xml")],
           indexing_pipeline_for(table), progress=False)
    yield table, folder
    make_store(table).delete_table()


def test_runner_end_to_end_on_five_questions(eval_table, capsys):
    """Every metric family on 5 shipped questions, a retrieval and two answering variants, plus a variant that
    cannot start; then the report's markdown, JSON and PNG."""
    from pmc_rag.evaluation.report import markdown, write_chart, write_json
    from pmc_rag.evaluation.runner import run_evaluation
    from pmc_rag.paths import DEV_QUESTIONS

    table, folder = eval_table
    # rag_single: the model answers every question there (rag.yml quotes a conclusion that answers instead)
    variants = [pipeline_file_for(name, table, folder) for name in ("retrieve_bm25", "rag_extractive", "rag_single")]
    report = run_evaluation([*variants, folder / "missing.yml"], DEV_QUESTIONS, limit=5, progress=False)

    assert report["meta"]["questions"] == 5 and report["meta"]["seed"] == 0
    assert report["meta"]["packages"]["haystack-ai"].startswith("3.")
    bm25, extractive, rag = (report["variants"][name] for name in ("retrieve_bm25", "rag_extractive", "rag_single"))
    assert len(bm25["yaml_sha256"]) == 64 and "qwen2.5-0.5b-instruct" in rag["models"]
    assert "not found" in report["variants"]["missing"]["error"]
    for entry in (bm25, extractive, rag):
        summary = entry["summary"]
        assert summary["questions"] == 5 and summary["errors"] == 0 and summary["gold_not_indexed"] == 0
        assert summary["questions_with_answer_chunks"] == 5  # every gold abstract has a conclusion chunk
        assert summary["retrieval"]["paper_recall@10"] >= 0.8  # these abstracts are easy to find (0.992 over 500)
        assert summary["timings_ms"]["total"]["p95"] >= summary["timings_ms"]["total"]["p50"] > 0
    assert bm25["kind"] == "retrieval" and "citations" not in bm25["summary"]
    for entry in (extractive, rag):
        citations = entry["summary"]["citations"]
        assert citations["validity"] == 1.0 and citations["invalid"] == 0
        assert entry["summary"]["verdicts"]["questions"] == 5
    # In this small table the double-balloon enteroscopy abstract is only 0.42 similar to its question: the
    # relevance gate (0.5) says the papers do not answer it, and no model is asked; above 0.4, the closest papers'
    # findings are quoted as related (their citations counted valid above: quoted from the related excerpts)
    for entry in (extractive, rag):
        refused = [r for r in entry["records"] if r["flags"].get("not_answered")]
        assert [r["id"] for r in refused] == ["23831910"]
        assert refused[0]["flags"]["related_findings"] and refused[0]["references"]
    assert extractive["summary"]["citations"]["extractive_fallback_rate"] == 0.8  # every other answer quotes
    assert extractive["summary"]["verdicts"]["confusion"]["yes"]["none"] + \
        extractive["summary"]["verdicts"]["confusion"]["no"]["none"] + \
        extractive["summary"]["verdicts"]["confusion"]["maybe"]["none"] == 5  # quotations give no verdict
    assert rag["summary"]["tokens"]["in_mean"] > 100 and "generator" in rag["summary"]["timings_ms"]
    assert rag["summary"]["answered_by"] == {"qwen2.5-0.5b-instruct": 4, "no model": 1}  # no Ollama here
    assert rag["summary"]["claims"]["statements"] > 0 and rag["summary"]["claims"]["citation_precision"] is not None
    assert rag["records"][0]["failed_generators"] == ["OllamaChatGenerator"]
    streamed = [r for r in rag["records"] if r["model"] == "qwen2.5-0.5b-instruct"]
    assert all(0 < r["first_token_ms"] < r["timings_ms"]["total"] for r in streamed)
    assert rag["summary"]["streaming"]["first_token_ms"]["p50"] > 0
    record = rag["records"][0]
    assert record["gold_source_ids"] == ["PMID:10808977"] and len(record["ranked"]) == 10

    table_md = markdown(report)
    assert "| retrieve_bm25 | 0 |" in table_md and "| rag_single | qwen2.5-0.5b-instruct, no model | 1.000 | 0 |" in \
        table_md
    assert "| rag_extractive | no model | 1.000 | 0 |" in table_md
    assert "not run:" in table_md and "Verdicts of `rag_single`" in table_md and "first token p50" in table_md
    assert "side by side" not in table_md  # no --local-models
    write_json(report, folder / "results.json")
    write_chart(report, folder / "chart.png")
    assert json.loads((folder / "results.json").read_text())["variants"]["rag_single"]["records"][0]["id"] == \
        "10808977"
    assert (folder / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_retrieval_only_runs_answering_pipelines_without_their_model(eval_table, tmp_path):
    from pmc_rag.evaluation.runner import load_variant, run_evaluation

    table, folder = eval_table
    questions = tmp_path / "unseen.jsonl"  # a question file the project has never seen, in the JSONL format
    questions.write_text(json.dumps({"question": "Is first-line erlotinib effective in EGFR-mutant lung cancer?",
                                     "gold_source_ids": ["PMC4816447"], "gold_verdict": "yes"}) + "\n")
    report = run_evaluation([pipeline_file_for("rag", table, folder)], questions, retrieval_only=True,
                            progress=False)
    rag = report["variants"]["rag"]
    assert rag["summary"]["retrieval"]["paper_recall@1"] == 1.0
    assert "citations" not in rag["summary"] and "answer" not in rag["records"][0]
    assert rag["summary"]["questions_with_answer_chunks"] == 0  # no answer_sections given
    generator = load_variant(pipeline_file_for("rag", table, folder), retrieval_only=True).pipeline.pipeline \
        .get_component("generator")
    assert type(generator).__name__ == "EmptyReplyGenerator"  # the model was never asked


def test_llm_judge_scores_faithfulness_through_ollama():
    """The judge's wiring, against the fake Ollama server (named as such: no Ollama here) over real HTTP."""
    from fake_ollama import FakeOllama

    from pmc_rag.evaluation.judge import FaithfulnessJudge

    with FakeOllama(model="judge-model") as ollama:
        judge = FaithfulnessJudge("judge-model", url=ollama.url)
        assert judge.score("Does X help?", "X helps [1]. It is safe [1].", ["X helped in a trial."]) == 0.5
        request = ollama.requests[-1]
        assert request["format"] == "json" and request["options"]["temperature"] == 0
        assert "X helped in a trial." in request["messages"][-1]["content"]
        assert judge.score("Does X help?", "  ", ["X helped."]) is None  # nothing to judge
        ollama.json_reply = "not json"
        assert judge.score("Does X help?", "X helps [1].", ["X helped."]) is None  # an unusable reply


def test_adversaries_replace_the_model_and_the_table_shows_what_got_through(eval_table):
    from pmc_rag.evaluation.report import markdown
    from pmc_rag.evaluation.runner import run_evaluation
    from pmc_rag.paths import DEV_QUESTIONS

    table, folder = eval_table
    # rag_single: its model writes every answer (rag.yml quotes a conclusion that answers, and no adversary writes)
    report = run_evaluation([pipeline_file_for("rag_single", table, folder),
                             pipeline_file_for("retrieve_bm25", table, folder)],
                            DEV_QUESTIONS, limit=3, progress=False, adversaries=["negate", "misattribute"])
    assert list(report["variants"]) == ["rag_single+negate", "rag_single+misattribute"]  # a retriever has no model
    negate = report["variants"]["rag_single+negate"]["summary"]
    assert negate["answered_by"] == {"adversary:negate": 2, "no model": 1}  # one not answered (the gate)
    assert negate["attacks"]["attacked"] >= 1 and negate["attacks"].get("through", 0) == 0
    assert negate["attacks"]["removed"] == negate["attacks"]["attacked"] and negate["claims"]["removed"] >= 1
    assert report["meta"]["adversaries"] == ["negate", "misattribute"]
    assert report["meta"]["claim_judge"]["type"].endswith("LexicalSupportJudge")
    assert "| rag_single+negate |" in markdown(report) and "citation precision" in markdown(report)


@pytest.mark.integration  # each real model, from a server of its own
def test_each_local_model_answers_in_turn_from_a_server_of_its_own(eval_table, tmp_path):
    """`pmc-rag eval --local-models`: one row per embedded model, Ollama out of the chain, and the model's own
    server stopped once its row is done (the user's server on rag.yml's port is left alone)."""
    from pmc_rag.evaluation.report import markdown
    from pmc_rag.evaluation.runner import run_evaluation
    from pmc_rag.local_llm.spec import LocalModelSpec
    from pmc_rag.local_llm.supervisor import LocalModelServer
    from pmc_rag.paths import DEV_QUESTIONS

    table, folder = eval_table
    model = "qwen2.5-0.5b-instruct"
    bm25 = pipeline_file_for("retrieve_bm25", table, tmp_path, real_model=True)  # first: it copies rag.yml too
    report = run_evaluation([pipeline_file_for("rag", table, tmp_path, real_model=True, model_always=True), bm25],
                            DEV_QUESTIONS, limit=2, progress=False, local_models=[model])
    assert list(report["variants"]) == [f"rag@{model}"]  # a retriever has no model to swap
    entry = report["variants"][f"rag@{model}"]
    assert entry["models"] == [model]
    assert entry["summary"]["answered_by"] == {model: 1, "no model": 1}  # the second: not answered (the gate)
    assert all(r["failed_generators"] == [] for r in entry["records"])  # Ollama was taken out, not tried
    assert entry["summary"]["model_server_peak_mb"] > 100  # the 0.5B model's weights alone are 470 MB
    assert entry["summary"]["streaming"]["generation_tokens_per_s"] > 0
    assert entry["local_model"]["url"] != "http://127.0.0.1:1417/v1"
    spec = LocalModelSpec(model=model, url=entry["local_model"]["url"])
    assert LocalModelServer(spec).health() is None  # stopped with its row
    table_md = markdown(report)
    assert "**Embedded models side by side**" in table_md and f"| rag@{model} |" in table_md


def test_a_local_model_edit_repoints_the_generator_and_drops_ollama():
    from pmc_rag.evaluation.runner import with_local_model
    from pmc_rag.pipelines import PipelineError, pipeline_spec

    _, spec = pipeline_spec("rag")
    with_local_model("smollm2-135m-instruct", 1499)(spec)
    assert spec["local_model"]["model"] == "smollm2-135m-instruct"
    assert spec["local_model"]["url"] == "http://127.0.0.1:1499/v1"
    chain = spec["components"]["generator"]["init_parameters"]["chat_generators"]
    assert [g["type"].rsplit(".", 1)[-1] for g in chain] == ["OpenAIChatGenerator", "EmptyReplyGenerator"]
    assert chain[0]["init_parameters"]["api_base_url"] == "http://127.0.0.1:1499/v1"
    assert chain[0]["init_parameters"]["model"] == "smollm2-135m-instruct"
    assert spec["local_model"]["weights"] == rag_llm_spec().weights   # rag.yml's own setting stays unless named
    _, spec = pipeline_spec("rag")
    with_local_model("qwen2.5-0.5b-instruct:packaged", 1499)(spec)
    assert spec["local_model"]["model"] == "qwen2.5-0.5b-instruct" and spec["local_model"]["weights"] == "packaged"
    chain = spec["components"]["generator"]["init_parameters"]["chat_generators"]
    assert chain[0]["init_parameters"]["model"] == "qwen2.5-0.5b-instruct"
    _, retrieval = pipeline_spec("retrieve_bm25")
    with pytest.raises(PipelineError, match="no `local_model:`"):
        with_local_model("smollm2-135m-instruct", 1499)(retrieval)


def test_without_generation_keeps_the_model_server_only_for_a_query_writer():
    """Retrieval-only runs replace the answer's generator; a rewriter's model writes what is searched, so it stays
    (and so does the model server it needs); so does the translator's, which writes what a question in another
    language is searched as."""
    from pmc_rag.evaluation.runner import EMPTY_REPLY, without_generation
    from pmc_rag.pipelines import pipeline_spec

    _, plain = pipeline_spec("rag_extractive")  # no translator: nothing before the answer asks a model
    without_generation(plain)
    assert plain["components"]["generator"] == EMPTY_REPLY and "local_model" not in plain
    _, translating = pipeline_spec("rag")
    without_generation(translating)
    assert translating["components"]["generator"] == EMPTY_REPLY
    chain = translating["components"]["translator"]["init_parameters"]["chat_generator"]["init_parameters"]
    translators = [g["init_parameters"]["api_base_url"] for g in chain["chat_generators"]]
    # its own model first (other_local_models), then the answering model's server: both servers stay
    assert translators == [translating["other_local_models"][0]["url"], translating["local_model"]["url"]]
    _, rewriting = pipeline_spec("rag_rewrite")
    without_generation(rewriting)
    assert rewriting["components"]["generator"] == EMPTY_REPLY
    writer = rewriting["components"]["rewriter"]["init_parameters"]["chat_generator"]
    assert writer["init_parameters"]["api_base_url"] == rewriting["local_model"]["url"]


def test_unanswerable_check_counts_refusals_per_set_without_asking_a_model(eval_table, tmp_path):
    from pmc_rag.evaluation.questions import Question
    from pmc_rag.evaluation.relevance import relevance_markdown, run_relevance

    table, folder = eval_table
    unanswerable = tmp_path / "unanswerable.json"
    unanswerable.write_text(json.dumps({"questions": [
        {"question": "How do I bake sourdough bread?", "set": "tuning", "kind": "off_domain"},
        {"question": "Does lecanemab slow cognitive decline in early Alzheimer's disease?", "set": "held_out"}]}))
    answerable = [Question("Is first-line erlotinib effective in EGFR-mutant lung cancer?", ["PMC4816447"])]
    report = run_relevance([pipeline_file_for("rag", table, folder)], unanswerable, answerable, progress=False)

    rag = report["pipelines"]["rag"]
    # bread is far from every paper: refused with nothing related to show
    assert rag["summary"]["tuning"] == {"questions": 1, "refused": 1, "related": 0}
    assert rag["summary"]["tuning (off_domain)"] == {"questions": 1, "refused": 1, "related": 0}
    assert rag["summary"]["held_out"]["refused"] == 1
    assert rag["summary"]["answerable"] == {"questions": 1, "refused": 0, "related": 0}
    lecanemab = rag["records"][1]
    assert "No model was asked" in lecanemab["why"] and lecanemab["best_similarity"] < 0.5
    assert rag["records"][2]["why"] is None and rag["records"][2]["best_similarity"] > 0.5
    assert "| rag | tuning | 1 | 1 | 100% | 0 |" in relevance_markdown(report)
    with pytest.raises(ValueError, match="needs a `question` and a `set`"):
        run_relevance(["rag"], _written(tmp_path / "bad.json", {"questions": [{"question": "Why?"}]}), [])


def test_the_gate_report_prints_tuning_misses_and_only_counts_held_aside_ones():
    from pmc_rag.evaluation.relevance import relevance_markdown

    def record(question, set_name, refused):
        return {"question": question, "set": set_name, "kind": None, "refused": refused, "best_similarity": 0.6}

    records = [record("Is music associated with sleep?", "tuning", False),
               record("A sealed question?", "held_out", False), record("Another sealed one?", "held_aside", False),
               record("A held-aside question turned away", "held_aside", True)]
    report = {"meta": {"unanswerable": 4, "answerable": 0, "file": "x.json", "date": "today"},
              "pipelines": {"rag": {"summary": {}, "records": records}}}
    text = relevance_markdown(report)
    assert "- Is music associated with sleep? (tuning" in text
    assert "A sealed question?" not in text and "Another sealed one?" not in text
    assert "- and 2 held-aside questions (sealed: counted, not printed)" in text


def _written(path, data):
    path.write_text(json.dumps(data))
    return path


def test_what_a_reader_is_shown_is_judged_by_the_gold_label_and_the_gold_findings():
    from pmc_rag.evaluation.questions import Question
    from pmc_rag.evaluation.trust import summarise_trust, trust_scores

    question = Question(question="Is first-line erlotinib effective in EGFR-mutant lung cancer?",
                        gold_source_ids=["PMC1"], gold_verdict="no",
                        gold_findings=["Erlotinib did not prolong survival. Rash occurred in 80% of patients."])
    restated = trust_scores({"answer": "Yes, first-line erlotinib is effective in EGFR-mutant lung cancer [1]. "
                                       "We can develop targeted interventions.", "references": [{}], "flags": {}},
                            question)
    assert restated["wrong_verdict_shown"] and restated["uncited_sentences"] == [
        "We can develop targeted interventions."]
    assert restated["questions_shown"] == ["Yes, first-line erlotinib is effective in EGFR-mutant lung cancer [1]."]
    uncited_verdict = trust_scores({"answer": "No, it is not effective.", "references": [], "flags": {}}, question)
    assert not uncited_verdict["wrong_verdict_shown"]  # right, and uncited anyway
    quoted = trust_scores({"answer": "Erlotinib did not prolong survival [1]. To examine whether erlotinib "
                                     "works in lung cancer [2].", "references": [{}, {}],
                           "flags": {"extractive_fallback": True}}, question)
    assert (quoted["quotes"], quoted["quotes_answering"]) == (2, 1) and quoted["uncited_sentences"] == []
    # the paper's own conclusion, quoted, in the question's words: a finding, not the question restated
    conclusion = trust_scores({"answer": "First-line erlotinib was not effective in EGFR-mutant lung cancer [1].",
                               "references": [{}], "flags": {"extractive_fallback": True}}, question)
    assert conclusion["questions_shown"] == []
    summary = summarise_trust([{"trust": restated}, {"trust": uncited_verdict}, {"trust": quoted}])
    assert summary["wrong_verdicts_shown"] == 1 and summary["uncited_sentences_shown"] == 2
    assert summary["quotation_answers_quoting_gold_findings"] == 1 and summary["quotation_share"] == 1 / 3
    # the model's own answer is judged the same way: does a sentence it shows state the gold findings?
    assert (restated["model_sentences"], restated["model_sentences_answering"]) == (1, 0)
    stating = trust_scores({"answer": "No: erlotinib did not prolong survival in these patients [1].",
                            "references": [{}], "flags": {}}, question)
    assert stating["model_sentences_answering"] == 1 and "quotes" not in stating
    summary = summarise_trust([{"trust": restated}, {"trust": stating}, {"trust": quoted}])
    assert (summary["model_answers"], summary["model_answers_stating_gold_findings"]) == (2, 1)


def test_the_device_benchmark_runs_from_its_export_alone_and_measures_agreement_with_float32(tmp_path, capsys):
    # The export is what travels to a machine with a GPU: texts and a float16 copy of the model, nothing of pmc_rag.
    from pmc_rag.evaluation.bench_embedding_devices import main, read_texts, write_export

    texts = ["Erlotinib in EGFR-mutant lung cancer", "Methods\nPatients were randomised.", "Results\nNo change."]
    write_export(texts, "sentence-transformers/all-MiniLM-L6-v2", tmp_path)
    assert read_texts(tmp_path) == texts
    assert (tmp_path / "model" / "model.safetensors").stat().st_size < 60 * 2**20   # float16: it fits the trip

    assert main([str(tmp_path), "--runs", "1", "--cpu-batches", "2", "--json", str(tmp_path / "rows.json")]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())
    cpu = [r for r in rows if r["device"] == "cpu"]
    assert [(r["dtype"], r["batch_size"]) for r in cpu] == [("float32", 2), ("bfloat16", 2)]
    assert cpu[0]["min_cosine"] == pytest.approx(1.0, abs=1e-6)        # the reference row agrees with itself
    assert 0.99 < cpu[1]["min_cosine"] < 1.0 + 1e-6 and all(r["chunks_per_s"] > 0 for r in rows)
    assert "| cpu | bfloat16 | 2 |" in capsys.readouterr().out


def test_the_device_benchmark_names_the_export_command_when_its_folder_is_empty(tmp_path, capsys):
    from pmc_rag.evaluation.bench_embedding_devices import main

    assert main([str(tmp_path)]) == 2
    assert "pmc-rag bench devices --export" in capsys.readouterr().err


def test_a_conversation_turn_is_judged_by_the_words_written_for_it_and_repeats_are_counted(tmp_path):
    from pmc_rag.evaluation.conversations import (answers_what_it_asks, load_conversations, said_not_answered,
                                                  summarise_conversations)

    turn = {"question": "How many patients took part?", "expect": "answer", "answer_has": ["N=44", "44 patients"]}
    assert answers_what_it_asks(turn, {"answer": "Patients (n=44) with PD [1].", "flags": {}})
    assert not answers_what_it_asks(turn, {"answer": "These findings suggest a relationship [1].", "flags": {}})
    assert not answers_what_it_asks(turn, {"answer": "x", "flags": {"not_answered": True}})
    # What the reader is shown counts: the model's "the excerpts do not say", removed for the passage that does
    # say, is no "not answered".
    quoted = {"answer": "Seven individuals were recruited [1].", "flags": {},
              "raw_answer": "The excerpts do not mention how many patients took part."}
    assert not said_not_answered(quoted) and said_not_answered({"answer": "The papers do not report it.", "flags": {}})
    assert answers_what_it_asks({"question": "q", "expect": "answer"}, {"answer": "x", "flags": {}}) is None
    records = [{"expect": "answer", "not_answered": False, "cited": ["PMID:1"], "off_topic": [], "quoted": True,
                "answers_what_it_asks": asked, "repeats_last_answer": repeats}
               for asked, repeats in [(None, False), (False, True), (True, False)]]
    summary = summarise_conversations(records)
    assert (summary["asked_turns"], summary["answers_what_it_asks"], summary["repeats_last_answer"]) == (2, 1, 1)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"conversations": [{"id": "c", "topic_source_ids": ["PMID:1"], "turns": [
        {"question": "How many?", "expect": "answer", "answer_has": "44"}]}]}))
    with pytest.raises(ValueError, match="`answer_has` must be a list"):
        load_conversations(bad)
    for path in ("evaluation/datasets/conversations.json", "evaluation/datasets/conversations_held_aside.json",
                 "evaluation/datasets/conversations_held_aside_2.json"):
        assert load_conversations(PROJECT_ROOT / path)
