"""Conversations through the server: follow-ups keep their topic and its citation numbers, repeated questions come
from the cache, and a conversation belongs to the key that started it."""

from __future__ import annotations

import re

import psycopg

from conftest import LOCAL_BASE_URL
from served_sample import QUESTION, TABLE, chat_body


def test_a_research_follow_up_is_answered_though_its_words_alone_read_as_an_emergency(client):
    follow_up = "What about perinatal bleeding?"  # seen in a conversation evaluation, 2026-11-27
    # alone, danger is possible: answered, with the crisis line first (issue 61), or the emergency reply
    alone = client.post("/rag/run", json={"question": follow_up}).json()["result"]
    assert alone["kind"] == "emergency" or "emergency number" in (alone["safety"] or "")
    chat = client.post("/v1/chat/completions", json=chat_body(QUESTION, follow_up)).json()
    assert "emergency number" not in chat["choices"][0]["message"]["content"]
    # after a message that was an emergency, the same follow-up is one too
    in_danger = client.post("/v1/chat/completions", json=chat_body("my wife is bleeding heavily after giving birth",
                                                                 follow_up)).json()
    assert in_danger["choices"][0]["message"]["content"].startswith("This sounds like an emergency")


def test_a_five_turn_conversation_keeps_its_citation_numbers(client):
    questions = [QUESTION, "What about its side effects?", "How long was progression-free survival?",
                 "Did they test for EGFR mutations in tissue?", "Were there any treatment-related deaths?"]
    numbers: dict[str, int] = {}
    standalone = []
    conversation_id = None
    for question in questions:
        body = {"question": question, **({"conversation_id": conversation_id} if conversation_id else {})}
        answer = client.post("/rag/run", json=body).json()["result"]
        conversation_id = answer["conversation_id"]
        standalone.append(answer["standalone_query"])
        for reference in answer["references"]:
            assert numbers.setdefault(reference["source_id"], reference["number"]) == reference["number"]
        assert sorted(numbers.values()) == list(range(1, len(numbers) + 1))
    assert numbers.get("PMC4816447") == 1
    assert standalone[1] == f"What about its side effects? (follow-up to: {QUESTION})"
    assert standalone[4] == f"{questions[4]} (follow-up to: {QUESTION})"  # short, names nothing new: continues


def test_repeated_questions_come_from_the_cache_until_the_corpus_changes(client, pg_conn_str):
    question = "Does erlotinib cause skin rash in EGFR-mutant lung cancer?"
    first = client.post("/rag/run", json={"question": question}).json()["result"]
    second = client.post("/rag/run", json={"question": question}).json()["result"]
    assert not first["cached"] and second["cached"]
    assert second["answer"] == first["answer"]
    with psycopg.connect(pg_conn_str) as connection:  # any write to the chunk table changes the corpus
        connection.execute(f"UPDATE {TABLE} SET content = content WHERE id = (SELECT min(id) FROM {TABLE})")
    third = client.post("/rag/run", json={"question": question}).json()["result"]
    assert not third["cached"]


def test_conversations_are_issued_by_the_server_and_bound_to_the_key_that_started_them(serve_config, monkeypatch):
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config

    monkeypatch.setenv("PMC_RAG_API_KEY", "alice-key, bob-key")  # two users
    alice, bob = ({"Authorization": f"Bearer {name}-key"} for name in ("alice", "bob"))
    with TestClient(build_app(load_serve_config(serve_config)), base_url=LOCAL_BASE_URL) as client:
        chosen = client.post("/rag/run", json={"question": QUESTION, "conversation_id": "1"}, headers=alice)
        assert chosen.status_code == 404 and "not issued" in chosen.json()["detail"]  # ids are not the client's
        first = client.post("/rag/run", json={"question": QUESTION}, headers=alice).json()["result"]
        issued = first["conversation_id"]
        assert re.fullmatch(r"conv-[A-Za-z0-9_-]{32}", issued)
        stolen = client.post("/rag/run", json={"question": "what about its side effects?", "conversation_id": issued},
                             headers=bob)
        assert stolen.status_code == 404 and "what about" not in stolen.text and QUESTION not in stolen.text
        chat = client.post("/v1/chat/completions", headers=bob, json={
            "model": "rag", "conversation_id": issued, "messages": [{"role": "user", "content": "and survival?"}]})
        assert chat.status_code == 404
        own = client.post("/rag/run", json={"question": "what about its side effects?", "conversation_id": issued},
                          headers=alice).json()["result"]
        assert own["conversation_id"] == issued and own["standalone_query"].endswith(f"(follow-up to: {QUESTION})")


def test_a_follow_up_to_a_follow_up_keeps_the_conversation_s_topic():
    from pmc_rag.answering.conversation import standalone_query

    topic = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"
    queries = [topic]
    for question in ("What about its side effects?", "Does it prolong overall survival?",
                     "How does it compare with gefitinib?"):
        queries.append(standalone_query(question, queries))
        assert queries[-1] == f"{question} (follow-up to: {topic})"
    new_topic = "Does metformin reduce cardiovascular events in type 2 diabetes?"
    queries.append(standalone_query(new_topic, queries))
    assert standalone_query("What doses did they use?", queries) == f"What doses did they use? (follow-up to: {new_topic})"


def test_a_short_question_naming_something_new_starts_a_new_topic():
    from pmc_rag.answering.conversation import is_follow_up, standalone_query

    topic = ["Is oncoplastic surgery a contraindication for accelerated partial breast radiation?"]
    assert is_follow_up(standalone_query("Were there any complications?", topic))  # nothing new named
    assert is_follow_up(standalone_query("How many patients had oncoplastic surgery?", topic))  # shares a word
    assert standalone_query("What is the capital of France?", topic) == "What is the capital of France?"
    assert standalone_query("Is Paris safe?", topic) == "Is Paris safe?"
    assert standalone_query("Can dogs eat chocolate safely?", topic) == "Can dogs eat chocolate safely?"
    assert standalone_query("Does aspirin prevent stroke?", topic) == "Does aspirin prevent stroke?"
    assert is_follow_up(standalone_query("How long was progression-free survival?", topic))  # a detail of the study
    assert is_follow_up(standalone_query("Which brain regions were affected?", topic))


def test_the_topic_papers_are_those_cited_since_the_topic_question():
    from pmc_rag.answering.conversation import cited_per_turn_from_history, standalone_query, topic_papers

    queries: list[str] = []
    for question in ("Does metformin lower HbA1c?", "What about its side effects?",
                     "Is erlotinib effective in EGFR-mutant lung cancer?", "What about its side effects?"):
        queries.append(standalone_query(question, queries))
    cited = [["PMC1"], ["PMC1", "PMC2"], ["PMC3", "PMID:4"], ["PMC3", "PMC5"]]
    assert topic_papers(queries, cited) == ["PMC3", "PMID:4", "PMC5"]  # the erlotinib question on, not metformin's
    assert topic_papers(queries[:2], cited[:2]) == ["PMC1", "PMC2"]
    assert topic_papers(queries[:3], [[], [], []]) == []  # nothing cited: every paper is searched

    messages = [{"role": "user", "content": "Is erlotinib effective?"},
                {"role": "assistant", "content": "Yes [1].\n\nReferences\n[1] PMC4816447 Erlotinib trial"},
                {"role": "user", "content": "What is the capital of France?"},
                {"role": "assistant", "content": "The indexed papers do not answer this question."},
                {"role": "user", "content": "Does it prolong survival?"}]
    assert cited_per_turn_from_history(messages) == [["PMC4816447"], []]


def test_a_follow_up_cites_only_the_papers_its_topic_question_cited(client, monkeypatch):
    from pmc_rag.pipelines import DeclaredPipeline

    runs = []
    run = DeclaredPipeline.run

    def recorded(self, component_inputs=None, **values):
        runs.append(values)
        return run(self, component_inputs=component_inputs, **values)

    monkeypatch.setattr(DeclaredPipeline, "run", recorded)
    first = client.post("/rag/run", json={"question": QUESTION}).json()["result"]
    topic = {r["source_id"] for r in first["references"]}
    assert "PMC4816447" in topic and not any("follow_up_to" in r for r in runs)  # (none if it came from the cache)
    for question in ("Does it prolong overall survival?", "Were there any complications?"):
        answer = client.post("/rag/run", json={"question": question,
                                               "conversation_id": first["conversation_id"]}).json()["result"]
        assert answer["standalone_query"].startswith(question + " (follow-up to: ")
        # The pipeline gets the reader's words and the question they follow up apart, never joined into one text.
        assert (runs[-1]["question"], runs[-1]["follow_up_to"], runs[-1]["topic_question"]) == (
            question, QUESTION, QUESTION)
        assert {r["source_id"] for r in answer["references"]} <= topic, answer["references"]
        assert {s["source_id"] for s in answer["sources"]} <= topic
        assert any("the papers this conversation is about (" in n for n in answer["notes"])
    # The same over the chat endpoint with the history resent (the openai client, Open WebUI)
    chat = client.post("/v1/chat/completions", json={"model": "rag", "messages": [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Yes [1].\n\nReferences\n[1] PMC4816447 Erlotinib trial"},
        {"role": "user", "content": "Does it prolong overall survival?"}]})
    assert chat.status_code == 200, chat.text
    text = chat.json()["choices"][0]["message"]["content"]
    assert "PMC4816447" in text
    assert not {m for m in re.findall(r"\b(PMC\d+|PMID:\d+)", text)} - {"PMC4816447"}, text


def test_a_follow_up_in_another_language_keeps_its_topic_in_english(client):
    # The conversation reads the question in English (the pipeline's translator, asked by the server first): in
    # Spanish, "And what side effects does it have?" refers back to the erlotinib question as "it" does in English.
    first = client.post("/rag/run", json={
        "question": "¿Es eficaz el erlotinib como primer tratamiento en el cáncer de pulmón con mutación de EGFR?"}
                        ).json()["result"]
    assert first["notes"][0].startswith("Asked in Spanish: searched and answered in English")
    follow_up = client.post("/rag/run", json={"question": "¿Y qué efectos secundarios tiene?",
                                              "conversation_id": first["conversation_id"]}).json()["result"]
    assert follow_up["question"] == "¿Y qué efectos secundarios tiene?"  # the reader's own words, kept
    topic = first["standalone_query"]
    assert "erlotinib" in topic.lower() and "¿" not in topic  # the topic was stored in English
    assert follow_up["standalone_query"].endswith(f"(follow-up to: {topic})")
    assert follow_up["notes"][0].startswith("Asked in Spanish")
    assert "PMC4816447" in [reference["source_id"] for reference in follow_up["references"]]


def test_a_chat_history_in_another_language_is_read_in_english(client):
    # Open WebUI and the `openai` client resend the history instead of a conversation id: its questions are put
    # into English as a kept conversation's are, so the follow-up's topic is the erlotinib question in English.
    endpoint = client.app.state.pipeline_registry.get("rag")
    messages = [{"role": "user", "content": "¿Es eficaz el erlotinib como primer tratamiento en el cáncer de pulmón "
                                            "con mutación de EGFR?"},
                {"role": "assistant", "content": "..."},
                {"role": "user", "content": "¿Y qué efectos secundarios tiene?"}]
    question, _, history = endpoint._chat_request(messages, {})
    assert question == "¿Y qué efectos secundarios tiene?"
    assert "erlotinib" in history[0][0].lower() and "¿" not in history[0][0]


def test_a_question_that_cannot_be_translated_is_searched_as_asked_with_one_note(client, monkeypatch):
    # The translating model fails for this question (a fake failure in front of the recorded replies), in the server
    # and again in the pipeline.
    from pmc_rag.components.recorded_reply_chat_generator import RecordedReplyChatGenerator

    swedish = "Hjälper akupunktur mot depression hos vuxna patienter?"
    replay = RecordedReplyChatGenerator.run

    def unreachable(self, messages, **kwargs):
        if messages and messages[-1].text == swedish:
            raise ConnectionError("model server not reachable")
        return replay(self, messages, **kwargs)

    monkeypatch.setattr(RecordedReplyChatGenerator, "run", unreachable)
    answer = client.post("/rag/run", json={"question": swedish}).json()["result"]
    failed = [n for n in answer["notes"] if "could not be translated" in n]
    assert len(failed) == 1 and answer["notes"][0] == failed[0]


def test_an_emergency_in_another_language_gets_the_emergency_reply_through_its_translation(client):
    # As typed, the crisis check reads Dutch less surely than English: this got only the crisis line above an
    # answer. The service translates a question in another language anyway, and the check reads that too.
    answer = client.post("/rag/run", json={"question": "Mijn vader is flauwgevallen en reageert niet meer"}
                         ).json()["result"]
    assert answer["kind"] == "emergency", answer
    assert answer["answer"].startswith("Dit klinkt als een noodsituatie. Bel nu 112")  # in Dutch
    assert not answer["references"]
    # a research question in the same language is answered, searched in English
    research = client.post("/rag/run", json={
        "question": "¿Es eficaz el erlotinib como primer tratamiento en el cáncer de pulmón con mutación de EGFR?"}
                           ).json()["result"]
    assert research["kind"] == "answer" and not research["safety"]
