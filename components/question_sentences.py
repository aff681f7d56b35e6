"""Shortens long excerpts to the sentences that share words with the question, for the model to read."""

from __future__ import annotations

import dataclasses
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.citations import content_words
from pmc_rag.components.section_chunker import split_sentences


@component
class QuestionSentences:
    """
    Keeps, of each long excerpt, the few sentences that share the most content words with the question.

    On a CPU the embedded model reads a prompt at about 130-160 tokens a second, so every sentence it need not read
    is time saved before the first word of the answer. Only what the model reads is shortened: connect this
    component's output to the prompt builder alone, and the citation and claim checks, the quotations and the
    streamed citation check keep the whole excerpts. An excerpt of at most `min_words` words is passed on whole;
    from a longer one the `max_sentences` sentences with the most words of the question (stemmed, stop words left
    out) are kept, in their original order; if none shares a word, its first sentence is.

    Usage:
    ```python
    from haystack import Document
    from pmc_rag.components.question_sentences import QuestionSentences

    shortened = QuestionSentences(min_words=60, max_sentences=3).run(
        documents=[Document(content=long_abstract_section)], question="Does erlotinib work?")["documents"]
    ```
    """

    def __init__(self, *, min_words: int = 60, max_sentences: int = 3):
        """
        :param min_words: Excerpts of at most this many words are passed on whole.
        :param max_sentences: Sentences kept from a longer excerpt.
        """
        if min_words < 0 or max_sentences < 1:
            raise ValueError("min_words must be 0 or more and max_sentences at least 1")
        self.min_words = min_words
        self.max_sentences = max_sentences

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, min_words=self.min_words, max_sentences=self.max_sentences)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionSentences:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], question: str) -> dict[str, list[Document]]:
        """
        :param documents: The excerpts the model will be shown, in order.
        :param question: The question they are to answer.
        :returns: `documents`: the same excerpts (same ids and metadata), long ones shortened.
        """
        asked = content_words(question)
        shortened = []
        for document in documents:
            text = " ".join((document.content or "").split())
            sentences = split_sentences(text)
            if len(text.split()) <= self.min_words or len(sentences) <= self.max_sentences:
                shortened.append(document)
                continue
            shared = [len(asked & content_words(sentence)) for sentence in sentences]
            best = sorted(range(len(sentences)), key=lambda i: (-shared[i], i))[:self.max_sentences]
            kept = sorted(i for i in best if shared[i] > 0) or [0]
            shortened.append(dataclasses.replace(document, content=" ".join(sentences[i] for i in kept)))
        return {"documents": shortened}
