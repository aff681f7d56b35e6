"""The answer queue: one request holds one turn, and a question's translation (a model call) waits in it."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from pmc_rag.answering.answer_slots import AnswerSlots
from pmc_rag.answering.caller import RequestLifetime, current_lifetime
from pmc_rag.answering.refusals import Unavailable
from pmc_rag.answering.service import AnswerService
from pmc_rag.components.question_translator import QuestionTranslator


def test_work_holding_a_turn_goes_on_in_it():
    slots, mine = AnswerSlots(running=1, queued=0, max_wait_s=1), RequestLifetime(deadline_s=5)
    with slots.turn(mine):
        with slots.turn(mine):  # the same request again (its answer after its translation): no second turn
            assert slots.holds_turn()
        assert slots.holds_turn()  # the inner block did not give the turn back
        with pytest.raises(Unavailable):
            slots.refuse_when_full()  # the one turn is taken: a new answer would not be admitted
    assert not slots.holds_turn()
    slots.refuse_when_full()  # free again


def test_a_turn_is_held_by_its_own_thread_not_by_a_shared_lifetime():
    # Outside a served request every caller has the same default lifetime: holding a turn must not be its state.
    slots, shared = AnswerSlots(running=1, queued=0, max_wait_s=1), RequestLifetime(deadline_s=5)
    inside, release, refused = threading.Event(), threading.Event(), []

    def first() -> None:
        with slots.turn(shared):
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert inside.wait(5) and not slots.holds_turn()
        try:
            with slots.turn(shared):
                pass
        except Unavailable:
            refused.append(True)
        assert refused == [True]  # the queue's one turn is taken by the other thread
    finally:
        release.set()
        thread.join(5)


class _Translator(QuestionTranslator):
    """A FAKE translator (no model): says which questions are Spanish and records whether a turn was held."""

    def __init__(self, slots: AnswerSlots):
        super().__init__(chat_generator=None)
        self.slots, self.held = slots, []

    def run(self, question: str) -> dict:
        self.held.append(self.slots.holds_turn())
        return {"question": "Is erlotinib effective as first-line treatment?", "notes": ["Asked in Spanish"]}

    def remembers(self, question: str) -> bool:
        return len(self.held) > 1  # from its second reading on, as a translation made before would be


def test_a_question_in_another_language_is_translated_inside_a_turn_of_the_queue(monkeypatch):
    lifetime, slots = RequestLifetime(deadline_s=5), AnswerSlots(running=1, queued=0, max_wait_s=1)
    translator = _Translator(slots)
    started = []  # the translator's own model server, started when a translation first needs it
    pipeline = SimpleNamespace(pipeline=SimpleNamespace(walk=lambda: iter([("translate", translator)])), inputs={},
                               start_other_local_models=lambda: started.append(slots.holds_turn()))
    service = AnswerService(pipeline, name="rag", slots=slots)
    monkeypatch.setattr(service, "warm_up", lambda: None)
    answered = []
    monkeypatch.setattr(service, "_answer", lambda *args, **kwargs: answered.append(slots.holds_turn()) or "answer")
    token = current_lifetime.set(lifetime)
    try:
        assert service.answer("¿Es eficaz el erlotinib como primer tratamiento?") == "answer"
        assert translator.held == [True] and answered == [True]  # both in the one turn the queue allows
        assert started == [True]  # and the translator's model was started in that turn, before it was asked
        assert service.answer("Is erlotinib effective as first-line treatment?") == "answer"
        assert translator.held == [True]  # an English question is not translated and takes no turn before its answer
        assert answered == [True, False]
        translator.held.append(True)  # a translation the translator remembers asks no model: no turn before it
        assert service.answer("¿Es eficaz el erlotinib como primer tratamiento?") == "answer"
        assert translator.held[-1] is False and answered == [True, False, False]
        assert started == [True]  # nothing to translate, no model started
    finally:
        current_lifetime.reset(token)
