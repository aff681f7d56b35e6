"""A cited paper as the reference list shows it, and where to read it.

Usage:
```python
from pmc_rag.components.references import source_link

source_link({"pmcid": "PMC3297584"})  # "https://pmc.ncbi.nlm.nih.gov/articles/PMC3297584/"
```
"""

from __future__ import annotations

from typing import Any

from haystack import Document

from pmc_rag.components.citations import best_sentence
from pmc_rag.components.claim import Claim
from pmc_rag.components.model_sentences import with_marks


def source_link(meta: dict[str, Any]) -> str | None:
    """The paper's page: PubMed Central, else PubMed, else its DOI; None for a document without one."""
    if meta.get("pmcid"):
        return f"https://pmc.ncbi.nlm.nih.gov/articles/{meta['pmcid']}/"
    if meta.get("pmid"):
        return f"https://pubmed.ncbi.nlm.nih.gov/{meta['pmid']}/"
    if meta.get("doi"):
        return f"https://doi.org/{meta['doi']}"
    return None


def reference(number: int, source_id: str, document: Document, citations: list[dict],
               chunks: list[Document] | None = None) -> dict[str, Any]:
    """The reference list's entry for a cited paper: where to find it, and the sentence of its excerpt that best
    supports what cites it, located (section, page, chunk)."""
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


def numbered(claims: list[Claim], by_id: dict[str, list[Document]]
             ) -> tuple[list[str], list[dict[str, Any]], dict[str, int]]:
    """The claims' sentences with their citation marks ("... [1]"), one citation per cited paper of each claim
    (the paper's excerpt and sentence that best support it), and each cited paper's number, in first-cited order.
    `by_id`: each paper's excerpts (`citations.by_paper`); a claim with a `passage` is its own evidence."""
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
        sentences.append(with_marks(claim["text"], marks))
    return sentences, citations, numbers
