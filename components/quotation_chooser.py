"""Which sentences of the excerpts to quote when the model's answer cannot stand: findings, chosen by the question.

`CitedAnswerBuilder` quotes instead of the model (no supported claim, a comparison's missing side, an overview's
further papers, a two-step question's looked-up name); this component is that choice, and runs alone too.

Usage:
```python
from haystack import Document
from pmc_rag.components.quotation_chooser import QuotationChooser

chooser = QuotationChooser(extractive_sentences=3)
excerpts = [Document(content="Erlotinib prolonged progression-free survival in EGFR-mutant lung cancer.",
                     meta={"source_id": "PMC3297584", "section": "Conclusions"})]
claims = chooser.run(question="Does erlotinib work in EGFR-mutant lung cancer?", documents=excerpts)["claims"]
print(claims[0]["text"], claims[0]["cited"])  # the finding, cited to PMC3297584
```
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.citations import by_paper, canonical_id, content_words, quoted_words
from pmc_rag.components.claim import Claim
from pmc_rag.components.claim_signals import finding_rank, states_an_aim
from pmc_rag.components.defined_abbreviations import defined_abbreviations, spelled_out
from pmc_rag.components.follow_up_asks import Ask, asked_for, follow_up_words
from pmc_rag.components.follow_up_query import follow_up_query
from pmc_rag.components.quotation_candidate import QuotationCandidate
from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.components.section_kinds import is_readable_evidence
from pmc_rag.components.word_meaning import WordMeaning


@component
class QuotationChooser:
    """
    From each of the best papers among the excerpts, the sentence that best answers the question, as claims
    (`{"text", "cited", "attached", "support"}`) that cite it: a finding (a conclusion or result, never an aim, a
    caption, a method or background) sharing the question's words, a conclusion naming them first, its `specific`
    words before the rest. A further paper is quoted only when its sentence shares as many of the question's words
    as the first paper's.
    """

    def __init__(self, *, extractive_sentences: int = 3, source_id_field: str = "source_id",
                 meaning_model: str | None = None, min_conclusion_similarity: float = 0.4):
        """
        :param extractive_sentences: How many papers to quote at most.
        :param source_id_field: The metadata field holding a document's citation id.
        :param meaning_model: An embedding model (a Sentence Transformers name or folder, run by
            `OnnxTextEmbedder`): a paper's conclusion speaks of the question's subject when it shares a word with
            it or, with this model, when it is within `min_conclusion_similarity` of it (cosine): "RVFV circulates
            in small ruminants" for a question on Rift Valley fever in goats. None: by shared words only.
        :param min_conclusion_similarity: With `meaning_model`, the least cosine similarity of the question and a
            conclusion sentence for the conclusion to speak of the question's subject.
        """
        if extractive_sentences < 1:
            raise ValueError("extractive_sentences must be at least 1")
        self.extractive_sentences = extractive_sentences
        self.source_id_field = source_id_field
        self.meaning_model = meaning_model
        self.min_conclusion_similarity = min_conclusion_similarity
        self._meaning: WordMeaning | None = None

    def warm_up(self) -> None:
        if self.meaning_model and self._meaning is None:
            self._meaning = WordMeaning.loaded(self.meaning_model)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, extractive_sentences=self.extractive_sentences,
                               source_id_field=self.source_id_field, meaning_model=self.meaning_model,
                               min_conclusion_similarity=self.min_conclusion_similarity)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuotationChooser:
        return default_from_dict(cls, data)

    @component.output_types(claims=list[Claim])
    def run(self, question: str, documents: list[Document], topic_question: str | None = None,
            specific_words: list[str] | None = None) -> dict[str, Any]:
        """
        :param question: The question; for a follow-up (`topic_question`), its own words.
        :param documents: The excerpts, best first.
        :param topic_question: A follow-up's topic question: what the follow-up asks for is looked for first.
        :param specific_words: The question's rare words (stems): a finding naming one is chosen first.
        :returns: `claims`, one per quoted paper, best first.
        """
        specific = set().union(*map(content_words, specific_words)) if specific_words else None
        return {"claims": self.extract(question, documents, topic_question, specific=specific)}

    _MIN_QUOTED_WORDS = 6

    def extract(self, question: str, documents: list[Document], topic_question: str | None = None,
                 looked_up: list[str] | None = None, specific: set[str] | None = None,
                 named_paper: str | None = None) -> list[Claim]:
        """From each of the best papers, the sentence that best answers the question: a finding (a conclusion or
        result, never an aim, a caption, a method or background) that shares the question's words, its `specific`
        ones (stems) first. A follow-up's `question` is its own words; its `topic_question`'s words count too. A
        question asking a `named_paper` for a kind of thing (`asked_for`: "How many patients were in the FIELT
        trial?" wants a count) is read as a follow-up about it, though nothing of it has been read yet; a finding
        asked of it is chosen as any finding is."""
        asked = follow_up_query(question, topic_question)
        question_words = content_words(asked) or {""}
        # A follow-up's own words ("side effects") come first: the topic's words, carried along in the query,
        # are in every sentence of the papers under discussion, and chose a table caption for "What about its
        # side effects?". So do the names a two-step question looked up: "erlotinib" answers "Which drug did the
        # FIELT trial test" though the question does not say it.
        ask = asked_for(question) if topic_question or named_paper else None
        about = topic_question or (named_paper if ask else None)
        own_words = follow_up_words(question, about) if about else content_words(" ".join(looked_up or []))
        follow_up = {}
        if about:
            # What the follow-up asks for (a count, a method, side effects) is looked for in the paper's words for
            # it, and the sentence that answered the topic question, which the reader has read, comes last. Its
            # words the topic shares ("How was dynamic stability measured?") say what it asks about.
            own_words = (own_words - ask.misleading) | ask.words if ask else own_words
            follow_up = {"ask": ask, "asked_words": content_words(question) -
                         (ask.misleading if ask else set()),
                         "seen": {c["text"] for c in self.quotations(content_words(topic_question), set(), documents,
                                                                      True)} if topic_question else set()}
        claims = self.quotations(question_words, own_words, documents, findings_only=True, specific=specific,
                                  question=asked, **follow_up)
        # no paper has a finding among its excerpts: the best sentences are quoted all the same, so that the
        # reader sees what was found (the note says these are passages, not an answer)
        claims = claims or self.quotations(question_words, own_words, documents, findings_only=False,
                                            specific=specific, question=asked, **follow_up)
        naming = self.naming_sentence(own_words, question_words, documents) if looked_up else None
        if naming is None:
            return claims
        return [naming] + [c for c in claims if set(c["cited"]) != set(naming["cited"])]

    def first_paper_conclusion(self, question: str, documents: list[Document]) -> Claim | None:
        """The quotation `extract` would give for the first paper of `documents`, when it is one of that paper's
        conclusion sentences (from a conclusions section, or a finding ending an abstract without headings); None
        otherwise. What `QuotationFirst` answers with instead of asking the model."""
        if not documents:
            return None
        claims = self.quotations(content_words(question) or {""}, set(), documents, findings_only=True,
                                 question=question)
        first = canonical_id(str(documents[0].meta.get(self.source_id_field)))
        if not claims or claims[0]["cited"] != [first]:
            return None
        own = [d for d in documents if canonical_id(str(d.meta.get(self.source_id_field))) == first]
        # only the chosen sentence is judged again, where it stands (the same words may stand in two sections)
        for sentence, chunk in self.quotable(own):
            if sentence == claims[0]["text"]:
                candidate = QuotationCandidate.of(sentence, chunk.meta.get("section"), None)
                if candidate.conclusion and candidate.rank > 0:
                    return claims[0]
        return None

    def naming_sentence(self, names: set[str], question_words: set[str], documents: list[Document]
                         ) -> Claim | None:
        """The first paper's sentence that names what a two-step question looked up, a method included: its first
        part asks what the paper tested or used ("Which drug did the FIELT trial test"), and "a phase II study
        with erlotinib" says it where no finding does. Never an aim or a caption; None if no sentence names it."""
        first = documents[0].meta.get(self.source_id_field)
        best, best_key = None, None
        for sentence, chunk in self.quotable(d for d in documents if d.meta.get(self.source_id_field) == first):
            stems = content_words(sentence)
            if not names & stems or states_an_aim(sentence):
                continue
            key = (len(names & stems), len(question_words & stems), finding_rank(sentence, chunk.meta.get("section")))
            if best_key is None or key > best_key:
                best, best_key = sentence, key
        if best is None:
            return None
        return {"text": best, "cited": [canonical_id(str(first))], "attached": [], "support": 1.0}

    def comparison(self, parts: list[str], subjects: list[str], documents: list[Document],
                   question: str | None = None) -> tuple[list[Claim], str]:
        """A comparison answered by quotations: a finding for each compared subject (`extract_per_part`), and for
        a subject none of them names, one more (`with_each_subject`). Empty when no excerpt speaks of a subject.

        With the `question`: when the best-matching paper's own conclusion speaks to it (`first_paper_conclusion`,
        as for a single finding), that conclusion is quoted first, instead of its paper's sentences on each
        subject, and other papers' findings follow. Most comparisons people ask are made within one study ("Can
        a neural network estimate kidney function better than the usual equations?"): the study's conclusion says
        how the two compare, where a sentence naming one side was a definition. Returns the quotations and
        how they open: "conclusion" with that conclusion, else ""."""
        lead = self.first_paper_conclusion(question, documents) if question else None
        quoted = self.extract_per_part(parts, subjects, documents)
        if lead is not None and quoted and not self._closest(question, lead, quoted):
            lead = None
        if lead is None:
            return (self.with_each_subject(quoted, quoted, parts, subjects, documents)[0] if quoted else []), ""
        others = [d for d in documents if canonical_id(str(d.meta.get(self.source_id_field))) not in lead["cited"]]
        quoted = [lead] + [c for c in quoted if not set(c["cited"]) & set(lead["cited"])]
        return self.with_each_subject(quoted, quoted, parts, subjects, others)[0], "conclusion"

    def each_paper(self, question: str, documents: list[Document], papers: list[str]) -> list[Claim]:
        """For each of `papers` (ids, in order), what it found: its own conclusion where one speaks to the
        question (`first_paper_conclusion`), else its best finding (`quotations`). A paper with neither among
        `documents` gives nothing."""
        # The question without its asking ("compare", "differ", "find"): "compare" chose "the results compare
        # favorably with ..." over the paper's own answer. Its names stay: they say what each paper is about.
        topic = " ".join(w for w in re.findall(r"[\w-]+", question)
                         if content_words(w) and not content_words(w) <= _OVERVIEW_REQUEST_WORDS)
        claims = []
        for paper in papers:
            own = [d for d in documents if canonical_id(str(d.meta.get(self.source_id_field))) == canonical_id(paper)]
            found = (self.first_paper_conclusion(topic, own) if own else None) or next(iter(self.quotations(
                content_words(topic) or {""}, set(), own, findings_only=True, question=topic, min_rank=2)), None)
            claims += [found] if found else []
        return claims

    def with_each_subject(self, claims: list[Claim], supported: list[Claim], parts: list[str],
                           subjects: list[str], documents: list[Document]) -> tuple[list[Claim], list[str]]:
        """A comparison whose supported claims name only some of its subjects: a quotation for each of the others
        (from an excerpt naming it) is added, so both sides are shown when the excerpts hold evidence for both.
        A comparison whose claims all cite one paper gets a finding on one of its subjects from another paper, when
        an excerpt holds one. Returns the claims and the subjects quoted for."""
        said = content_words(" ".join(c["text"] for c in supported))
        quoted_for = []
        for part, subject in zip(parts, subjects):
            if not content_words(subject) or content_words(subject) <= said:
                continue
            added = [c for c in self.extract_per_part([part], [subject], documents, avoid=cited_papers(claims))
                     if c["text"] not in {x["text"] for x in claims}]
            if added:
                claims = claims + added
                quoted_for.append(subject)
        if len(cited_papers(claims)) == 1:
            claims, subject = self.from_another_paper(claims, list(zip(subjects, parts)), documents)
            quoted_for += [subject] if subject else []
        return claims, quoted_for

    def from_another_paper(self, claims: list[Claim], named: list[tuple[str, str]],
                            documents: list[Document]) -> tuple[list[Claim], str | None]:
        """The claims with one more: the first of the `named` (name, the words around it) on which a paper not
        cited yet reports a finding, quoted. Returns the claims and that name (None: no paper had one)."""
        for name, words in named:
            other = self.quote_naming(content_words(name), content_words(words), documents,
                                       avoid=cited_papers(claims), taken={c["text"] for c in claims},
                                       other_papers_only=True)
            if other is not None:
                return claims + [other], name
        return claims, None

    def findings_on_topic(self, topic: set[str], documents: list[Document], *, avoid: set[str], taken: set[str]
                           ) -> list[Claim]:
        """For each paper of the excerpts not in `avoid`, in their order: its best finding that names the topic
        (every topic word in the sentence or its paper's title, one at least in the sentence). Never an aim, a
        method or a caption; a paper without such a finding gives nothing."""
        found = []
        if not topic:
            return found
        for source_id, chunks in by_paper(documents, self.source_id_field).items():
            paper = canonical_id(source_id)
            if paper in avoid:
                continue
            title_words = content_words(str(chunks[0].meta.get("title") or ""))
            best, best_key = None, None
            for sentence, chunk in self.quotable(chunks):
                stems = content_words(sentence)
                rank = finding_rank(sentence, chunk.meta.get("section"))
                if rank == 0 or sentence in taken or not topic & stems or not topic <= stems | title_words:
                    continue
                key = (len(topic & stems), rank)
                if best_key is None or key > best_key:
                    best, best_key = sentence, key
            if best is not None:
                found.append({"text": best, "cited": [paper], "attached": [], "support": 1.0})
        return found

    def overview_findings(self, question: str, claims: list[Claim], documents: list[Document]
                          ) -> tuple[list[Claim], str]:
        """An overview drawn from fewer papers than `extractive_sentences`: the other papers' findings on its topic
        (`findings_on_topic`), to add, and the question's words that name the topic."""
        topic = content_words(question) - _OVERVIEW_REQUEST_WORDS
        more = self.findings_on_topic(topic, documents, avoid=cited_papers(claims), taken={c["text"] for c in claims})
        more = more[: max(0, self.extractive_sentences - len(cited_papers(claims)))]
        named = [w for w in re.findall(r"[A-Za-z][\w-]*", question) if content_words(w) and content_words(w) <= topic]
        return more, " ".join(named)

    def extract_per_part(self, parts: list[str], subjects: list[str], documents: list[Document],
                          avoid: set[str] | None = None) -> list[Claim]:
        """One quoted finding per compared subject or part of the question, in their order, none twice: for a
        subject, a sentence that names it (or one from a paper whose title does), from a paper not quoted yet when
        one has such a finding; for a part, from the excerpts sharing most of its words first. (The whole
        question's words would choose one side of a comparison only.)"""
        claims: list[Claim] = []
        for index, part in enumerate(parts):
            words = content_words(subjects[index]) if index < len(subjects) else set()
            taken = {q["text"] for q in claims}
            quoted = self.quote_naming(words, content_words(part), documents, avoid=(avoid or set())
                                        | cited_papers(claims), taken=taken) if words else None
            if quoted is None:
                if words:
                    pool = [d for d in documents
                            if words <= content_words(f"{d.meta.get('title') or ''} {d.content or ''}")]
                else:
                    pool = sorted(documents, key=lambda d: -len(content_words(part) & content_words(d.content or "")))
                # Findings only: an aim, a method or a caption quoted for one side would read as evidence it is not.
                found = self.quotations(content_words(part) or {""}, set(), pool, findings_only=True)
                quoted = next((c for c in found if c["text"] not in taken), None)
            if quoted is not None:
                claims.append(quoted)
        return claims

    def quote_naming(self, words: set[str], part_words: set[str], documents: list[Document], *, avoid: set[str],
                      taken: set[str], other_papers_only: bool = False) -> Claim | None:
        """The sentence of the excerpts that best reports a finding about a subject: from a paper that names the
        subject; a finding before any other sentence, then one on the part's topic (its words besides the
        subject's, in the sentence or its paper's title), then from a paper not in `avoid`, then naming the subject
        in the sentence itself (or its paper's title), then sharing most of the part's words. Never an aim, a
        method or a caption."""
        best, best_key = None, None
        context = part_words - words
        for source_id, chunks in by_paper(documents, self.source_id_field).items():
            paper = canonical_id(source_id)
            if other_papers_only and paper in avoid:
                continue
            # How closely the sentence is tied to the subject: it names it (3), its paper's title does (2), or
            # another of the paper's excerpts does ("adult patients with asthma" in its methods; 1).
            title_words = content_words(str(chunks[0].meta.get("title") or ""))
            title_names = words <= title_words
            paper_names = any(words <= content_words(chunk.content or "") for chunk in chunks)
            if not (title_names or paper_names):
                continue
            for sentence, chunk in self.quotable(chunks):
                if sentence in taken:
                    continue
                stems = content_words(sentence)
                rank = finding_rank(sentence, chunk.meta.get("section"))
                if rank == 0:
                    continue
                tie = 3 if words <= stems else 2 if title_names else 1
                # on the comparison's topic ("asthma" for "adults"), with its paper's title
                on_topic = not context or bool(context & (stems | title_words))
                key = (rank, on_topic, paper not in avoid, tie, len(part_words & stems))
                if best_key is None or key > best_key:
                    best, best_key = (sentence, paper), key
        if best is None:
            return None
        return {"text": best[0], "cited": [best[1]], "attached": [], "support": 1.0}

    def quotable(self, chunks: Iterable[Document]) -> Iterator[tuple[str, Document]]:
        """Each sentence long enough to quote (`_MIN_QUOTED_WORDS`), with its chunk, from the chunks of running
        text: a caption or back matter is never quoted."""
        for chunk in filter(is_readable_evidence, chunks):
            for sentence in split_sentences(" ".join((chunk.content or "").split())):
                if len(sentence.split()) >= self._MIN_QUOTED_WORDS:
                    yield sentence, chunk

    def quotations(self, question_words: set[str], own_words: set[str], documents: list[Document],
                    findings_only: bool, ask: Ask | None = None, asked_words: set[str] | None = None,
                    seen: set[str] | None = None, specific: set[str] | None = None,
                    question: str | None = None, min_rank: int = 1) -> list[Claim]:
        """From each paper's running text (never a caption or back matter), the sentence that shares most of
        `own_words`, then is a finding naming one of the `specific` ones among `question_words`, then shares most
        of `question_words`. For a follow-up, a sentence of the kind its `ask` wants counts as words shared
        (`Ask.weight`), the follow-up's own words (`asked_words`) come before its topic's, and a sentence in `seen`
        (the reader has read it) is left out when another speaks to the follow-up. With `meaning_model` and the
        `question`'s text, a conclusion close to it in meaning speaks of its subject as one sharing its words does.
        `min_rank` 2: with `findings_only`, only what `finding_rank` reads as a finding is quoted (a sentence the
        classifier does not read as one, under a heading it does not know, is 1: "MEDLINE, EMBASE, ..." of a
        review's "Data Sources")."""
        claims, first_overlap, seen, asked_words = [], None, seen or set(), asked_words or set()
        specific = (specific or set()) & question_words
        for source_id, chunks in by_paper(documents, self.source_id_field).items():
            candidates = [QuotationCandidate.of(sentence, chunk.meta.get("section"), ask)
                          for chunk in filter(is_readable_evidence, chunks)
                          for sentence in split_sentences(" ".join((chunk.content or "").split()))]
            # Headings, figure labels and table rows ("Survival outcome.") make poor quotations; so do aims,
            # captions, methods and background, which do not answer anything. Unless a follow-up asks how the
            # study was done: then a method answers ("Patients (N=44) with idiopathic PD.").
            candidates = [c for c in candidates if len(c.text.split()) >= self._MIN_QUOTED_WORDS or c.fit] or \
                candidates
            if not candidates or (findings_only and not any(c.rank >= min_rank or c.method_ok for c in candidates)):
                continue  # nothing here answers anything: no quotation from this paper
            candidates = [c for c in candidates if c.rank >= min_rank or c.method_ok] or candidates
            # A conclusion abbreviates what the background spelled out ("BD ... in isolated TBI"): each sentence
            # is matched with the paper's own abbreviations spelled out. Between equals, the conclusion is the
            # paper's own answer.
            defined = defined_abbreviations(" ".join(chunk.content or "" for chunk in chunks))
            words = {c.text: content_words(spelled_out(c.text, defined)) for c in candidates}
            # What the reader has read is quoted again only when no other sentence speaks to the follow-up.
            unread = [c for c in candidates if c.text not in seen]
            if any(own_words & words[c.text] or c.fit for c in unread):
                candidates = unread
            # A finding naming one of the question's specific words names its subject: "Afatinib resulted in a
            # major improvement ... for this type of lung cancer" shares three words of "Does erlotinib improve
            # survival in non-small cell lung cancer?", but not the one that matters. Naming one counts, not how
            # many, and only in a finding: the introduction's "women carrying the D allele of the ACE-I/D
            # polymorphism have higher ACE activity" names one more than the conclusion on "the ACE D-allele" and
            # preeclampsia, and "The increasing incidence of multidrug resistant tuberculosis ..." is background.
            # Then the paper's own conclusion, when it speaks of the question's subject: the authors' summary of
            # what they found, where a result sentence is one figure of it (issue 61: on the plain tuning half
            # the answers quoted a result or a discussion remark beside the conclusion that answered).
            close = self._close_conclusions(question, candidates)
            best = max(candidates, key=lambda c: (len(own_words & words[c.text]) + c.fit,
                                                  len(asked_words & words[c.text]),
                                                  c.conclusion and c.rank > 0 and (
                                                      bool(question_words & words[c.text]) or c.text in close),
                                                  c.rank == 2 and bool(specific & words[c.text]),
                                                  min(len(question_words & words[c.text]), 3), c.rank,
                                                  len(question_words & words[c.text]), c.conclusion)).text
            overlap = len(question_words & words[best])
            # A further paper is quoted only when its best sentence shares as many of the question's words as the
            # first paper's (and two at least): a passage sharing fewer is about another subject. On 100 dev
            # questions this kept the gold paper quoted as often (0.97).
            if first_overlap is not None and overlap < max(2, first_overlap):
                continue
            first_overlap = overlap if first_overlap is None else first_overlap
            claims.append({"text": best, "cited": [canonical_id(source_id)], "attached": [], "support": 1.0})
            if len(claims) == self.extractive_sentences:
                break
        return claims

    def what_is_asked(self, question: str, topic_question: str | None, supported: list[Claim],
                      documents: list[Document], named_paper: str | None = None) -> tuple[str | None, list[Claim]]:
        """For a follow-up whose answer the model's supported sentences do not give: what it asks for, in words, and
        the quotations that give it. What it asks for is a number, a method, harms or significance
        (`follow_up_asks`), else what its own words name ("What about its effect on healthcare resources?": a
        sentence naming healthcare resources). (None, []) when the model's answer gives it, or no passage does.
        `question`: the follow-up's own words. A question asking a `named_paper` for a kind of thing is read so too."""
        ask = asked_for(question)
        if not topic_question and not (named_paper and ask):
            return None, []
        if ask is not None:
            says, wanted = ask.says, ask.wanted
        else:
            own = follow_up_words(question, topic_question or "") - _ASKING_WORDS
            named = [w for w in re.findall(r"[\w-]+", question)
                     if content_words(w) and content_words(w) <= own]
            if not named:
                return None, []
            says, wanted = (lambda text: bool(own & content_words(text))), quoted_words(named)
        if any(says(c["text"]) for c in supported):
            return None, []
        giving = [c for c in self.extract(question, documents, topic_question, named_paper=named_paper)
                  if says(c["text"])]
        return (wanted, giving) if giving else (None, [])

    def _closest(self, question: str, lead: Claim, others: list[Claim]) -> bool:
        """Whether `lead` is at least as close to the question in meaning as each of `others` (without a model:
        True)."""
        if self._meaning is None:
            return True
        vectors = self._meaning.vectors([lead["text"]] + [c["text"] for c in others])
        similarities = vectors @ self._meaning.vectors([question])[0]
        return bool(similarities[0] >= similarities[1:].max())

    def _close_conclusions(self, question: str | None, candidates: list[QuotationCandidate]) -> set[str]:
        """The conclusion findings within `min_conclusion_similarity` of the question (none without a model)."""
        texts = [c.text for c in candidates if c.conclusion and c.rank > 0]
        if self._meaning is None or not question or not texts:
            return set()
        similarities = self._meaning.vectors(texts) @ self._meaning.vectors([question])[0]
        return {text for text, similarity in zip(texts, similarities) if similarity >= self.min_conclusion_similarity}


# How a quoted comparison opens (`QuotationChooser.comparison`, `each_paper`), as the answer's note says it.
COMPARISON_OPENINGS = {"": "each paper's own findings, quoted, one for each subject",
                       "conclusion": "the best-matching paper's own conclusion, then other papers' findings on each "
                                     "subject",
                       "papers": "what each paper it names found, its own conclusion where it has one, quoted in the "
                                 "order named"}

# What an overview request says besides its topic ("Summarise the evidence on gestational diabetes").
_OVERVIEW_REQUEST_WORDS = content_words(
    "summarise summarize summary evidence review reviews tell list give overview research researchers literature "
    "studies study papers paper known found find findings main say says across show shown report reported "
    "compare compared comparison contrast differ differs difference differences similar similarities versus vs")


def cited_papers(claims: list[Claim]) -> set[str]:
    return {canonical_id(p) for c in claims for p in c.get("cited") or []}


# Words that say how a follow-up asks, not what about: "What about its effect on healthcare resources?" asks about
# healthcare resources, and "effective" in an answer is no sign it was answered.
_ASKING_WORDS = content_words("effect effects impact influence role outcome outcomes result results difference "
                              "change changes benefit")
