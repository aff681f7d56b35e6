"""Turning a conversation into what one pipeline run needs, and its answers back into the conversation's terms.

Follow-up questions ("what about its side effects?") are made standalone by *carrying the conversation's topic
along*: a question that refers back (a pronoun such as "it" or "they", "what about", "the drug", "which one"),
that has fewer than six content words one of which it shares with the topic, or that names nothing new (no
capitalised word after the first) and either has fewer than three content words or asks for a detail of the
study in fewer than six ("How long was progression-free survival?", "Which brain regions were affected?"; but
not "What is the capital of France?" or "Does aspirin prevent stroke?") is a follow-up: its standalone query, which
the conversation keeps and the answer shows, is `"<question> (follow-up to: <topic>)"`, where the topic is the last
question that did not refer back, the one that says what "it" is. The pipeline gets the two apart: the question as
`question`, the topic as `follow_up_to` (`pmc_rag.components.follow_up_query`). A follow-up to a
follow-up keeps that topic: after "Is erlotinib effective?" and "What about its side effects?", "Does it prolong
survival?" is about erlotinib, not about "its side effects". This is deterministic and costs nothing, unlike
asking the model to rewrite the question (a 0.5B model rewrites unreliably and adds seconds).

A follow-up is answered from the conversation's *topic papers*: those cited since its topic question
(`topic_papers`), so that "Does it prolong survival?" cannot be answered from a paper about something else; when
they do not answer it, the answer says so. A question that names its own subject searches every paper again.

Citation numbers belong to the conversation: `renumber` gives a paper cited before its earlier number and a
new paper the next free one, in the answer text, its citations and its references alike.
"""

from __future__ import annotations

import re
from typing import Any

from pmc_rag.components.answer import Answer
from pmc_rag.components.citations import canonical_id, content_words
from pmc_rag.components.follow_up_query import FOLLOW_UP_LABEL, follow_up_query

_REFERS_BACK = re.compile(
    r"\b(?:it|its|it's|they|them|their|theirs|this|that|these|those|the (?:drug|treatment|therapy|intervention|"
    r"study|trial|paper|papers|studies|results?|effect|effects|same)|what about|how about|and what|also|"
    r"as well|compared (?:to|with) (?:that|this|it)|which one|the other|either|both)\b", re.IGNORECASE)
_NAMES_SOMETHING = re.compile(r"(?<=\s)[A-Z]")  # a capitalised word after the first: a name, a new subject
# How a question about the study under discussion starts ("How long was progression-free survival?"); a new
# subject is usually asked as "Does aspirin prevent stroke?".
_ASKS_FOR_A_DETAIL = re.compile(r"\s*(?:how (?:many|much|long|often|large|was|were|did)|which|what (?:was|were)|"
                                r"were there|was there|did|who)\b", re.IGNORECASE)


def standalone_query(question: str, previous_queries: list[str]) -> str:
    """The question as retrieval should see it, given the conversation's earlier standalone queries."""
    if not previous_queries:
        return question
    topic = conversation_topic(previous_queries)
    words = content_words(question)
    # A short question sharing a word with the topic ("How was dynamic stability measured?") continues it too.
    continues = (len(words) < 6 and bool(words & content_words(topic))) or (
        not _NAMES_SOMETHING.search(question) and (len(words) < 3 or (len(words) < 6 and _ASKS_FOR_A_DETAIL.match(
            question))))
    if not _REFERS_BACK.search(question) and not continues:
        return question
    return follow_up_query(question, topic)


def is_follow_up(query: str) -> bool:
    """Whether a standalone query (as `standalone_query` made it, and the conversation keeps it) is a follow-up."""
    return FOLLOW_UP_LABEL in query and query.endswith(")")


def follow_up_text(query: str) -> str:
    """A standalone query's own words: a follow-up without its topic, any other query as it is."""
    return query.split(FOLLOW_UP_LABEL, 1)[0]


def follow_up_topic(query: str) -> str | None:
    """The topic a follow-up's standalone query carries, None for any other query."""
    return query.split(FOLLOW_UP_LABEL, 1)[1][:-1] if is_follow_up(query) else None


def topic_papers(previous_queries: list[str], cited_per_turn: list[list[str]]) -> list[str]:
    """The papers a follow-up is answered from: those cited from the conversation's topic question on, in the order
    first cited. Empty when the topic question's answer and its follow-ups cited nothing (then every paper is
    searched).

    :param previous_queries: The earlier turns' standalone queries, oldest first.
    :param cited_per_turn: The source ids each of those turns cited, aligned with `previous_queries`.
    """
    start = len(previous_queries) - 1
    while start > 0 and is_follow_up(previous_queries[start]):
        start -= 1
    papers: list[str] = []
    for cited in cited_per_turn[max(start, 0):]:
        papers.extend(p for p in cited if p not in papers)
    return papers


def conversation_topic(previous_queries: list[str]) -> str:
    """The question a follow-up refers back to: the latest standalone query that was not itself a follow-up (for
    one that was, the topic it carried)."""
    latest = previous_queries[-1]
    return follow_up_topic(latest) or latest


def number_for(numbers: dict[str, int], source_id: str) -> int:
    """A paper's citation number in the conversation: the one it had, else the next free one (`numbers` gains it).
    The one place conversation numbers are given, for streamed tokens and finished answers alike."""
    if source_id not in numbers:
        numbers[source_id] = max(numbers.values(), default=0) + 1
    return numbers[source_id]


def renumber(answer: Answer, numbers: dict[str, int]) -> Answer:
    """The answer with the conversation's citation numbers; `numbers` gains the papers new to it."""
    mapping = {reference.number: number_for(numbers, reference.source_id)
               for reference in sorted(answer.references, key=lambda r: r.number)}
    if all(old == new for old, new in mapping.items()):
        return answer
    return answer.updated(
        answer=re.sub(r"\[(\d+)\]", lambda m: f"[{mapping.get(int(m.group(1)), int(m.group(1)))}]", answer.answer),
        references=[r.model_copy(update={"number": mapping[r.number]}) for r in answer.references],
        citations=[c.model_copy(update={"number": mapping.get(c.number, c.number)}) for c in answer.citations])


_REFERENCE_LINE = re.compile(r"^\s*\[(\d+)\]\s+(PMC\d+|PMID:\d+|doc:[0-9a-f]{16}|doi:\S+)", re.MULTILINE)


def numbers_from_history(messages: list[dict[str, Any]]) -> dict[str, int]:
    """Citation numbers already shown in a resent chat history (the reference lines this server wrote:
    pmc_rag.components.answer.Reference.line)."""
    numbers: dict[str, int] = {}
    for message in messages:
        if message.get("role") == "assistant" and isinstance(message.get("content"), str):
            for number, source_id in _REFERENCE_LINE.findall(message["content"]):
                numbers.setdefault(canonical_id(source_id), int(number))
    return numbers


def cited_per_turn_from_history(messages: list[dict[str, Any]]) -> list[list[str]]:
    """For each earlier user message of a resent chat history, the papers the assistant's reply to it cited (its
    reference lines); the last user message, the question being asked, gets none."""
    turns: list[list[str]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            turns.append([])
        elif turns and message.get("role") == "assistant" and isinstance(message.get("content"), str):
            turns[-1].extend(canonical_id(source_id) for _, source_id in _REFERENCE_LINE.findall(message["content"]))
    return turns[:-1]
