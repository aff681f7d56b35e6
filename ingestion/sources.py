"""Turn the paths a user gives (files, folders, globs) into Articles, reporting what cannot be read.

Every problem becomes an `IngestError` naming the file (and line, for JSONL) and the reason, so the caller
can report it and go on with the rest of the batch.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Iterator
from pathlib import Path

from pmc_rag.ingestion.article import Article
from pmc_rag.ingestion.documents import PDF_SUFFIXES, is_pdf, is_text, read_document
from pmc_rag.ingestion.jats import is_jats, parse_jats
from pmc_rag.ingestion.pubmed import is_pubmed, parse_pubmed
from pmc_rag.ingestion.pubmedqa import looks_like_pubmedqa, parse_pubmedqa
from pmc_rag.ingestion.xml import IngestError, local_name, parse_xml, read_bytes

# Files picked up when walking a folder; a file named explicitly (or by a glob) is tried whatever its name. Text
# files (.txt, .md) are read only when named: in a folder they are mostly READMEs and licences, not documents.
INGESTIBLE_SUFFIXES = (".xml", ".nxml", ".jsonl", ".xml.gz", ".nxml.gz", ".jsonl.gz", *PDF_SUFFIXES)


def expand_paths(inputs: Iterable[str]) -> tuple[list[Path], list[IngestError]]:
    """Files named by `inputs` (sorted, without repeats) and an error for each input that names nothing."""
    files: dict[Path, None] = {}
    problems = []
    for raw in inputs:
        matches = sorted(glob.glob(raw, recursive=True)) if glob.has_magic(raw) else [raw]
        if not matches:
            problems.append(IngestError(f"{raw}: the pattern matches no files"))
        for match in matches:
            path = Path(match)
            if path.is_dir():
                # Symlinks too, even dangling ones, so that a broken link is reported rather than passed over.
                found = sorted(p for p in path.rglob("*") if (p.is_file() or p.is_symlink())
                               and p.name.endswith(INGESTIBLE_SUFFIXES))
                if not found:
                    problems.append(IngestError(
                        f"{path}: the folder holds no {', '.join(INGESTIBLE_SUFFIXES)} files"))
                files.update(dict.fromkeys(found))
            elif path.exists():
                files[path] = None
            elif path.is_symlink():  # a link to nothing, or a loop of links: read_articles says which
                files[path] = None
            else:
                problems.append(IngestError(f"{path}: no such file or folder"))
    return list(files), problems


def read_articles(path: Path) -> Iterator[Article | IngestError]:
    """Yield each Article in a file, or an IngestError for the file (or for each bad record in it)."""
    source = str(path)
    try:
        data = read_bytes(path)
    except IngestError as error:
        yield error
        return
    except OSError as error:
        yield IngestError(f"{source}: cannot read the file ({error.strerror or error})")
        return

    if not data.strip():
        yield IngestError(f"{source}: the file is empty")
        return
    if is_pdf(path, data) or is_text(path):
        try:
            yield _checked(read_document(path, data))
        except IngestError as error:
            yield error
        return
    head = data.lstrip()[:1]
    if head == b"{" or path.name.endswith((".jsonl", ".jsonl.gz")):
        first_line = data.lstrip().split(b"\n", 1)[0].decode("utf-8", errors="replace")
        if not looks_like_pubmedqa(first_line):
            yield IngestError(
                f"{source}: unknown JSON format; expected PubMedQA corpus lines with 'pmid' and 'sections'")
            return
        for item in parse_pubmedqa(data, source):
            yield _checked(item) if isinstance(item, Article) else item
        return
    if head != b"<" and not data.startswith(b"\xef\xbb\xbf<") and not _utf16_xml(data):
        yield IngestError(
            f"{source}: unknown format; expected PMC/JATS XML, PubMed XML (PubmedArticleSet), PubMedQA JSONL, "
            "PDF or plain text (.txt, .md)")
        return
    try:
        root = parse_xml(data, source)
        if is_jats(root):
            articles = parse_jats(root, source)
        elif is_pubmed(root):
            articles = parse_pubmed(root, source)
        else:
            raise IngestError(
                f"{source}: unknown XML format <{local_name(root)}>; expected <article>, <pmc-articleset> or "
                "<PubmedArticleSet>")
    except IngestError as error:
        yield error
        return
    for article in articles:
        yield _checked(article)


def _utf16_xml(data: bytes) -> bool:
    """Whether the bytes are XML in UTF-16 with its byte order mark (lxml reads those as they are)."""
    if not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    return data[:200].decode("utf-16", errors="ignore").lstrip("\ufeff").lstrip().startswith("<")


def _checked(article: Article) -> Article | IngestError:
    """The article, or an error if it cannot be cited or has nothing to index."""
    try:
        source_id = article.source_id
    except ValueError as error:
        return IngestError(f"{article.source_file}: {error}")
    if not article.has_text():
        return IngestError(f"{article.source_file}: {source_id} has no text (no abstract, body or captions)")
    return article
