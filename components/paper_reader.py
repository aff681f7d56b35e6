"""Finds the paper a summary request names and gives its chunks in the paper's own order, within a token budget."""

from __future__ import annotations

import re
from typing import Any

from haystack import Document, component, default_to_dict
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
from psycopg import sql

from pmc_rag.components.citations import content_words, paper_ids
from pmc_rag.components.claim_signals import finding_rank
from pmc_rag.components.excerpt_budget import estimated_tokens
from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.components.section_kinds import FINDINGS_SECTION, is_plain_abstract, is_readable_evidence
from pmc_rag.components.store_connection import connect, with_store_from_dict

# Read first when a paper does not fit: what it found and concluded, then how, then why. Captions, supporting
# information and back matter are never read (a caption is not a finding: issue 32).
_PRIORITY = (("abstract", re.compile(r"", re.I)),
             ("body", re.compile(r"^(?:conclusions?|summary)\b", re.I)),
             ("body", re.compile(r"^results?\b|^findings\b", re.I)),
             ("body", re.compile(r"^discussion\b", re.I)),
             ("body", re.compile(r"^(?:materials and )?methods?\b|^patients and methods\b", re.I)),
             ("body", re.compile(r"", re.I)))


@component
class PaperReader:
    """
    Resolves the paper a question names (a PMC id, PMID, DOI, `doc:` id, or a phrase of its title) and returns
    its chunks in document order: what a summary is written from.

    A paper longer than `max_tokens` is read in part: its abstract first, then the first chunks of its
    conclusion, results, discussion and methods sections, in that order of preference, shown in the paper's own
    order; captions and back matter never. `excerpts_dropped` counts what was left out, and the answer says so.

    With `sentences_per_passage`, a paper that does not fit is first condensed (the map step of a map-reduce
    summary, done without the model): each passage outside the abstract keeps only that many of its sentences,
    its findings first (then other sentences; aims, captions and methods last), in the passage's own order. More
    of the paper's sections then fit, and the model's summary (the reduce step) is written from the paper's own
    sentences, which the claim check holds it to. A shortened passage says so in `meta["sentences_read"]`
    ("2 of 9").

    When no indexed paper matches, nothing goes to `documents`; `unanswered` gets the papers whose titles came
    closest (if any) and `why_unanswered` says what was looked for, so the model is not asked. Given
    `otherwise_search` (a two-step question's first part), it goes out as `search_question` instead: a paper
    named in passing ("the MDR-TB meta-analysis names ...") that no title matches is searched for as today.

    Usage:
    ```python
    from pmc_rag.components.paper_reader import PaperReader

    reader = PaperReader(document_store=store, max_tokens=2000)
    reader.run(paper="PMC4816447")     # {"documents": [abstract, ..., conclusion], "excerpts_dropped": 30,
                                       #  "unread": [<the 30 passages left out>], "paper_id": "PMC4816447"}
    reader.run(paper="FIELT")          # the same paper, found by its title
    reader.run(paper="STEP 1", otherwise_search="Which drug did the STEP 1 trial test")  # {"search_question": ...}
    reader.run(paper="FIELT", papers=["FIELT", "PMC6580637"])   # both papers, 1,000 tokens each
    # {"documents": [...], "paper_ids": ["PMC4816447", "PMC6580637"], "unread": [], ...}
    PaperReader(document_store=store, max_excerpts=16, sentences_per_passage=2).run(paper="PMC4816447")
    ```
    """

    def __init__(self, *, document_store: PgvectorDocumentStore, max_tokens: int = 2000, max_excerpts: int = 8,
                 chars_per_token: float = 3.0, tokens_per_excerpt_label: int = 40, min_title_share: float = 0.6,
                 min_words: int = 8, sentences_per_passage: int = 0, by_relevance: bool = False):
        """
        :param document_store: The store the chunks live in.
        :param max_tokens: Tokens the chunks may take in the prompt (estimated as `ExcerptBudget` does).
        :param max_excerpts: Most chunks to pass on.
        :param min_title_share: A title phrase names a paper when at least this share of its content words are
            in the paper's title, and no other title has as many.
        :param min_words: Chunks of fewer words (a trial registration number) are not read.
        :param sentences_per_passage: For a paper longer than `max_tokens`: how many sentences of each passage
            outside the abstract to read (its findings first). 0: passages are read whole.
        :param by_relevance: Given the question's `query_embedding`, a paper that does not fit is read by its
            passages closest to the question (by their stored vectors), not abstract first: "How many patients were
            in the FIELT trial?" needs its results, "Which skin toxicities ..." its safety section. Shown in the
            paper's order either way.
        """
        if sentences_per_passage < 0:
            raise ValueError(f"sentences_per_passage must be 0 (read passages whole) or more, not "
                             f"{sentences_per_passage}")
        self.document_store = document_store
        self.max_tokens = max_tokens
        self.max_excerpts = max_excerpts
        self.chars_per_token = chars_per_token
        self.tokens_per_excerpt_label = tokens_per_excerpt_label
        self.min_title_share = min_title_share
        self.min_words = min_words
        self.sentences_per_passage = sentences_per_passage
        self.by_relevance = by_relevance

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict(), max_tokens=self.max_tokens,
                               max_excerpts=self.max_excerpts, chars_per_token=self.chars_per_token,
                               tokens_per_excerpt_label=self.tokens_per_excerpt_label,
                               min_title_share=self.min_title_share, min_words=self.min_words,
                               sentences_per_passage=self.sentences_per_passage, by_relevance=self.by_relevance)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PaperReader:
        return cls(**with_store_from_dict(data)["init_parameters"])

    @component.output_types(documents=list[Document], paper_id=str, paper_ids=list[str], excerpts_dropped=int,
                            unread=list[Document], unanswered=list[Document], why_unanswered=str,
                            search_question=str)
    def run(self, paper: str, otherwise_search: str | None = None, papers: list[str] | None = None,
            query_embedding: list[float] | None = None, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        :param paper: The paper's id, or words of its title.
        :param otherwise_search: What to search for instead when no indexed paper matches (the first part of a
            two-step question): it goes out as `search_question`, and nothing is said unanswered.
        :param papers: Two papers or more to read together (a comparison of papers the question names, `paper`
            among them): each gets an equal share of the budget, and all must be found.
        :param query_embedding: The question's embedding, read with `by_relevance` (normalised, as the index's).
        :param filters: What the request may read (its filters and `pmc_rag.serving.access`'s condition): a paper
            outside them is neither found, by id or title, nor listed among the closest titles. Another key's
            upload, or a forged copy of a corpus paper's title, is therefore never read for a named paper.
        :returns: `documents` (the chunks read, in the paper's order; several papers one after another),
            `paper_id` (its source id; the first paper's), `paper_ids` (each paper's), `excerpts_dropped` and
            `unread` (the passages left out, in the paper's order: `SectionKeyFindings` quotes their key findings;
            none for several papers); or, when a paper matches none, `unanswered` and `why_unanswered` (or
            `search_question`).
        """
        names = list(dict.fromkeys(papers or [paper]))
        fetched: dict[str, list[Document]] = {}  # a paper's readable chunks, fetched once: to resolve and to read
        with connect(self.document_store) as connection:
            found = [(name, *self._resolve(connection, name, filters, fetched)) for name in names]
        missing = next(((name, closest) for name, source_id, closest in found if source_id is None), None)
        if missing and otherwise_search:
            return {"search_question": otherwise_search}
        if missing:
            name, closest = missing
            return {"unanswered": closest, "why_unanswered": (
                f"No indexed paper is {name!r}" if paper_ids(name) else
                f"No indexed paper's title matches {name!r}") + (
                ": ask with its PMC id, PMID or DOI, or with more words of its title." if not closest else
                "; the closest titles are listed below. Ask with one of their ids to summarise it.")}
        source_ids = list(dict.fromkeys(source_id for _, source_id, _ in found))
        share = len(source_ids)
        read, unread = [], []
        for source_id in source_ids:
            chunks = list(self._chunks(source_id, filters, fetched))
            chunks.sort(key=lambda d: int(d.meta.get("chunk_index") or 0))
            readable = [d for d in chunks if is_readable_evidence(d) and
                        len((d.content or "").split()) >= self.min_words]
            if self.sentences_per_passage and sum(self._cost(d) for d in readable) > self.max_tokens // share:
                readable = [d if d.meta.get("section_kind") == "abstract" else self._condensed(d) for d in readable]
            if self.by_relevance and query_embedding is not None:
                # What the abstract found first (its results and conclusion: the count, the main figure), then
                # every other passage by its closeness to the question.
                readable.sort(key=lambda d: (not _abstract_finding(d), -_similarity(d.embedding, query_embedding)))
            budget = (self.max_tokens // share, max(1, self.max_excerpts // share))
            chosen = self._in_order_within_budget(readable, *budget) if self.by_relevance and \
                query_embedding is not None else self._within_budget(readable, *budget)
            readable.sort(key=lambda d: int(d.meta.get("chunk_index") or 0))
            read += [d for d in readable if d.id in chosen]
            unread += [d for d in readable if d.id not in chosen]
        # Several papers are compared by what each concluded; the key finding of every section left out would
        # bury that under one paper's details.
        return {"documents": read, "paper_id": source_ids[0], "paper_ids": source_ids, "excerpts_dropped": len(unread),
                "unread": unread if share == 1 else []}

    def _cost(self, chunk: Document) -> int:
        return estimated_tokens(chunk, self.chars_per_token, self.tokens_per_excerpt_label)

    def _condensed(self, chunk: Document) -> Document:
        """The passage cut to its `sentences_per_passage` most telling sentences, in its own order."""
        sentences = split_sentences(chunk.content or "")
        if len(sentences) <= self.sentences_per_passage:
            return chunk
        section = chunk.meta.get("section")
        ranked = sorted(range(len(sentences)), key=lambda i: (-finding_rank(sentences[i], section), i))
        kept = sorted(ranked[:self.sentences_per_passage])
        return Document(id=chunk.id, content=" ".join(sentences[i] for i in kept), embedding=chunk.embedding,
                        meta={**chunk.meta, "sentences_read": f"{len(kept)} of {len(sentences)}"})

    def _in_order_within_budget(self, chunks: list[Document], max_tokens: int, max_excerpts: int) -> set[str]:
        """The ids of the chunks read, in the order given, each that still fits."""
        chosen: set[str] = set()
        used = 0
        for chunk in chunks:
            cost = self._cost(chunk)
            if used + cost <= max_tokens and len(chosen) < max_excerpts:
                chosen.add(chunk.id)
                used += cost
        return chosen

    def _within_budget(self, chunks: list[Document], max_tokens: int, max_excerpts: int) -> set[str]:
        """The ids of the chunks read, by `_PRIORITY`, while they fit."""
        chosen: set[str] = set()
        used = 0
        for kind, pattern in _PRIORITY:
            for section_first_only in (True, False):
                seen_sections: set[str] = set()
                for chunk in chunks:
                    section = str(chunk.meta.get("section") or "")
                    top = section.split(" / ")[0]
                    if chunk.id in chosen or chunk.meta.get("section_kind", "body") != kind or not pattern.search(top):
                        continue
                    if section_first_only and kind == "body" and section in seen_sections:
                        continue
                    seen_sections.add(section)
                    cost = self._cost(chunk)
                    if used + cost > max_tokens or len(chosen) >= max_excerpts:
                        continue
                    chosen.add(chunk.id)
                    used += cost
        return chosen

    def _chunks(self, source_id: str, filters: dict[str, Any] | None, fetched: dict[str, list[Document]]
                ) -> list[Document]:
        """The paper's chunks the request may read (all of them without `filters`), kept in `fetched`."""
        if source_id not in fetched:
            paper = {"field": "meta.source_id", "operator": "==", "value": source_id}
            fetched[source_id] = self.document_store.filter_documents(
                paper if not filters else {"operator": "AND", "conditions": [paper, filters]})
        return fetched[source_id]

    def _resolve(self, connection: Any, paper: str, filters: dict[str, Any] | None,
                 fetched: dict[str, list[Document]]) -> tuple[str | None, list[Document]]:
        table = sql.Identifier(self.document_store.schema_name, self.document_store.table_name)
        ids = paper_ids(paper)
        if ids:
            wanted = ids[0]
            digits = re.sub(r"\D", "", wanted) if wanted.startswith(("PMC", "PMID")) else None
            rows = connection.execute(sql.SQL(
                "SELECT DISTINCT meta->>'source_id' FROM {} WHERE meta->>'source_id' = %(id)s "
                "OR meta->>'pmcid' = %(id)s OR (%(digits)s::text IS NOT NULL AND meta->>'pmid' = %(digits)s "
                "AND %(pmid)s) OR lower(meta->>'doi') = %(doi)s LIMIT 10").format(table),
                {"id": wanted, "digits": digits, "pmid": wanted.startswith("PMID"),
                 "doi": wanted[4:] if wanted.startswith("doi:") else None}).fetchall()
            return next((row[0] for row in rows if not filters or self._chunks(row[0], filters, fetched)), None), []
        words = sorted(set(content_words(paper)))
        if not words:
            return None, []
        patterns = [f"%{w}%" for w in words]
        rows = connection.execute(sql.SQL(
            "SELECT DISTINCT meta->>'source_id', meta->>'title', meta->>'year' FROM {} "
            "WHERE meta->>'title' ILIKE ANY(%s) LIMIT 500").format(table), (patterns,)).fetchall()
        scored = sorted(((sum(w in set(content_words(title)) for w in words) / len(words), source_id, title, year)
                         for source_id, title, year in rows), reverse=True)
        # Only what the request may read competes: the best two readable titles (a tie is no match), and the
        # closest listed are readable too (another key's upload is not even named).
        readable = []
        for row in scored:
            if row[0] > 0 and (not filters or self._chunks(row[1], filters, fetched)):
                readable.append(row)
            if len(readable) == 3:
                break
        if readable and readable[0][0] >= self.min_title_share and (
                len(readable) == 1 or readable[1][0] < readable[0][0]):
            return readable[0][1], []
        closest = [Document(content=title, meta={"source_id": source_id, "title": title, "year": year})
                   for share, source_id, title, year in readable]
        return None, closest


def _similarity(embedding: list[float] | None, query_embedding: list[float]) -> float:
    """Cosine of two normalised vectors; a chunk stored without one comes last."""
    return float(sum(a * b for a, b in zip(embedding, query_embedding))) if embedding else -1.0


def _abstract_finding(chunk: Document) -> bool:
    """A chunk of the abstract's results or conclusion, or of an abstract without headings."""
    section = str(chunk.meta.get("section") or "")
    return chunk.meta.get("section_kind") == "abstract" and (bool(FINDINGS_SECTION.search(section)) or
                                                              is_plain_abstract(section))
