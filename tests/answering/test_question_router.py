"""The question router (issue 34): the rules, the exemplars and the model layer send each kind of question
to its path."""

from __future__ import annotations

import pytest

from pmc_rag.components.question_router import QuestionRouter, compared_subjects, question_parts
from pmc_rag.pipelines import load_declared_pipeline

from conftest import pipeline_file_for


@pytest.mark.parametrize("question, route, paper", [
    ("Summarise PMC4816447", "summarise", "PMC4816447"),
    ("What does PMID 27032107 report?", "summarise", "PMID:27032107"),
    ("summary of doi:10.1371/journal.pone.0147599", "summarise", "doi:10.1371/journal.pone.0147599"),
    ("Give me a summary of 10.1371/journal.pmed.1001473", "summarise", "doi:10.1371/journal.pmed.1001473"),
    ("Summarize the FIELT trial.", "summarise", "FIELT"),
    ("Briefly, what did the paper on EGFR exon 20 insertions and osimertinib find?", "summarise",
     "EGFR exon 20 insertions and osimertinib"),
    # what is asked for ("the key results of the ...") is not the paper's name
    ("What were the key results of the meta-analysis of p16INK4a in vulvar cancer?", "summarise",
     "p16INK4a in vulvar cancer"),
    ("What are the main findings of the paper on life expectancies in South Africa?", "summarise",
     "life expectancies in South Africa"),
    ("Outline the methods and results of the ACE I/D polymorphism and preeclampsia meta-analysis", "summarise",
     "ACE I/D polymorphism and preeclampsia"),
    ("Erlotinib vs osimertinib in EGFR-mutant lung cancer", "compare", None),
    ("Do the papers agree on whether smoking affects depression?", "compare", None),
    ("What is known about tuberculosis?", "overview", None),
    ("Summarise the evidence on vitamin D", "overview", None),
    ("Is the OHIP-NL reliable and is it valid?", "several", None),
    ("Does acupuncture help depression? What about counselling?", "several", None),
    ("Which drug did the FIELT trial test, and what do other papers report about that drug?", "multi_step", None),
    ("Does ketamine reduce suicidal ideation?", "single", None),
    ("How is status epilepticus treated?", "single", None),
])
def test_the_rules_route_each_kind_of_question(question, route, paper):
    result = QuestionRouter(exemplars="").run(question=question)
    assert (result["route"], result.get("paper")) == (route, paper)
    assert result["route_layer"] == ("default" if route == "single" else "rule")
    # A summary request, or a question in two steps that names its paper, searches nothing first: the retrievers
    # get no question.
    assert ("search_question" in result) == (route != "summarise" and "step_paper" not in result)


def test_subjects_and_parts_become_one_search_each():
    router = QuestionRouter(exemplars="")
    compare = router.run(question="How does erlotinib compare with osimertinib in EGFR-mutant lung cancer?")
    assert compare["subjects"] == ["erlotinib", "osimertinib"]
    assert [q.split()[0] for q in compare["subqueries"]] == ["erlotinib", "osimertinib"]
    assert all("EGFR-mutant" in q for q in compare["subqueries"])  # what is compared goes with each subject
    assert compared_subjects("Which works better for depression in primary care: acupuncture, counselling or "
                             "usual care?") == ["acupuncture", "counselling", "usual care"]
    assert compared_subjects("What is the difference between MRI and ultrasound in diagnosis?") == ["MRI",
                                                                                                   "ultrasound"]
    assert compared_subjects("Is the outcome after stroke worse for women than for men?") == ["women", "men"]
    choice = router.run(question="Insulin or metformin in gestational diabetes - what does the evidence say?")
    assert choice["route"] == "compare" and choice["subjects"][:2] == ["Insulin", "metformin"]
    # A yes/no question about two factors asks one thing (PubMedQA; it had been read as "Does either obesity"
    # against "OSA severity influence the", and the answer came back empty).
    for one_question in ("Does either obesity or OSA severity influence the response of autotitrating CPAP machines?",
                         "Is either smoking or obesity associated with late graft failure?"):
        assert router.run(question=one_question)["route"] == "single", one_question
    several = router.run(question="1) Is the OHIP-NL reliable? 2) Which items were translated?")
    assert several["subqueries"] == ["Is the OHIP-NL reliable?", "Which items were translated?"]
    assert question_parts("Does erlotinib prolong survival in lung cancer?") == [
        "Does erlotinib prolong survival in lung cancer?"]


def test_a_study_title_then_its_yes_no_question_takes_the_single_path():
    """PubMedQA-style "<title>: <yes/no question>?" asks one study's finding; the comparison in the title is between
    that study's arms. By the compare route, "Inpatient versus outpatient management of neutropenic fever ..."
    quoted a tonsillectomy paper for "Inpatient"."""
    router = QuestionRouter(exemplars="")
    for titled in ("Inpatient versus outpatient management of neutropenic fever in gynecologic oncology patients: "
                   "is risk stratification useful?",
                   "Cold knife conization vs. LEEP. Are they the same procedure?",
                   "Biomechanical and wound healing characteristics of corneas after excimer laser keratorefractive "
                   "surgery: is there a difference between advanced surface ablation and sub-Bowman's "
                   "keratomileusis?"):
        result = router.run(question=titled)
        assert (result["route"], result["route_layer"]) == ("single", "rule"), titled
    # Comparisons that are not a title and its question stay comparisons.
    for comparison in ("Erlotinib vs osimertinib in EGFR-mutant NSCLC: which works better?",
                       "Smoking and depression: do the papers agree on it?",
                       "Is laparoscopic better than open surgery in colorectal cancer?",
                       "How does erlotinib compare with osimertinib in EGFR-mutant lung cancer?"):
        assert router.run(question=comparison)["route"] == "compare", comparison


def test_a_route_left_out_of_the_yaml_takes_the_single_path():
    router = QuestionRouter(routes=["summarise"], exemplars="")
    result = router.run(question="Erlotinib vs gefitinib", query_embedding=[0.1, 0.2])
    assert result["route"] == "single" and result["route_layer"] == "rule, route off"
    assert result["search_question"] == "Erlotinib vs gefitinib"
    with pytest.raises(ValueError, match="unknown routes \\['summarize'\\]"):
        QuestionRouter(routes=["summarize"])


def test_the_router_on_its_held_aside_questions():
    """The labelled set's held-aside quarter (never an exemplar, never used to write a rule): measured, not
    assumed. `pmc-rag eval --routes` reports the same per kind."""
    from pmc_rag.evaluation.routes import run_routes

    report = run_routes(progress=False)
    aside = report["counts"]["held_aside"]["rules + exemplars"]
    right, total = sum(t["right"] for t in aside.values()), sum(t["of"] for t in aside.values())
    assert total >= 50 and right / total >= 0.9
    dev = report["counts"]["dev"]["rules + exemplars"]
    assert sum(t["of"] for t in dev.values()) + total >= 200
    # PubMedQA's questions each ask for one finding: few may take another path (2 of 500, both by a compare rule;
    # 12 before a study's title and its yes/no question took the single path).
    single = report["single_findings"]
    assert single["questions"] == 500 and len(single["elsewhere"]) <= 5


def test_the_exemplars_are_embedded_once_then_read_back_and_embedded_again_when_damaged(tmp_path, monkeypatch):
    import shutil

    from pmc_rag.components import onnx_text_embedder
    from pmc_rag.components.data_home import models_dir

    # A home of its own for the exemplars' vectors, with the ONNX export and the CPU trial's verdict copied in:
    # exporting and trying them again is other tests' subject (tests/components/test_onnx_text_embedder.py).
    for kept in ("onnx", "cpu-trials"):
        if (models_dir() / kept).is_dir():
            shutil.copytree(models_dir() / kept, tmp_path / "home" / "models" / kept)
    monkeypatch.setenv("PMC_RAG_HOME", str(tmp_path / "home"))
    first = QuestionRouter()
    first.warm_up()
    [saved] = (tmp_path / "home" / "models" / "router").glob("exemplars-*.npy")

    def no_embedding(*args, **kwargs):
        raise AssertionError("the saved exemplar vectors should have been read")

    with monkeypatch.context() as patched:
        patched.setattr(onnx_text_embedder, "OnnxTextEmbedder", no_embedding)
        second = QuestionRouter()
        second.warm_up()
    assert (second._vectors == first._vectors).all() and second._kinds == first._kinds

    saved.write_bytes(saved.read_bytes()[:100])  # cut short
    third = QuestionRouter()
    third.warm_up()
    assert abs(third._vectors - first._vectors).max() < 1e-6 and saved.stat().st_size > 100


def test_the_similarity_layer_cannot_send_a_question_where_its_route_has_nothing_to_do():
    import numpy as np

    router = QuestionRouter(exemplars="", min_share=0.5)
    # Five exemplars, every one as close as can be: whatever they are labelled wins the vote.
    router._vectors, router._texts = np.ones((5, 2), dtype="float32"), ["x"] * 5
    for kind, question, expected in [
            ("several", "Does oral alpha-galactosidase relieve irritable bowel symptoms?", "single"),
            ("overview", "Does glomerular hyperfiltration in pregnancy damage the kidney?", "single"),
            ("compare", "Can ki-67 predict the response to neoadjuvant chemotherapy?", "single"),
            ("summarise", "What are the side effects of erlotinib?", "single"),
            ("overview", "Obesity and asthma in children", "overview")]:
        router._kinds = [kind] * 5
        assert router.decide(question, [0.7, 0.7])[0] == expected, (kind, question)


def test_a_follow_up_in_a_conversation_takes_the_single_path():
    """The server sends "What about its side effects?" with `follow_up_to` "Is erlotinib effective ...?": answered
    from the topic's papers by the single path (when the two came as one text, routed as 'several', its part
    searches had left them: 19 of 51 conversation turns cited an off-topic paper)."""
    topic = "Is first-line erlotinib effective in NSCLC?"
    result = QuestionRouter(exemplars="").run(question="What about its side effects?", follow_up_to=topic)
    assert (result["route"], result["route_layer"]) == ("single", "follow-up")
    # It searches with the words papers use for side effects (since 2026-11-27), before its topic.
    assert result["search_question"] == ("What about its side effects? toxicity tolerated adverse events safety "
                                         "complications (follow-up to: Is first-line erlotinib effective in NSCLC?)")
    asking_a_finding = QuestionRouter(exemplars="").run(question="Does it prolong overall survival?",
                                                         follow_up_to="Is erlotinib effective in NSCLC?")
    assert asking_a_finding["search_question"] == ("Does it prolong overall survival? (follow-up to: Is erlotinib "
                                                   "effective in NSCLC?)")
    assert QuestionRouter(exemplars="").run(question="What about its side effects? Is it safe?")["route"] == "several"


class FakeKindGenerator:
    """A fake chat generator (the real one, the local model server, is exercised by `pmc-rag eval --routes
    --router-pipeline rag_routed_llm`): it replies with a fixed text, or fails, and records what it was asked."""

    def __init__(self, reply: str | None):
        self.reply, self.asked = reply, []

    def run(self, messages, **kwargs):
        from haystack.dataclasses import ChatMessage

        self.asked.append((messages[0].text, kwargs))
        if self.reply is None:
            raise ConnectionError("model server not reachable")
        return {"replies": [ChatMessage.from_assistant(self.reply)]}


def test_the_model_layer_is_asked_only_when_rules_and_exemplars_are_unsure_and_must_fit_the_question():
    asked = FakeKindGenerator('{"kind": "overview"}')
    router = QuestionRouter(exemplars="", chat_generator=asked)
    assert router.decide("Obesity and asthma in children")[:2] == ("overview", "llm")
    assert "Obesity and asthma in children" in asked.asked[0][0]
    assert router.decide("Summarise PMC4816447")[:2] == ("summarise", "rule") and len(asked.asked) == 1  # not asked
    # A kind the question cannot take (a yes/no question is no overview), a failure or a non-answer: single.
    assert router.decide("Does obesity worsen asthma in children?")[:2] == ("single", "default, llm overruled")
    for reply in (None, "overview, I think", '{"kind": "essay"}'):
        assert QuestionRouter(exemplars="", chat_generator=FakeKindGenerator(reply)).decide(
            "Obesity and asthma in children")[:2] == ("single", "default")


def test_the_router_with_a_model_layer_round_trips():
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    generator = OpenAIChatGenerator(model="qwen2.5-0.5b-instruct", api_base_url="http://127.0.0.1:1417/v1",
                                    api_key=Secret.from_env_var("PMC_RAG_LLM_API_KEY", strict=False))
    data = QuestionRouter(exemplars="", chat_generator=generator).to_dict()
    assert data["init_parameters"]["chat_generator"]["init_parameters"]["model"] == "qwen2.5-0.5b-instruct"
    assert QuestionRouter.from_dict(data).to_dict() == data
    assert QuestionRouter.from_dict(QuestionRouter(exemplars="").to_dict()).chat_generator is None


def test_the_model_layer_s_yaml_holds_the_reply_to_the_router_s_kinds():
    from pmc_rag.components.question_router import LLM_KIND_SCHEMA, ROUTES
    from pmc_rag.pipeline_files import resolve_pipeline_spec
    from pmc_rag.paths import PIPELINES_DIR

    spec = resolve_pipeline_spec(PIPELINES_DIR / "rag_routed_llm.yml")
    generator = spec["components"]["router"]["init_parameters"]["chat_generator"]["init_parameters"]
    assert generator["generation_kwargs"]["response_format"]["json_schema"]["schema"] == LLM_KIND_SCHEMA
    assert LLM_KIND_SCHEMA["properties"]["kind"]["enum"] == list(ROUTES)
