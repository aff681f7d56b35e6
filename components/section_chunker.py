"""Section-aware chunking that keeps whole sentences together and needs no downloaded tokenizer data."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

# A sentence ends at . ! or ? followed by space and an upper-case letter, digit or bracket, unless the
# word before the stop is a known abbreviation or an initial ("et al.", "Fig.", "J.").
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9(\[])")
_ABBREVIATIONS = {
    "al.", "e.g.", "i.e.", "fig.", "figs.", "vs.", "approx.", "ca.", "cf.", "dr.", "no.", "nos.", "eq.", "eqs.",
    "ref.", "refs.", "vol.", "suppl.", "st.", "mr.", "mrs.", "ms.", "prof.", "inc.", "ltd.", "co.", "jr.", "sr.",
    "resp.", "tab.", "sect.",
}


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences with a rule-based splitter tuned for scientific writing."""
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        words_before = text[start:match.start()].split()
        last_word = words_before[-1].lower() if words_before else ""
        if last_word in _ABBREVIATIONS or re.fullmatch(r"[a-z]\.", last_word):
            continue
        sentences.append(text[start:match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if s]


@dataclass
class _Unit:
    text: str
    words: int
    starts_paragraph: bool


@component
class SectionChunker:
    """
    Splits section Documents into chunks of about `target_words` words, never crossing a section.

    Each input Document holds one section of one article (as produced by `ingestion`); because chunks are cut
    only inside a Document, a chunk never spans two sections. Chunks end at sentence boundaries; consecutive
    chunks of a section share up to `overlap_words` words of whole sentences; a sentence longer than
    `target_words` is cut at word boundaries. Each chunk keeps the section's metadata and adds its position:
    `chunk_index` (in the article), `section_chunk_index` (in the section) and `word_count`. Chunk ids are a
    hash of the article id, the position and the text, so the same input always yields the same ids.

    Usage:
    ```python
    from haystack import Document
    from pmc_rag.components.section_chunker import SectionChunker

    chunker = SectionChunker(target_words=120, overlap_words=20)
    section = Document(content="First sentence. Second sentence.", meta={"source_id": "PMC1", "section": "Intro"})
    chunks = chunker.run(documents=[section])["documents"]
    ```
    """

    def __init__(self, *, target_words: int = 180, overlap_words: int = 30, source_id_field: str = "source_id"):
        """
        :param target_words: Most words in a chunk (a single longer sentence is cut to fit). Mind the embedding
            model's limit: all-MiniLM-L6-v2 reads 256 word pieces, and 180 words of biomedical prose plus title
            and section come to a median of 257.
        :param overlap_words: Most words of whole sentences repeated from the end of one chunk at the start of
            the next chunk of the same section, so a claim cut at a boundary is still found whole. 0 turns it off.
        :param source_id_field: The metadata field naming the article; positions are counted per article.
        """
        if target_words < 1:
            raise ValueError(f"target_words must be at least 1, got {target_words}")
        if not 0 <= overlap_words < target_words:
            raise ValueError(f"overlap_words must be between 0 and target_words - 1, got {overlap_words}")
        self.target_words = target_words
        self.overlap_words = overlap_words
        self.source_id_field = source_id_field

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, target_words=self.target_words, overlap_words=self.overlap_words,
            source_id_field=self.source_id_field,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SectionChunker:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        :param documents: One Document per section, in reading order, with the article id in its metadata.
        :returns: `documents`: the chunks, in reading order.
        """
        positions: dict[str, int] = defaultdict(int)
        chunks = []
        for section in documents:
            source_id = str(section.meta.get(self.source_id_field) or section.id)
            for section_position, text in enumerate(self._chunk_texts(section.content or "")):
                chunk_index = positions[source_id]
                positions[source_id] += 1
                meta = {
                    **section.meta,
                    "chunk_index": chunk_index,
                    "section_chunk_index": section_position,
                    "word_count": len(text.split()),
                }
                chunk_id = hashlib.sha256(f"{source_id}\x1f{chunk_index}\x1f{text}".encode()).hexdigest()
                chunks.append(Document(id=chunk_id, content=text, meta=meta))
        return {"documents": chunks}

    def _chunk_texts(self, text: str) -> list[str]:
        units = self._units(text)
        chunks: list[list[_Unit]] = []
        current: list[_Unit] = []
        for unit in units:
            if current and sum(u.words for u in current) + unit.words > self.target_words:
                chunks.append(current)
                current = self._overlap(current)
                # Drop the overlap if it cannot share a chunk with the next sentence.
                if sum(u.words for u in current) + unit.words > self.target_words:
                    current = []
            current.append(unit)
        if current:
            chunks.append(current)
        return [self._join(chunk) for chunk in chunks]

    def _units(self, text: str) -> list[_Unit]:
        """Sentences (long ones cut into target-sized pieces), marking where paragraphs start."""
        units = []
        for paragraph in re.split(r"\n\s*\n", text):
            for position, sentence in enumerate(split_sentences(" ".join(paragraph.split()))):
                words = sentence.split()
                for start in range(0, len(words), self.target_words):
                    piece = words[start:start + self.target_words]
                    units.append(_Unit(" ".join(piece), len(piece), position == 0 and start == 0))
        return units

    def _overlap(self, chunk: list[_Unit]) -> list[_Unit]:
        kept: list[_Unit] = []
        for unit in reversed(chunk):
            if sum(u.words for u in kept) + unit.words > self.overlap_words:
                break
            kept.insert(0, unit)
        return kept

    @staticmethod
    def _join(units: list[_Unit]) -> str:
        text = ""
        for unit in units:
            separator = "" if not text else ("\n\n" if unit.starts_paragraph else " ")
            text += separator + unit.text
        return text
