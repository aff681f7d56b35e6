"""Says so when the cited papers speak of the question's subjects but none tests what was asked.

"Does metformin reduce cardiovascular events in type 2 diabetes?" was answered with two quoted sentences on bedtime
insulin and on insulin resistance, as if they answered it (issue 61). An answer is *related only* when no cited
paper names the question's two weightiest subjects together, in its title or in the sentences quoted from it
(by meaning: `WordMeaning`, the relevance gate's judge). Then the answer opens with a plain sentence that no paper
found tests the question, a leading yes/no goes (the findings cannot carry it), and the flag `related_only` is set.

Usage:
```python
scope = AnswerScope(meaning_model="sentence-transformers/all-MiniLM-L6-v2")
scope.warm_up()
scope.run(answer=answer, question="Does metformin reduce cardiovascular events in type 2 diabetes?")["answer"]
```
"""

from __future__ import annotations

import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.answer import Answer
from pmc_rag.components.citations import content_stems, content_words
from pmc_rag.components.claim_signals import without_verdict
from pmc_rag.components.subject_words import is_subject_word
from pmc_rag.components.word_meaning import WordMeaning, names, text_words

RELATED_ONLY = "None of the papers found tests this question directly; their closest findings are related, not an answer:"


@component
class AnswerScope:
    """
    :param meaning_model: The embedding model that weighs the question's subjects and reads the quoted sentences
        by meaning (as `RelevanceGate`'s).
    :param min_subject_weight: The least share of the question's meaning a subject must carry to count.
    :param min_word_similarity: The least similarity of two words' embeddings for one to name the other.
    :param routes: The question kinds judged (`QuestionRouter`'s route; a question with no route is judged):
        comparisons and overviews draw each subject from another paper by design.
    """

    def __init__(self, meaning_model: str = "sentence-transformers/all-MiniLM-L6-v2", min_subject_weight: float = 0.1,
                 min_word_similarity: float = 0.7, routes: list[str] | None = None):
        self.meaning_model = meaning_model
        self.min_subject_weight = min_subject_weight
        self.min_word_similarity = min_word_similarity
        self.routes = routes if routes is not None else ["single"]
        self._meaning: WordMeaning | None = None

    def warm_up(self) -> None:
        if self._meaning is None:
            self._meaning = WordMeaning.loaded(self.meaning_model, min_similarity=self.min_word_similarity)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, meaning_model=self.meaning_model, min_subject_weight=self.min_subject_weight,
                               min_word_similarity=self.min_word_similarity, routes=self.routes)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerScope:
        return default_from_dict(cls, data)

    @component.output_types(answer=Answer)
    def run(self, answer: Answer, question: str, route: str | None = None,
            documents: list[Document] | None = None) -> dict[str, Answer]:
        """
        :param answer: The answer object (`CitedAnswerBuilder`).
        :param question: The question as asked.
        :param route: The question's kind, when a router says it.
        :param documents: The excerpts the answer drew on: a cited excerpt's whole text counts for its paper.
        :returns: `answer`, opened with `RELATED_ONLY` and flagged `related_only` when no cited paper names the
            question's two weightiest subjects together; unchanged otherwise.
        """
        if answer.flags.get("not_answered") or not answer.references or (route is not None and route not in self.routes):
            return {"answer": answer}
        subjects = self.subjects(question)
        if len(subjects) < 2 or any(self._names_all(subjects, text) for text in self._paper_texts(answer, documents)):
            return {"answer": answer}
        note = ("No cited paper names " + " and ".join(repr(s) for s in subjects) +
                " together: the findings quoted are about part of the question.")
        text = f"{RELATED_ONLY} {without_verdict(answer.answer)}".strip()
        return {"answer": answer.with_note(note, "related_only").updated(answer=text)}

    def subjects(self, question: str) -> list[str]:
        """The question's two weightiest subjects (runs of subject words), each carrying at least
        `min_subject_weight` of its meaning, heaviest first."""
        if self._meaning is None:
            self.warm_up()
        assert self._meaning is not None
        weighed = [(self._meaning.weight(question, run), run) for run in _subject_runs(question)]
        return [run for weight, run in sorted(weighed, reverse=True)[:2] if weight >= self.min_subject_weight]

    def _names_all(self, subjects: list[str], text: str) -> bool:
        stems, words = content_words(text), text_words(text)
        return all(any(names(word, stems, words, self._meaning) for word in content_words_of(subject))
                   for subject in subjects)

    @staticmethod
    def _paper_texts(answer: Answer, documents: list[Document] | None = None) -> list[str]:
        """Per cited paper: its title, the sentences quoted from it and the excerpts cited."""
        cited = {c.chunk_id for c in answer.citations}
        texts: dict[str, list[str]] = {}
        for document in documents or []:
            if document.id in cited:
                texts.setdefault(str(document.meta.get("source_id", "")), []).append(document.content or "")
        for reference in answer.references:
            texts.setdefault(reference.source_id, []).extend([reference.title or "", reference.evidence or ""])
        for citation in answer.citations:  # the model's own sentence would restate the question
            texts.setdefault(citation.source_id, []).append(citation.evidence or "")
        return [" ".join(parts) for parts in texts.values()]


def _subject_runs(question: str) -> list[str]:
    """Runs of the question's subject words: content words that neither ask nor join ("associated", "affect")."""
    runs, run = [], []
    for token in re.findall(r"[\w-]+|[^\w\s]", question) + ["."]:
        if is_subject_word(token):
            run.append(token)
            continue
        if run:
            runs.append(" ".join(run))
        run = []
    return runs


def content_words_of(subject: str) -> list[str]:
    """The subject's words that carry content (three letters or more, no stop words)."""
    return [w for w in re.findall(r"[\w-]+", subject) if content_stems(w)]
