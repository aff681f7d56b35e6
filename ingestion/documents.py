"""The user's own documents: PDF (text extracted page by page, with page numbers) and plain text.

They have no PMCID or PMID, so each gets a stable id from its bytes: `doc:` and the first 16 hex digits of the
file's SHA-256 (the same file always gets the same id; ingesting it again replaces it). A PDF's sections never span
two pages, so every citation of a chunk can say on which page its sentence is; a line that is a paper's section
heading ("Results", "Conclusions", "2. Methods") starts a section of that name, which goes on across the pages
until the next heading (text before the first heading is "Page N"). So a PDF's conclusion is known for one, as a
JATS paper's is, and quoted first. Title, authors and year come from the PDF's own metadata where it has them,
else from the file name.

Usage:
```python
article = read_document(Path("trial-report.pdf"), data, collection="lab")   # an Article, or raises IngestError
```
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pmc_rag.components.section_kinds import BACK_MATTER
from pmc_rag.ingestion.article import Article, Section, normalise_space
from pmc_rag.ingestion.xml import IngestError

PDF_SUFFIXES = (".pdf",)
# A PDF longer than this is a book or a file built to keep the reader busy (pages cost a few bytes each when they
# share one content stream); either way it should be split first.
MAX_PDF_PAGES = 2000
TEXT_SUFFIXES = (".txt", ".md", ".text")

# Collection names: what `--collection` and the upload route accept.
COLLECTION_NAME = r"[a-z0-9][a-z0-9_-]{0,63}"
COLLECTION_RULE = "a collection name is 1-64 lower-case letters, digits, '_' and '-', starting with a letter or digit"

# A line of a PDF that is a section heading of a research paper, as journals print them: the sections of IMRaD and
# of back matter, numbered or not, and a structured abstract's parts ("Abstract: Conclusions"). A line alone is a
# heading only if it is nothing else.
_HEADING = re.compile(
    r"(?:\d+(?:\.\d+)*\.?\s+)?(?:abstract|summary|background|introduction|"
    r"(?:materials|patients|subjects) and methods|methods(?: and (?:materials|findings))?|methodology|results|"
    r"findings|results and discussion|discussion|conclusions?|interpretation|limitations|references|"
    r"acknowledge?ments?|funding|competing interests|author contributions|supporting information)"
    # and the subsections' names after it, numbered or not: "Methods / Study population", "Methods / 3.2: Spectra"
    r"(?:\s*[/:]\s*(?:\d+(?:\.\d+)*[.:]?\s+)?[^\W\d_][\w ,()'’-]{0,60}){0,3}",
    re.IGNORECASE)
# A line that starts a figure's or a table's caption, as journals print them: "Figure 2", "Fig. 2.", "Table 1:
# Baseline characteristics". Alone, or with punctuation after the number: a sentence that wraps onto a line starting
# "Figure 2 shows ..." is running text.
_CAPTION = re.compile(r"(?P<label>(?:fig(?:ure)?\.?|table)\s+[A-Z]?\d+[A-Za-z]?)(?:\s*$|[.:|]\s)", re.IGNORECASE)


def check_collection(name: str) -> str:
    if not re.fullmatch(COLLECTION_NAME, name or ""):
        raise IngestError(f"collection {name!r}: {COLLECTION_RULE}")
    return name


def is_pdf(path: Path, data: bytes) -> bool:
    return data[:1024].lstrip().startswith(b"%PDF-") or path.name.lower().endswith(PDF_SUFFIXES)


def is_text(path: Path) -> bool:
    return path.name.lower().endswith(TEXT_SUFFIXES)


def document_id(data: bytes) -> str:
    return "doc:" + hashlib.sha256(data).hexdigest()[:16]


def read_document(path: Path, data: bytes, collection: str | None = None) -> Article:
    """The PDF or text file as an Article; IngestError says what is wrong with it (and how to fix it)."""
    if is_pdf(path, data):
        article = _pdf(path, data)
    else:
        article = _text(path, data)
    article.doc_id, article.collection, article.source_file = document_id(data), collection, str(path)
    return article


def _pdf(path: Path, data: bytes) -> Article:
    import pypdfium2 as pdfium

    source = str(path)
    if not data.lstrip().startswith(b"%PDF-"):
        raise IngestError(f"{source}: not a PDF (it does not start with %PDF-); upload the PDF itself")
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        if "password" in str(error).lower():
            raise IngestError(f"{source}: the PDF is encrypted (password-protected); save an unprotected copy "
                              "and upload that") from None
        raise IngestError(f"{source}: the PDF cannot be read ({error}); it may be damaged or cut short, so "
                          "export or download it again") from None
    try:
        if len(pdf) > MAX_PDF_PAGES:
            raise IngestError(f"{source}: the PDF has {len(pdf)} pages; pmc-rag reads at most {MAX_PDF_PAGES} "
                              "pages per PDF, so split it (e.g. by chapter) and upload the parts")
        pages = []
        for number in range(len(pdf)):
            page = pdf[number]
            text_page = page.get_textpage()
            pages.append(text_page.get_text_bounded())
            text_page.close()
            page.close()
        metadata = pdf.get_metadata_dict(skip_empty=True)
    finally:
        pdf.close()
    if not pages:
        raise IngestError(f"{source}: the PDF has no pages")
    sections = _sections(pages)
    if not sections:
        raise IngestError(f"{source}: the PDF has no text layer (a scan?): none of its {len(pages)} page(s) "
                          "holds text; run OCR on it (e.g. ocrmypdf) and upload the result")
    year = re.match(r"D:(\d{4})", metadata.get("CreationDate", ""))
    return Article(source_format="pdf", title=normalise_space(metadata.get("Title")) or _title_from(path),
                   authors=_authors(metadata.get("Author", "")), year=int(year.group(1)) if year else None,
                   pub_date=year.group(1) if year else None, sections=sections)


def _is_heading(line: str) -> bool:
    """A line that names a section of a paper and says nothing else, or a back matter heading ("Editors' Summary:
    Why Was This Study Done?", "Funding"), as `section_kinds` knows them."""
    line = line.strip()
    return bool(_HEADING.fullmatch(line)) or (
        len(line.split()) <= 10 and not line.endswith(".") and bool(BACK_MATTER.match(line)))


def _sections(pages: list[str]) -> list[Section]:
    """The pages' text as sections: one per run of lines under the same heading on one page. A structured
    abstract's part ends with its page: what follows an abstract without a heading of its own (an introduction
    some journals leave untitled) is not its conclusion."""
    runs: list[tuple[str | None, int, list[str]]] = []  # (heading, page, lines)
    heading: str | None = None
    for number, text in enumerate(pages, start=1):
        if heading is not None and heading.lower().startswith("abstract"):
            heading = None
        runs.append((heading, number, []))
        for line in text.replace("\r\n", "\n").split("\n"):
            caption = _CAPTION.match(line.strip())
            if _is_heading(line) or caption:
                # a caption is its own section to the next heading: never read as the finding of the section
                # it interrupts (its kind says so, as for a JATS caption)
                heading = normalise_space(caption.group("label") if caption else line)
                runs.append((heading, number, []))
                if caption:
                    runs[-1][2].append(line.strip()[caption.end("label"):].lstrip(" .:|"))
            else:
                runs[-1][2].append(line)
    return [Section(title=title or f"Page {number}", text=_paragraphs("\n".join(lines)), page=number,
                    kind="caption" if title and _CAPTION.match(title) else "body")
            for title, number, lines in runs if "".join(lines).strip()]


def _text(path: Path, data: bytes) -> Article:
    source = str(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise IngestError(f"{source}: not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    if "\x00" in text:
        raise IngestError(f"{source}: binary data, not text; upload a PDF, plain text or PMC/PubMed XML")
    if not text.strip():
        raise IngestError(f"{source}: the file holds no text")
    lines = text.strip().splitlines()
    # A first short line is the title ("# Title" in Markdown too); the text is the rest, or all of it.
    first = lines[0].lstrip("# ").strip()
    titled = len(lines) > 1 and 0 < len(first) <= 200
    body = "\n".join(lines[1:]) if titled else text
    return Article(source_format="text", title=first if titled else _title_from(path),
                   sections=[Section(title="Text", text=_paragraphs(body))])


def _paragraphs(text: str) -> str:
    """Lines joined into paragraphs (PDF lines end mid-sentence). A hyphen at a line's end stays, joined to the
    next word: "first-line" must stay whole, and "treat-ment" is the lesser harm."""
    text = re.sub(r"-\n(?=\w)", "-", text.replace("\r\n", "\n"))
    paragraphs = re.split(r"\n\s*\n", text)
    return "\n\n".join(normalise_space(p) for p in paragraphs if p.strip())


def _title_from(path: Path) -> str:
    return re.sub(r"[_-]+", " ", path.stem).strip() or path.name


def _authors(field: str) -> list[str]:
    return [name.strip() for name in re.split(r";|,| and ", field) if name.strip()]
