"""Claim checking: the signals a word-overlap measure misses, the judges, the checker's repairs, the adversarial
generators, and citation recall/precision (ALCE)."""

from __future__ import annotations

import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citation_verifier import CitationVerifier
from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder
from pmc_rag.components.claim_checker import ClaimChecker
from pmc_rag.components.claim_signals import (change_numbers, conflicts, negate, quantities, reverse_direction,
                                              without_verdict)
from pmc_rag.components.lexical_support_judge import LexicalSupportJudge
from pmc_rag.components.nli_support_judge import CrossEncoderNLIJudge
from pmc_rag.components.ollama_support_judge import OllamaSupportJudge
from pmc_rag.evaluation.adversaries import ATTACKS, AdversarialChatGenerator, excerpts_in_prompt
from pmc_rag.evaluation.citation_quality import alce_scores, attack_outcomes, claim_judge, summarise_alce

from claim_helpers import ERLOTINIB, EXCERPTS, METFORMIN, check, claim


# --- what a claim asserts -------------------------------------------------------------------------------------

@pytest.mark.parametrize("changed, kind", [
    ("Erlotinib did not prolong progression-free survival in EGFR-mutant lung adenocarcinoma.", "negation"),
    ("Weight changed significantly in either group.", "negation"),
    ("The response rate was 88% with erlotinib and 36% with chemotherapy.", "numbers"),
    ("Metformin lowered HbA1c by 1.1 percentage points compared with placebo over 24 months.", "numbers"),
    ("Erlotinib shortened progression-free survival compared with chemotherapy.", "direction"),
    ("Metformin raised HbA1c by 1.1 percentage points compared with placebo.", "direction"),
])
def test_a_claim_that_says_otherwise_is_caught_by_kind(changed, kind):
    source = ERLOTINIB if "rlotinib" in changed or "response" in changed else METFORMIN
    judge = LexicalSupportJudge()
    judgement = judge.run(claims=[changed], evidence=[source])["judgements"][0]
    assert judgement["label"] == "contradicted" and judgement["reason"].startswith(kind)


@pytest.mark.parametrize("faithful", [
    "Erlotinib prolonged progression-free survival compared with chemotherapy.",
    "Yes, erlotinib prolonged progression-free survival in EGFR-mutant lung adenocarcinoma.",
    "The response rate with erlotinib was 83%, against 36% with chemotherapy.",
    "Erlotinib gave a longer progression-free survival than chemotherapy.",   # same direction, other word
    "Metformin reduced HbA1c by 1.1 percentage points against placebo.",      # lowered ~ reduced
    "Weight did not change significantly.",
])
def test_faithful_claims_and_paraphrases_are_supported(faithful):
    source = METFORMIN if "etformin" in faithful or "Weight" in faithful else ERLOTINIB
    assert LexicalSupportJudge().run(claims=[faithful], evidence=[source])["judgements"][0]["label"] == "supported"


def test_a_not_is_read_on_the_word_it_negates_when_both_sides_say_no_somewhere():
    # The 0.5B model, shown two worked examples (2026-11-27): the source's only negation ("lack of") describes the
    # patients, so "not provide" says the opposite of its "provides".
    source = ("In patients with limb-threatening ischemia and lack of venous material for a straightforward venous "
              "femorocrural bypass, semi-closed endarterectomy combined with a short bypass provides a good "
              "alternative.")
    flipped = ("In patients with insufficient venous material, semi-closed endarterectomy combined with a short "
               "bypass does not provide a good alternative for limb-threatening ischemia.")
    judgement = LexicalSupportJudge().run(claims=[flipped], evidence=[source])["judgements"][0]
    assert judgement["label"] == "contradicted" and "'not provide'" in judgement["reason"]
    # A negation earlier in the word's clause negates it there; a paraphrase of a negation is not a flip.
    assert conflicts("The study does not validate any of the clinical identifiers.",
                     "None of the clinical identifiers proposed by expert consensus have been validated.") == []
    assert conflicts("There was no difference in mortality.", "Mortality did not differ between the groups.") == []
    assert conflicts("Metformin did not significantly reduce weight, without harm.",
                     "Without harm, metformin reduced weight.")


def test_signal_details():
    assert without_verdict("No, it does not.") == "it does not." and without_verdict("No change occurred.") == \
        "No change occurred."
    assert [(q.value, q.unit) for q in quantities("1,000 patients, 2.50 mg and 45 percent, twice")] == \
        [("1000", None), ("2.5", "mg"), ("45", "%"), ("2", None)]
    assert conflicts("HbA1c fell by 5 mg.", "HbA1c fell by 5 g.") == ["numbers: the source does not state 5 mg"]
    # Each number of the source answers for one of the claim's: "3 of the 3" is not "1 of the 3".
    assert conflicts("Women at 3 of the 3 clinics adhered less.", "Women at 1 of the 3 clinics adhered less.") == \
        ["numbers: the source does not state 3"]
    # ... even when the excerpt states the 3 again elsewhere: the sentence's 1 is left unanswered
    assert conflicts("Women at 3 of the 3 clinics adhered less.", "Women at 1 of the 3 clinics adhered less.",
                     "Women at 1 of the 3 clinics adhered less. The 3 clinics were urban.") == \
        ["numbers: the source does not state 3"]
    # ... and a number stated elsewhere does not answer for one standing where the sentence has another
    # (changed numbers that got through on the dev questions: 1 -> 3 with "three" elsewhere in each excerpt)
    assert conflicts("Biopsied samples showed inflammatory changes in Patient 3.",
                     "Biopsied samples showed inflammatory changes in Patient 1.",
                     "Biopsied samples showed inflammatory changes in Patient 1. Two of the three patients were at "
                     "risk.") == ["numbers: the source does not state 3"]
    assert conflicts("Children aged between 3 and 16 years were randomised to atropine or placebo.",
                     "Children aged between 1 and 16 years were randomised to atropine or placebo.",
                     "Children aged between 1 and 16 years were randomised to atropine or placebo. Scores were "
                     "obtained three to five days after the procedure.") == ["numbers: the source does not state 3"]
    # Sharing only a connective ("in") with a number the sentence leaves unused is not standing in its place.
    assert conflicts("Mortality was 12% in group A and 15% in group B.", "Mortality was 12% at 30 days in group A.",
                     "Mortality was 12% at 30 days in group A. Group B had 15%.") == []
    # A number stated elsewhere in the excerpt counts as stated.
    assert conflicts("Rash affected 83% of patients.", "Rash was common.", ERLOTINIB) == []
    assert conflicts("At 3 clinics visits rose over 3 months.", "At 3 clinics visits rose.",
                     "At 3 clinics visits rose. Follow-up lasted 3 months.") == []
    # "not only" is a negation unless a "but" follows; a group with "not" is another group than without it
    assert conflicts("The correlation was not only moderate.", "The correlation was only moderate.")
    assert conflicts("X was not only safe but also effective.", "X was safe and effective.") == []
    assert conflicts("Beneficiaries who have not chronic conditions cost more.",
                     "Beneficiaries who have chronic conditions cost more.") == \
        ["negation: 'who have not chronic' on one side only"]
    # Only the words the two do not share are compared for direction.
    assert conflicts("X elevated violence and improved care.", "X reduced violence and improved care.")
    assert negate("Erlotinib was effective.") == "Erlotinib was not effective."
    assert negate("Weight did not change.") == "Weight did change."
    assert change_numbers("A rate of 83% and 36%.") == "A rate of 167% and 36%."
    assert reverse_direction("Survival was Longer with X.") == "Survival was Shorter with X."
    assert negate("Rash.") is None and change_numbers("Rash.") is None and reverse_direction("Rash.") is None


def test_the_judge_refuses_unpaired_input_and_short_claims_are_unverifiable():
    judge = LexicalSupportJudge()
    with pytest.raises(ValueError, match="pair up"):
        judge.run(claims=["a", "b"], evidence=["c"])
    assert judge.run(claims=["Yes."], evidence=[ERLOTINIB])["judgements"][0]["label"] == "unverifiable"
    with pytest.raises(ValueError, match="min_support"):
        LexicalSupportJudge(min_support=2)


# --- the checker's repairs ------------------------------------------------------------------------------------



def test_a_misattributed_claim_is_re_cited_to_the_excerpt_that_supports_it():
    result = check(claim("Metformin lowered HbA1c compared with placebo in type 2 diabetes.", "PMC4816447"))
    kept = result["claims"][0]
    assert kept["cited"] == ["PMID:15703931"] and kept["recited_from"] == ["PMC4816447"]
    assert kept["judgement"] == "supported" and result["removed_claims"] == []


def test_a_contradicted_claim_is_removed_and_reported_not_re_cited():
    result = check(claim("Erlotinib did not prolong progression-free survival in EGFR-mutant lung cancer.",
                         "PMC4816447"),
                   claim("Skin rash was the most common adverse event of erlotinib.", "PMC4816447"))
    assert [c["text"] for c in result["claims"]] == ["Skin rash was the most common adverse event of erlotinib."]
    removed = result["removed_claims"][0]
    assert removed["source_id"] == "PMC4816447" and removed["judgement"] == "contradicted"
    assert removed["reason"].startswith("negation") and "prolonged" in removed["evidence"]


def test_a_citation_that_does_not_support_its_claim_is_dropped_when_another_does():
    kept = check(claim("Skin rash was the most common adverse event.", "PMID:15703931", "PMC4816447"))["claims"][0]
    assert kept["cited"] == ["PMC4816447"] and kept["dropped"] == ["PMID:15703931"] and not kept["recited_from"]


def test_unsupported_claims_are_kept_marked_unless_the_yaml_says_remove():
    text = "Acupuncture cured migraine in most children treated at home."
    assert check(claim(text, "PMC4816447"))["claims"][0]["judgement"] == "unsupported"
    removed = check(claim(text, "PMC4816447"), remove_unsupported=True)["removed_claims"]
    assert removed and removed[0]["judgement"] == "unsupported"


def test_the_default_pipeline_removes_a_claim_no_excerpt_supports():
    import yaml

    from conftest import PROJECT_ROOT

    spec = yaml.safe_load((PROJECT_ROOT / "pipelines" / "rag.yml").read_text())["components"]["checker"]
    checker = ClaimChecker.from_dict(spec)
    # The 0.5B model, shown a made-up worked example, copied it into an answer about another paper (2026-11-27).
    invented = claim("In 212 adults with moderate asthma, exacerbations occurred in 12% with drug A.", "PMC4816447")
    result = checker.run(claims=[invented], documents=EXCERPTS)
    assert result["claims"] == [] and result["removed_claims"][0]["judgement"] == "unsupported"


def test_uncited_and_short_claims_pass_unchanged():
    result = check(claim("Yes.", "PMC4816447"), claim("Erlotinib prolonged survival.",))
    assert [c["judgement"] for c in result["claims"]] == ["unverifiable", "unchecked"]


def test_the_checker_round_trips_with_its_judge():
    checker = ClaimChecker(judge=LexicalSupportJudge(min_support=0.4, conflict_overlap=0.6), remove_unsupported=True)
    data = checker.to_dict()
    assert data["init_parameters"]["judge"]["init_parameters"] == {"min_support": 0.4, "conflict_overlap": 0.6}
    again = ClaimChecker.from_dict(data)
    assert again.to_dict() == data and isinstance(again.judge, LexicalSupportJudge)
    for judge in (CrossEncoderNLIJudge(model="some/nli", min_entailment=0.7), OllamaSupportJudge(model="m")):
        wrapped = ClaimChecker(judge=judge).to_dict()
        assert ClaimChecker.from_dict(wrapped).to_dict() == wrapped


def answer_for(reply: str, judge=None, documents=EXCERPTS) -> dict:
    verified = CitationVerifier().run(replies=[ChatMessage.from_assistant(reply)], documents=documents)
    checked = ClaimChecker(judge=judge).run(claims=verified["claims"], documents=documents)
    return CitedAnswerBuilder().run(question="q?", documents=documents, claims=checked["claims"],
                                    removed_claims=checked["removed_claims"],
                                    invalid_citations=verified["invalid_citations"],
                                    raw_answer=verified["raw_answer"])["answer"].model_dump()


def test_the_answer_keeps_what_is_supported_and_says_what_was_repaired():
    answer = answer_for("Yes. Erlotinib prolonged progression-free survival in EGFR-mutant lung adenocarcinoma "
                        "[PMID:15703931]. Metformin raised HbA1c by 1.1 percentage points [PMID:15703931]. "
                        "Skin rash was the most common adverse event [PMC4816447].")
    assert answer["answer"] == ("Yes. Erlotinib prolonged progression-free survival in EGFR-mutant lung "
                                "adenocarcinoma [1]. Skin rash was the most common adverse event [1].")
    assert answer["flags"]["citations_corrected"] and answer["flags"]["claims_removed"]
    assert not answer["flags"]["extractive_fallback"]
    assert answer["citations"][0]["recited_from"] == ["PMID:15703931"]
    assert answer["removed_claims"][0]["text"].startswith("Metformin raised HbA1c")
    assert any("Re-cited" in n and "[1] instead of PMID:15703931" in n for n in answer["notes"])
    assert any("Removed 1 sentence(s)" in n and "direction" in n for n in answer["notes"])


def test_quotations_replace_the_answer_only_when_nothing_survives():
    answer = answer_for("No. Erlotinib did not prolong progression-free survival compared with chemotherapy "
                        "[PMC4816447].")
    assert answer["flags"]["extractive_fallback"] and answer["flags"]["claims_removed"]
    assert "did not prolong" not in answer["answer"]


def test_quotations_come_only_from_papers_as_close_to_the_question_as_the_first():
    on_subject = Document(id="c3", content="Erlotinib gave longer progression-free survival than gefitinib in "
                          "EGFR-mutant lung cancer in a second trial.", meta={"source_id": "PMC3"})
    builder = CitedAnswerBuilder()
    question = "Does erlotinib prolong progression-free survival in EGFR-mutant lung cancer?"
    quoted = builder.run(question=question, documents=[*EXCERPTS, on_subject], claims=[])["answer"].model_dump()
    assert quoted["flags"]["extractive_fallback"]
    # the metformin excerpt shares no word with the question; the second erlotinib trial shares as many as the first
    assert [r["source_id"] for r in quoted["references"]] == ["PMC4816447", "PMC3"]


# --- stronger judges, swapped in ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def tiny_nli_models(tmp_path_factory):
    """Two NLI cross-encoders built here (no NLI weights install offline), one that always finds entailment and
    one that always finds contradiction: enough to show labels are read from the model's config."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from pmc_rag.models import seed_embedding_model

    tokenizer = AutoTokenizer.from_pretrained(str(seed_embedding_model()))
    labels = {0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"}  # any order or case
    models = {}
    for name, favoured in (("entails", 1), ("contradicts", 0)):
        config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                            num_attention_heads=2, intermediate_size=64, num_labels=3, id2label=labels,
                            label2id={v: k for k, v in labels.items()})
        model = BertForSequenceClassification(config)
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor([5.0 if i == favoured else 0.0 for i in range(3)]))
        folder = tmp_path_factory.mktemp(f"nli-{name}")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        models[name] = folder
    return models


def test_an_nli_judge_is_a_yaml_swap_and_its_verdicts_drive_the_checker(tiny_nli_models):
    supported = answer_for("Skin rash was the most common adverse event [PMC4816447].",
                           judge=CrossEncoderNLIJudge(model=str(tiny_nli_models["entails"])))
    assert supported["citations"][0]["judgement"] == "supported" and supported["citations"][0]["support"] > 0.9
    contradicted = answer_for("Skin rash was the most common adverse event [PMC4816447].",
                              judge=CrossEncoderNLIJudge(model=str(tiny_nli_models["contradicts"])))
    assert contradicted["flags"]["claims_removed"] and "entailment model" in contradicted["removed_claims"][0]["reason"]


def test_a_model_that_is_not_nli_is_refused_with_its_labels(tiny_nli_models, tmp_path):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tiny_nli_models["entails"])
    config.id2label, config.label2id = {0: "A", 1: "B", 2: "C"}, {"A": 0, "B": 1, "C": 2}
    import shutil

    shutil.copytree(tiny_nli_models["entails"], tmp_path / "m")
    config.save_pretrained(tmp_path / "m")
    with pytest.raises(ValueError, match="not an NLI model"):
        CrossEncoderNLIJudge(model=str(tmp_path / "m")).warm_up()


def test_an_ollama_minicheck_judge_over_real_http_with_a_fake_server():
    from fake_ollama import FakeOllama

    with FakeOllama(model="bespoke-minicheck") as ollama:  # a FAKE Ollama: says Yes when every claim word is there
        judge = OllamaSupportJudge(model="bespoke-minicheck", url=ollama.url)
        labels = [j["label"] for j in judge.run(
            claims=["Skin rash was the most common adverse event.", "Erlotinib did not prolong survival.",
                    "Acupuncture cured migraine in children.", "Yes."],
            evidence=[ERLOTINIB] * 4)["judgements"]]
        assert labels == ["supported", "contradicted", "unsupported", "unverifiable"]
        sent = [r["messages"][0]["content"] for r in ollama.requests]
        assert len(sent) == 3 and sent[0].startswith("Document: Erlotinib") and "\nClaim: Skin rash" in sent[0]


def test_the_eval_claim_judge_option():
    assert isinstance(claim_judge("lexical"), LexicalSupportJudge)
    assert claim_judge("nli:some/model").model == "some/model"
    assert claim_judge("ollama:bespoke-minicheck").model == "bespoke-minicheck"
    with pytest.raises(ValueError, match="lexical, nli:MODEL or ollama:MODEL"):
        claim_judge("gpt")


# --- adversaries and what gets through ------------------------------------------------------------------------

def prompt_with(documents) -> list[ChatMessage]:
    body = "".join(f"[{d.meta['source_id']}] {d.meta['title']} (J, 2020), Abstract:\n{d.content}\n\n"
                   for d in documents)
    return [ChatMessage.from_system("rules"), ChatMessage.from_user(f"Excerpts:\n{body}Question: q?")]


def test_the_prompt_s_excerpts_are_read_back():
    assert [label for label, _ in excerpts_in_prompt(prompt_with(EXCERPTS))] == ["PMC4816447", "PMID:15703931"]
    assert excerpts_in_prompt(prompt_with(EXCERPTS))[1][1] == METFORMIN


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_attack_gets_through_the_checks(attack):
    documents = EXCERPTS + [Document(id="c3", content="Rash was treated with topical steroids in most patients who "
                                                     "had it, and 12 patients stopped the drug early.",
                                     meta={"source_id": "PMC7", "title": "Managing rash"})]
    messages = prompt_with(documents)
    reply = AdversarialChatGenerator(attack=attack).run(messages=messages)["replies"][0]
    attacks = reply.meta["attacks"]
    assert attacks and all(a["kind"] == attack for a in attacks)
    answer = answer_for(reply.text, documents=documents)
    outcomes = [o["outcome"] for o in attack_outcomes(answer, attacks)]
    assert "through" not in outcomes
    expected = {"misattribute": "repaired", "fabricate": "repaired", "hidden_refs": "repaired"}.get(attack, "removed")
    assert outcomes == [expected] * len(attacks)
    assert not answer["flags"]["extractive_fallback"]  # the honest sentence is kept
    assert {c["source_id"] for c in answer["citations"]} <= {"PMC4816447", "PMID:15703931", "PMC7"}


def test_an_unknown_attack_is_refused():
    with pytest.raises(ValueError, match="unknown attack"):
        AdversarialChatGenerator(attack="lie")


def test_alce_recall_and_precision_on_a_hand_made_answer():
    answer = {"answer": "Yes. Skin rash was the most common adverse event [1][2]. Metformin lowered HbA1c compared "
                        "with placebo [2]. Acupuncture cured migraine in children [1]. Rash occurs often in treated "
                        "patients of any kind.",
              "references": [{"number": 1, "source_id": "PMC4816447"}, {"number": 2, "source_id": "PMID:15703931"}]}
    counts = alce_scores(answer, EXCERPTS, LexicalSupportJudge())
    # Statements: rash [1][2] (supported; [1] relevant, [2] irrelevant), metformin [2] (supported, relevant),
    # acupuncture [1] (not supported), the uncited last one (recall 0); "Yes." is too short to be a statement.
    assert counts == {"statements": 4, "recall": 2, "citations": 4, "relevant": 2, "cited_statements": 3,
                      "unsupported": 1}
    summary = summarise_alce([counts, counts])
    assert summary == {"statements": 8, "citation_recall": 0.5, "citation_precision": 0.5,
                       "unsupported_share": pytest.approx(1 / 3)}


def test_a_chat_answer_is_the_checked_one_and_its_notes_do_not_repeat_a_removed_claim():
    from pmc_rag.components.answer import Answer
    from pmc_rag.serving.endpoints import chat_text

    answer = Answer.model_validate(answer_for(
        "Skin rash was the most common adverse event [PMC4816447]. Metformin raised HbA1c by 1.1 percentage "
        "points [PMID:15703931]."))
    text = chat_text(answer)
    assert text.startswith("Skin rash was the most common adverse event [1].")
    assert "Removed 1 sentence(s)" in text and "Metformin raised" not in text


def test_a_claim_copied_from_one_paper_and_cited_to_a_similar_one_is_re_cited_to_its_source():
    similar = Document(id="c4", content="Erlotinib was compared with chemotherapy in patients with EGFR-mutant lung "
                                        "adenocarcinoma in Europe.",
                       meta={"source_id": "PMC9", "title": "Erlotinib in Europe"})
    copied = "Erlotinib prolonged progression-free survival compared with chemotherapy in EGFR-mutant lung adenocarcinoma."
    documents = [*EXCERPTS, similar]
    kept = ClaimChecker().run(claims=[claim(copied, "PMC9")], documents=documents)["claims"][0]
    assert kept["cited"] == ["PMC4816447"] and kept["recited_from"] == ["PMC9"]
    unchanged = ClaimChecker(recite_margin=None).run(claims=[claim(copied, "PMC9")], documents=documents)["claims"][0]
    assert unchanged["cited"] == ["PMC9"]  # off: a cited excerpt that supports it at all is kept


@pytest.mark.parametrize("claim_text, source", [
    # "whether or not" and a subgroup defined by what it lacks are not negations of the finding
    ("Yes, the Hawkins sign can predict necrosis in fractures of the neck of the astragalus.",
     "To assess if the Hawkins sign can predict whether or not astragalus fractures of the neck develop necrosis. "
     "The Hawkins sign predicted necrosis in 20 of 23 fractures."),
    ("Radiotherapy of the primary rectal cancer does affect prognosis after pelvic exenteration.",
     "Patients who previously received radiotherapy for primary rectal cancer have worse outcomes after pelvic "
     "exenteration than those who had not received radiotherapy."),
    # a study's aim says nothing either way
    ("No, there is no need for living-related liver transplantation in children.",
     "To assess and compare the value of split-liver transplantation and living-related liver transplantation."),
])
def test_what_a_model_writes_honestly_is_not_taken_for_a_contradiction(claim_text, source):
    judgement = LexicalSupportJudge().run(claims=[claim_text], evidence=[source])["judgements"][0]
    assert judgement["label"] != "contradicted", judgement["reason"]


def test_a_flipped_background_statement_is_still_caught():
    judgement = LexicalSupportJudge().run(
        claims=["The study found that EUS fellowships enhance residents' US educational experiences."],
        evidence=["To date, there is no evidence supporting that EUS fellowships enhance residents' ultrasound (US) "
                  "educational experiences."])["judgements"][0]
    assert judgement["label"] == "contradicted" and judgement["reason"].startswith("negation")


def test_a_negated_aim_is_compared_with_the_aim():
    judgement = LexicalSupportJudge().run(
        claims=["To assess if the Hawkins sign cannot predict necrosis of the astragalus."],
        evidence=["To assess if the Hawkins sign can predict necrosis of the astragalus. It did in 20 of 23."]
    )["judgements"][0]
    assert judgement["label"] == "contradicted"


def test_every_key_a_claim_carries_is_a_typed_field_of_claim():
    """`Claim` names the keys claims travel with; a step that adds one it does not name fails here."""
    from typing import get_type_hints

    from pmc_rag.components.claim import Claim
    from pmc_rag.components.quotation_chooser import QuotationChooser
    from pmc_rag.components.verdict_check import VerdictCheck

    fields, required = set(get_type_hints(Claim)), Claim.__required_keys__
    reply = ("Yes, erlotinib prolonged progression-free survival compared with chemotherapy [PMC4816447]. "
             "Weight increased with metformin [PMID:15703931]. Metformin lowered HbA1c [PMC999].")
    verified = CitationVerifier().run(replies=[ChatMessage.from_assistant(reply)], documents=EXCERPTS)["claims"]
    checked = ClaimChecker().run(claims=verified, documents=EXCERPTS)["claims"]
    shown = VerdictCheck().run(claims=checked)["claims"]
    quoted = QuotationChooser().extract("Does erlotinib work?", EXCERPTS)
    for step, claims in (("verifier", verified), ("checker", checked), ("verdict", shown), ("quoted", quoted)):
        assert claims, step
        for one in claims:
            assert required <= set(one) and set(one) <= fields, (step, set(one) - fields)
