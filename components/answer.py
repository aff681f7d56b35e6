"""The answer object, typed: what `CitedAnswerBuilder` builds, the REST endpoint returns, `pmc-rag ask --json`
prints, and the chat and the CLI render. The table of its fields in docs/asking.md is generated from these
descriptions (`answer_fields_markdown`; a test keeps the two equal).

`CitedAnswerBuilder` emits it typed, and it is frozen: what a later step adds (the stage timings, the sources, a
conversation's citation numbers, a note) goes into a copy made by `Answer.updated`, never into the builder's object.
The cache, the conversation store and the JSON keep `answer.model_dump()`; `Answer.model_validate(d)` reads one back.

Usage:
```python
answer = pipeline_output["answer"]                 # an Answer
print(answer.as_text())                            # the CLI's rendering
print(answer.reference_lines())                    # the chat's reference list
timed = answer.updated(timings_ms={"total": 812.0})  # a checked copy; `answer` is unchanged
```
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field


class Citation(BaseModel):
    number: int = Field(description="the citation's number in the answer text, [n]")
    source_id: str = Field(description="the cited paper: PMC id, PMID:n or doi:...")
    chunk_id: str = Field(description="the excerpt that supports the claim")
    section: str | None = Field(None, description="the section of the paper that excerpt comes from")
    claim: str = Field(description="the sentence of the answer that cites it")
    evidence: str = Field(description="the sentence of the excerpt that best supports the claim")
    support: float | None = Field(None, description="share of the claim's content words found in the excerpt, 0-1")
    attached: bool = Field(False, description="added by post-hoc attribution: the model did not cite it itself")
    recited_from: list[str] = Field(default_factory=list, description=(
        "re-cited: the papers the model cited for this claim, which do not support it (this one does)"))
    judgement: str | None = Field(None, description="the claim check's verdict: supported, unsupported, "
                                                    "unverifiable (too short), unchecked")


class RemovedClaim(BaseModel):
    text: str = Field(description="the model's sentence, removed from the answer")
    cited: list[str] = Field(default_factory=list, description="the papers the model cited for it")
    source_id: str | None = Field(None, description="the excerpt's paper that contradicts it")
    judgement: str = Field(description="contradicted (or unsupported, where the pipeline removes those too)")
    reason: str = Field("", description="what differs: negation, numbers, direction, or the judge's verdict")
    evidence: str = Field("", description="the excerpt's sentence the claim was checked against")


class Reference(BaseModel):
    number: int
    source_id: str
    title: str | None = None
    journal: str | None = None
    year: int | str | None = None
    pmcid: str | None = None
    pmid: str | int | None = None
    doi: str | None = None
    url: str | None = None
    section: str | None = None
    chunk_id: str | None = None
    evidence: str | None = Field(None, description="the excerpt's sentence that best supports the claims citing it")
    authors: list[str] = Field(default_factory=list, description="the first authors")
    page: int | None = Field(None, description="the page the supporting sentence is on (documents with pages)")
    collection: str | None = Field(None, description="the user's collection the document belongs to")
    uploaded_by: str | None = Field(None, description=(
        "uploaded over HTTP by this key (its id; `local` on a server without keys); null: ingested on the server"))
    claimed_id: str | None = Field(None, description=(
        "an upload's own id as its file gives it (e.g. a PMCID), not checked: it is cited by `source_id`"))
    evidence_level: str | None = Field(None, description=(
        "the paper's study design, strongest first: systematic_review, rct, cohort, case_report, review, other"))

    @computed_field(description="where the text came from: `corpus`, a collection made on the server, or an upload "
                                "(its collection, who uploaded it, the id it claims)")
    @property
    def origin(self) -> str:
        if self.uploaded_by:
            who = "this machine's user" if self.uploaded_by == "local" else f"key {self.uploaded_by[:8]}"
            claim = f"; it calls itself {self.claimed_id}, not checked" if self.claimed_id and not \
                self.claimed_id.startswith("doc:") else ""
            return f"uploaded to collection {self.collection!r} by {who}{claim}"
        if self.collection:
            return f"collection {self.collection!r}, ingested on the server"
        return "corpus"

    def evidence_words(self) -> str | None:
        """The evidence level as a reader says it ("randomised trial"), or None when unknown or `other`."""
        return EVIDENCE_WORDS.get(self.evidence_level or "")

    def locator(self) -> str | None:
        """"Smith et al. 2020, p. 4" for a document with pages (the user's PDFs), else None."""
        if self.page is None:
            return None
        who = _surname(self.authors[0]) if self.authors else None
        who = f"{who} et al." if who and len(self.authors) > 1 else who
        return ", ".join(part for part in (" ".join(str(p) for p in (who, self.year) if p), f"p. {self.page}") if part)

    def line(self) -> str:
        """`[n] ID · title. journal. year · url`, or `[n] ID · Smith et al. 2020, p. 4 · title` for a document with
        pages: the id right after the number (chat histories are parsed back by it:
        pmc_rag.answering.conversation.numbers_from_history)."""
        origin = None if self.origin == "corpus" else f"({self.origin})"
        if self.page is not None:
            return " · ".join(part for part in (f"[{self.number}] {self.source_id}", self.locator(), self.title,
                                                origin) if part)
        details = ". ".join(str(part) for part in (self.title, self.journal, self.year) if part)
        return " · ".join(part for part in (f"[{self.number}] {self.source_id}", details, self.evidence_words(),
                                            self.url, origin) if part)


EVIDENCE_WORDS = {"systematic_review": "systematic review or meta-analysis", "rct": "randomised trial",
                  "cohort": "cohort or observational study", "case_report": "case report",
                  "review": "narrative review"}


def _surname(author: str) -> str:
    """"De Grève J" (PubMed's form: surname, initials) -> "De Grève"; "Smith, John" -> "Smith"; "John Smith" ->
    "Smith"."""
    if "," in author:
        return author.split(",")[0].strip()
    parts = author.split()
    if len(parts) > 1 and parts[-1].isupper() and len(parts[-1]) <= 3:
        return " ".join(parts[:-1])
    return parts[-1] if parts else author


class ClosestPaper(BaseModel):
    source_id: str
    title: str | None = None
    year: int | str | None = None
    url: str | None = None
    relevance: float | None = Field(None, description="cosine similarity of the question and its best chunk")


class WebSource(BaseModel):
    """A web page found when the indexed papers did not answer (`WebFallback`): listed apart, never cited."""

    title: str | None = None
    url: str | None = None
    snippet: str = Field("", description="the search engine's text for the page")
    confidence: float = Field(description="the confidence the pipeline gives web results (lower than a paper's)")


class Found(BaseModel):
    rank: int
    score: float | None = None


class Source(BaseModel):
    chunk_id: str
    source_id: str | None = None
    section: str | None = None
    found_by: dict[str, Found] = Field(default_factory=dict)
    in_prompt: bool = False
    related: bool = Field(False, description="an excerpt of the closest papers, whose findings a not-answered "
                                             "answer quotes as related (flag `related_findings`)")


class Answer(BaseModel):
    """A cited answer, or a fixed reply (`kind`: small_talk, emergency) with no references."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["answer", "small_talk", "emergency"] = Field(
        "answer", description="`answer`; or a fixed reply: `small_talk` (greetings, thanks) or `emergency` (points "
                              "to emergency services; nothing retrieved)")
    question: str = Field(description="the question as answered: whitespace normalised, personal data redacted")
    route: str | None = Field(None, description=(
        "the path that answered: `single` (one finding), `summarise` (a named paper), `compare`, `several` "
        "(more than one question), `overview`; null where the pipeline has no router"))
    safety: str | None = Field(None, description=(
        "a crisis line shown above the answer when the question may describe someone in danger now but not "
        "certainly (flag `possible_emergency`); null otherwise"))
    answer: str = Field(description="the displayed answer, with numbered citations `[1]`; every [n] is a checked "
                                    "citation")
    raw_answer: str = Field("", description="the model's reply as written, unchecked")
    citations: list[Citation] = Field(default_factory=list, description=(
        "one per citation shown: number, `source_id`, `chunk_id`, the claim, the best supporting sentence "
        "(`evidence`), `support` (0-1), `attached` (added by post-hoc attribution)"))
    references: list[Reference] = Field(default_factory=list, description=(
        "one per cited paper, in number order: title, journal, year, PMCID, PMID, DOI, `url`, section, "
        "`evidence`"))
    sources: list[Source] = Field(default_factory=list, description=(
        "every chunk retrieved or shown to the model: ids, `found_by` (which retriever, rank and score; empty for "
        "neighbours added by context expansion), `in_prompt`"))
    invalid_citations: list[str] = Field(default_factory=list, description="ids the model cited that it was not "
                                                                           "shown (removed)")
    not_answering: list[ClosestPaper] = Field(default_factory=list, description=(
        "when the indexed papers do not answer the question (flag `not_answered`): the closest papers found, "
        "which do not answer it; nothing is cited, unless flag `related_findings`: then the closest papers' findings "
        "follow the reply, quoted and cited, labelled as related"))
    web_sources: list[WebSource] = Field(default_factory=list, description=(
        "web pages found when the indexed papers do not answer (a `WebFallback` with a web search set in the "
        "YAML; none by default): listed apart from the references, never cited, with a lower `confidence`"))
    removed_claims: list[RemovedClaim] = Field(default_factory=list, description=(
        "sentences of the model's reply removed because a shown excerpt contradicts them: text, cited papers, "
        "`reason`, the contradicting `evidence`"))
    flags: dict[str, bool] = Field(default_factory=dict, description=(
        "`invalid_citations_removed`, `weak_support`, `extractive_fallback`, `context_truncated`, "
        "`citations_attached`, `citations_corrected` (a claim re-cited to the excerpt that supports it), "
        "`claims_removed` (a claim its source contradicts was taken out), `not_answered` (no excerpt was "
        "relevant enough: the model was not asked), `related_findings` (with `not_answered`: the closest papers speak of the "
        "question's subjects, and their findings are quoted and cited after the reply, labelled as related), `fallback_generator` (a later generator answered because an earlier one, e.g. "
        "Ollama, did not), `local_model_failed` (the local model server crashed, hung or could not start; a note "
        "says why and what to do), `personal_question` (a question about someone's own care: the notes say the answer is "
        "not medical advice), `personal_data_removed` (personal data in the answer's text was redacted), "
        "`web_results` (the indexed papers did not answer; web pages are listed in `web_sources`, apart), "
        "`possible_emergency` (the question may describe someone in danger: `safety` is shown first), "
        "`quoted_first` (the best paper's conclusion answered, so the model was not asked: `QuotationFirst`), "
        "`detail_not_given` (the question asks how many or how long, and no sentence of the answer gives the number: "
        "the first note says so)"))
    notes: list[str] = Field(default_factory=list, description="the flags in words, for display")
    timings_ms: dict[str, float] = Field(default_factory=dict, description="milliseconds per pipeline stage, and "
                                                                           "`total`")
    model: str | None = Field(None, description="the model that answered (null: none did; the passages are quoted)")
    failed_generators: list[str] = Field(default_factory=list, description="the generators that failed before it")
    usage: dict[str, Any] = Field(default_factory=dict, description="token counts")
    standalone_query: str | None = Field(None, description="the question as retrieval saw it (a follow-up carries "
                                                           "its topic along)")
    conversation_id: str | None = Field(None, description="send it back with a follow-up question (server only)")
    cached: bool = Field(False, description="answered from the server's cache")
    redacted: list[str] = Field(default_factory=list, description="kinds of personal data removed from the "
                                                                  "question, e.g. `[EMAIL]`")

    def updated(self, **changes: Any) -> Answer:
        """A copy with these fields changed, checked as a new answer is (an unknown field or a wrong type raises
        pydantic's ValidationError); this answer is left as it was."""
        return type(self).model_validate({**dict(self), **changes})

    def with_note(self, note: str, flag: str | None = None, first: bool = False) -> Answer:
        """A copy with `note` added to the notes (`first`: before the others) and `flag` set, if given."""
        notes = [note, *self.notes] if first else [*self.notes, note]
        return self.updated(notes=notes, flags={**self.flags, flag: True} if flag else self.flags)

    def reference_lines(self) -> str:
        """The reference list as chat text, one line per paper (see `Reference.line`)."""
        lines = [reference.line() for reference in sorted(self.references, key=lambda r: r.number)]
        return "References:\n" + "\n".join(lines) if lines else ""

    def web_source_lines(self) -> str:
        """The web results, apart from the literature, as text ("" when there are none)."""
        if not self.web_sources:
            return ""
        return "Web results (not indexed literature, not cited, not checked; lower confidence):\n" + "\n".join(
            f"- {w.title or 'Untitled page'} (confidence {w.confidence:.1f})" + (f" {w.url}" if w.url else "")
            for w in self.web_sources)

    def cited_sections(self, number: int) -> list[str]:
        """The sections of the paper that citations [number] come from, in order, once each."""
        return list(dict.fromkeys(c.section for c in self.citations if c.number == number and c.section))

    def caveat(self, more_at: str = "--explain") -> str | None:
        """The one line of caveat shown under the answer: its first note, and how many more there are and where
        (`more_at`: `pmc-rag ask --explain`, a chat's JSON, the page's details)."""
        if not self.notes:
            return None
        more = len(self.notes) - 1
        return self.notes[0] + (f" ({more} more note{'s' if more > 1 else ''}: {more_at})" if more else "")

    def as_text(self, explain: bool = False) -> str:
        """The answer first, with at most one line of caveat, then its numbered references, as plain text (`pmc-rag
        ask`); `explain`: every note, and which model answered and why (`pmc-rag ask --explain`)."""
        if self.kind != "answer":  # a fixed reply is its text alone
            return self.answer
        lines = ([self.safety, ""] if self.safety else []) + [self.answer or "(no answer)", ""]
        if explain and self.notes:
            lines += [f"Note: {note}" for note in self.notes] + [""]
        elif self.notes:
            lines += [f"Note: {self.caveat()}", ""]
        if self.references:
            lines.append("References")
        for ref in sorted(self.references, key=lambda r: r.number):
            ids = ", ".join(x for x in (ref.pmcid, f"PMID {ref.pmid}" if ref.pmid else None,
                                        f"doi:{ref.doi}" if ref.doi else None) if x)
            venue = " ".join(str(part) for part in (ref.journal, ref.year) if part)
            where = ref.locator()
            lines.append(f"[{ref.number}] " + ". ".join(p for p in (ref.title or "Untitled abstract", venue, ids, where,
                                                                   ref.evidence_words()) if p))
            if ref.origin != "corpus":
                lines.append(f"    {ref.source_id}: {ref.origin}")
            sections = self.cited_sections(ref.number)
            if self.route == "summarise" and sections:
                lines.append(f"    sections cited: {'; '.join(sections)}")
            if ref.url:
                lines.append(f"    {ref.url}")
            if ref.evidence:
                lines.append(f'    "{ref.evidence}"')
        if self.not_answering:
            lines.append("Closest papers found (they may speak of its subjects, but do not answer the question):"
                         if self.flags.get("related_findings") else
                         "Closest papers found (they do not answer the question):")
            lines += [f"- {p.source_id}: {p.title or 'Untitled abstract'}" + (f" {p.url}" if p.url else "")
                      for p in self.not_answering]
        if self.web_sources:
            lines.append(self.web_source_lines())
        total = self.timings_ms.get("total", 0) / 1000
        by = self.model or ("no model (none was asked)" if self.flags.get("not_answered") else
                            "no model (the best paper's conclusion quoted)" if self.flags.get("quoted_first") else
                            "no model (passages quoted)")
        if explain:
            failed = f"; failed first: {', '.join(self.failed_generators)}" if self.failed_generators else ""
            lines += ["", f"Answered by {by} in {total:.1f} s" + (f" (route: {self.route})" if self.route else "")
                      + failed]
            # what was removed is described, never quoted: it is model text that failed the checks
            lines += [f"Removed: a sentence citing {', '.join(claim.cited) or 'nothing'} ({claim.judgement}"
                      + (f", {claim.reason}" if claim.reason else "") + ")" for claim in self.removed_claims]
        return "\n".join(lines)


def answer_fields_markdown() -> str:
    """The table in docs/asking.md of the answer object's fields, from the descriptions above."""
    rows = ["| field | meaning |", "|---|---|"]
    for name, field in Answer.model_fields.items():
        rows.append(f"| `{name}` | {field.description} |")
    return "\n".join(rows)
