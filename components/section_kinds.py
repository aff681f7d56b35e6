"""What kind of passage a chunk's section makes it: a finding, back matter, or a caption. One place, so that the
paper reader, the excerpt balance and the answer builder agree on what counts as evidence."""

from __future__ import annotations

import re

from haystack import Document

# Sections that report what a study found.
FINDINGS_SECTION = re.compile(r"conclu|result|finding|discussion|interpretation|summary", re.IGNORECASE)
# The paper's own answer, among its findings sections.
CONCLUSION_SECTION = re.compile(r"conclu|interpretation", re.IGNORECASE)

# Supporting information and back matter: never read as evidence of anything the paper found.
BACK_MATTER = re.compile(r"^(?:abstract: )?(?:supporting information|supplementary|electronic supplementary|acknowledg|"
                         r"funding|competing|author|abbreviations|references|ethics|(?:trial |systematic review )?"
                         r"registration|(?:editors'|patient|plain language|lay) summary)", re.IGNORECASE)


def is_findings_section(document: Document) -> bool:
    """Whether the chunk's section reports findings (results, conclusions, discussion)."""
    return bool(FINDINGS_SECTION.search(str(document.meta.get("section") or "")))


def is_plain_abstract(section: object) -> bool:
    """Whether a section is an abstract without headings: the authors' own summary, which ends with what they
    concluded (a structured abstract's parts are "Abstract: Results", "Abstract: Conclusions", ...)."""
    return section == "Abstract"


def is_readable_evidence(document: Document) -> bool:
    """Whether the chunk is running text of the paper: not a figure or table caption, not back matter (a caption
    is not a finding: issue 32)."""
    return document.meta.get("section_kind") != "caption" and not BACK_MATTER.match(str(document.meta.get("section") or ""))
