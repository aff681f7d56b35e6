"""The parsed form of one paper, whatever format it came from.

Parsers (`jats`, `pubmed`, `pubmedqa`) produce `Article`s; `Article.section_documents()` turns one into
Haystack `Document`s, one per section, which the indexing pipeline chunks, embeds and writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pmc_rag.ingestion.evidence import classify_evidence

if TYPE_CHECKING:  # Haystack takes 1.5 s to import; a reader of files (the contained upload reader) needs none of it
    from haystack import Document


@dataclass
class Section:
    """A titled run of text that a chunk never crosses: an abstract part, a body section, a caption."""

    title: str
    text: str
    # Where the text sits in the paper: "abstract", "body", "caption".
    kind: str = "body"
    # The page it is on, for documents with pages (PDF); a section never spans two pages, so neither does a chunk.
    page: int | None = None


@dataclass
class Article:
    """Bibliographic metadata plus the text of one paper, format-independent."""

    source_format: str  # "jats", "pubmed", "pubmedqa", "pdf", "text"
    pmcid: str | None = None  # always "PMC<digits>" when set
    pmid: str | None = None  # digits only
    doi: str | None = None
    title: str | None = None
    authors: list[str] = field(default_factory=list)
    journal: str | None = None
    pub_date: str | None = None  # ISO "YYYY", "YYYY-MM" or "YYYY-MM-DD"
    year: int | None = None
    article_type: str | None = None  # JATS @article-type, or the first MEDLINE publication type
    publication_types: list[str] = field(default_factory=list)
    mesh_terms: list[str] = field(default_factory=list)
    license: str | None = None  # normalised short name, e.g. "CC BY 4.0"
    license_url: str | None = None
    sections: list[Section] = field(default_factory=list)
    source_file: str | None = None
    # A document of the user's own (no PMCID or PMID): "doc:" and the first 16 hex digits of its file's SHA-256,
    # so the same file always gets the same id, and ingesting it again replaces it.
    doc_id: str | None = None
    collection: str | None = None  # the user's name for a set of documents, to search or delete them together
    # An upload over HTTP (pmc_rag.ingestion.collections.uploaded_copy): the key's owner id that sent it, and the
    # id the file gave itself (a PMCID, say), which nothing has checked.
    uploaded_by: str | None = None
    claimed_id: str | None = None

    @property
    def source_id(self) -> str:
        """The id a citation uses: `PMC<digits>`, else `PMID:<digits>`, else `doc:<hex>`, else `doi:<doi>`.

        This is the documented citation scheme: full-text papers cite by PMCID, abstracts with no PMCID by
        PMID, the user's own documents (PDF, text) by their content's hash, and papers with none of these (some
        publisher XML) by DOI.
        """
        if self.pmcid:
            return self.pmcid
        if self.pmid:
            return f"PMID:{self.pmid}"
        if self.doc_id:
            return self.doc_id
        if self.doi:
            return f"doi:{self.doi}"
        raise ValueError("article has no PMCID, PMID or DOI, so it cannot be cited")

    def has_text(self) -> bool:
        return any(section.text.strip() for section in self.sections)

    def metadata(self) -> dict[str, Any]:
        """The metadata every chunk of this article carries (enough to cite it and to filter on it)."""
        evidence = classify_evidence(
            publication_types=self.publication_types,
            article_type=self.article_type,
            title=self.title,
            mesh_terms=self.mesh_terms,
        )
        return {
            "source_id": self.source_id,
            "pmcid": self.pmcid,
            "pmid": self.pmid,
            "doi": self.doi,
            "title": self.title,
            "authors": self.authors,
            "journal": self.journal,
            "pub_date": self.pub_date,
            "year": self.year,
            "article_type": self.article_type,
            "publication_types": self.publication_types,
            "mesh_terms": self.mesh_terms,
            "license": self.license,
            "license_url": self.license_url,
            "evidence_level": evidence.label,
            "evidence_rank": evidence.rank,
            "source_format": self.source_format,
            "source_file": self.source_file,
            **({"collection": self.collection} if self.collection else {}),
            **({"uploaded_by": self.uploaded_by, "claimed_id": self.claimed_id} if self.uploaded_by else {}),
        }

    def section_documents(self) -> list[Document]:
        """One Document per non-empty section, in reading order, each with the article's metadata."""
        from haystack import Document

        base = self.metadata()
        documents = []
        for index, section in enumerate(s for s in self.sections if s.text.strip()):
            meta = {**base, "section": section.title, "section_kind": section.kind, "section_index": index}
            if section.page is not None:
                meta["page"] = section.page
            documents.append(Document(content=_CONTROL_CHARACTERS.sub("", section.text), meta=meta))
        return documents


# PostgreSQL text cannot hold NUL, and other C0 controls are noise; JSON sources can carry them.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


_WHITESPACE = re.compile(r"\s+")


def normalise_space(text: str | None) -> str:
    """Collapse runs of whitespace (XML indentation, line breaks) into single spaces."""
    return _WHITESPACE.sub(" ", text or "").strip()


def year_from(date: str | None) -> int | None:
    match = re.match(r"(\d{4})", date or "")
    return int(match.group(1)) if match else None


def iso_date(year: str | None, month: str | None = None, day: str | None = None) -> str | None:
    """Build "YYYY[-MM[-DD]]" from parts that may be missing, or be month names ("Jan")."""
    if not year or not re.fullmatch(r"\d{4}", year.strip()):
        return None
    parts = [year.strip()]
    month_number = _month_number(month)
    if month_number:
        parts.append(f"{month_number:02d}")
        if day and day.strip().isdigit() and 1 <= int(day) <= 31:
            parts.append(f"{int(day):02d}")
    return "-".join(parts)


_MONTHS = {name: i for i, name in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}


def _month_number(month: str | None) -> int | None:
    if not month:
        return None
    month = month.strip().lower()
    if month.isdigit():
        number = int(month)
        return number if 1 <= number <= 12 else None
    return _MONTHS.get(month[:3])
