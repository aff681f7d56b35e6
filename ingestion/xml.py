"""Safe XML parsing and text extraction shared by the JATS and PubMed parsers.

Publisher XML declares external DTDs (often by URL) and uses the named entities those DTDs define
(`&rsqb;`, `&thinsp;`...). We never load a DTD, expand an entity declaration or touch the network: that
closes XXE, "billion laughs" and slow fetches. Undeclared named entities stay in the tree as entity
nodes, and `element_text` maps them to characters through the HTML5 entity table, which covers the
ISO sets the JATS and PubMed DTDs use.
"""

from __future__ import annotations

import errno
import html.entities
import os
import re
import stat
from pathlib import Path

from lxml import etree

from pmc_rag.ingestion.article import normalise_space


class IngestError(Exception):
    """A file or record that cannot be ingested; the message says why and what to do."""


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        load_dtd=False,
        dtd_validation=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        recover=False,
    )


def parse_xml(data: bytes, source: str) -> etree._Element:
    """Parse bytes into a root element, or raise `IngestError` naming the file, line and problem."""
    if not data.strip():
        raise IngestError(f"{source}: the file is empty")
    try:
        return etree.fromstring(data, parser=_parser())
    except etree.XMLSyntaxError as error:
        message = str(error)
        if "encoding" in message.lower() or "utf-8" in message.lower() or "bytes" in message.lower():
            raise IngestError(
                f"{source}: bad character encoding ({message}); re-save the file as UTF-8 or fix its XML "
                "encoding declaration"
            ) from None
        raise IngestError(f"{source}: malformed or truncated XML ({message})") from None


def max_file_bytes() -> int:
    """The most bytes one input file may hold, once decompressed: $PMC_RAG_MAX_FILE_MB megabytes (default 512,
    about twice the largest PubMed baseline file), so that a compressed bomb fails at the limit, not at the end
    of the machine's memory."""
    value = os.environ.get("PMC_RAG_MAX_FILE_MB", "512")
    try:
        megabytes = float(value)
    except ValueError:
        raise IngestError(f"PMC_RAG_MAX_FILE_MB must be a number of megabytes, not {value!r}") from None
    return int(megabytes * 1024 * 1024)


def read_bytes(path: Path) -> bytes:
    """Read a regular file, transparently gunzipping `*.gz`, up to `max_file_bytes()`."""
    try:
        info = os.stat(path)
    except OSError as error:
        if error.errno == errno.ENOENT and os.path.islink(path):
            raise IngestError(f"{path}: a symbolic link to {os.readlink(path)}, which does not exist") from None
        raise IngestError(f"{path}: {_os_problem(error)}") from None
    if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block the read, or never end
        raise IngestError(f"{path}: not a regular file (a pipe, socket or device); name a file or a folder")
    limit = max_file_bytes()
    too_big = (f"{path}: more than {limit / 1048576:g} MB{{}}; split it, or raise PMC_RAG_MAX_FILE_MB if it is "
               "genuine")
    if info.st_size > limit:
        raise IngestError(too_big.format(""))
    if path.suffix != ".gz":
        return path.read_bytes()
    import gzip
    import zlib

    try:
        with gzip.open(path, "rb") as compressed:
            data = compressed.read(limit + 1)  # reads no further than the limit, whatever the file claims
    except (OSError, EOFError, zlib.error) as error:
        raise IngestError(f"{path}: not a readable gzip file ({error})") from None
    if len(data) > limit:
        raise IngestError(too_big.format(" once decompressed (a compressed bomb?)"))
    return data


def _os_problem(error: OSError) -> str:
    """An OSError in words a user can act on."""
    if error.errno == errno.ELOOP:
        return "a loop of symbolic links; fix the link"
    if error.errno == errno.ENOENT:
        return "no such file or folder"
    if error.errno == errno.EACCES:
        return "permission denied"
    return error.strerror or str(error)


_ENTITIES = html.entities.html5


def _entity_text(node: etree._Entity) -> str:
    name = node.name
    return _ENTITIES.get(f"{name};") or _ENTITIES.get(name) or ""


# Elements whose content is not prose: citing them inline would drop numbers into sentences.
SKIPPED_INLINE = {"xref", "fn", "table-wrap", "fig", "disp-formula", "inline-formula", "alternatives", "graphic"}


def element_text(element: etree._Element | None, skip: set[str] = frozenset()) -> str:
    """The text of an element and its descendants with whitespace collapsed, skipping `skip` subtrees.

    Resolves undeclared named entities and treats block children as word boundaries.
    """
    if element is None:
        return ""
    pieces: list[str] = []
    _collect(element, pieces, skip)
    return _tidy_removed_citations(normalise_space("".join(pieces)))


# What dropping citation numbers leaves behind: "shown [, ]" or "previously ." or "( )".
_EMPTY_BRACKETS = re.compile(r"\s*[\[(][\s,;\u2013\u2014\-]*[\])]")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])")


def _tidy_removed_citations(text: str) -> str:
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", _EMPTY_BRACKETS.sub("", text))


def _collect(element: etree._Element, pieces: list[str], skip: set[str]) -> None:
    if isinstance(element, etree._Entity):
        pieces.append(_entity_text(element))
        return
    if not isinstance(element.tag, str):  # comments and processing instructions
        return
    if local_name(element) in skip:
        pieces.append(" ")  # keep the words on either side apart ("written" + formula + "in which")
        return
    if element.text:
        pieces.append(element.text)
    for child in element:
        _collect(child, pieces, skip)
        if isinstance(child.tag, str) and local_name(child) in _BLOCK_ELEMENTS:
            pieces.append(" ")
        if child.tail:
            pieces.append(child.tail)


_BLOCK_ELEMENTS = {"p", "title", "label", "caption", "list-item", "td", "th", "tr", "AbstractText", "sec"}


def local_name(element: etree._Element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def first_text(root: etree._Element, xpath: str, **namespaces: str) -> str | None:
    """Text of the first element matching `xpath`, or None when there is none or it is blank."""
    found = root.xpath(xpath, namespaces=namespaces or None)
    for item in found:
        text = item if isinstance(item, str) else element_text(item)
        text = normalise_space(text)
        if text:
            return text
    return None
