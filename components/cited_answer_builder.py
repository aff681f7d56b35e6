"""Builds the answer a user sees: numbered citations, a reference list, and an extractive fallback."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from pmc_rag.components.answer import Answer
from pmc_rag.components.citations import best_sentence, by_paper, canonical_id, content_words, quoted_words
from pmc_rag.components.claim_signals import (finding_rank, is_negated, restates_question, states_an_aim,
                                              without_verdict)
from pmc_rag.components.defined_abbreviations import defined_abbreviations, spelled_out
from pmc_rag.components.follow_up_asks import Ask, asked_for
from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.components.section_kinds import CONCLUSION_SECTION, is_readable_evidence
from pmc_rag.components.follow_up_query import follow_up_text


def _named_parts(parts: list[str], most_words: int = 8) -> str:
    """The parts of a question no excerpt names, quoted when short; a long one (which may carry an instruction
    or a claim injected into the question) is counted, not repeated."""
    short = [part for part in parts if len(part.split()) <= most_words]
    named = quoted_words(short) if short else ""
    long = len(parts) - len(short)
    return " and ".join(filter(None, [named, f"{long} longer part(s) of the question" if long else ""]))


def _kind_of(reason: str) -> str:
    """What kind of disagreement a claim check found ("negation", "numbers", "words its excerpts lack"), without
    the claim's own words."""
    if reason.startswith("names "):
        return "words its excerpts do not contain"
    return reason.split(":", 1)[0].strip() or "not supported"


def source_link(meta: dict[str, Any]) -> str | None:
    if meta.get("pmcid"):
        return f"https://pmc.ncbi.nlm.nih.gov/articles/{meta['pmcid']}/"
    if meta.get("pmid"):
        return f"https://pubmed.ncbi.nlm.nih.gov/{meta['pmid']}/"
    if meta.get("doi"):
        return f"https://doi.org/{meta['doi']}"
    return None


@component
class CitedAnswerBuilder:
    """
    Numbers verified citations by first appearance and builds the answer object with its reference list.

    Takes the claims of `CitationVerifier`. Sources are numbered [1], [2], ... in the order they are first cited;
    each reference carries title, journal, year, PMCID/PMID, DOI, a link, and the sentence of the cited excerpt
    that best supports the claim. Claims whose support is under `min_support` make the answer `weak_support`.
    When no claim reaches `min_support`, or the model gave no answer, the answer is extractive instead: from each
    of the `extractive_sentences` best excerpts, the sentence closest to the question, cited, and a note says so.

    A sentence the model repeats is shown once, and an unfinished last sentence (the model hit its length limit)
    is left out. A follow-up asking for a comparison with something specific its topic question did not name ("How
    does it compare with gefitinib?") is answered only if the answer speaks of it: otherwise the papers under
    discussion do not answer it, and the answer says so (flag `not_answered`) instead of showing statements about
    something else.

    Usage:
    ```python
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    builder = CitedAnswerBuilder(min_support=0.35)
    answer = builder.run(question="Does erlotinib work?", claims=claims, documents=excerpts)["answer"]
    print(answer["answer"], answer["references"])
    ```
    """

    def __init__(self, *, min_support: float = 0.35, extractive_sentences: int = 3, source_id_field: str = "source_id",
                 specific_word_max_share: float = 0.01, show_uncited: bool = False, verdicts: str = "checked",
                 comparisons: str = "model"):
        """
        :param min_support: Least support (share of a claim's content words in its cited excerpt) for a claim to
            count as supported. Below it the answer is flagged `weak_support`; if no claim reaches it, the answer
            falls back to extracted sentences.
        :param extractive_sentences: How many excerpts the extractive fallback quotes from.
        :param source_id_field: The metadata field holding a document's citation id.
        :param specific_word_max_share: A word is specific when at most this share of the chunks contain it (by
            the BM25 retriever's `word_shares`): what a follow-up compares with, its answer must speak of, and a
            quoted finding naming one of the question's specific words is chosen first.
        :param show_uncited: Show sentences that carry no citation (after `CitationVerifier` tried to attach one).
            False: they are left out and named in the notes, so every displayed sentence is a checked claim.
        :param verdicts: The model's opening yes/no/maybe. `checked`: shown only on a sentence that is itself a
            supported claim, says it the same way (a "No" on a sentence that says "not" or "no", a "Yes" on one
            that does not) and is not the question restated ("Yes, X improves Y" says no more than the question);
            `none`: never shown; `model`: as the model wrote it. A verdict not shown is named in the notes.
        :param comparisons: A comparison's answer (route `compare`). `model`: the model's checked sentences, with a
            quoted finding added for a subject they leave out; `quoted`: each subject's finding quoted from a paper
            that names it, never the model's sentences (a small model swaps the sides: "men had a worse outcome than
            women" from a paper that found the opposite, which a lexical check cannot see).
        """
        if verdicts not in _VERDICT_POLICIES:
            raise ValueError(f"verdicts must be one of {', '.join(_VERDICT_POLICIES)}, not {verdicts!r}")
        if comparisons not in _COMPARISON_POLICIES:
            raise ValueError(f"comparisons must be one of {', '.join(_COMPARISON_POLICIES)}, not {comparisons!r}")
        self.comparisons = comparisons
        self.show_uncited = show_uncited
        self.verdicts = verdicts
        if not 0 <= min_support <= 1 or extractive_sentences < 1 or not 0 <= specific_word_max_share <= 1:
            raise ValueError("min_support and specific_word_max_share must be between 0 and 1 and "
                             "extractive_sentences at least 1")
        self.min_support = min_support
        self.extractive_sentences = extractive_sentences
        self.source_id_field = source_id_field
        self.specific_word_max_share = specific_word_max_share

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, min_support=self.min_support, extractive_sentences=self.extractive_sentences,
                               source_id_field=self.source_id_field,
                               specific_word_max_share=self.specific_word_max_share,
                               show_uncited=self.show_uncited, verdicts=self.verdicts, comparisons=self.comparisons)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CitedAnswerBuilder:
        return default_from_dict(cls, data)

    @component.output_types(answer=dict[str, Any])
    def run(
        self,
        question: str,
        documents: list[Document] | None = None,
        claims: list[dict[str, Any]] | None = None,
        removed_claims: list[dict[str, Any]] | None = None,
        invalid_citations: list[str] | None = None,
        raw_answer: str = "",
        excerpts_dropped: int = 0,
        generator_meta: dict[str, Any] | None = None,
        replies: list[ChatMessage] | None = None,
        unanswered: list[Document] | None = None,
        why_unanswered: str | None = None,
        topic_question: str | None = None,
        word_shares: dict[str, float] | None = None,
        route: str | None = None,
        uncovered: list[str] | None = None,
        subqueries: list[str] | None = None,
        subjects: list[str] | None = None,
        search_steps: list[str] | None = None,
        looked_up: list[str] | None = None,
        key_findings: list[Document] | None = None,
        web_results: list[Document] | None = None,
        web_note: str | None = None,
    ) -> dict[str, dict[str, Any]]:
        """
        :param question: The user's question.
        :param documents: The excerpts the model was shown, in prompt order (none: nothing was relevant).
        :param claims: From `CitationVerifier`, or `ClaimChecker` after it; none means the model gave no answer.
            A claim with a `judgement` (from the checker) counts as supported when judged so; one without, when
            its lexical support reaches `min_support`.
        :param removed_claims: From `ClaimChecker`: claims taken out because a shown excerpt contradicts them.
        :param invalid_citations: From `CitationVerifier`.
        :param raw_answer: The model's reply as written.
        :param excerpts_dropped: Excerpts left out of the prompt to fit the token budget.
        :param generator_meta: The generator's `meta`, if it has one (`FallbackChatGenerator`: which generators
            failed before one answered).
        :param replies: The generator's replies: the first one's `meta` names the model and its token usage
            (every chat generator puts them there; not all of them have a `meta` output).
        :param unanswered: From `RelevanceGate`: no excerpt was relevant, the model was not asked; these are the
            closest papers, listed as not answering, and nothing is cited.
        :param why_unanswered: From `RelevanceGate`: why, in words (the note starts with it).
        :param topic_question: For a follow-up answered from its topic's papers: the topic question.
        :param word_shares: The question's words with the share of chunks containing each (`PgvectorBM25Retriever`):
            which are specific (`specific_word_max_share`).
        :param route: The path that answered (`QuestionRouter`): it is named in the answer, and a summary's note
            says which of the paper's passages were read.
        :param uncovered: The compared subjects (or parts of the question) no excerpt names (`ExcerptBalance`):
            the answer says the papers do not speak to them.
        :param subqueries: One search per compared subject or part of the question (`QuestionRouter`): when the
            answer falls back to quotations, each gets its own, so a comparison quotes both sides.
        :param subjects: What a comparison compares, in the order of `subqueries`: each one's quotation comes from
            an excerpt that names it.
        :param search_steps: What each search of a question in steps looked for and found (`FollowUpSearch`):
            shown in the notes.
        :param looked_up: From `FollowUpSearch`: what a question in steps looked up in other papers. An answer
            citing one paper only gets another paper's finding on it, quoted, when an excerpt holds one.
        :param key_findings: From `SectionKeyFindings`: for a summary of a paper longer than the model reads, the
            key finding of each section it did not read, quoted after the summary and cited with its section.
        :param web_results: From `WebFallback`, when the indexed papers do not answer: web pages, listed apart in
            `web_sources` (never cited), with `web_note` in the notes.
        :param web_note: From `WebFallback`: what was searched on the web, and how to read it.
        :returns: `answer`: the answer object, as a dict (its fields: `pmc_rag.components.answer.Answer`).
        """
        answer = self._answer(question, documents, claims, removed_claims, invalid_citations, raw_answer,
                              excerpts_dropped, generator_meta, replies, unanswered, why_unanswered, topic_question,
                              word_shares, route, subqueries, subjects, looked_up, key_findings)
        if uncovered and not answer["flags"].get("not_answered"):
            answer["notes"] = [*answer["notes"], (
                f"No excerpt found names {_named_parts(uncovered)}: the indexed papers do not compare "
                + ("them" if route == "compare" else "or answer that part of the question") + ".")]
        if search_steps:
            answer["notes"] = [*search_steps, *answer["notes"]]
        if web_note:
            answer["notes"] = [*answer["notes"], web_note]
        if web_results:
            answer["web_sources"] = [{"title": d.meta.get("title"), "url": d.meta.get("url"),
                                      "snippet": d.content or "", "confidence": d.meta["confidence"]}
                                     for d in web_results]
            answer["flags"] = {**answer["flags"], "web_results": True}
        answer["route"] = route
        return {"answer": answer}

    def _answer(self, question: str, documents: list[Document] | None, claims: list[dict[str, Any]] | None,
                removed_claims: list[dict[str, Any]] | None, invalid_citations: list[str] | None, raw_answer: str,
                excerpts_dropped: int, generator_meta: dict[str, Any] | None, replies: list[ChatMessage] | None,
                unanswered: list[Document] | None, why_unanswered: str | None, topic_question: str | None,
                word_shares: dict[str, float] | None, route: str | None, subqueries: list[str] | None,
                subjects: list[str] | None, looked_up: list[str] | None = None,
                key_findings: list[Document] | None = None) -> dict[str, Any]:
        if unanswered is not None:
            return self._not_answered(question, unanswered, why_unanswered)
        documents = documents or []
        by_id = by_paper(documents, self.source_id_field)
        removed_claims = removed_claims or []
        notes = []
        claims, cut_off = _finished(_once(claims or []), replies)
        if cut_off:
            notes.append("The model's answer was cut off at its length limit: its unfinished last sentence is left "
                         "out.")
        claims, left_out, verdict_withheld = self._displayable(question, claims)
        if route == "multi_step" and documents:
            claims, misattributed = _others_cited_to_the_first(claims, documents[0].meta.get(self.source_id_field))
            left_out += misattributed
        # the model copies the excerpts' labels ("Abstract: Methods: ..."): the citation names the section
        claims = [{**c, "text": _without_section_label(c["text"], documents)} for c in claims]
        if left_out:
            # Described, not quoted: a sentence left out may be a claim injected into the question, and a note is
            # read as the answer's own words (the JSON's raw_answer has the model's reply as written).
            notes.append(f"Left out {len(left_out)} sentence(s) of the model's that are not supported findings: " +
                         "; ".join(dict.fromkeys(why for _, why in left_out)) + ".")
        supported = [c for c in claims if c["cited"] and self._supported(c)]
        quoted = self._extract_per_part(subqueries, subjects or [], documents) \
            if route == "compare" and self.comparisons == "quoted" and subqueries else []
        # No excerpt names a subject as the router read it ("chemo" where the papers say "chemotherapy"): the
        # answer is built as for any other question.
        quoted_comparison = bool(quoted)
        asked, quoted_as_asked = (None, []) if not supported or quoted_comparison else \
            self._quoting_what_is_asked(question, topic_question, supported, documents)
        extractive = not supported or quoted_comparison or bool(quoted_as_asked)
        if quoted_comparison:
            claims, _ = self._with_each_subject(quoted, quoted, subqueries or [], subjects or [], documents)
            notes.append("A comparison is answered with each paper's own findings, quoted, one for each subject "
                         "(comparisons: quoted): the model's sentences are not shown.")
            if len(subjects or []) >= 2 and not _compares_subjects(claims, subjects):
                notes.append(f"No sentence quoted here compares {' with '.join(map(repr, subjects))}: each is one "
                             "paper's finding on one of them, and the papers shown do not compare them.")
        elif quoted_as_asked:
            claims = quoted_as_asked
            notes.append(f"This follow-up asks about {asked}, which the model's answer does not speak of: the "
                         "papers' sentences that do are quoted instead.")
        elif extractive:
            # Parts no excerpt speaks to quote nothing: then, as for any question, the best findings overall.
            claims = (self._extract_per_part(subqueries, subjects or [], documents) if subqueries else []) or \
                self._extract(question, documents, topic_question, looked_up,
                              specific=content_words(" ".join(self._specific_words(word_shares))))
            notes.append("No sentence of the model's answer is a finding its sources support, so this answer quotes "
                         "the papers' findings instead." if left_out and raw_answer.strip() else
                         "The model's answer could not be checked against the sources, so this answer quotes the "
                         "most relevant passages instead." if raw_answer.strip() else
                         "No model answer was available, so this answer quotes the most relevant passages.")
        elif subqueries and subjects:
            claims, quoted_for = self._with_each_subject(claims, supported, subqueries, subjects, documents)
            if quoted_for:
                notes.append(f"The model's answer says nothing of {quoted_words(quoted_for)}: what the papers "
                             "found about it is quoted.")
        if looked_up and len(_cited_papers(claims)) < 2:
            # The model and the quotations keep to the best-matching paper; the second search was made for another.
            claims, name = self._from_another_paper(claims, [(n, n) for n in looked_up], documents)
            if name:
                notes.append(f"What another paper reports about '{name}' (the second search) is quoted.")
        if route == "overview" and len(_cited_papers(claims)) < 2:
            # An overview drawn from one paper is that paper's summary: the other papers shown (one excerpt each)
            # give their own finding on the topic, quoted.
            topic = content_words(question) - _OVERVIEW_REQUEST_WORDS
            more = self._findings_on_topic(topic, documents, avoid=_cited_papers(claims),
                                           taken={c["text"] for c in claims})
            more = more[: max(0, self.extractive_sentences - len(_cited_papers(claims)))]
            if more:
                claims = claims + more
                named = [w for w in re.findall(r"[A-Za-z][\w-]*", question) if content_words(w)
                         and content_words(w) <= topic]
                notes.append(f"What {len(more)} more paper(s) found on '{' '.join(named)}' is quoted, so that "
                             "the overview does not rest on one paper.")
        shown = {c["text"] for c in claims}
        key_quoted = [] if not claims else [
            {"text": d.content, "cited": [canonical_id(d.meta.get(self.source_id_field) or d.id)], "attached": [],
             "support": 1.0, "passage": d} for d in key_findings or [] if d.content not in shown]
        claims = claims + key_quoted
        for quoted in key_quoted:  # a paper the model's sentences do not cite (none in practice: it is the one read)
            by_id.setdefault(quoted["cited"][0], [quoted["passage"]])
        if verdict_withheld:
            notes.append(f"The model's verdict (\"{verdict_withheld}\") is not shown: no sentence that a source "
                         "supports states it. Read the papers' findings " + ("quoted" if extractive else "cited")
                         + " here instead.")
        if not claims:
            # Nothing the sources support and nothing quotable (captions, aims, a few words each): an empty answer
            # would read as a failure, so it says the papers do not answer.
            return self._not_answered(question, [chunks[0] for chunks in by_id.values()], (
                "Neither the model's answer nor any passage shown states a finding that answers this."),
                model_asked=bool(raw_answer.strip()))
        unaddressed = self._unaddressed(question, claims, topic_question, word_shares) if topic_question else []
        if unaddressed:
            closest = [chunks[0] for chunks in by_id.values()]
            return self._not_answered(question, closest, (
                f"The papers under discussion do not answer this: nothing they support compares it with "
                f"{quoted_words(unaddressed)}."), model_asked=True)
        numbers: dict[str, int] = {}
        sentences, citations = [], []
        for claim in claims:
            marks = []
            for source_id in claim["cited"]:
                number = numbers.setdefault(source_id, len(numbers) + 1)
                marks.append(f"[{number}]")
                # The paper's excerpt, and sentence in it, that best supports the claim (a section's key finding
                # is its own evidence, from a passage the model was not shown).
                (evidence, _), document = ((claim["text"], 1.0), claim["passage"]) if "passage" in claim else max(
                    ((best_sentence(claim["text"], d.content or ""), d) for d in by_id[source_id]),
                    key=lambda pair: pair[0][1])
                citations.append({"number": number, "source_id": source_id, "chunk_id": document.id,
                                  "section": document.meta.get("section"),
                                  "claim": claim["text"], "evidence": evidence, "support": claim["support"],
                                  "attached": source_id in claim.get("attached", []),
                                  "recited_from": list(claim.get("recited_from", [])),
                                  "judgement": claim.get("judgement")})
            sentences.append(_with_marks(claim["text"], marks))
        weak = [c for c in claims if c["cited"] and c["support"] is not None and not self._supported(c)]
        attached = sorted({c["number"] for c in citations if c["attached"]})
        if attached:
            notes.append(f"Citation(s) {', '.join(f'[{n}]' for n in attached)} were added by checking the sentence "
                         "against the excerpts: the model did not cite them itself.")
        recited = [c for c in citations if c["recited_from"]]
        if recited:
            notes.append("Re-cited to the excerpt that supports the claim (the model had cited another paper): " +
                         "; ".join(f"[{c['number']}] instead of {', '.join(c['recited_from'])}" for c in recited) + ".")
        if removed_claims:
            notes.append(f"Removed {len(removed_claims)} sentence(s) of the model's that the cited sources "
                         "contradict or do not speak of: " + "; ".join(dict.fromkeys(
                f"{r['source_id']}: {_kind_of(r['reason'])}" for r in removed_claims)) +
                         " (the JSON's removed_claims has them).")
        if invalid_citations:
            notes.append(f"Removed {len(invalid_citations)} citation(s) to papers the model was not shown: "
                         f"{', '.join(invalid_citations)}.")
        shortened = sum(1 for d in documents if d.meta.get("sentences_read"))
        if (excerpts_dropped or shortened) and route == "summarise":
            read = [f"{shortened} of its passages were read in part, their findings first" if shortened else "",
                    f"{excerpts_dropped} of its passages were left out" if excerpts_dropped else ""]
            notes.append("The paper is longer than the model reads at once: " + "; ".join(filter(None, read)) +
                         ". The summary comes from its abstract and the first passages of its conclusion, results, "
                         "discussion and methods" + (
                             f"; after it, the key finding of {len(key_quoted)} section(s) it did not read is quoted"
                             f" ({'; '.join(str(c['passage'].meta.get('section')) for c in key_quoted)})"
                             if key_quoted else "") + "; each citation names its section.")
        elif excerpts_dropped:
            notes.append(f"{excerpts_dropped} lower-ranked excerpt(s) were left out to fit the model's context.")
        meta = {**(replies[0].meta if replies else {}), **(generator_meta or {})}
        model = meta["model"] if "model" in meta else meta.get("successful_chat_generator_class")
        failed = list(meta.get("failed_chat_generators", []))
        if failed and model:
            skipped = meta.get("skipped_chat_generators") or []
            why = ("not reachable, or it failed" if not skipped else
                   f"{', '.join(skipped)} skipped: it timed out on a recent question")
            notes.append(f"Answered by the fallback model {model}: {', '.join(failed)} did not answer ({why}).")
        answer = Answer(**{
            "question": question,
            "answer": " ".join(s for s in sentences if s),
            "raw_answer": raw_answer,
            "citations": citations,
            "references": [self._reference(number, source_id, by_id[source_id][0], citations,
                                           by_id[source_id] + [c["passage"] for c in key_quoted])
                           for source_id, number in numbers.items()],
            "invalid_citations": list(invalid_citations or []),
            "removed_claims": removed_claims,
            "flags": {
                "invalid_citations_removed": bool(invalid_citations),
                "weak_support": bool(weak) and not extractive,
                "extractive_fallback": extractive,
                "context_truncated": excerpts_dropped > 0,
                "citations_attached": any(c["attached"] for c in citations),
                "citations_corrected": bool(recited),
                "claims_removed": bool(removed_claims),
                "fallback_generator": bool(failed and model),
            },
            "notes": notes,
            "model": model,
            "failed_generators": failed,
            "usage": meta.get("usage") or {},  # a streaming server may send none
        })
        return answer.model_dump()

    def _displayable(self, question: str, claims: list[dict[str, Any]]
                     ) -> tuple[list[dict[str, Any]], list[tuple[str, str]], str]:
        """The claims that may be shown, what was left out and why, and the verdict word held back ("" if none).
        A question, or the question restated, is never shown as a finding; an uncited sentence is not shown unless
        `show_uncited`; a verdict is kept only as `verdicts` says."""
        shown, left_out, withheld = [], [], ""
        for claim in _verdicts_joined(claims):
            text = claim["text"]
            verdict = _VERDICT.match(text)
            why = ("a question, or the question restated" if restates_question(text, question) else
                   "about the excerpts, not a finding" if _ABOUT_THE_EXCERPTS.search(text) else
                   "what a study set out to do, not a finding" if states_an_aim(without_verdict(text)) else None)
            if why or (not claim["cited"] and not self.show_uncited):
                left_out.append((text, why or "no citation: no excerpt was found to support it"))
                withheld = withheld or (verdict.group(1) if verdict else "")
                continue
            because = _BECAUSE_OF_THE_LAST.match(text)
            if because:  # never with a verdict: the sentence begins with "This is because"
                claim = {**claim, "text": _capitalised(text[because.end():])}
            elif verdict and self.verdicts != "model" and (self.verdicts == "none" or not self._supported(claim)
                                                            or not _says_as_the_verdict(verdict.group(1), text)):
                withheld = withheld or verdict.group(1)
                claim = {**claim, "text": _capitalised(without_verdict(text))}
            shown.append(claim)
        return shown, left_out, withheld

    def _quoting_what_is_asked(self, question: str, topic_question: str | None, supported: list[dict[str, Any]],
                               documents: list[Document]) -> tuple[str | None, list[dict[str, Any]]]:
        """For a follow-up whose answer the model's supported sentences do not give: what it asks for, in words, and
        the quotations that give it. What it asks for is a number, a method, harms or significance
        (`follow_up_asks`), else what its own words name ("What about its effect on healthcare resources?": a
        sentence naming healthcare resources). (None, []) when the model's answer gives it, or no passage does."""
        if not topic_question:
            return None, []
        ask = asked_for(follow_up_text(question))
        if ask is not None:
            says, wanted = ask.says, ask.wanted
        else:
            own = _follow_up_words(question, topic_question) - _ASKING_WORDS
            named = [w for w in re.findall(r"[\w-]+", follow_up_text(question))
                     if content_words(w) and content_words(w) <= own]
            if not named:
                return None, []
            says, wanted = (lambda text: bool(own & content_words(text))), quoted_words(named)
        if any(says(c["text"]) for c in supported):
            return None, []
        giving = [c for c in self._extract(question, documents, topic_question) if says(c["text"])]
        return (wanted, giving) if giving else (None, [])

    def _unaddressed(self, question: str, claims: list[dict[str, Any]], topic_question: str,
                     word_shares: dict[str, float] | None) -> list[str]:
        """What a follow-up compares with (its specific words that its topic question does not have), when the
        answer mentions none of it. Only comparisons: a follow-up's other new words are often ones the papers put
        otherwise ("How many patients took part?"), and checking all of them turned away 4 of 51 answerable turns
        of the test conversations for 1 unanswerable one caught."""
        compared = content_words(" ".join(_COMPARED_WITH.findall(question)))
        compared &= _follow_up_words(question, topic_question)
        new = [w for w in self._specific_words(word_shares) if content_words(w) <= compared]
        # Naming it is not comparing with it: "both gefitinib and erlotinib ... outperform chemotherapy" (a paper's
        # background) does not say how erlotinib compares with gefitinib.
        said = content_words(" ".join(c["text"] for c in claims if _COMPARES.search(c["text"])))
        return [] if any(content_words(w) <= said for w in new) else new

    @staticmethod
    def _not_answered(question: str, closest: list[Document], why: str | None,
                      model_asked: bool = False) -> dict[str, Any]:
        papers = [{"source_id": d.meta.get("source_id") or d.id, "title": d.meta.get("title"),
                   "year": d.meta.get("year"), "url": source_link(d.meta), "relevance": d.meta.get("relevance")}
                  for d in closest]
        return Answer(question=question, answer="The indexed papers do not answer this question.",
                      not_answering=papers,
                      flags={"not_answered": True, "extractive_fallback": False, "weak_support": False},
                      notes=[(why or "No indexed passage is close enough to the question to answer it.")
                             + (" Nothing is cited." if model_asked else " No model was asked, and nothing is cited.")
                             + (" The closest papers, which do not answer it: " +
                             "; ".join(f"{p['source_id']} ({p['title'] or 'untitled abstract'})" for p in papers) +
                             "." if papers else "")]).model_dump()

    def _supported(self, claim: dict[str, Any]) -> bool:
        if "judgement" in claim:
            return claim["judgement"] == "supported"
        return (claim["support"] or 0) >= self.min_support

    _MIN_QUOTED_WORDS = 6

    def _specific_words(self, word_shares: dict[str, float] | None) -> list[str]:
        """The question's specific words: in at most `specific_word_max_share` of the chunks (stop words aside)."""
        return [w for w, share in (word_shares or {}).items()
                if share <= self.specific_word_max_share and content_words(w)]

    def _extract(self, question: str, documents: list[Document], topic_question: str | None = None,
                 looked_up: list[str] | None = None, specific: set[str] | None = None) -> list[dict[str, Any]]:
        """From each of the best papers, the sentence that best answers the question: a finding (a conclusion or
        result, never an aim, a caption, a method or background) that shares the question's words, its `specific`
        ones (stems) first."""
        question_words = content_words(question) or {""}
        # A follow-up's own words ("side effects") come first: the topic's words, carried along in the query,
        # are in every sentence of the papers under discussion, and chose a table caption for "What about its
        # side effects?". So do the names a two-step question looked up: "erlotinib" answers "Which drug did the
        # FIELT trial test" though the question does not say it.
        own_words = _follow_up_words(question, topic_question) if topic_question else \
            content_words(" ".join(looked_up or []))
        follow_up = {}
        if topic_question:
            # What the follow-up asks for (a count, a method, side effects) is looked for in the paper's words for
            # it, and the sentence that answered the topic question, which the reader has read, comes last. Its
            # words the topic shares ("How was dynamic stability measured?") say what it asks about.
            ask = asked_for(follow_up_text(question))
            own_words = (own_words - ask.misleading) | ask.words if ask else own_words
            follow_up = {"ask": ask, "asked_words": content_words(follow_up_text(question)) -
                         (ask.misleading if ask else set()),
                         "seen": {c["text"] for c in self._quotations(content_words(topic_question), set(), documents,
                                                                      True)}}
        claims = self._quotations(question_words, own_words, documents, findings_only=True, specific=specific,
                                  **follow_up)
        # no paper has a finding among its excerpts: the best sentences are quoted all the same, so that the
        # reader sees what was found (the note says these are passages, not an answer)
        claims = claims or self._quotations(question_words, own_words, documents, findings_only=False,
                                            specific=specific, **follow_up)
        naming = self._naming_sentence(own_words, question_words, documents) if looked_up else None
        if naming is None:
            return claims
        return [naming] + [c for c in claims if set(c["cited"]) != set(naming["cited"])]

    def _naming_sentence(self, names: set[str], question_words: set[str], documents: list[Document]
                         ) -> dict[str, Any] | None:
        """The first paper's sentence that names what a two-step question looked up, a method included: its first
        part asks what the paper tested or used ("Which drug did the FIELT trial test"), and "a phase II study
        with erlotinib" says it where no finding does. Never an aim or a caption; None if no sentence names it."""
        first = documents[0].meta.get(self.source_id_field)
        best, best_key = None, None
        for sentence, chunk in self._quotable(d for d in documents if d.meta.get(self.source_id_field) == first):
            stems = content_words(sentence)
            if not names & stems or states_an_aim(sentence):
                continue
            key = (len(names & stems), len(question_words & stems), finding_rank(sentence, chunk.meta.get("section")))
            if best_key is None or key > best_key:
                best, best_key = sentence, key
        if best is None:
            return None
        return {"text": best, "cited": [canonical_id(str(first))], "attached": [], "support": 1.0}

    def _with_each_subject(self, claims: list[dict[str, Any]], supported: list[dict[str, Any]], parts: list[str],
                           subjects: list[str], documents: list[Document]) -> tuple[list[dict[str, Any]], list[str]]:
        """A comparison whose supported claims name only some of its subjects: a quotation for each of the others
        (from an excerpt naming it) is added, so both sides are shown when the excerpts hold evidence for both.
        A comparison whose claims all cite one paper gets a finding on one of its subjects from another paper, when
        an excerpt holds one. Returns the claims and the subjects quoted for."""
        said = content_words(" ".join(c["text"] for c in supported))
        quoted_for = []
        for part, subject in zip(parts, subjects):
            if not content_words(subject) or content_words(subject) <= said:
                continue
            added = [c for c in self._extract_per_part([part], [subject], documents, avoid=_cited_papers(claims))
                     if c["text"] not in {x["text"] for x in claims}]
            if added:
                claims = claims + added
                quoted_for.append(subject)
        if len(_cited_papers(claims)) == 1:
            claims, subject = self._from_another_paper(claims, list(zip(subjects, parts)), documents)
            quoted_for += [subject] if subject else []
        return claims, quoted_for

    def _from_another_paper(self, claims: list[dict[str, Any]], named: list[tuple[str, str]],
                            documents: list[Document]) -> tuple[list[dict[str, Any]], str | None]:
        """The claims with one more: the first of the `named` (name, the words around it) on which a paper not
        cited yet reports a finding, quoted. Returns the claims and that name (None: no paper had one)."""
        for name, words in named:
            other = self._quote_naming(content_words(name), content_words(words), documents,
                                       avoid=_cited_papers(claims), taken={c["text"] for c in claims},
                                       other_papers_only=True)
            if other is not None:
                return claims + [other], name
        return claims, None

    def _findings_on_topic(self, topic: set[str], documents: list[Document], *, avoid: set[str], taken: set[str]
                           ) -> list[dict[str, Any]]:
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
            for sentence, chunk in self._quotable(chunks):
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

    def _extract_per_part(self, parts: list[str], subjects: list[str], documents: list[Document],
                          avoid: set[str] | None = None) -> list[dict[str, Any]]:
        """One quoted finding per compared subject or part of the question, in their order, none twice: for a
        subject, a sentence that names it (or one from a paper whose title does), from a paper not quoted yet when
        one has such a finding; for a part, from the excerpts sharing most of its words first. (The whole
        question's words would choose one side of a comparison only.)"""
        claims: list[dict[str, Any]] = []
        for index, part in enumerate(parts):
            words = content_words(subjects[index]) if index < len(subjects) else set()
            taken = {q["text"] for q in claims}
            quoted = self._quote_naming(words, content_words(part), documents, avoid=(avoid or set())
                                        | _cited_papers(claims), taken=taken) if words else None
            if quoted is None:
                if words:
                    pool = [d for d in documents
                            if words <= content_words(f"{d.meta.get('title') or ''} {d.content or ''}")]
                else:
                    pool = sorted(documents, key=lambda d: -len(content_words(part) & content_words(d.content or "")))
                # Findings only: an aim, a method or a caption quoted for one side would read as evidence it is not.
                found = self._quotations(content_words(part) or {""}, set(), pool, findings_only=True)
                quoted = next((c for c in found if c["text"] not in taken), None)
            if quoted is not None:
                claims.append(quoted)
        return claims

    def _quote_naming(self, words: set[str], part_words: set[str], documents: list[Document], *, avoid: set[str],
                      taken: set[str], other_papers_only: bool = False) -> dict[str, Any] | None:
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
            for sentence, chunk in self._quotable(chunks):
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

    def _quotable(self, chunks: Iterable[Document]) -> Iterator[tuple[str, Document]]:
        """Each sentence long enough to quote (`_MIN_QUOTED_WORDS`), with its chunk, from the chunks of running
        text: a caption or back matter is never quoted."""
        for chunk in filter(is_readable_evidence, chunks):
            for sentence in split_sentences(" ".join((chunk.content or "").split())):
                if len(sentence.split()) >= self._MIN_QUOTED_WORDS:
                    yield sentence, chunk

    def _quotations(self, question_words: set[str], own_words: set[str], documents: list[Document],
                    findings_only: bool, ask: Ask | None = None, asked_words: set[str] | None = None,
                    seen: set[str] | None = None, specific: set[str] | None = None) -> list[dict[str, Any]]:
        """From each paper's running text (never a caption or back matter), the sentence that shares most of
        `own_words`, then is a finding naming one of the `specific` ones among `question_words`, then shares most
        of `question_words`. For a follow-up, a sentence of the kind its `ask` wants counts as words shared
        (`Ask.weight`), the follow-up's own words (`asked_words`) come before its topic's, and a sentence in `seen`
        (the reader has read it) is left out when another speaks to the follow-up."""
        claims, first_overlap, seen, asked_words = [], None, seen or set(), asked_words or set()
        specific = (specific or set()) & question_words
        for source_id, chunks in by_paper(documents, self.source_id_field).items():
            candidates = [_Candidate.of(sentence, chunk.meta.get("section"), ask)
                          for chunk in filter(is_readable_evidence, chunks)
                          for sentence in split_sentences(" ".join((chunk.content or "").split()))]
            # Headings, figure labels and table rows ("Survival outcome.") make poor quotations; so do aims,
            # captions, methods and background, which do not answer anything. Unless a follow-up asks how the
            # study was done: then a method answers ("Patients (N=44) with idiopathic PD.").
            candidates = [c for c in candidates if len(c.text.split()) >= self._MIN_QUOTED_WORDS or c.fit] or \
                candidates
            if not candidates or (findings_only and not any(c.rank > 0 or c.method_ok for c in candidates)):
                continue  # nothing here answers anything: no quotation from this paper
            candidates = [c for c in candidates if c.rank > 0 or c.method_ok] or candidates
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
            best = max(candidates, key=lambda c: (len(own_words & words[c.text]) + c.fit,
                                                  len(asked_words & words[c.text]),
                                                  c.conclusion and c.rank > 0 and bool(question_words & words[c.text]),
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

    @staticmethod
    def _reference(number: int, source_id: str, document: Document, citations: list[dict],
                   chunks: list[Document] | None = None) -> dict[str, Any]:
        meta = document.meta
        cited = [c for c in citations if c["source_id"] == source_id]
        strongest = max(cited, key=lambda c: c["support"] or 0)
        # The chunk holding the sentence shown as evidence: its section, page and id locate that sentence (the
        # paper's first-ranked chunk may be another part of it, e.g. a table).
        evidence_chunk = next((d for d in chunks or [] if d.id == strongest.get("chunk_id")), document)
        return {
            "number": number, "source_id": source_id, "title": meta.get("title"), "journal": meta.get("journal"),
            "year": meta.get("year"), "pmcid": meta.get("pmcid"), "pmid": meta.get("pmid"), "doi": meta.get("doi"),
            "url": source_link(meta), "section": evidence_chunk.meta.get("section"), "chunk_id": evidence_chunk.id,
            "evidence": strongest["evidence"], "authors": list(meta.get("authors") or [])[:3],
            "page": evidence_chunk.meta.get("page"), "collection": meta.get("collection"),
            "uploaded_by": meta.get("uploaded_by"), "claimed_id": meta.get("claimed_id"),
            "evidence_level": meta.get("evidence_level"),
        }


# "The excerpts do not answer the question", "The excerpt states that ...", "The paper does not compare ...": a remark
# on the prompt or the paper, not a finding.
_ABOUT_THE_EXCERPTS = re.compile(
    r"\bexcerpts?\b|\baccording to the (?:passages?|context|sources?|texts?)\b|"
    r"\b(?:the|these|this|provided|given) (?:passages?|context|texts?|sources?|abstracts?|papers?|articles?) "
    r"(?:do|does|did)?\s*(?:not\s+)?(?:answer|mention|state|say|provide|discuss|contain|address|describe|report|"
    r"indicate|suggest|show|specify|compare)", re.IGNORECASE)

# "This is because ...": the model's causal link to the sentence before, which no check reads (each sentence is
# checked alone, and the one before may be left out, so "this" points at nothing shown). The rest was checked.
_BECAUSE_OF_THE_LAST = re.compile(r"^(?:this|that|these|it) (?:is|was|may be|might be) (?:because|due to)"
                                  r"(?: the fact that)?,? ", re.IGNORECASE)

# The request echoed as a label: "Summary: ...", "TL;DR: ...", "Key results of 'Quantifying ...': The paper ..."
_REQUEST_LABEL = re.compile(r"^(?:summary|tl;?\s?dr|overview|key (?:results|findings)|main findings|in summary|"
                            r"outline)\b[^:]{0,160}:\s+(?=[A-Z])", re.IGNORECASE)

_VERDICT_POLICIES = ("checked", "none", "model")
_COMPARISON_POLICIES = ("model", "quoted")
_VERDICT = re.compile(r"^\W*(yes|no|maybe)\b\W", re.IGNORECASE)

# A sentence that compares: "longer than", "compared with", "did not differ", "similar", "superior".
_COMPARES = re.compile(r"\b(?:compar\w*|versus|vs\b|than|superior|inferior|similar\w*|equivalen\w*|differ\w*|"
                       r"between)", re.IGNORECASE)

# "compare(d) with/to X", "versus X", "than X", "or X": up to three words of what is compared with
_COMPARED_WITH = re.compile(r"\b(?:compar\w* (?:with|to)|versus|vs\.?|than|over|or)\s+((?:[\w-]+\s*){1,3})",
                            re.IGNORECASE)


# What an overview request says besides its topic ("Summarise the evidence on gestational diabetes").
_OVERVIEW_REQUEST_WORDS = content_words(
    "summarise summarize summary evidence review reviews tell list give overview research researchers literature "
    "studies study papers paper known found find findings main say says across show shown report reported")

_OTHER_PAPERS = re.compile(r"\bother (?:papers?|studies|study|trials?|reports?|research|articles?|authors)\b",
                           re.IGNORECASE)


class _Candidate(NamedTuple):
    """A sentence the quotation step may quote: its `finding_rank`, whether it is from a conclusion, what it counts
    for as the kind of sentence a follow-up asks for (`Ask.weight`, else 0), and whether it may answer although
    the quotation step would skip it (a method, for "How was it measured?")."""

    text: str
    rank: int
    conclusion: bool
    fit: int
    method_ok: bool

    @classmethod
    def of(cls, sentence: str, section: str | None, ask: Ask | None) -> _Candidate:
        return cls(sentence, finding_rank(sentence, section), bool(CONCLUSION_SECTION.search(str(section or ""))),
                   ask.weight if ask and ask.fits(sentence, section) else 0,
                   bool(ask and ask.may_quote(sentence, section)))


def _others_cited_to_the_first(claims: list[dict[str, Any]], first_paper: Any
                               ) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """A two-step answer's sentences that say what "other papers" report but cite only the first paper (the one the
    first step found): left out, with why. The model writes them when the second search found nothing."""
    kept, left_out = [], []
    first = canonical_id(str(first_paper or ""))
    for claim in claims:
        if _OTHER_PAPERS.search(claim["text"]) and claim["cited"] and _cited_papers([claim]) <= {first}:
            left_out.append((claim["text"], f"it says what other papers report, but cites only {first}"))
        else:
            kept.append(claim)
    return kept, left_out


def _cited_papers(claims: list[dict[str, Any]]) -> set[str]:
    return {canonical_id(p) for c in claims for p in c.get("cited") or []}


def _compares_subjects(claims: list[dict[str, Any]], subjects: list[str]) -> bool:
    """Whether a claim compares the subjects: it names each of them (half a subject's words or more: "cold knife
    cone" for "cold knife conization") and says how they compare ("than", "compared", ...)."""
    named = [words for words in map(content_words, subjects) if words]

    def compares(text: str) -> bool:
        words = content_words(text)
        return bool(_COMPARES.search(text)) and all(2 * len(subject & words) >= len(subject) for subject in named)

    return any(compares(c["text"]) for c in claims)


def _capitalised(text: str) -> str:
    """The text with its first letter a capital: what is left of a sentence after its opening words were cut."""
    return text[:1].upper() + text[1:]


# Words that say how a follow-up asks, not what about: "What about its effect on healthcare resources?" asks about
# healthcare resources, and "effective" in an answer is no sign it was answered.
_ASKING_WORDS = content_words("effect effects impact influence role outcome outcomes result results difference "
                              "change changes benefit")


def _follow_up_words(question: str, topic_question: str) -> set[str]:
    """The content words a follow-up adds to its topic question (the server asks "<follow-up> (follow-up to:
    <topic>)")."""
    return content_words(question) - content_words(f"{topic_question} follow-up to")


def _says_as_the_verdict(verdict: str, text: str) -> bool:
    """Whether the sentence after a verdict says what the verdict does: the 0.5B model, shown worked examples,
    opened findings with "No:" whatever they said ("No: parents reported higher quality with a regular clinician";
    the gold label was yes, 2026-11-27)."""
    negated = is_negated(without_verdict(text))
    return {"yes": not negated, "no": negated}.get(verdict.lower(), True)


def _verdicts_joined(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A verdict written as a sentence of its own ("Yes.") joined to the sentence after it, which it stands or falls
    with."""
    joined: list[dict[str, Any]] = []
    pending = ""
    for claim in claims:
        if not without_verdict(claim["text"]).strip(" .") and _VERDICT.match(claim["text"] + " "):
            pending += claim["text"].strip() + " "
            continue
        joined.append({**claim, "text": pending + claim["text"]} if pending else claim)
        pending = ""
    if pending:
        joined.append({"text": pending.strip(), "cited": [], "attached": [], "support": None})
    return joined


def _once(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The claims without repeats: a small model may write the same sentence over and over."""
    seen: set[str] = set()
    kept = []
    for claim in claims:
        key = " ".join(claim["text"].lower().split())
        if key not in seen:
            seen.add(key)
            kept.append(claim)
    return kept


def _finished(claims: list[dict[str, Any]], replies: list[ChatMessage] | None) -> tuple[list[dict[str, Any]], str]:
    """The claims without an unfinished last sentence, when the model stopped at its length limit (the OpenAI API
    says `finish_reason`, Ollama `done_reason`); and that sentence ("" if none)."""
    meta = replies[0].meta if replies else {}
    stopped_at_limit = "length" in (meta.get("finish_reason"), meta.get("done_reason"))
    if stopped_at_limit and claims and claims[-1]["text"].rstrip()[-1:] not in (".", "!", "?", ")", '"'):
        return claims[:-1], claims[-1]["text"]
    return claims, ""


def _with_marks(text: str, marks: list[str]) -> str:
    """Put citation marks before the sentence's closing punctuation: "It works [1]."."""
    if not marks:
        return text
    joined = "".join(marks)
    if text and text[-1] in ".!?":
        return f"{text[:-1]} {joined}{text[-1]}"
    return f"{text} {joined}"


def _without_section_label(text: str, documents: list[Document]) -> str:
    """The sentence without the excerpt's label copied from the prompt: its header ("Abstract (PubMed, n.d.), ") and
    its section ("Abstract: Results: 46 patients ...")."""
    for document in documents:  # the header as the prompt writes it (rag.yml)
        meta = document.meta
        header = f"{meta.get('title') or 'Abstract'} ({meta.get('journal') or 'PubMed'}, {meta.get('year') or 'n.d.'}), "
        if text.lower().startswith(header.lower()):
            text = text[len(header):]
            break
    text = _REQUEST_LABEL.sub("", text)
    for section in sorted({str(d.meta.get("section") or "") for d in documents}, key=len, reverse=True):
        if section and text.lower().startswith(section.lower() + ":"):
            rest = text[len(section) + 1:].strip()
            return _capitalised(rest) if rest else text
    return text
