"""The typed answer object: one definition behind the builder, the REST schema, the renderings and the README."""

from __future__ import annotations

import pytest
from haystack import Document
from pydantic import ValidationError

from pmc_rag.components.answer import Answer, answer_fields_markdown
from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder
from pmc_rag.answering.conversation import numbers_from_history, renumber

from conftest import PROJECT_ROOT

EXCERPT = Document(id="c1", content="Erlotinib prolonged progression-free survival in EGFR-mutant lung cancer.",
                   meta={"source_id": "PMC123", "title": "Erlotinib trial", "journal": "Lancet", "year": 2012,
                         "pmcid": "PMC123", "pmid": "999", "section": "Results"})


def built_answer() -> Answer:
    claims = [{"text": "Erlotinib prolonged progression-free survival.", "cited": ["PMC123"], "attached": [],
               "support": 0.8}]
    return CitedAnswerBuilder().run(question="Does erlotinib work?", documents=[EXCERPT], claims=claims,
                                    raw_answer="Erlotinib prolonged progression-free survival [PMC123].")["answer"]


def test_the_docs_table_is_generated_from_the_model():
    assert answer_fields_markdown() in (PROJECT_ROOT / "docs" / "asking.md").read_text()
    assert answer_fields_markdown().count("\n| `") == len(Answer.model_fields)


def test_what_the_builder_builds_is_an_answer_and_reads_back_unchanged():
    built = built_answer()
    assert isinstance(built, Answer)
    assert Answer.model_validate(built.model_dump()) == built
    assert Answer.model_validate_json(built.model_dump_json()) == built
    assert built.references[0].url == "https://pmc.ncbi.nlm.nih.gov/articles/PMC123/"


def test_the_answer_is_never_edited_later_steps_make_checked_copies():
    built = built_answer()
    with pytest.raises(ValidationError, match="frozen"):
        built.notes = ["edited"]
    timed = built.updated(timings_ms={"total": 12.5})
    noted = timed.with_note("A later step's note.", "weak_support", first=True)
    assert built.timings_ms == {} and built.notes == [] and not built.flags["weak_support"]
    assert timed.timings_ms == {"total": 12.5} and noted.timings_ms == {"total": 12.5}
    assert noted.notes == ["A later step's note."] and noted.flags["weak_support"]
    with pytest.raises(ValidationError, match="extra"):
        built.updated(surprise=1)
    with pytest.raises(ValidationError):
        built.updated(references=[{"source_id": "PMC1"}])   # a reference without its number


def test_a_field_outside_the_model_is_refused():
    with pytest.raises(ValidationError, match="extra"):
        Answer.model_validate({**built_answer().model_dump(), "surprise": 1})


def test_cli_and_chat_render_the_same_references_and_the_chat_reads_its_numbers_back():
    built = built_answer()
    answer = renumber(built, {"PMC9": 1})  # PMC123 is new: [2]
    assert built.answer.endswith("[1].")   # a copy: the builder's answer keeps its own numbers
    text = answer.as_text()
    assert text.startswith("Erlotinib prolonged progression-free survival [2].")
    assert "[2] Erlotinib trial. Lancet 2012. PMC123, PMID 999" in text
    chat = answer.reference_lines()
    assert chat == "References:\n[2] PMC123 · Erlotinib trial. Lancet. 2012 · https://pmc.ncbi.nlm.nih.gov/articles/PMC123/"
    assert numbers_from_history([{"role": "assistant", "content": chat}]) == {"PMC123": 2}


def test_a_fixed_reply_renders_as_its_text_alone():
    reply = Answer(kind="small_talk", question="hello", answer="Hello! Ask me about the literature.")
    assert reply.as_text() == "Hello! Ask me about the literature." and reply.reference_lines() == ""


def test_the_answer_comes_first_with_one_line_of_caveat_and_the_rest_on_request():
    """Issue 61, item 5: what the reader sees first is the answer; the other notes, what was removed and which
    model answered go to `--explain`, the JSON and the page's details."""
    from pmc_rag.serving.endpoints import chat_text

    answer = built_answer().updated(model="qwen", failed_generators=["ollama"],
                                    notes=["Not medical advice.", "Left out 1 sentence(s).", "Ollama failed."],
                                    removed_claims=[{"text": "Erlotinib cures everyone.", "cited": ["PMC123"],
                                                     "judgement": "contradicted", "reason": "negation"}])
    brief = answer.as_text()
    assert brief.startswith("Erlotinib prolonged progression-free survival [1].\n\nNote: Not medical advice. "
                            "(2 more notes: --explain)\n\nReferences")
    assert "Left out" not in brief and "Answered by" not in brief and "Removed" not in brief
    full = answer.as_text(explain=True)
    assert "Note: Left out 1 sentence(s)." in full and "Note: Ollama failed." in full
    assert "Answered by qwen" in full and "failed first: ollama" in full
    assert "Removed: a sentence citing PMC123 (contradicted, negation)" in full
    assert "cures everyone" not in full  # model text that failed the checks is described, never shown
    chat = chat_text(answer)
    assert "_Not medical advice. (2 more notes: details below)_" in chat
    # the other notes follow the references, folded
    assert chat.index("References:") < chat.index("<details><summary>Details</summary>") < chat.index("- Left out")
    assert "- Answered by qwen (failed first: ollama)" in chat and "cures everyone" not in chat
    assert built_answer().updated(notes=["Only one."]).caveat() == "Only one."
