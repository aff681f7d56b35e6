"""The recorded-reply generator the answering tests use instead of the model: it replays, records, never invents."""

from __future__ import annotations

import json

import pytest
from haystack.dataclasses import ChatMessage

from pmc_rag.components.empty_reply_generator import EmptyReplyGenerator
from pmc_rag.components.recorded_reply_chat_generator import (NoRecordedReply, RecordedReplyChatGenerator,
                                                              prompt_key)

PROMPT = [ChatMessage.from_system("Answer from the excerpts."), ChatMessage.from_user("Is erlotinib effective?")]


def test_a_recorded_reply_is_replayed_with_its_meta_and_streamed_word_by_word(tmp_path):
    replies = tmp_path / "replies.jsonl"
    reply = ChatMessage.from_assistant("Erlotinib prolonged survival [PMC4816447].", meta={"model": "qwen2.5"})
    replies.write_text(json.dumps({"key": prompt_key(PROMPT, {"max_tokens": 400}), "prompt_start": "Is erlotinib",
                                   "reply": reply.to_dict()}) + "\n")
    generator = RecordedReplyChatGenerator(replies=str(replies))
    streamed: list[str] = []
    out = generator.run(messages=PROMPT, generation_kwargs={"max_tokens": 400},
                        streaming_callback=lambda chunk: streamed.append(chunk.content))
    assert out["replies"][0].text == reply.text and out["replies"][0].meta["model"] == "qwen2.5"
    assert "".join(streamed) == reply.text and len(streamed) == 4
    # other settings are another prompt: never answered from a reply recorded for different ones
    with pytest.raises(NoRecordedReply, match="record them again with scripts/record_replies.sh"):
        generator.run(messages=PROMPT, generation_kwargs={"max_tokens": 100})
    with pytest.raises(NoRecordedReply, match="Is erlotinib effective"):
        generator.run(messages=[ChatMessage.from_user("Is erlotinib effective?")])
    assert RecordedReplyChatGenerator.from_dict(generator.to_dict()).to_dict() == generator.to_dict()


def test_recording_asks_the_real_generator_and_appends_what_it_said(tmp_path):
    replies = tmp_path / "replies.jsonl"
    recorder = RecordedReplyChatGenerator(replies=str(replies), record_with=EmptyReplyGenerator().to_dict())
    assert recorder.run(messages=PROMPT)["replies"][0].text == ""
    assert RecordedReplyChatGenerator(replies=str(replies)).run(messages=PROMPT)["replies"][0].text == ""
    entry = json.loads(replies.read_text().splitlines()[0])
    assert entry["key"] == prompt_key(PROMPT, None) and entry["prompt_start"] == "Is erlotinib effective?"
    data = recorder.to_dict()
    assert RecordedReplyChatGenerator.from_dict(data).to_dict() == data and data["init_parameters"]["record_with"]


def test_a_missing_recording_is_never_taken_for_a_model_failure(tmp_path):
    """The components that fail over on a model failure (the fallback generator, the translator, the router's
    model layer) let `NoRecordedReply` through: a test whose prompt changed fails, instead of silently taking the
    path of a model that is down (three tests did, found 2026-11-30)."""
    from pmc_rag.components.question_router import QuestionRouter
    from pmc_rag.components.question_translator import QuestionTranslator
    from pmc_rag.components.remembering_fallback_chat_generator import RememberingFallbackChatGenerator

    (tmp_path / "replies.jsonl").write_text("")
    recorded = RecordedReplyChatGenerator(replies=str(tmp_path / "replies.jsonl"))
    with pytest.raises(NoRecordedReply):
        RememberingFallbackChatGenerator(chat_generators=[recorded, EmptyReplyGenerator()]).run(messages=PROMPT)
    with pytest.raises(NoRecordedReply):
        QuestionTranslator(chat_generator=recorded).run(question="¿Es eficaz el erlotinib en el cáncer de pulmón?")
    with pytest.raises(NoRecordedReply):
        QuestionRouter(chat_generator=recorded)._asked("Is erlotinib effective?")
