"""An English question the papers do not answer as asked is asked once more, reworded in the papers' terms by the
pipeline's translator (`reword_unanswered`), and the second answer is kept only when it answers."""

from __future__ import annotations

import json
from pathlib import Path

from haystack import Document, Pipeline, component
from haystack.dataclasses import ChatMessage

from pmc_rag.answering.pipeline_run import run_answering
from pmc_rag.components.answer import Answer
from pmc_rag.components.question_translator import QuestionTranslator
from pmc_rag.pipelines import DeclaredPipeline

LAY = "I keep miscarrying, could it be to do with X chromosome inactivation?"
REWORDED = "Is X chromosome inactivation a factor in recurrent miscarriage?"


@component
class FakeRewordingModel:
    """A fake chat model that rewords (the retry is under test, not a model): its one reply, or no server."""

    def __init__(self, reply: str | None):
        self.reply = reply

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        if self.reply is None:
            raise ConnectionError("model server not reachable")
        return {"replies": [ChatMessage.from_assistant(json.dumps({"english": self.reply}))]}


@component
class FakeAnswerer:
    """Stands in for search, gate and answer (the retry is under test): answers a question only when it holds
    `answers_when`, flagging it `related_only` when it holds `related_when`; records every question."""

    def __init__(self, answers_when: str, related_when: str = "\0"):
        self.answers_when, self.related_when = answers_when, related_when
        self.asked: list[str] = []

    @component.output_types(answer=Answer, excerpts=list[Document], objected_words=list[str])
    def run(self, question: str, filters: dict | None = None) -> dict:
        self.asked.append(question)
        answered = self.answers_when in question
        flags = {"not_answered": not answered, "related_only": answered and self.related_when in question}
        if answered:
            return {"answer": Answer(question=question, answer="Skewed X-inactivation is not associated with "
                                     "recurrent miscarriage [1].", flags=flags), "excerpts": []}
        return {"answer": Answer(question=question, answer="The indexed papers do not answer this question.",
                                 flags=flags), "excerpts": [], "objected_words": ["miscarrying"]}


def _declared(answerer: FakeAnswerer, reword: bool = True, reply: str | None = REWORDED) -> DeclaredPipeline:
    pipeline = Pipeline()
    pipeline.add_component("translator", QuestionTranslator(
        chat_generator=FakeRewordingModel(reply),
        reword_unanswered=reword))
    pipeline.add_component("answerer", answerer)
    pipeline.connect("translator.question", "answerer.question")
    return DeclaredPipeline(Path("reworded.yml"), pipeline,
                            {"question": ["translator.question"], "filters": ["answerer.filters"]},
                            {"answer": "answerer.answer", "excerpts": "answerer.excerpts",
                             "objected": "answerer.objected_words"})


def test_a_question_not_answered_as_asked_is_answered_reworded_with_a_note():
    answerer = FakeAnswerer(answers_when="recurrent miscarriage")
    answer, _ = run_answering(_declared(answerer), LAY)
    assert answerer.asked == [LAY, REWORDED]
    assert not answer.flags.get("not_answered") and answer.flags.get("reworded")
    assert answer.notes[0].startswith("Not answered as asked; searched and answered as") and REWORDED in answer.notes[0]
    assert answer.timings_ms["rewording"] >= 0 and answer.timings_ms["total"] >= answer.timings_ms["rewording"]


def test_the_first_answer_stays_when_the_rewording_does_not_answer_or_only_relates():
    for answerer in (FakeAnswerer(answers_when="nothing of the kind"),
                     FakeAnswerer(answers_when="recurrent miscarriage", related_when="recurrent")):
        answer, _ = run_answering(_declared(answerer), LAY)
        assert answerer.asked == [LAY, REWORDED]
        assert answer.flags.get("not_answered") and not answer.flags.get("reworded") and answer.question == LAY


def test_a_rewording_that_keeps_every_objected_word_is_not_asked():
    """It could pass only by its phrasing: the gate objected to "miscarrying", and the papers still lack it."""
    answerer = FakeAnswerer(answers_when="because of X")
    answer, _ = run_answering(_declared(answerer, reply="Do I keep miscarrying because of X chromosome inactivation?"),
                              LAY)
    assert answerer.asked == [LAY] and answer.flags.get("not_answered")


def test_no_second_run_when_answered_when_off_when_not_english_or_without_a_rewording():
    answered = FakeAnswerer(answers_when="miscarry")
    assert run_answering(_declared(answered), LAY)[0].flags.get("not_answered") is False
    assert answered.asked == [LAY]
    for declared, question in ((_declared(FakeAnswerer("recurrent miscarriage"), reword=False), LAY),
                               (_declared(FakeAnswerer("recurrent miscarriage"), reply=None), LAY)):
        answer, _ = run_answering(declared, question)
        assert answer.flags.get("not_answered") and len(declared.pipeline.get_component("answerer").asked) == 1
