"""The answer queue: one request holds one turn, and a question's translation (a model call) waits in it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pmc_rag.answering.answer_slots import AnswerSlots
from pmc_rag.answering.caller import RequestLifetime, current_lifetime
from pmc_rag.answering.refusals import Unavailable
from pmc_rag.answering.service import AnswerService
from pmc_rag.components.question_translator import QuestionTranslator


def test_a_request_holding_a_turn_goes_on_in_it_and_another_is_refused():
    slots = AnswerSlots(running=1, queued=0, max_wait_s=1)
    mine, other = RequestLifetime(deadline_s=5), RequestLifetime(deadline_s=5)
    with slots.turn(mine):
        with slots.turn(mine):  # the same request again (its answer after its translation): no second turn
            assert mine.holds_turn
        assert mine.holds_turn  # the inner block did not give the turn back
        with pytest.raises(Unavailable):
            with slots.turn(other):
                pass
    assert not mine.holds_turn
    with slots.turn(other):  # free again
        assert other.holds_turn


class _Translator(QuestionTranslator):
    """A FAKE translator (no model): says which questions are Spanish and records whether a turn was held."""

    def __init__(self, lifetime: RequestLifetime):
        super().__init__(chat_generator=None)
        self.lifetime, self.held = lifetime, []

    def run(self, question: str) -> dict:
        self.held.append(self.lifetime.holds_turn)
        return {"question": "Is erlotinib effective as first-line treatment?", "notes": ["Asked in Spanish"]}

    def remembers(self, question: str) -> bool:
        return len(self.held) > 1  # from its second reading on, as a translation made before would be


def test_a_question_in_another_language_is_translated_inside_a_turn_of_the_queue(monkeypatch):
    lifetime = RequestLifetime(deadline_s=5)
    translator = _Translator(lifetime)
    pipeline = SimpleNamespace(pipeline=SimpleNamespace(walk=lambda: iter([("translate", translator)])), inputs={})
    service = AnswerService(pipeline, name="rag", slots=AnswerSlots(running=1, queued=0, max_wait_s=1))
    monkeypatch.setattr(service, "warm_up", lambda: None)
    answered = []
    monkeypatch.setattr(service, "_answer", lambda *args, **kwargs: answered.append(lifetime.holds_turn) or "answer")
    token = current_lifetime.set(lifetime)
    try:
        assert service.answer("¿Es eficaz el erlotinib como primer tratamiento?") == "answer"
        assert translator.held == [True] and answered == [True]  # both in the one turn the queue allows
        assert service.answer("Is erlotinib effective as first-line treatment?") == "answer"
        assert translator.held == [True]  # an English question is not translated and takes no turn before its answer
        assert answered == [True, False]
        translator.held.append(True)  # a translation the translator remembers asks no model: no turn before it
        assert service.answer("¿Es eficaz el erlotinib como primer tratamiento?") == "answer"
        assert translator.held[-1] is False and answered == [True, False, False]
    finally:
        current_lifetime.reset(token)
