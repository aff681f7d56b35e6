"""The PubMedQA corpus format: one JSON object a line, an abstract split into labelled sections.

    {"pmid": "15703931", "year": "2005", "mesh_terms": [...],
     "sections": [{"label": "PURPOSE", "text": "..."}, ..., {"label": "CONCLUSIONS", "text": "..."}]}

The set has no titles, journals or PMCIDs, so these articles are cited by PMID.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from pmc_rag.ingestion.article import Article, Section
from pmc_rag.ingestion.xml import IngestError


def looks_like_pubmedqa(first_line: str) -> bool:
    try:
        record = json.loads(first_line)
    except ValueError:
        return False
    return isinstance(record, dict) and "pmid" in record and "sections" in record


def parse_pubmedqa(data: bytes, source_file: str) -> Iterator[Article | IngestError]:
    """Yield an Article per good line and an IngestError per bad one, so one bad line skips only itself."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{source_file}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            yield IngestError(f"{where}: bad character encoding ({error}); the file must be UTF-8")
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            yield IngestError(f"{where}: not valid JSON ({error})")
            continue
        try:
            yield _article(record, source_file)
        except IngestError as error:
            yield IngestError(f"{where}: {error}")


def _article(record: object, source_file: str) -> Article:
    if not isinstance(record, dict):
        raise IngestError("expected a JSON object with 'pmid' and 'sections'")
    pmid = str(record.get("pmid") or "").strip()
    if not re.fullmatch(r"\d+", pmid):
        raise IngestError(f"'pmid' must be digits, got {record.get('pmid')!r}")
    sections_in = record.get("sections")
    if not isinstance(sections_in, list):
        raise IngestError("'sections' must be a list of {'label', 'text'} objects")
    sections = []
    for part in sections_in:
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            raise IngestError("each section must be an object with a string 'text'")
        label = str(part.get("label") or "").strip()
        sections.append(Section(f"Abstract: {label.title()}" if label else "Abstract", part["text"], kind="abstract"))
    year = str(record.get("year") or "").strip()
    mesh_terms = record.get("mesh_terms") or []
    return Article(
        source_format="pubmedqa",
        pmid=pmid,
        pub_date=year if re.fullmatch(r"\d{4}", year) else None,
        year=int(year) if re.fullmatch(r"\d{4}", year) else None,
        mesh_terms=[str(term) for term in mesh_terms],
        sections=sections,
        source_file=source_file,
    )
