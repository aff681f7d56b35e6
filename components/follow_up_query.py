"""How a follow-up question travels through a pipeline: the question, then the topic it follows up.

A conversation (`pmc_rag.answering.conversation`) sends a follow-up such as "What about its side effects?" to
retrieval and to the model as `"What about its side effects? (follow-up to: Is erlotinib effective?)"`, so that
the search carries the topic along. The components that must judge the reader's own words (the router, the
relevance gate, the answer builder, the follow-up asks) read the two parts back with these functions; they live
among the components so that no component imports the serving layer.

Usage:
```python
from pmc_rag.components.follow_up_query import follow_up_query, follow_up_text, follow_up_topic, is_follow_up

query = follow_up_query("What about its side effects?", "Is erlotinib effective?")
is_follow_up(query)      # True
follow_up_text(query)    # "What about its side effects?"
follow_up_topic(query)   # "Is erlotinib effective?"
```
"""

from __future__ import annotations

FOLLOW_UP_LABEL = " (follow-up to: "


def follow_up_query(question: str, topic: str) -> str:
    """The query a follow-up is searched and answered with: the question, then its topic."""
    return f"{question}{FOLLOW_UP_LABEL}{topic})"


def is_follow_up(query: str) -> bool:
    """Whether a query is a follow-up (`follow_up_query` carried a topic along)."""
    return FOLLOW_UP_LABEL in query and query.endswith(")")


def follow_up_text(query: str) -> str:
    """The follow-up itself, without the topic appended (any other query as it is)."""
    return query.split(FOLLOW_UP_LABEL, 1)[0]


def follow_up_topic(query: str) -> str | None:
    """The topic a follow-up query carries, None for any other query."""
    return query.split(FOLLOW_UP_LABEL, 1)[1][:-1] if is_follow_up(query) else None
