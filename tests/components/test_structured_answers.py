"""Structured answers: a schema whose citations can only be the shown labels, the reply read back as cited text
(also while streaming), and the schema reaching Ollama as its `format`."""

from __future__ import annotations

import json

from haystack import Document
from haystack.dataclasses import ChatMessage

from pmc_rag.components.remembering_fallback_chat_generator import for_generator
from pmc_rag.components.structured_answer_reader import StructuredAnswerReader, structured_text
from pmc_rag.components.structured_answer_schema import StructuredAnswerSchema

EXCERPTS = [Document(content="a", meta={"source_id": "PMC4816447"}), Document(content="b", meta={"source_id": "PMC4816447"}),
            Document(content="c", meta={"source_id": "PMID:15703931"})]


def test_the_schema_allows_only_the_shown_labels_and_asks_the_verdict_first_for_yes_no_questions():
    result = StructuredAnswerSchema(max_sentences=3).run(documents=EXCERPTS, question="Does erlotinib work?")
    schema = result["schema"]
    assert list(schema["properties"]) == ["verdict", "sentences"] and schema["required"] == ["verdict", "sentences"]
    assert schema["properties"]["sentences"]["items"]["properties"]["cite"]["enum"] == ["PMC4816447", "PMID:15703931"]
    assert schema["properties"]["sentences"]["maxItems"] == 3
    assert result["generation_kwargs"]["response_format"]["json_schema"]["schema"] == schema
    open_question = StructuredAnswerSchema().run(documents=EXCERPTS, question="What causes rash?")["schema"]
    assert list(open_question["properties"]) == ["sentences"]
    assert StructuredAnswerSchema.from_dict(StructuredAnswerSchema(max_sentences=2).to_dict()).max_sentences == 2


def test_the_reply_is_read_back_as_cited_text_even_when_cut_off():
    reply = json.dumps({"verdict": "yes", "sentences": [
        {"text": "Erlotinib prolonged survival. Rash was common", "cite": "PMC4816447"},
        {"text": "Metformin lowered HbA1c.", "cite": "PMID:15703931"}]})
    assert structured_text(reply) == ("Yes. Erlotinib prolonged survival [PMC4816447]. Rash was common [PMC4816447]. "
                                      "Metformin lowered HbA1c [PMID:15703931].")
    cut = reply[: reply.index("Metformin") + 5]  # the token limit struck mid-sentence
    assert structured_text(cut) == "Yes. Erlotinib prolonged survival [PMC4816447]. Rash was common [PMC4816447]."
    read = StructuredAnswerReader().run(replies=[ChatMessage.from_assistant(reply, meta={"model": "m"})])["replies"][0]
    assert read.meta == {"model": "m", "structured_answer": True} and read.text.startswith("Yes. Erlotinib")
    free = StructuredAnswerReader().run(replies=[ChatMessage.from_assistant("Yes, it works [PMC1].")])["replies"][0]
    assert free.text == "Yes, it works [PMC1]." and free.meta["structured_answer"] is False


def test_ollama_gets_the_schema_as_its_format_on_a_copy():
    from haystack_integrations.components.generators.ollama import OllamaChatGenerator

    from fake_ollama import FakeOllama

    kwargs = StructuredAnswerSchema().run(documents=EXCERPTS, question="Is it?")["generation_kwargs"]
    with FakeOllama(model="llama3.1:8b") as ollama:  # a FAKE Ollama server, real HTTP
        shared = OllamaChatGenerator(model="llama3.1:8b", url=ollama.url, generation_kwargs={"num_ctx": 8192})
        target, rest = for_generator(shared, {**kwargs, "num_predict": 10})
        assert target is not shared and shared.response_format is None and rest == {"num_predict": 10}
        target.run(messages=[ChatMessage.from_user("[PMC1] T (J, 2020), Abstract:\nIt works.\n\nQuestion: Is it?")])
        assert ollama.requests[-1]["format"] == kwargs["response_format"]["json_schema"]["schema"]
    other = object()
    assert for_generator(other, kwargs) == (other, kwargs)  # OpenAI-compatible generators take it as it is


def test_the_reader_round_trips_and_loads_by_its_type_name():
    data = StructuredAnswerReader().to_dict()
    assert data["type"] == "pmc_rag.components.structured_answer_reader.StructuredAnswerReader"
    assert StructuredAnswerReader.from_dict(data).to_dict() == data
