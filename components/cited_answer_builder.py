"""Builds the answer a user sees: numbered citations, a reference list, and an extractive fallback."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from pmc_rag.components.answer import Answer, WebSource
from pmc_rag.components.citations import by_paper, canonical_id, content_words, quoted_words
from pmc_rag.components.claim import Claim
from pmc_rag.components.claim_checker import kind_of_disagreement
from pmc_rag.components.claim_signals import restates_question, states_an_aim, without_verdict
from pmc_rag.components.follow_up_asks import asked_for, follow_up_words, missing_detail
from pmc_rag.components.follow_up_query import follow_up_query
from pmc_rag.components.model_sentences import (ABOUT_THE_EXCERPTS, BECAUSE_OF_THE_LAST, COMPARED_WITH, COMPARES,
                                                capitalised, compares_subjects, finished, once,
                                                others_cited_to_the_first, without_section_label)
from pmc_rag.components.not_answered import not_answered
from pmc_rag.components.quotation_chooser import COMPARISON_OPENINGS, QuotationChooser, cited_papers
from pmc_rag.components.references import numbered, reference
from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.components.verdict_check import VerdictCheck


def _named_parts(parts: list[str], most_words: int = 8) -> str:
    """The parts of a question no excerpt names, quoted when short; a long one (which may carry an instruction
    or a claim injected into the question) is counted, not repeated."""
    short = [part for part in parts if len(part.split()) <= most_words]
    named = quoted_words(short) if short else ""
    long = len(parts) - len(short)
    return " and ".join(filter(None, [named, f"{long} longer part(s) of the question" if long else ""]))


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
    print(answer.answer, answer.references)
    ```
    """

    def __init__(self, *, min_support: float = 0.35, extractive_sentences: int = 3, source_id_field: str = "source_id",
                 specific_word_max_share: float = 0.01, show_uncited: bool = False, verdicts: str = "checked",
                 comparisons: str = "model", meaning_model: str | None = None,
                 min_conclusion_similarity: float = 0.4):
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
        :param meaning_model: For the quotations (`QuotationChooser`): an embedding model by which a paper's
            conclusion close in meaning to the question speaks of its subject, as one sharing its words does.
        :param min_conclusion_similarity: The least cosine similarity for that (`QuotationChooser`).
        """
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
        # What is quoted when the model's sentences cannot stand (or a comparison lacks a side): its own component.
        self.meaning_model = meaning_model
        self.min_conclusion_similarity = min_conclusion_similarity
        self.quotations = QuotationChooser(extractive_sentences=extractive_sentences, source_id_field=source_id_field,
                                           meaning_model=meaning_model,
                                           min_conclusion_similarity=min_conclusion_similarity)
        self.verdict_check = VerdictCheck(policy=verdicts, min_support=min_support)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, min_support=self.min_support, extractive_sentences=self.extractive_sentences,
                               source_id_field=self.source_id_field,
                               specific_word_max_share=self.specific_word_max_share,
                               show_uncited=self.show_uncited, verdicts=self.verdicts, comparisons=self.comparisons,
                               meaning_model=self.meaning_model,
                               min_conclusion_similarity=self.min_conclusion_similarity)

    def warm_up(self) -> None:
        self.quotations.warm_up()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CitedAnswerBuilder:
        return default_from_dict(cls, data)

    @component.output_types(answer=Answer)
    def run(
        self,
        question: str,
        documents: list[Document] | None = None,
        claims: list[Claim] | None = None,
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
        question_notes: list[str] | None = None,
        looked_up: list[str] | None = None,
        key_findings: list[Document] | None = None,
        web_results: list[Document] | None = None,
        web_note: str | None = None,
        related: list[Document] | None = None,
        follow_up_to: str | None = None,
        skipped_model: str | None = None,
        compared_papers: list[str] | None = None,
        named_paper: str | None = None,
        named_paper_unread: list[Document] | None = None,
    ) -> dict[str, Answer]:
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
        :param follow_up_to: In a conversation, the question this one follows up (set by the server; the topic
            question when `topic_question` is given): the answer is judged against both, and what the follow-up's
            own words ask for is quoted when the model's answer does not give it.
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
        :param question_notes: How the question was read before any search (`QuestionTranslator`): first in notes.
        :param looked_up: From `FollowUpSearch`: what a question in steps looked up in other papers. An answer
            citing one paper only gets another paper's finding on it, quoted, when an excerpt holds one.
        :param key_findings: From `SectionKeyFindings`: for a summary of a paper longer than the model reads, the
            key finding of each section it did not read, quoted after the summary and cited with its section.
        :param web_results: From `WebFallback`, when the indexed papers do not answer: web pages, listed apart in
            `web_sources` (never cited), with `web_note` in the notes.
        :param web_note: From `WebFallback`: what was searched on the web, and how to read it.
        :param related: From `RelevanceGate`, with `unanswered`: the excerpts of the closest papers, which speak of
            the question's subjects though none was judged to answer it. Their findings are quoted, labelled as
            related (flag `related_findings`), and the answer stays "not answered".
        :param skipped_model: From `QuotationFirst`: why the model was not asked. The findings are quoted, flagged
            `quoted_first`, with this reason instead of a note that no model answer was available.
        :param compared_papers: From `PaperReader`, for a comparison of papers the question names: their ids, in
            the order named. With `comparisons: quoted`, each one's conclusion (else best finding) is quoted.
        :param named_paper: From `QuestionRouter` (`step_paper`): the paper a single question names, read for it. The
            question is asked of that paper as a follow-up is of its topic: what it asks for (a number, a method,
            harms) is quoted when the model's answer does not give it ("How many patients were in the FIELT trial?").
        :param named_paper_unread: From the `PaperReader` that read `named_paper` (`unread`): its passages the model
            was not shown. What the question asks of the paper may be quoted from them (the sample size sits in an
            abstract's methods, the side effects in the safety results), cited to the passage it comes from.
        :returns: `answer`: the answer object (`pmc_rag.components.answer.Answer`).
        """
        follow_up_to = follow_up_to or topic_question
        named_paper = named_paper if route in (None, "single") else None
        if named_paper and named_paper_unread and asked_for(question):
            documents = [*(documents or []), *named_paper_unread]
        answer = self._answer(follow_up_query(question, follow_up_to), documents, claims, removed_claims,
                              invalid_citations, raw_answer, excerpts_dropped, generator_meta, replies, unanswered,
                              why_unanswered, topic_question, word_shares, route, subqueries, subjects, looked_up,
                              key_findings, related, own_words=question, skipped_model=skipped_model,
                              compared_papers=compared_papers,
                              named_paper=named_paper)
        notes = list(answer.notes)
        if uncovered and not answer.flags.get("not_answered"):
            notes.append(f"No excerpt found names {_named_parts(uncovered)}: the indexed papers do not compare "
                         + ("them" if route == "compare" else "or answer that part of the question") + ".")
        notes = [*(question_notes or []), *(search_steps or []), *notes, *([web_note] if web_note else [])]
        missing = missing_detail(question, split_sentences(answer.answer or "")) if route in (None, "single") and \
            not answer.flags.get("not_answered") else None
        notes = [missing, *notes] if missing else notes  # the one caveat a reader sees first
        web = {"web_sources": [WebSource(title=d.meta.get("title"), url=d.meta.get("url"), snippet=d.content or "",
                                         confidence=d.meta["confidence"]) for d in web_results]} if web_results else {}
        flags = {**answer.flags, **({"web_results": True} if web_results else {}),
                 **({"detail_not_given": True} if missing else {})}
        return {"answer": answer.updated(notes=notes, route=route, flags=flags, **web)}

    def _answer(self, question: str, documents: list[Document] | None, claims: list[Claim] | None,
                removed_claims: list[dict[str, Any]] | None, invalid_citations: list[str] | None, raw_answer: str,
                excerpts_dropped: int, generator_meta: dict[str, Any] | None, replies: list[ChatMessage] | None,
                unanswered: list[Document] | None, why_unanswered: str | None, topic_question: str | None,
                word_shares: dict[str, float] | None, route: str | None, subqueries: list[str] | None,
                subjects: list[str] | None, looked_up: list[str] | None = None,
                key_findings: list[Document] | None = None, related: list[Document] | None = None,
                own_words: str = "", skipped_model: str | None = None,
                compared_papers: list[str] | None = None, named_paper: str | None = None) -> Answer:
        # `question` is what was asked with a follow-up's topic; `own_words`, what the reader wrote
        if unanswered is not None:
            # findings only: a related paper's aim or methods would read as if it answered
            quoted = self.quotations.quotations(content_words(question) or {""}, set(), related, findings_only=True,
                                                specific=self._specific_stems(word_shares),
                                                question=question, min_rank=2) if related else []
            return not_answered(question, unanswered, why_unanswered, related=quoted,
                                by_id=by_paper(related or [], self.source_id_field))
        documents = documents or []
        by_id = by_paper(documents, self.source_id_field)
        removed_claims = removed_claims or []
        # Two kinds of note: what the reader should know about this answer (it quotes the papers instead, a subject
        # no paper speaks of), and an account of the checks (sentences left out, citations repaired, which model
        # answered). The first kind comes first, so the one line of caveat under the answer is about the answer;
        # the account is there in full for --explain, the JSON and the page's details (issue 61, item 5).
        notes: list[str] = []
        checks: list[str] = []
        claims, cut_off = finished(once(claims or []), replies)
        if cut_off:
            checks.append("The model's answer was cut off at its length limit: its unfinished last sentence is left "
                         "out.")
        claims, left_out, verdict_withheld = self._displayable(question, claims)
        if route == "multi_step" and documents:
            claims, misattributed = others_cited_to_the_first(claims, documents[0].meta.get(self.source_id_field))
            left_out += misattributed
        # the model copies the excerpts' labels ("Abstract: Methods: ..."): the citation names the section
        claims = [{**c, "text": without_section_label(c["text"], documents)} for c in claims]
        if left_out:
            # Described, not quoted: a sentence left out may be a claim injected into the question, and a note is
            # read as the answer's own words (the JSON's raw_answer has the model's reply as written).
            checks.append(f"Left out {len(left_out)} sentence(s) of the model's that are not supported findings: " +
                         "; ".join(dict.fromkeys(why for _, why in left_out)) + ".")
        supported = [c for c in claims if c["cited"] and self._supported(c)]
        quoted, opening = [], ""
        if route == "compare" and self.comparisons == "quoted" and len(compared_papers or []) >= 2:
            quoted, opening = self.quotations.each_paper(question, documents, compared_papers), "papers"
        elif route == "compare" and self.comparisons == "quoted" and subqueries:
            quoted, opening = self.quotations.comparison(subqueries, subjects or [], documents,
                                                         None if topic_question else question)
        # No excerpt names a subject as the router read it ("chemo" where the papers say "chemotherapy"): the
        # answer is built as for any other question.
        quoted_comparison = bool(quoted)
        asked, quoted_as_asked = (None, []) if not supported or quoted_comparison else \
            self.quotations.what_is_asked(own_words, topic_question, supported, documents, named_paper)
        extractive = not supported or quoted_comparison or bool(quoted_as_asked)
        if quoted_comparison:
            claims = quoted
            notes.append("A comparison is answered with " + COMPARISON_OPENINGS[opening] +
                         " (comparisons: quoted): the model's sentences are not shown.")
            # one study's conclusion may compare in its own words ("pouch": "restorative proctocolectomy")
            if len(subjects or []) >= 2 and not compares_subjects(claims, subjects) and opening != "papers" and \
                    not (opening == "conclusion" and len(cited_papers(claims)) == 1):
                notes.append(f"No sentence quoted here compares {' with '.join(map(repr, subjects))}: each is one "
                             "paper's finding on one of them, and the papers shown do not compare them.")
        elif quoted_as_asked:
            claims = quoted_as_asked
            notes.append(f"This {'follow-up' if topic_question else 'question'} asks about {asked}, which the model's "
                         "answer does not speak of: the papers' sentences that do are quoted instead.")
        elif extractive:
            # Parts no excerpt speaks to quote nothing: then, as for any question, the best findings overall.
            per_part = self.quotations.extract_per_part(subqueries, subjects or [], documents) if subqueries else []
            claims = per_part or self.quotations.extract(
                own_words if topic_question else question, documents, topic_question, looked_up,
                specific=self._specific_stems(word_shares), named_paper=named_paper)
            if not skipped_model:  # quoted by choice: why no model was asked is said with the checks, below
                notes.append("No sentence of the model's answer is a finding its sources support, so this answer "
                             "quotes the papers' findings instead." if left_out and raw_answer.strip() else
                             "The model's answer could not be checked against the sources, so this answer quotes the "
                             "most relevant passages instead." if raw_answer.strip() else
                             "No model answer was available, so this answer quotes the most relevant passages.")
        elif subqueries and subjects:
            claims, quoted_for = self.quotations.with_each_subject(claims, supported, subqueries, subjects, documents)
            if quoted_for:
                notes.append(f"The model's answer says nothing of {quoted_words(quoted_for)}: what the papers "
                             "found about it is quoted.")
        if looked_up and len(cited_papers(claims)) < 2:
            # The model and the quotations keep to the best-matching paper; the second search was made for another.
            claims, name = self.quotations.from_another_paper(claims, [(n, n) for n in looked_up], documents)
            if name:
                notes.append(f"What another paper reports about '{name}' (the second search) is quoted.")
        if route == "overview" and len(cited_papers(claims)) < 2:
            # An overview drawn from one paper is that paper's summary: the other papers shown (one excerpt each)
            # give their own finding on the topic, quoted.
            more, topic_named = self.quotations.overview_findings(question, claims, documents)
            if more:
                claims = claims + more
                notes.append(f"What {len(more)} more paper(s) found on '{topic_named}' is quoted, so that the "
                             "overview does not rest on one paper.")
        shown = {c["text"] for c in claims}
        key_quoted = [] if not claims else [
            {"text": d.content, "cited": [canonical_id(d.meta.get(self.source_id_field) or d.id)], "attached": [],
             "support": 1.0, "passage": d} for d in key_findings or [] if d.content not in shown]
        claims = claims + key_quoted
        for quoted in key_quoted:  # a paper the model's sentences do not cite (none in practice: it is the one read)
            by_id.setdefault(quoted["cited"][0], [quoted["passage"]])
        if verdict_withheld:
            checks.append(f"The model's verdict (\"{verdict_withheld}\") is not shown: no sentence that a source "
                         "supports states it. Read the papers' findings " + ("quoted" if extractive else "cited")
                         + " here instead.")
        if not claims:
            # Nothing the sources support and nothing quotable (captions, aims, a few words each): an empty answer
            # would read as a failure, so it says the papers do not answer.
            return not_answered(question, [chunks[0] for chunks in by_id.values()], (
                "Neither the model's answer nor any passage shown states a finding that answers this."),
                model_asked=bool(raw_answer.strip()))
        unaddressed = self._unaddressed(own_words, claims, topic_question, word_shares) if topic_question else []
        if unaddressed:
            closest = [chunks[0] for chunks in by_id.values()]
            return not_answered(question, closest, (
                f"The papers under discussion do not answer this: nothing they support compares it with "
                f"{quoted_words(unaddressed)}."), model_asked=True)
        sentences, citations, numbers = numbered(claims, by_id)
        weak = [c for c in claims if c["cited"] and c["support"] is not None and not self._supported(c)]
        attached = sorted({c["number"] for c in citations if c["attached"]})
        if attached:
            checks.append(f"Citation(s) {', '.join(f'[{n}]' for n in attached)} were added by checking the sentence "
                         "against the excerpts: the model did not cite them itself.")
        recited = [c for c in citations if c["recited_from"]]
        if recited:
            checks.append("Re-cited to the excerpt that supports the claim (the model had cited another paper): " +
                         "; ".join(f"[{c['number']}] instead of {', '.join(c['recited_from'])}" for c in recited) + ".")
        if removed_claims:
            checks.append(f"Removed {len(removed_claims)} sentence(s) of the model's that the cited sources "
                         "contradict or do not speak of: " + "; ".join(dict.fromkeys(
                f"{r['source_id']}: {kind_of_disagreement(r['reason'])}" for r in removed_claims)) +
                         " (the JSON's removed_claims has them).")
        if invalid_citations:
            checks.append(f"Removed {len(invalid_citations)} citation(s) to papers the model was not shown: "
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
            checks.append(f"{excerpts_dropped} " + ("passage(s) of the papers named, after each one's abstract and "
                          "conclusion," if compared_papers else "lower-ranked excerpt(s)") +
                          " were left out to fit the model's context.")
        if skipped_model and extractive:
            checks.append(skipped_model)
        meta = {**(replies[0].meta if replies else {}), **(generator_meta or {})}
        model = meta["model"] if "model" in meta else meta.get("successful_chat_generator_class")
        failed = list(meta.get("failed_chat_generators", []))
        if failed and model:
            skipped = meta.get("skipped_chat_generators") or []
            why = ("not reachable, or it failed" if not skipped else
                   f"{', '.join(skipped)} skipped: it timed out on a recent question")
            checks.append(f"Answered by the fallback model {model}: {', '.join(failed)} did not answer ({why}).")
        return Answer(**{
            "question": question,
            "answer": " ".join(s for s in sentences if s),
            "raw_answer": raw_answer,
            "citations": citations,
            "references": [reference(number, source_id, by_id[source_id][0], citations,
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
                **({"quoted_first": True} if extractive and skipped_model else {}),
            },
            "notes": notes + checks,
            "model": model,
            "failed_generators": failed,
            "usage": meta.get("usage") or {},  # a streaming server may send none
        })

    def _displayable(self, question: str, claims: list[Claim]
                     ) -> tuple[list[Claim], list[tuple[str, str]], str]:
        """The claims that may be shown, what was left out and why, and the verdict word held back ("" if none).
        A question, or the question restated, is never shown as a finding; an uncited sentence is not shown unless
        `show_uncited`; a verdict is kept only as `verdicts` says."""
        shown, left_out, withheld = [], [], ""
        for claim in self.verdict_check.joined(claims):
            text = claim["text"]
            verdict = self.verdict_check.opening(text)
            why = ("a question, or the question restated" if restates_question(text, question) else
                   "about the excerpts, not a finding" if ABOUT_THE_EXCERPTS.search(text) else
                   "what a study set out to do, not a finding" if states_an_aim(without_verdict(text)) else None)
            if why or (not claim["cited"] and not self.show_uncited):
                left_out.append((text, why or "no citation: no excerpt was found to support it"))
                withheld = withheld or verdict or ""
                continue
            because = BECAUSE_OF_THE_LAST.match(text)
            if because:  # never with a verdict: the sentence begins with "This is because"
                claim = {**claim, "text": capitalised(text[because.end():])}
            elif verdict and not self.verdict_check.stands(verdict, text, self._supported(claim)):
                withheld = withheld or verdict
                claim = {**claim, "text": self.verdict_check.without(text)}
            shown.append(claim)
        return shown, left_out, withheld

    def _unaddressed(self, question: str, claims: list[Claim], topic_question: str,
                     word_shares: dict[str, float] | None) -> list[str]:
        """What a follow-up compares with (its specific words that its topic question does not have), when the
        answer mentions none of it. Only comparisons: a follow-up's other new words are often ones the papers put
        otherwise ("How many patients took part?"), and checking all of them turned away 4 of 51 answerable turns
        of the test conversations for 1 unanswerable one caught."""
        compared = content_words(" ".join(COMPARED_WITH.findall(question)))
        compared &= follow_up_words(question, topic_question)
        new = [w for w in self._specific_words(word_shares) if content_words(w) <= compared]
        # Naming it is not comparing with it: "both gefitinib and erlotinib ... outperform chemotherapy" (a paper's
        # background) does not say how erlotinib compares with gefitinib.
        said = content_words(" ".join(c["text"] for c in claims if COMPARES.search(c["text"])))
        return [] if any(content_words(w) <= said for w in new) else new

    def _supported(self, claim: Claim) -> bool:
        if "judgement" in claim:
            return claim["judgement"] == "supported"
        return (claim["support"] or 0) >= self.min_support

    def _specific_words(self, word_shares: dict[str, float] | None) -> list[str]:
        """The question's specific words: in at most `specific_word_max_share` of the chunks (stop words aside)."""
        return [w for w, share in (word_shares or {}).items()
                if share <= self.specific_word_max_share and content_words(w)]

    def _specific_stems(self, word_shares: dict[str, float] | None) -> set[str]:
        """The stems of the question's specific words: a quotation naming one comes first."""
        return content_words(" ".join(self._specific_words(word_shares)))


_COMPARISON_POLICIES = ("model", "quoted")
