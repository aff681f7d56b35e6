"""QuestionTranslator: a question in another language goes on in English; an English one untouched, no model asked."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from haystack import component
from haystack.components.generators.chat.openai import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from pmc_rag.components.question_translator import QuestionTranslator

SPANISH = "¿Es eficaz el erlotinib en el cáncer de pulmón con mutación EGFR?"
ENGLISH = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"


@component
class FakeTranslatingGenerator:
    """A fake chat model (the translator's logic is under test, not a model's): replies with a set text, or
    fails, and keeps the messages it was sent."""

    def __init__(self, reply: str | None = None):
        self.reply = reply
        self.asked: list[list[ChatMessage]] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        self.asked.append(messages)
        if self.reply is None:
            raise ConnectionError("model server not reachable")
        return {"replies": [ChatMessage.from_assistant(self.reply)]}


def test_an_english_question_passes_untouched_and_no_model_is_asked():
    model = FakeTranslatingGenerator(json.dumps({"english": "something else"}))
    translator = QuestionTranslator(chat_generator=model)
    for question in (ENGLISH, "Do nontriploid partial hydatidiform moles exist?", "is Actinobaculum schaalii a real "
                     "cause of UTIs in kids?", "Summarise PMC2329613", "TL;DR of PMC3166277",
                     # names of drugs and genes: English is unlikely, and so is every other language
                     "Erlotinib vs osimertinib in EGFR-mutant NSCLC"):
        assert translator.run(question=question) == {"question": question, "notes": []}
    assert model.asked == []


def test_a_question_in_another_language_goes_on_as_the_model_s_english_with_a_note():
    model = FakeTranslatingGenerator(json.dumps({"english": "Is erlotinib effective in EGFR-mutant lung cancer?"}))
    translator = QuestionTranslator(chat_generator=model)
    assert translator.language(SPANISH) == "es" and translator.language("¿Funciona la metformina?") == "es"
    result = translator.run(question=SPANISH)
    assert result["question"] == "Is erlotinib effective in EGFR-mutant lung cancer?"
    assert result["notes"][0].startswith("Asked in Spanish: searched and answered in English")
    assert '"Is erlotinib effective in EGFR-mutant lung cancer?"' in result["notes"][0]
    sent = model.asked[0]
    assert sent[0].text.startswith("Translate the user's text into English") and sent[-1].text == SPANISH
    # a reply in plain text (no JSON) is taken as the translation too
    plain = QuestionTranslator(chat_generator=FakeTranslatingGenerator("Does ibuprofen help migraine?\nIt does."))
    assert plain.run(question="Hilft Ibuprofen bei Migräne?")["question"] == "Does ibuprofen help migraine?"


def test_without_a_usable_translation_the_question_is_searched_as_asked_and_the_note_says_so():
    for reply in (None, "", json.dumps({"english": ""}), "x " * 200, json.dumps({"english": SPANISH})):
        result = QuestionTranslator(chat_generator=FakeTranslatingGenerator(reply)).run(question=SPANISH)
        assert result["question"] == SPANISH, reply
        assert "could not be translated into English" in result["notes"][0], reply


def test_a_chat_model_that_cannot_start_does_not_stop_the_translator():
    model = FakeTranslatingGenerator(None)  # fails at every call

    def warm_up():
        raise ValueError("Missing credentials")
    model.warm_up = warm_up
    translator = QuestionTranslator(chat_generator=model)
    translator.warm_up()  # logged, not raised
    assert translator.run(question=ENGLISH) == {"question": ENGLISH, "notes": []}
    assert "could not be translated" in translator.run(question=SPANISH)["notes"][0]


def test_the_threshold_is_checked_and_the_translator_round_trips_with_its_generator():
    try:
        QuestionTranslator(chat_generator=FakeTranslatingGenerator(), max_english_probability=1.5)
    except ValueError as error:
        assert "between 0 and 1" in str(error)
    else:
        raise AssertionError("a probability above 1 was accepted")
    generator = OpenAIChatGenerator(model="qwen2.5-0.5b-instruct", api_base_url="http://127.0.0.1:1417/v1",
                                    api_key=Secret.from_env_var("PMC_RAG_LLM_API_KEY", strict=False))
    with pytest.raises(ValueError, match="min_language_probability must be at least 0 and under 1, not 1.0"):
        QuestionTranslator(chat_generator=generator, min_language_probability=1.0)
    translator = QuestionTranslator(chat_generator=generator, max_english_probability=0.05,
                                    min_language_probability=0.2)
    data = translator.to_dict()
    assert data["init_parameters"]["chat_generator"]["type"].endswith("OpenAIChatGenerator")
    again = QuestionTranslator.from_dict(data)
    assert again.to_dict() == data and again.max_english_probability == 0.05
    assert again.min_language_probability == 0.2


def test_a_question_read_twice_asks_the_model_once_and_a_failure_is_asked_again_after_a_minute(monkeypatch):
    # The answering service translates before its crisis check, and the pipeline's translator (the same object)
    # reads the question again: a model that timed out was waited for twice.
    import pmc_rag.components.question_translator as module

    model = FakeTranslatingGenerator(json.dumps({"english": ENGLISH}))
    translator = QuestionTranslator(chat_generator=model)
    assert not translator.remembers(SPANISH)
    assert translator.run(question=SPANISH) == translator.run(question=SPANISH)
    assert len(model.asked) == 1 and translator.remembers(SPANISH)
    failing = FakeTranslatingGenerator(None)
    translator = QuestionTranslator(chat_generator=failing)
    now = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    first, second = translator.run(question=SPANISH), translator.run(question=SPANISH)
    assert first == second and "could not be translated" in first["notes"][0] and len(failing.asked) == 1
    assert translator.remembers(SPANISH)  # the failure, for a minute
    now[0] += module.FAILURE_REMEMBERED_S + 1  # the model may have been restarted: asked again
    assert not translator.remembers(SPANISH)
    failing.reply = json.dumps({"english": ENGLISH})
    assert translator.run(question=SPANISH)["question"] == ENGLISH and len(failing.asked) == 2
    # the memory is bounded: the oldest question goes first
    monkeypatch.setattr(module, "REMEMBERED_QUESTIONS", 2)
    for question in ("¿Funciona la metformina en la diabetes?", "¿Funciona la aspirina en la migraña?"):
        translator.run(question=question)
    assert SPANISH not in translator._memo and len(translator._memo) == 2


def test_an_english_question_is_reworded_in_the_papers_terms_only_when_asked_for_and_once():
    """`reworded`: the answering layer's second try for an English question the papers did not answer as asked."""
    model = FakeTranslatingGenerator(json.dumps({"english": "Is X chromosome inactivation a factor in miscarriage?"}))
    lay = "I keep miscarrying, could it be to do with X chromosome inactivation?"
    assert QuestionTranslator(chat_generator=model).reworded(lay) is None and model.asked == []  # off by default
    translator = QuestionTranslator(chat_generator=model, reword_unanswered=True)
    assert translator.reworded(SPANISH) is None and model.asked == []  # another language is translated instead
    assert translator.reworded(lay) == "Is X chromosome inactivation a factor in miscarriage?"
    assert translator.reworded(lay) == "Is X chromosome inactivation a factor in miscarriage?"
    assert len(model.asked) == 1  # remembered
    sent = model.asked[0]
    assert sent[0].text.startswith("Rewrite the user's health question") and sent[-1].text == lay
    assert translator.run(question=lay) == {"question": lay, "notes": []}  # the first reading is as asked
    # a rewording is remembered apart from a translation of the same text
    assert "reworded: " + lay in translator._memo and lay not in translator._memo
    # nothing usable (the question itself, or a failure): None, the question stays not answered
    assert QuestionTranslator(chat_generator=FakeTranslatingGenerator(json.dumps({"english": lay})),
                              reword_unanswered=True).reworded(lay) is None
    failing = QuestionTranslator(chat_generator=FakeTranslatingGenerator(None), reword_unanswered=True)
    assert failing.reworded(lay) is None
    generator = OpenAIChatGenerator(model="qwen2.5-coder-1.5b-instruct", api_base_url="http://127.0.0.1:1418/v1",
                                    api_key=Secret.from_env_var("PMC_RAG_LLM_API_KEY", strict=False))
    data = QuestionTranslator(chat_generator=generator, reword_unanswered=True).to_dict()
    assert data["init_parameters"]["reword_unanswered"] is True
    again = QuestionTranslator.from_dict(data)
    assert again.reword_unanswered is True and again.to_dict() == data


@pytest.mark.integration
def test_the_shipped_translator_model_puts_lay_words_into_their_english(tmp_path):
    """rag.yml's translator, with its own model (other_local_models) on a port of the test's: the words the 0.5B
    got wrong ("efectos secundarios" -> "secondary effects", "prothèse de genou" -> "a prosthesis of the brain"),
    and English lay words reworded in the papers' terms (rag_reworded.yml)."""
    from haystack.core.serialization import component_from_dict

    from pmc_rag.local_llm.supervisor import local_model_server
    from pmc_rag.models import EMBEDDED_LLMS, is_verified
    from pmc_rag.pipelines import declared_local_models, pipeline_spec

    from conftest import free_port

    _, rag = pipeline_spec("rag")
    spec = declared_local_models("rag")[1]
    if not is_verified(EMBEDDED_LLMS[spec.model]):
        pytest.skip(f"{spec.model} is not installed here (scripts/setup.sh installs it)")
    url = f"http://127.0.0.1:{free_port()}/v1"
    server = local_model_server(replace(spec, url=url))
    translator_dict = rag["components"]["translator"]
    chain = translator_dict["init_parameters"]["chat_generator"]["init_parameters"]["chat_generators"]
    own = chain[0]
    assert own["init_parameters"]["model"] == spec.model and own["init_parameters"]["api_base_url"] == spec.url
    own["init_parameters"]["api_base_url"] = url
    translator_dict["init_parameters"]["chat_generator"] = own  # the shipped settings, the model alone
    translator = component_from_dict(QuestionTranslator, translator_dict, "translator")
    try:
        server.ensure_running()
        side_effects = translator.run(question="¿Cuáles son los efectos secundarios del erlotinib?")["question"]
        knee = translator.run(question="La prothèse de genou améliore-t-elle la qualité de vie ?")["question"]
        translator.reword_unanswered = True  # as rag_reworded.yml sets it
        miscarrying = translator.reworded("I keep miscarrying, could it be to do with X chromosome inactivation?")
        utis = translator.reworded("is Actinobaculum schaalii a real cause of UTIs in kids?")
    finally:
        server.stop()
    assert "side effects" in side_effects.lower() and "erlotinib" in side_effects.lower(), side_effects
    assert "knee" in knee.lower(), knee
    # the lay word the gate objected to replaced by the papers' term, the other subject kept
    assert miscarrying and "miscarrying" not in miscarrying and "miscarriage" in miscarrying.lower(), miscarrying
    assert "x chromosome inactivation" in miscarrying.lower(), miscarrying
    assert utis and "UTIs" not in utis and "urinary tract infection" in utis.lower(), utis
    assert "actinobaculum schaalii" in utis.lower(), utis
