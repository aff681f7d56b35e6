"""Lets excerpts through to the model only when the question is one the indexed papers can answer."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, NamedTuple

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.citations import by_paper, canonical_id, content_stems, content_words, quoted_words
from pmc_rag.components.gate_classifier import RESOURCE as CLASSIFIER_RESOURCE
from pmc_rag.components.gate_classifier import GateClassifier
from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.components.section_kinds import is_readable_evidence
from pmc_rag.components.word_meaning import WordMeaning, names, text_words
from pmc_rag.components.follow_up_query import follow_up_query
from pmc_rag.components.part_of_speech import predicate_words
from pmc_rag.components.subject_words import FRAME_WORD, REQUEST_WORD, is_subject_word, names_phrase, phrase_around

@component
class RelevanceGate:
    """
    Passes the excerpts on (`documents`) when the best semantic match for the question reaches `min_similarity`;
    otherwise sends the closest papers to `unanswered` instead and nothing to `documents`, so the prompt is not
    built, the model is not asked, and the answer says that the indexed papers do not answer the question.

    The score is the semantic retriever's cosine similarity between the question and its best chunk: unlike fused
    or reranked scores it means the same thing for every question. Where to set the threshold is measured (docs,
    "Questions the papers do not answer"), not guessed.

    A question naming something no indexed chunk contains ("Does lecanemab slow cognitive decline?", from the BM25
    retriever's `unknown_words`) needs the higher `min_similarity_with_unknown_words`: its closest chunks match
    the rest of the question, not what it asks about. The reply names the unknown words, so a misspelling can be
    put right.

    Likewise a question whose specific words (in at most `specific_word_max_share` of the chunks, by the BM25
    retriever's `word_shares`) are missing from every excerpt let through ("Is deep brain stimulation effective for
    treatment-resistant depression?", answered by excerpts on depression that never mention stimulation) needs
    `min_similarity_with_absent_words`: the excerpts are about part of the question only.

    And a question whose rarest specific words (the `words_together` rarest) no one paper names together (in its
    excerpts let through, or its title) needs `min_similarity_with_words_apart`: "Is bruxism associated with
    osteonecrosis?" is not answered by a bruxism study and an osteonecrosis study, each close to half of it. Only
    for the question kinds in `words_apart_routes` when a router says the kind: a comparison, an overview or a
    question in several parts may draw each part from another paper (and excerpts chosen to cover a part,
    `covering`, are always exempt). With `phrases_together`, a subject named by common words ("Is hypoxia associated
    with infection control?") counts too: one paper must name the phrase with the rare words.

    With `meaning_model` (the index's embedding model), these word checks read meaning, not spelling: a passage
    names a word when it has the word or another within `min_word_similarity` of it ("children" for "kids",
    "gastric" for "stomach": `WordMeaning`), and a word that carries less than `min_word_weight` of the question's
    meaning ("brother" in "my brother has drug resistant TB, how many drugs does he need?") is not checked at all.
    With `min_meaning_carried` too, a word the excerpts do not have is named when their sentence closest to the
    question says it another way ("life expectancy was lower" for "shorten life expectancy"): the question loses
    that share of the word's meaning in its similarity to the sentence when the word is taken out
    (`WordMeaning.carried`).

    Usage:
    ```python
    gate = RelevanceGate(min_similarity=0.5)
    result = gate.run(documents=excerpts, scored=semantic_results)
    result.get("documents")   # the excerpts, or absent when nothing is relevant
    result.get("unanswered")  # the closest papers, one chunk each, when nothing is relevant
    ```
    """

    def __init__(self, *, min_similarity: float = 0.5, max_gap: float | None = None, closest_papers: int = 3,
                 min_similarity_with_unknown_words: float | None = None,
                 min_similarity_with_absent_words: float | None = None, specific_word_max_share: float = 0.01,
                 min_similarity_with_words_apart: float | None = None, words_together: int | None = 3,
                 words_apart_routes: list[str] | None = None, phrases_together: bool = False,
                 meaning_model: str | None = None, min_word_similarity: float = 0.7, min_word_weight: float = 0.0,
                 classifier: str | None = None, min_similarity_related: float | None = None,
                 related_papers: int = 2, min_meaning_carried: float | None = None,
                 predicates_checked: bool = True):
        """
        :param min_similarity: Least cosine similarity of the best semantic match for the question to be answered.
        :param min_similarity_with_unknown_words: The least similarity instead, when some of the question's words
            are in no indexed chunk (`unknown_words`); None: unknown words change nothing.
        :param max_gap: If set, a paper whose closest excerpt's similarity to the question is more than this below
            the best match's is held back too, all its excerpts (an excerpt whose similarity is unknown is kept):
            papers on other subjects that retrieval filled the list with cannot be cited then. A paper that is
            kept keeps all its excerpts, its conclusion too, which is seldom as close to the question as its aim.
        :param closest_papers: How many of the closest papers a "not answered" reply lists.
        :param min_similarity_with_absent_words: The least similarity instead, when some of the question's specific
            words are in none of the excerpts let through; None: absent words change nothing.
        :param specific_word_max_share: A word is specific when at most this share of the chunks contain it.
        :param min_similarity_with_words_apart: The least similarity instead, when no one paper names the question's
            rarest specific words together (in its excerpts let through or its title); None: words named apart
            change nothing. Above 1: never answered then, however close the excerpts.
        :param words_together: How many of the question's specific words, the rarest first, one paper must name
            together (at least two, else the rule has nothing to join); None: all of them.
        :param words_apart_routes: The question kinds (`QuestionRouter`'s `route`) that
            `min_similarity_with_words_apart` applies to; None: every question. A question with no route is judged.
        :param phrases_together: Whether the question's phrases of common words ("infection control", "general
            surgery": each word too common to be specific, the phrase is not) must be named by the same paper as
            its rarest specific words, their words in the question's order, for `min_similarity_with_words_apart`
            (the question's text comes in as `question`).
        :param meaning_model: The embedding model that judges words by meaning (a Sentence Transformers name or
            folder, run by `OnnxTextEmbedder`); None: a word counts only when spelled alike (by stem).
        :param min_word_similarity: With `meaning_model`, the least cosine similarity of two words' embeddings for
            a passage's word to name a question's.
        :param min_word_weight: With `meaning_model`, the least share of the question's meaning a word must carry
            (1 minus the similarity of the question with and without it) to be checked.
        :param classifier: A trained gate (`GateClassifier`: a file in `components/resources/` or a path) that
            decides from what the checks measure (`signals`) instead of the thresholds above; a follow-up answered
            from its topic's papers is still judged by the thresholds. None: the thresholds decide.
        :param min_similarity_related: When a question is turned away, the excerpts of the closest papers whose
            best passage is at least this close to it (cosine) go to `related`, at most `related_papers` papers:
            the answer shows their findings, labelled as related, instead of nothing. None: never.
        :param related_papers: How many papers' excerpts `related` holds at most.
        :param min_meaning_carried: With `meaning_model`, the excerpts name a word they do not contain (absent
            from them, or from every indexed chunk) when their sentence closest to the question carries at least
            this share of the word's meaning there (`WordMeaning.carried`: the drop in the question's similarity to
            that sentence when the word, with the subject words around it, is taken out, over how far the question
            itself moves). A sentence that says the word in other words carries much of it; a sentence on the rest
            of the question only, little or none. None: only words and their near synonyms name a word.
        :param predicates_checked: Whether the word checks judge the question's words that a part-of-speech tagger
            reads, in context, as a verb, an adverb or a comparative ("diabetes *runs* in your family", "getting
            *sicker*": `part_of_speech.predicate_words`), as they judge its nouns. False: only what a subject is
            called is looked for in the papers, not what the question says it does.
        """
        thresholds = (min_similarity, min_similarity_with_unknown_words, min_similarity_with_absent_words,
                      min_similarity_related)
        if any(t is not None and not -1 <= t <= 1 for t in thresholds) or closest_papers < 0 or related_papers < 1 or (
                max_gap is not None and max_gap < 0) or not 0 <= specific_word_max_share <= 1 or (
                words_together is not None and words_together < 2):
            raise ValueError("min_similarity, min_similarity_with_unknown_words, min_similarity_with_absent_words and "
                             "min_similarity_related must be between -1 and 1, specific_word_max_share between 0 and "
                             "1, max_gap and closest_papers 0 or more, related_papers 1 or more, words_together 2 or "
                             "more (or null: all)")
        self.min_similarity = min_similarity
        self.min_similarity_with_unknown_words = min_similarity_with_unknown_words
        self.min_similarity_with_absent_words = min_similarity_with_absent_words
        self.specific_word_max_share = specific_word_max_share
        self.min_similarity_with_words_apart = min_similarity_with_words_apart
        self.words_together = words_together
        self.words_apart_routes = words_apart_routes
        self.phrases_together = phrases_together
        self.max_gap = max_gap
        self.closest_papers = closest_papers
        self.meaning_model = meaning_model
        self.min_word_similarity = min_word_similarity
        self.min_word_weight = min_word_weight
        self.classifier = classifier
        self.min_similarity_related = min_similarity_related
        self.related_papers = related_papers
        self.min_meaning_carried = min_meaning_carried
        self.predicates_checked = predicates_checked
        self._meaning: WordMeaning | None = None
        self._classifier = GateClassifier(_resource(classifier)) if classifier else None

    def warm_up(self) -> None:
        if not self.predicates_checked:
            predicate_words("")  # the tagger's lexicon (60 ms), before the first question waits for it
        if self.meaning_model and self._meaning is None:
            self._meaning = WordMeaning.loaded(self.meaning_model, min_similarity=self.min_word_similarity)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, min_similarity=self.min_similarity, max_gap=self.max_gap,
                               closest_papers=self.closest_papers,
                               min_similarity_with_unknown_words=self.min_similarity_with_unknown_words,
                               min_similarity_with_absent_words=self.min_similarity_with_absent_words,
                               specific_word_max_share=self.specific_word_max_share,
                               min_similarity_with_words_apart=self.min_similarity_with_words_apart,
                               words_together=self.words_together, words_apart_routes=self.words_apart_routes,
                               phrases_together=self.phrases_together, meaning_model=self.meaning_model,
                               min_word_similarity=self.min_word_similarity, min_word_weight=self.min_word_weight,
                               classifier=self.classifier, min_similarity_related=self.min_similarity_related,
                               related_papers=self.related_papers, min_meaning_carried=self.min_meaning_carried,
                               predicates_checked=self.predicates_checked)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RelevanceGate:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], unanswered=list[Document], why_unanswered=str,
                            related=list[Document], objected_words=list[str])
    def run(self, documents: list[Document], scored: list[Document] | None = None,
            query_embedding: list[float] | None = None, unknown_words: list[str] | None = None,
            topic_question: str | None = None, word_shares: dict[str, float] | None = None,
            covering: list[str] | None = None, route: str | None = None,
            question: str | None = None, follow_up_to: str | None = None) -> dict[str, Any]:
        """
        :param documents: The excerpts chosen for the prompt.
        :param scored: The semantic retriever's results, with their similarity scores.
        :param query_embedding: The question's embedding: for `max_gap`, the similarity of excerpts the semantic
            retriever did not return (found by BM25) is computed from their embeddings.
        :param unknown_words: The question's words that no indexed chunk contains (`PgvectorBM25Retriever`).
        :param topic_question: In a conversation, for a follow-up answered from its topic's papers: the topic
            question, already answered. Its words do not count as unknown again (the follow-up carries them along),
            and `max_gap` holds nothing back: every excerpt comes from the papers under discussion, and the one
            with the detail asked for ("How many patients took part?") is seldom the closest to the question.
        :param word_shares: The question's words with the share of chunks containing each (`PgvectorBM25Retriever`).
        :param covering: Ids of excerpts chosen to cover one subject of a comparison or one part of a question
            (`ExcerptBalance`): `max_gap` does not hold those back, since they are close to their part, not the whole.
        :param route: The question's kind, when a router says it (for `words_apart_routes`).
        :param question: The question as asked (for `phrases_together`; for a follow-up, only its words are judged,
            not the words its search added).
        :param follow_up_to: In a conversation, the question this one follows up (set by the server; the topic
            question when `topic_question` is given): the words judged are the follow-up's and its topic's, not the
            words its search added for what it asks.
        :returns: `documents` (the excerpts) if the question is answerable, else `unanswered`: the closest papers,
            best first, each with its best chunk, the similarity in `meta["relevance"]`, and `why_unanswered`, in
            words; with `min_similarity_related`, also `related`: the closest papers' excerpts, when close enough;
            and `objected_words`: the question's words that reason names (none when it names none).
        """
        scored = [d for d in scored or [] if d.score is not None]
        best = max((d.score for d in scored), default=None)
        follow_up_to = follow_up_to or topic_question
        if question and follow_up_to:
            # A follow-up's search carries the words papers use for what it asks ("enrolled" for "How many women
            # took part?", `follow_up_asks.searched_for`): the gate judges the words the reader wrote. Judged
            # with them, "enrolled" had to be in the topic paper, and the count was turned away.
            question = follow_up_query(question, follow_up_to)  # the reader's words and the topic's
            written = content_words(question)
            word_shares = {w: s for w, s in (word_shares or {}).items() if content_words(w) <= written}
            unknown_words = [w for w in unknown_words or [] if content_words(w) <= written]
        asked = {w.lower() for w in re.findall(r"[\w-]+", topic_question or "")}
        if self._meaning is not None and question:
            # Words that carry little of the question's meaning are not checked: "asked" means "left aside".
            asked |= self._light_words(question, word_shares or {}, unknown_words or [])
        if not self.predicates_checked and question:
            # A lay question says what happens in everyday verbs the papers do not use ("runs in the family"):
            # what the papers must name is what the subjects are called.
            asked |= predicate_words(question)
        unknown = [w for w in unknown_words or [] if w.strip() and w.lower() not in asked] \
            if self.min_similarity_with_unknown_words is not None else []
        if unknown and self._meaning is not None:
            # A word no chunk has may still be named by another word ("miscarrying"): found in the excerpts.
            words = text_words(" ".join(d.content or "" for d in documents))
            unknown = self._carried(question, [w for w in unknown if not names(w, set(), words, self._meaning)],
                                    documents)
        needed = max(self.min_similarity, self.min_similarity_with_unknown_words) if unknown else self.min_similarity
        absent: list[str] = []
        apart: list[str] = []
        if self._classifier is not None and not topic_question and documents and best is not None:
            measured = self.measure(documents, scored, best, query_embedding, unknown, word_shares or {}, asked,
                                    covering or [], route, question)
            if self._classifier.answerable(measured.signals):
                return {"documents": measured.kept}
            absent, apart = measured.absent, measured.apart  # for the reason given
        elif documents and best is not None and best >= needed:
            kept = documents
            if self.max_gap is not None and not topic_question:
                kept = self._close_papers(documents, scored, best, query_embedding, covering or [])
            if self.min_similarity_with_absent_words is not None and best < self.min_similarity_with_absent_words:
                absent = self._absent_words(word_shares or {}, kept, asked, question)
            # A follow-up's excerpts all come from the papers under discussion: its words ("How many women took
            # part?") are a detail of those papers, not a second subject another paper names.
            if not absent and not covering and not topic_question and self._judges_words_apart(route, best):
                apart = self._named_apart(word_shares or {}, kept, asked, question)
            if not absent and not apart:
                return {"documents": kept}
        closest, seen = [], set()
        for document in sorted(scored, key=lambda d: -d.score):
            source_id = canonical_id(str(document.meta.get("source_id", "")))
            if source_id not in seen and len(closest) < self.closest_papers:
                seen.add(source_id)
                closest.append(Document(id=document.id, content=document.content,
                                        meta={**document.meta, "relevance": round(document.score, 3)}))
        objected: list[str] = []
        if unknown and best is not None and best >= self.min_similarity:
            why, objected = (f"No indexed paper contains {quoted_words(unknown)}, and no passage is close enough to "
                             "the rest of the question to answer it (check the spelling, or ask with another name for "
                             "it)."), unknown
        elif absent:
            why, objected = (f"None of the closest passages mentions {quoted_words(absent)}: they match only part of "
                             "the question, and none is close enough to the whole of it to answer it."), absent
        elif apart:
            why, objected = (f"No paper found names {' and '.join(repr(w) for w in apart)} together: the closest "
                             "papers are each about part of the question."), apart
        else:
            why = "No indexed passage is close enough to the question to answer it."
        turned_away = {"unanswered": closest, "why_unanswered": why, "objected_words": list(objected)}
        related = self._related(documents, closest) if self.min_similarity_related is not None else []
        if related:
            turned_away["related"] = related
        return turned_away

    def _related(self, documents: list[Document], closest: list[Document]) -> list[Document]:
        """The excerpts of the closest papers (at most `related_papers`) whose best passage is within
        `min_similarity_related` of the question: papers that speak of its subjects, though none was judged to
        answer it. Their findings are shown as related, so that a reader whose words differ from the papers' is
        not left with nothing. (Closest by sentence instead picked a paper on another subject for a tuning question:
        one sentence can match a question's odd word.)"""
        papers = by_paper(documents)
        nearest = [canonical_id(str(d.meta.get("source_id", ""))) for d in closest
                   if (d.meta.get("relevance") or 0.0) >= (self.min_similarity_related or 0.0)]
        return [d for source_id in [s for s in nearest if s in papers][:self.related_papers] for d in papers[source_id]]

    def measure(self, documents: list[Document], scored: list[Document], best: float,
                query_embedding: list[float] | None, unknown: list[str], word_shares: dict[str, float],
                asked: set[str], covering: list[str], route: str | None, question: str | None) -> Measured:
        """What the checks measure of a question and its excerpts, each whatever the thresholds (`GateClassifier`
        weighs them): the best similarity, unknown words, the specific words the excerpts kept leave out (the
        rarest's rarity, the most meaning one carries) and the rare words no one paper names together."""
        kept = documents
        if self.max_gap is not None:
            kept = self._close_papers(documents, scored, best, query_embedding, covering)
        absent = self._absent_words(word_shares, kept, asked, question)
        exempt = bool(covering) or (route is not None and self.words_apart_routes is not None
                                    and route not in self.words_apart_routes)
        apart = [] if exempt else self._named_apart(word_shares, kept, asked, question)
        weights = [self._meaning.weight(question, phrase_around(question, w)) if self._meaning and question else 1.0
                   for w in absent]
        signals = {"best": best, "unknown": float(bool(unknown)), "absent": float(bool(absent)),
                   "absent_weight": max(weights, default=0.0),
                   "absent_rarity": max((-math.log10(max(word_shares.get(w, 0.0), 1e-6)) for w in absent), default=0.0),
                   "apart": float(bool(apart)), "specific": float(min(len(self._specific(word_shares, asked)), 5)),
                   "sentence": self._closest_sentence(question, kept) if question else best}
        return Measured(signals, kept, absent, apart)

    def _closest_sentence(self, question: str, excerpts: list[Document]) -> float:
        """The cosine similarity of the question with the closest sentence of the excerpts (of their first
        `closest_papers` papers): a passage close to a question as a whole may hold no sentence that is."""
        if self._meaning is None:
            return 0.0
        papers = list(by_paper(excerpts).values())[:max(self.closest_papers, 1)]
        sentences = [s for chunks in papers for chunk in chunks if is_readable_evidence(chunk)
                     for s in split_sentences(" ".join((chunk.content or "").split())) if len(s.split()) >= 4]
        if not sentences:
            return 0.0
        question_vector = self._meaning.vectors([question])[0]
        return float((self._meaning.vectors(sentences) @ question_vector).max())

    def _close_papers(self, documents: list[Document], scored: list[Document], best: float,
                      query_embedding: list[float] | None, covering: list[str]) -> list[Document]:
        """The excerpts of the papers whose closest excerpt is within `max_gap` of the best match, all of them.

        The gap judges papers, not excerpts: a paper's aim restates the question and is nearly always its closest
        excerpt, while the conclusion that answers it is further away (PMID 23453079: "To determine whether
        prostate morphology ... has any effect" was kept and the conclusion held back, so only the aim could be
        quoted)."""
        known = {d.id: d.score for d in scored}

        def close(document: Document) -> bool:
            similarity = known.get(document.id, _cosine(query_embedding, document.embedding))
            return similarity is None or similarity >= best - self.max_gap

        kept = {d.id for chunks in by_paper(documents).values() if any(map(close, chunks)) for d in chunks}
        return [d for d in documents if d.id in covering or d.id in kept] or documents

    def _judges_words_apart(self, route: str | None, best: float) -> bool:
        """Whether a question of this kind, this close to its best match, must have its rare words in one paper."""
        return self.min_similarity_with_words_apart is not None and best < self.min_similarity_with_words_apart and (
            route is None or self.words_apart_routes is None or route in self.words_apart_routes)

    def _specific(self, word_shares: dict[str, float], asked: set[str]) -> list[str]:
        """The question's specific words: in at most `specific_word_max_share` of the chunks, not a follow-up's
        topic question's, and not a word of the request itself."""
        return [w for w, share in word_shares.items() if share <= self.specific_word_max_share
                and w.lower() not in asked and not REQUEST_WORD.match(w) and not FRAME_WORD.match(w)]

    def _named_apart(self, word_shares: dict[str, float], excerpts: list[Document], asked: set[str],
                     question: str | None) -> list[str]:
        """The question's `words_together` rarest specific words (and, with `phrases_together`, its phrases of
        common words) when no one paper's excerpts and title name them all, else []."""
        specific = sorted((w for w in self._specific(word_shares, asked) if content_words(w)), key=word_shares.get)
        specific = specific[:self.words_together] if self.words_together else specific
        # Phrases count only where the rare words alone have nothing to join: a question's own phrasing of a
        # subject is often not its paper's ("health care interventions"), while rare words are.
        phrases = self._common_phrases(question, word_shares, asked) \
            if self.phrases_together and question and len(specific) < 2 else []
        if self._meaning is not None and question:
            phrases = [p for p in phrases if self._meaning.weight(question, p) >= self.min_word_weight]
        if len(specific) + len(phrases) < 2:
            return []
        phrase_stems = [content_stems(p) for p in phrases]
        for chunks in by_paper(excerpts).values():
            parts = [str(chunks[0].meta.get("title") or "")] + [d.content or "" for d in chunks]
            stems = content_stems(" ".join(parts))
            words = text_words(" ".join(parts)) if self._meaning is not None else set()
            unnamed = [w for w in specific if not names(w, set(stems), words, self._meaning)]
            if not self._carried(question, unnamed, chunks) and all(
                    names_phrase(stems, phrase) for phrase in phrase_stems):
                return []
        return specific + phrases

    def _common_phrases(self, question: str, word_shares: dict[str, float], asked: set[str]) -> list[str]:
        """Runs of two or more words in the question, each too common to be specific, that together name one
        subject ("infection control"); stop words, punctuation, request words and words joining two subjects
        ("associated", "affect") end a run."""
        shares = {w.lower(): share for w, share in word_shares.items()}
        phrases, run = [], []
        for token in re.findall(r"[^\W_]+(?:-[^\W_]+)*|[^\w\s]", question) + ["."]:
            parts = [p for p in token.lower().split("-") if p]
            # a word the search did not count (a rewritten or expanded search) is not known to be common
            common = bool(content_words(token)) and all(
                shares.get(p, 0.0) > self.specific_word_max_share for p in parts if content_words(p))
            if common and token.lower() not in asked and not REQUEST_WORD.match(token) \
                    and not FRAME_WORD.match(token):
                run.append(token)
                continue
            if len(run) >= 2 and len(content_stems(" ".join(run))) >= 2:
                phrases.append(" ".join(run))
            run = []
        return phrases

    def _absent_words(self, word_shares: dict[str, float], excerpts: list[Document], asked: set[str],
                      question: str | None = None) -> list[str]:
        """The question's specific words (a follow-up's topic question's aside) that no excerpt contains, stemmed,
        nor carries the meaning of (`min_meaning_carried`)."""
        specific = self._specific(word_shares, asked)
        if not specific:
            return []
        text = " ".join(d.content or "" for d in excerpts)
        stems, words = content_words(text), text_words(text) if self._meaning is not None else set()
        return self._carried(question, [w for w in specific if not names(w, stems, words, self._meaning)], excerpts)

    def _carried(self, question: str | None, words: list[str], excerpts: list[Document]) -> list[str]:
        """The words whose meaning in the question the excerpts' closest sentence does not carry (all of them
        without `min_meaning_carried`)."""
        if not words or self._meaning is None or not question or self.min_meaning_carried is None:
            return words
        sentences = [s for chunk in excerpts if is_readable_evidence(chunk)
                     for s in split_sentences(" ".join((chunk.content or "").split())) if len(s.split()) >= 4]
        return [w for w in words if self._meaning.carried(question, phrase_around(question, w), sentences)
                < self.min_meaning_carried]

    def _light_words(self, question: str, word_shares: dict[str, float], unknown_words: list[str]) -> set[str]:
        """The question's words that the checks would judge (unknown or specific) and that carry less than
        `min_word_weight` of its meaning, lower case."""
        judged = {w for w in unknown_words if w.strip()} | {
            w for w, share in word_shares.items() if share <= self.specific_word_max_share}
        assert self._meaning is not None
        return {w.lower() for w in judged
                if self._meaning.weight(question, phrase_around(question, w)) < self.min_word_weight}


class Measured(NamedTuple):
    """`RelevanceGate.measure`: the signals, the excerpts kept, the absent words and the words named apart."""

    signals: dict[str, float]
    kept: list[Document]
    absent: list[str]
    apart: list[str]


def _resource(name: str) -> Path:
    """A classifier file: a path, or a name in `components/resources/`."""
    path = Path(name)
    return path if path.is_absolute() or path.exists() else CLASSIFIER_RESOURCE.parent / name


def _cosine(a: list[float] | None, b: list[float] | None) -> float | None:
    if not a or not b or len(a) != len(b):
        return None
    dot = sum(x * y for x, y in zip(a, b))
    norm = (sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5)
    return dot / norm if norm else None
