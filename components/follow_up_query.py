"""FollowUpQuery: the text a follow-up question is searched with, its own words and then the question it follows up.

In a conversation (`pmc_rag.answering.conversation`) a follow-up such as "What about its side effects?" reaches a
pipeline as two inputs: `question` (the reader's words) and `follow_up_to` (the question it follows up, which says
what "it" is). The components that judge the reader's words (the router, the relevance gate, the answer builder)
take both and never read them back out of a joined text; what is searched, embedded and shown to the model carries
the topic along, written as `"What about its side effects? (follow-up to: Is erlotinib effective?)"`.

Usage:
```python
from pmc_rag.components.follow_up_query import FollowUpQuery, follow_up_query

FollowUpQuery().run(question="What about its side effects?", follow_up_to="Is erlotinib effective?")
# {"query": "What about its side effects? (follow-up to: Is erlotinib effective?)"}
follow_up_query("Is erlotinib effective?", None)   # "Is erlotinib effective?": any other question as it is
```
"""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict

FOLLOW_UP_LABEL = " (follow-up to: "


def follow_up_query(question: str, follow_up_to: str | None) -> str:
    """The text a follow-up is searched and answered with: the question, then its topic (the question alone when
    it follows up nothing)."""
    return f"{question}{FOLLOW_UP_LABEL}{follow_up_to})" if follow_up_to else question


@component
class FollowUpQuery:
    """The search text of a question: a follow-up's words with the question it follows up, any other as it is.

    Pipelines without a router (rag_single.yml and its variants) search with it; the router writes the same text
    into its `search_question` (with the words papers use for what a follow-up asks).
    """

    @component.output_types(query=str)
    def run(self, question: str, follow_up_to: str | None = None) -> dict[str, Any]:
        """
        :param question: The question as asked.
        :param follow_up_to: In a conversation, the question this one follows up (set by the server); None for a
            question that stands alone.
        :returns: `query`: the text to search, embed and rank by.
        """
        return {"query": follow_up_query(question, follow_up_to)}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FollowUpQuery:
        return default_from_dict(cls, data)
