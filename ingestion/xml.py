"""Safe XML parsing and text extraction shared by the JATS and PubMed parsers.

Publisher XML declares external DTDs (often by URL) and uses the named entities those DTDs define
(`&rsqb;`, `&thinsp;`...). We never load a DTD, expand an entity declaration or touch the network: that
closes XXE, "billion laughs" and slow fetches. Undeclared named entities stay in the tree as entity
nodes, and `element_text` maps them to characters through the HTML5 entity table, which covers the
ISO sets the JATS and PubMed DTDs use.
"""

from __future__ import annotations

import html.entities
import re
from pathlib import Path

from lxml import etree

from ingestion.article import normalise_space


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


def read_bytes(path: Path) -> bytes:
    """Read a file, transparently gunzipping `*.gz`."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        import gzip

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise IngestError(f"{path}: not a readable gzip file ({error})") from None
    return data


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
