"""A sentence the quotation step may quote, with what it knows of it: a finding or not, from a conclusion or not,
and how well it fits what a follow-up asks for.

Usage:
```python
from pmc_rag.components.follow_up_asks import asked_for
from pmc_rag.components.quotation_candidate import QuotationCandidate

candidate = QuotationCandidate.of("46 patients were included.", "Abstract: Results", asked_for("How many?"))
candidate.rank, candidate.conclusion, candidate.fit   # (2, False, 2): a finding, a result, a count that fits
```
"""

from __future__ import annotations

from typing import NamedTuple

from pmc_rag.components.claim_signals import finding_rank
from pmc_rag.components.finding_classifier import shipped_classifier
from pmc_rag.components.follow_up_asks import Ask
from pmc_rag.components.section_kinds import CONCLUSION_SECTION, is_plain_abstract


class QuotationCandidate(NamedTuple):
    """A sentence the quotation step may quote: its `finding_rank`, whether it is from a conclusion, what it counts
    for as the kind of sentence a follow-up asks for (`Ask.weight`, else 0), and whether it may answer although
    the quotation step would skip it (a method, for "How was it measured?")."""

    text: str
    rank: int
    conclusion: bool
    fit: int
    method_ok: bool

    @classmethod
    def of(cls, sentence: str, section: str | None, ask: Ask | None) -> QuotationCandidate:
        rank = finding_rank(sentence, section)
        # An abstract without headings is the authors' own summary: what in it reads as a result or conclusion to
        # the classifier trained on abstracts labelled by their headings is their conclusion, and goes before one
        # figure from the results (its background, which the patterns also let through, does not).
        conclusion = bool(CONCLUSION_SECTION.search(str(section or ""))) or (
            is_plain_abstract(section) and rank > 0 and shipped_classifier().is_finding(sentence))
        return cls(sentence, rank, conclusion, ask.weight if ask and ask.fits(sentence, section) else 0,
                   bool(ask and ask.may_quote(sentence, section)))
