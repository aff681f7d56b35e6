"""rag.yml end to end: real retrieval, the real embedded model, citation checking, and `pmc-rag ask`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from pmc_rag.answering.pipeline_run import answer_question, run_answering
from pmc_rag.pipeline_files import resolve_pipeline_spec
from pmc_rag.pipelines import PipelineError, load_declared_pipeline

from conftest import PROJECT_ROOT, pipeline_file_for

QUESTION = "Is first-line erlotinib effective in advanced non-small cell lung cancer with EGFR mutations?"


@pytest.fixture(scope="session")
def rag_files(tmp_path_factory, pmc_sample_table):
    return pmc_sample_table, tmp_path_factory.mktemp("rag")


def test_a_question_the_best_papers_conclusion_answers_is_quoted_without_asking_the_model(rag_files, tmp_path):
    table, folder = rag_files
    pipeline = load_declared_pipeline(pipeline_file_for("rag", table, tmp_path))
    answer = answer_question(pipeline, QUESTION)
    assert answer.flags["quoted_first"] and answer.flags["extractive_fallback"] and answer.model is None
    assert "generator" not in answer.timings_ms and answer.usage == {}  # the model was never asked
    assert answer.references[0].source_id == "PMC4816447" and answer.answer.endswith("[1].")
    assert answer.references[0].evidence in answer.answer.replace(" [1].", ".")  # its own sentence, quoted
    assert answer.notes == ["Quoted from the conclusion of PMC4816447, the best-matching paper, which speaks to the "
                            "question: no model was asked (quotation_first)."]


def test_a_question_in_spanish_is_searched_in_english_and_quotes_the_same_paper(rag_files, tmp_path):
    table, folder = rag_files
    pipeline = load_declared_pipeline(pipeline_file_for("rag", table, tmp_path))  # the translation: recorded
    answer = answer_question(pipeline, "¿Es eficaz el erlotinib como primer tratamiento en el cáncer de pulmón con "
                                       "mutación EGFR?")
    assert answer.references[0].source_id == "PMC4816447" and not answer.flags.get("not_answered")
    assert answer.notes[0].startswith("Asked in Spanish: searched and answered in English, the language of the papers")
    assert "erlotinib" in answer.notes[0].split(" as ", 1)[1].lower()  # the model's English, shown as such


def test_rag_reworded_asks_a_question_turned_away_for_its_words_again_in_the_papers_terms(rag_files, tmp_path):
    """rag_reworded.yml end to end, replayed: rag.yml turns the lay question away for some of its words; the
    variant's translator (the tests' model, recorded) rewords it without them, the second search answers from the
    MmPPOX paper, and the answer says how it was searched."""
    table, folder = rag_files
    lay = "do bugs that eat fat in TB get blocked by the MmPPOX drug?"
    as_asked, outputs = run_answering(load_declared_pipeline(pipeline_file_for("rag", table, tmp_path)), lay)
    assert as_asked.flags["not_answered"] and outputs["objected"] and "rewording" not in as_asked.timings_ms
    answer = answer_question(load_declared_pipeline(pipeline_file_for("rag_reworded", table, tmp_path)), lay)
    assert answer.flags["reworded"] and not answer.flags.get("not_answered")
    assert answer.references[0].source_id == "PMC3460867" and answer.timings_ms["rewording"] > 0
    assert answer.notes[0].startswith('Not answered as asked; searched and answered as "')
    searched_as = answer.notes[0].split('"')[1].lower()
    assert searched_as != lay.lower() and "mmppox" in searched_as
    assert any(word.lower() not in searched_as for word in outputs["objected"])


@pytest.mark.integration  # the real model's server, its streamed tokens and their count
def test_rag_answers_with_a_valid_citation_to_the_right_paper(rag_files, tmp_path):
    table, folder = rag_files
    pipeline = load_declared_pipeline(pipeline_file_for("rag", table, tmp_path, real_model=True, model_always=True))
    pipeline.warm_up()  # starts the local model server
    answer = answer_question(pipeline, QUESTION).model_dump()

    assert answer["model"] == "qwen2.5-0.5b-instruct"  # no Ollama here: the embedded model answered
    assert answer["failed_generators"] == ["OllamaChatGenerator"]
    assert answer["flags"]["fallback_generator"] and "fallback model qwen2.5-0.5b-instruct" in answer["notes"][-1]
    assert "PMC4816447" in [ref["source_id"] for ref in answer["references"]]
    shown = {s["source_id"] for s in answer["sources"] if s["in_prompt"]}
    assert {ref["source_id"] for ref in answer["references"]} <= shown  # valid by construction
    assert "[1]" in answer["answer"]
    assert answer["usage"]["prompt_tokens"] > 100
    for stage in ("query_embedder", "semantic", "bm25", "fusion", "ranker", "generator", "answer_builder"):
        assert answer["timings_ms"][stage] > 0
    assert all(set(s["found_by"]) <= {"semantic", "bm25"} for s in answer["sources"])

    # Streamed, through the same model server: tokens arrive one by one and usage still comes with the answer.
    tokens: list[str] = []
    streamed = answer_question(pipeline, "Does erlotinib prolong progression-free survival in EGFR-mutant NSCLC?",
                               streaming_callback=lambda chunk: tokens.append(chunk.content)).model_dump()
    assert streamed["model"] == "qwen2.5-0.5b-instruct" and len([t for t in tokens if t]) > 5
    assert "".join(tokens).strip() == streamed["raw_answer"].strip()
    assert streamed["usage"]["completion_tokens"] == len([t for t in tokens if t])
    assert streamed["usage"]["prompt_tokens"] > 100


def test_when_every_generator_fails_the_answer_quotes_passages_and_says_so(rag_files, tmp_path):
    table, folder = rag_files
    spec = yaml.safe_load(pipeline_file_for("rag", table, tmp_path, real_model=True, model_always=True).read_text())
    generators = spec["components"]["generator"]["init_parameters"]["chat_generators"]
    generators[0]["init_parameters"]["url"] = "http://127.0.0.1:9"  # nothing listens there
    del generators[1]  # no embedded model either: only the empty last resort is left
    del spec["local_model"]
    path = tmp_path / "rag_no_generator.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    answer = answer_question(load_declared_pipeline(path), QUESTION).model_dump()
    assert answer["flags"]["extractive_fallback"] and answer["model"] is None
    assert "No model answer was available" in answer["notes"][0]
    assert answer["references"] and answer["references"][0]["source_id"] == "PMC4816447"


@pytest.mark.integration  # the real model's time limit
def test_a_generator_timeout_gives_the_quoted_answer_flagged(rag_files, tmp_path):
    table, folder = rag_files
    spec = yaml.safe_load(pipeline_file_for("rag", table, tmp_path, real_model=True, model_always=True).read_text())
    local = spec["components"]["generator"]["init_parameters"]["chat_generators"][1]["init_parameters"]
    # Not at temperature 0: the model server hands back a reply it wrote before at once (its reply memo), which a
    # fast CPU delivered within the millisecond (AMD EPYC, family 26).
    local.update(timeout=0.001, generation_kwargs={**local["generation_kwargs"], "temperature": 0.7})
    path = tmp_path / "rag_impatient.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    answer = answer_question(load_declared_pipeline(path), QUESTION).model_dump()
    assert answer["failed_generators"] == ["OllamaChatGenerator", "OpenAIChatGenerator"]
    assert answer["model"] is None and answer["flags"]["extractive_fallback"]
    assert answer["references"][0]["source_id"] == "PMC4816447" and "[1]" in answer["answer"]


@pytest.mark.integration  # runs pmc-rag (or Python) in another process
def test_pmc_rag_ask_prints_the_answer_and_references(rag_files, pg_conn_str):
    table, folder = rag_files
    path = pipeline_file_for("rag", table, folder)
    env = {**os.environ, "PG_CONN_STR": pg_conn_str}
    text = subprocess.run([sys.executable, "-m", "pmc_rag.cli", "ask", "--pipeline", str(path), QUESTION],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    assert "References" in text.stdout and "https://pmc.ncbi.nlm.nih.gov/articles/PMC4816447/" in text.stdout
    as_json = subprocess.run([sys.executable, "-m", "pmc_rag.cli", "ask", "--json", "--pipeline", str(path),
                              QUESTION], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    answer = json.loads(as_json.stdout)
    assert set(answer) >= {"answer", "raw_answer", "citations", "references", "sources", "flags", "timings_ms",
                           "model", "usage", "invalid_citations", "notes"}
    empty = subprocess.run([sys.executable, "-m", "pmc_rag.cli", "ask", "--pipeline", str(path), "   "],
                           cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert empty.returncode == 1 and "`question` is empty" in empty.stderr  # the server's own refusal


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory):
    """A cross-encoder with random weights, built here: no cross-encoder weights can be installed offline."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from pmc_rag.models import seed_embedding_model

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    tokenizer = AutoTokenizer.from_pretrained(str(seed_embedding_model()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_rag_rerank_wiring_runs_with_a_cross_encoder(rag_files, tiny_cross_encoder, answering_model_down):
    table, folder = rag_files
    path = pipeline_file_for("rag_rerank", table, folder)
    path.write_text(path.read_text().replace("cross-encoder/ms-marco-MiniLM-L-6-v2", str(tiny_cross_encoder)))
    pipeline = load_declared_pipeline(path)
    pipeline.warm_up()
    answer = answer_question(pipeline, QUESTION).model_dump()
    assert answer["timings_ms"]["ranker"] > 0
    assert answer["references"] and {r["source_id"] for r in answer["references"]} <= \
        {s["source_id"] for s in answer["sources"] if s["in_prompt"]}


def test_a_model_that_cannot_load_is_a_start_up_error_naming_the_yaml_key(rag_files):
    table, folder = rag_files
    pipeline = load_declared_pipeline(pipeline_file_for("rag_rerank", table, folder))
    with pytest.raises(PipelineError, match=r"component `ranker` could not start: .* Change "
                                            r"`components.ranker.init_parameters.model`"):
        pipeline.warm_up()


@pytest.mark.parametrize("name", ["rag_abbrev", "rag_evidence", "rag_context", "rag_structured",
                                  "rag_short_excerpts", "rag_rewrite", "rag_multi_query"])
def test_each_optional_stage_is_a_yaml_variant_that_answers(rag_files, name):
    table, folder = rag_files
    pipeline = load_declared_pipeline(pipeline_file_for(name, table, folder))
    answer = answer_question(pipeline,
                             "Does first-line erlotinib help NSCLC patients with an EGFR mutation?").model_dump()
    stage = {"rag_abbrev": "expander", "rag_evidence": "evidence_boost", "rag_context": "context",
             "rag_structured": "reader", "rag_short_excerpts": "sentences", "rag_rewrite": "rewriter",
             "rag_multi_query": "expander"}[name]
    assert stage in answer["timings_ms"]  # the stage ran (it may take under the 0.1 ms timings are rounded to)
    assert answer["references"]
    if name in ("rag_rewrite", "rag_multi_query"):  # what the model wrote was searched, and the notes say so
        searched = [n for n in answer["notes"] if n.startswith(("Searched as: ", "Also searched: "))]
        assert searched and "erlotinib" in searched[0].lower(), answer["notes"]
    assert {r["source_id"] for r in answer["references"]} <= {s["source_id"] for s in answer["sources"]
                                                              if s["in_prompt"]}


def test_the_findings_first_variant_shows_a_paper_s_conclusion_before_its_methods_and_no_caption(rag_files):
    from pmc_rag.evaluation.runner import without_generation

    table, folder = rag_files
    question = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"
    shown = {}
    for name in ("rag", "rag_findings_first"):
        pipeline = load_declared_pipeline(pipeline_file_for(name, table, folder), edit=without_generation)
        shown[name] = pipeline.run(question=question, top_k=5)["excerpts"]
    assert all(d.meta["section_kind"] != "caption" for d in shown["rag"])  # rag.yml's retrievers skip captions
    assert [d.id for d in shown["rag_findings_first"]] != [d.id for d in shown["rag"]]
    assert sorted(d.id for d in shown["rag_findings_first"]) == sorted(d.id for d in shown["rag"])  # same excerpts
    first = shown["rag_findings_first"][0]
    assert first.meta["source_id"] == "PMC4816447" and "Conclusion" in first.meta["section"]


def test_a_paper_found_by_its_background_reaches_the_model_with_its_conclusion(rag_files):
    from pmc_rag.evaluation.runner import without_generation

    def without_paper_findings(spec: dict) -> None:
        without_generation(spec)
        del spec["components"]["paper_findings"]
        spec["connections"] = [c for c in spec["connections"] if "paper_findings" not in c["receiver"]]
        for connection in spec["connections"]:
            if connection["sender"] == "paper_findings.documents":
                connection["sender"] = "budget.documents"

    table, folder = rag_files
    # the opening words of PMC3166277's background, asked: its closest passage is that background
    question = ("Despite identical genotypes and seemingly uniform environments, stochastic gene expression and other "
                "dynamic intracellular?")
    shown = {}
    for name, edit in (("rag", without_generation), ("without", without_paper_findings)):
        pipeline = load_declared_pipeline(pipeline_file_for("rag", table, folder), edit=edit)
        excerpts = pipeline.run(question=question, top_k=5)["excerpts"]
        shown[name] = [d.meta["section"] for d in excerpts if d.meta["source_id"] == "PMC3166277"]
    # Of this paper, only its background is among the closest excerpts; its conclusion is added to them.
    assert shown["without"] and not any("Conclusion" in section for section in shown["without"])
    assert shown["rag"][:len(shown["without"])] == shown["without"] and "Abstract: Conclusions" in shown["rag"]


def test_renaming_components_in_the_yaml_changes_nothing_but_their_lines(rag_files):
    """What the answering code reads comes from declared outputs: rename the budget and the retrievers, update
    only `outputs:` (and the connections), and the excerpts, sources and timings still come through."""
    table, folder = rag_files
    spec = resolve_pipeline_spec(pipeline_file_for("rag_extractive", table, folder))  # no model: fast
    for old, new in (("budget", "excerpt_window"), ("bm25", "keyword_leg")):
        spec["components"][new] = spec["components"].pop(old)

        def renamed(socket: str, old=old, new=new) -> str:
            return new + socket[len(old):] if socket.split(".")[0] == old else socket

        spec["connections"] = [{k: renamed(v) for k, v in c.items()} for c in spec["connections"]]
        spec["inputs"] = {k: [renamed(s) for s in v] for k, v in spec["inputs"].items()}
        spec["outputs"] = {k: renamed(v) for k, v in spec["outputs"].items()}
    path = folder / "rag_renamed.yml"
    path.write_text(yaml.safe_dump(spec))
    seen: list = []
    answer = answer_question(load_declared_pipeline(path), QUESTION, on_excerpts=seen.extend).model_dump()
    assert seen and {d.id for d in seen} == {s["chunk_id"] for s in answer["sources"] if s["in_prompt"]}
    assert answer["timings_ms"]["excerpt_window"] > 0
    assert any("bm25" in s["found_by"] for s in answer["sources"])  # the declared name, not the component's


def test_an_answering_pipeline_that_does_not_declare_its_excerpts_is_refused_when_it_loads(tmp_path):
    spec = resolve_pipeline_spec(PROJECT_ROOT / "pipelines" / "rag_extractive.yml")
    del spec["outputs"]["excerpts"]
    path = tmp_path / "rag_undeclared.yml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineError, match=r"rag_undeclared.yml: an answering pipeline declares `excerpts:`"):
        load_declared_pipeline(path)
    spec["outputs"]["excerpts"] = "no_such_stage.documents"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(PipelineError, match=r"output `excerpts` names no_such_stage.documents"):
        load_declared_pipeline(path)


def test_the_stage_timer_leaves_a_tracer_someone_set_all_its_spans(tmp_path):
    """pmc-rag times stages in front of the tracer that is set (OpenTelemetry, Langfuse...), never instead of it."""
    import contextlib

    from haystack import tracing
    from haystack.tracing import Span, Tracer

    from pmc_rag.answering.pipeline_run import timed_run

    class Recording(Tracer):
        def __init__(self):
            self.components = []

        @contextlib.contextmanager
        def trace(self, operation_name, tags=None, parent_span=None):
            if operation_name == "haystack.component.run":
                self.components.append((tags or {}).get("haystack.component.name"))
            yield _Null()

        def current_span(self):
            return None

    class _Null(Span):
        def set_tag(self, key, value):
            pass

    path = tmp_path / "tiny.yml"
    path.write_text("components:\n  greeter:\n    type: haystack.components.builders.prompt_builder.PromptBuilder\n"
                    "    init_parameters: {template: 'Hello {{ question }}'}\n"
                    "inputs: {question: [greeter.question]}\noutputs: {prompt: greeter.prompt}\n")
    before = tracing.tracer.actual_tracer
    recording = Recording()
    tracing.enable_tracing(recording)
    try:
        outputs, timings = timed_run(load_declared_pipeline(path), question="you")
        assert outputs["prompt"] == "Hello you" and timings["greeter"] >= 0
        assert recording.components == ["greeter"]
    finally:
        tracing.tracer.actual_tracer = before


def test_a_question_the_papers_cannot_answer_gets_not_answered_without_asking_the_model(rag_files):
    table, folder = rag_files
    pipeline = load_declared_pipeline(pipeline_file_for("rag", table, folder))
    answer = answer_question(pipeline, "How do I reset my router password?").model_dump()
    assert answer["answer"] == "The indexed papers do not answer this question."
    assert answer["flags"]["not_answered"] and answer["not_answering"] and not answer["references"]
    assert "generator" not in answer["timings_ms"] and answer["model"] is None  # the model was never asked
    assert not any(s["in_prompt"] for s in answer["sources"])


def test_the_retry_variant_rewrites_only_a_question_the_first_search_turns_away(rag_files):
    """rag_rewrite_retry.yml: a question the first search answers costs no rewrite; one it turns away is rewritten
    by the model and searched again, and the notes say as what (here still not answered: nothing is about it)."""
    table, folder = rag_files
    pipeline = load_declared_pipeline(pipeline_file_for("rag_rewrite_retry", table, folder))
    pipeline.warm_up()
    answered = answer_question(pipeline, QUESTION).model_dump()
    assert answered["references"] and "rewriter" not in answered["timings_ms"]
    assert not any(n.startswith("Searched as: ") for n in answered["notes"])
    away = answer_question(pipeline, "How do I reset my router password?").model_dump()
    assert away["flags"]["not_answered"] and not away["references"]
    assert away["timings_ms"]["rewriter"] > 0 and away["timings_ms"]["retry_gate"] > 0
    assert any(n.startswith("Searched as: ") for n in away["notes"]), away["notes"]


def test_the_prompt_names_each_paper_once_and_labels_every_excerpt():
    """A paper's title, journal and year go with its first excerpt only (each repeat was ~45 tokens of reading);
    every excerpt keeps its label, which the model must copy."""
    from haystack import Document
    from haystack.components.builders import ChatPromptBuilder

    settings = resolve_pipeline_spec(PROJECT_ROOT / "pipelines" / "rag.yml")["components"]["prompt_builder"][
        "init_parameters"]
    paper = {"source_id": "PMC1", "title": "Erlotinib in EGFR-mutant lung cancer", "journal": "PLoS ONE",
             "year": 2016}
    documents = [Document(content="Conclusion text.", meta={**paper, "section": "Abstract: Conclusion"}),
                 Document(content="Aim text.", meta={"source_id": "PMID:2", "title": "Another paper",
                                                     "section": "Abstract"}),
                 Document(content="Methods text.", meta={**paper, "section": "Methods"})]
    messages = ChatPromptBuilder(**settings).run(question="Does it work?", documents=documents)["prompt"]
    user = messages[-1].text
    assert user.count("Erlotinib in EGFR-mutant lung cancer") == 1 and user.count("Another paper") == 1
    assert "[PMC1] Erlotinib in EGFR-mutant lung cancer (PLoS ONE, 2016), Abstract: Conclusion:\nConclusion text." \
        in user
    assert "[PMC1] Methods:\nMethods text." in user and "[PMID:2] Another paper (PubMed, n.d.), Abstract:" in user
