"""The key finding of each section of a paper that the model did not read: the map step of a long paper's summary."""

from __future__ import annotations

import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.claim_signals import finding_rank
from pmc_rag.components.section_chunker import split_sentences

# Where a paper's findings are, best first; other sections (introduction, methods) give none.
_SECTION_ORDER = (re.compile(r"^(?:conclusions?|summary)\b", re.I), re.compile(r"^results?\b|^findings\b", re.I),
                  re.compile(r"^discussion\b", re.I))
_NUMBER = re.compile(r"\d")
# The paper's own result ("we found", "our data show", "this meta-analysis suggests") before anything else.
_OWN_RESULT = re.compile(r"\b(?:we (?:found|show\w*|observed|demonstrat\w*|identified)|(?:our|th(?:is|e present)) "
                         r"(?:study|trial|results|data|findings|analysis|meta-analysis|review|estimates) (?:\w+ )?(?:shows?|"
                         r"suggests?|found|demonstrated?s?|indicates?|confirms?))\b", re.IGNORECASE)
# What a discussion says of others' work, of what is known or of how the study was done ("we used"), not what this
# paper found; and a sentence whose table or figure reference was cut out at ingestion ("Scores are presented in
# and", "For the primary outcome, gives results").
_NOT_THIS_PAPER_S = re.compile(r"\b(?:(?:is|are|was|were) (?:well )?known|known to|(?:has|have) (?:been|also been) "
                               r"(?:shown|reported|described|proposed|suggested)|as has been|previous(?:ly)?|recently|"
                               r"hypothesi[sz]\w*|current model|other (?:studies|authors|trials)|one study|et al|"
                               r"it was possible to|we (?:expected|manipulated|(?:did )?appl(?:y|ied)|studied|used|"
                               r"measured|chose))\b", re.IGNORECASE)
_CUT_REFERENCE = re.compile(r"\b(?:in|see|shown in|presented in|summari[sz]ed in)(?: and)?\s*[.,;:]?$|"
                            r"(?:^|, )(?:summari[sz]es|shows|presents|lists|gives|depicts|illustrates)\b|"
                            r"^[a-z]+s |^As shown in,")


@component
class SectionKeyFindings:
    """
    From each section of a paper that the model did not read (`PaperReader`'s `unread` passages), the one
    sentence that best states a finding, chosen without the model: the map step of a summary of a paper longer
    than the model's budget. The answer quotes them after the model's summary, each cited with its section (the
    reduce step), so the summary covers the whole paper and every added sentence is the paper's own.

    A section's key finding is a sentence that states a result (not an aim, a method, a caption, what is known or
    what others found, or a sentence whose table reference was cut out): one that says it is the paper's own
    ("we found", "this meta-analysis suggests") first, then one with a figure in it, else the earliest. A
    conclusion, a result and a discussion section come first (in that order), then a second of each, and so on, at
    most `max_sections`. Sections the model read in part are skipped: it has seen their first passage.

    Usage:
    ```python
    from pmc_rag.components.section_key_findings import SectionKeyFindings

    reader_output = PaperReader(document_store=store).run(paper="PMC4816447")
    SectionKeyFindings(max_sections=4).run(unread=reader_output["unread"], read=reader_output["documents"])
    # {"documents": [<one-sentence Documents, in the paper's order, each with its passage's id and section>]}
    ```
    """

    def __init__(self, max_sections: int = 4, min_words: int = 8):
        """
        :param max_sections: Most sections to quote a finding from (0: none, the step is off).
        :param min_words: Shorter sentences (a heading, a table row) are never quoted.
        """
        if max_sections < 0:
            raise ValueError(f"max_sections must be 0 (off) or more, not {max_sections}")
        self.max_sections = max_sections
        self.min_words = min_words

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, max_sections=self.max_sections, min_words=self.min_words)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SectionKeyFindings:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, unread: list[Document], read: list[Document] | None = None) -> dict[str, Any]:
        """
        :param unread: The passages of the paper that were not read, in the paper's order.
        :param read: The passages that were: their sections give no key finding here.
        :returns: `documents`: one Document per section, holding its key finding sentence, in the paper's order.
        """
        read_sections = {d.meta.get("section") for d in read or []}
        by_section: dict[str, list[tuple[int, Document]]] = {}
        for position, passage in enumerate(unread):
            section = passage.meta.get("section")
            if section and section not in read_sections and _priority(section) is not None:
                by_section.setdefault(section, []).append((position, passage))
        found = [key for key in (self._key_finding(section, passages) for section, passages in by_section.items())
                 if key is not None]
        # One per kind of section first (a conclusion, a result, a discussion), then a second of each, and so on:
        # a paper whose results have ten subsections still shows what its discussion concluded.
        turn: dict[int | None, int] = {}
        found.sort(key=lambda key: key[0])
        rounds = []
        for position, document in found:
            kind = _priority(document.meta["section"])
            turn[kind] = turn.get(kind, -1) + 1
            rounds.append((turn[kind], kind, position, document))
        found = [(position, document) for _, _, position, document in sorted(rounds, key=lambda r: r[:3])]
        chosen = sorted(found[: self.max_sections], key=lambda key: key[0])
        return {"documents": [document for _, document in chosen]}

    def _key_finding(self, section: str, passages: list[tuple[int, Document]]) -> tuple[int, Document] | None:
        """(the passage's place in the paper, a Document holding the section's key finding), or None."""
        candidates = []
        for position, passage in passages:
            sentences = split_sentences(" ".join((passage.content or "").split()))
            for index, sentence in enumerate(sentences):
                if (len(sentence.split()) >= self.min_words and finding_rank(sentence, section) == 2
                        and not _NOT_THIS_PAPER_S.search(sentence) and not _CUT_REFERENCE.search(sentence)):
                    candidates.append((not _OWN_RESULT.search(sentence), not _NUMBER.search(sentence), position,
                                       index, sentence, passage, sentences))
        if not candidates:
            return None
        _, _, position, _, sentence, passage, sentences = min(candidates, key=lambda c: c[:4])
        return position, Document(id=passage.id, content=sentence, embedding=passage.embedding, meta={
            **passage.meta, "sentences_read": f"1 of {len(sentences)}"})


def _priority(section: str) -> int | None:
    top = str(section).split(" / ")[0]
    return next((rank for rank, pattern in enumerate(_SECTION_ORDER) if pattern.search(top)), None)
