"""Evidence level of a paper, derived from its publication or article type.

Stored on every chunk as `evidence_level` (a label) and `evidence_rank` (1 is the strongest), so that
retrieval can filter ("at least a cohort study": `evidence_rank <= 3`) or boost by it.

| rank | label                | recognised from                                                              |
|------|----------------------|------------------------------------------------------------------------------|
| 1    | `systematic_review`  | MEDLINE types Systematic Review / Meta-Analysis; JATS `systematic-review`,  |
|      |                      | `meta-analysis`; a title announcing a systematic review or meta-analysis    |
| 2    | `rct`                | Randomized Controlled Trial (and its phase and pragmatic forms); title       |
| 3    | `cohort`             | Observational Study; MeSH Cohort / Prospective / Retrospective / Longitudinal|
|      |                      | / Follow-Up Studies; a title announcing a cohort study                       |
| 4    | `case_report`        | Case Reports; JATS `case-report`                                             |
| 5    | `review`             | Review (narrative); JATS `review-article`                                    |
| 6    | `other`              | everything else (primary research of other designs, editorials, corrections) |

The strongest signal wins: a paper that is both a Review and a Meta-Analysis is `systematic_review`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class EvidenceLevel:
    label: str
    rank: int


EVIDENCE_LEVELS = {
    level.label: level
    for level in (
        EvidenceLevel("systematic_review", 1),
        EvidenceLevel("rct", 2),
        EvidenceLevel("cohort", 3),
        EvidenceLevel("case_report", 4),
        EvidenceLevel("review", 5),
        EvidenceLevel("other", 6),
    )
}

# Publication types (MEDLINE), JATS article types and MeSH headings, lower-cased, mapped to a level.
_TYPE_LEVELS = {
    "systematic review": "systematic_review",
    "meta-analysis": "systematic_review",
    "systematic-review": "systematic_review",
    "network meta-analysis": "systematic_review",
    "randomized controlled trial": "rct",
    "pragmatic clinical trial": "rct",
    "equivalence trial": "rct",
    "clinical trial, phase iii": "rct",
    "clinical trial, phase iv": "rct",
    "observational study": "cohort",
    "cohort studies": "cohort",
    "prospective studies": "cohort",
    "retrospective studies": "cohort",
    "longitudinal studies": "cohort",
    "follow-up studies": "cohort",
    "case reports": "case_report",
    "case-report": "case_report",
    "review": "review",
    "review-article": "review",
}

# Titles often say what a paper is when the type metadata is coarse ("research-article").
_TITLE_PATTERNS = [
    (re.compile(r"\b(systematic review|meta-analys[ie]s|meta analys[ie]s)\b", re.I), "systematic_review"),
    (re.compile(r"\brandomi[sz]ed (controlled |clinical )?trial\b", re.I), "rct"),
    (re.compile(r"\b(cohort study|prospective study|longitudinal study)\b", re.I), "cohort"),
    (re.compile(r"\bcase report\b", re.I), "case_report"),
]


def classify_evidence(
    publication_types: Iterable[str] = (),
    article_type: str | None = None,
    title: str | None = None,
    mesh_terms: Iterable[str] = (),
) -> EvidenceLevel:
    """Return the strongest evidence level any of the signals supports (`other` when none does)."""
    labels = []
    for value in [*publication_types, article_type or "", *mesh_terms]:
        label = _TYPE_LEVELS.get(value.strip().lower())
        if label:
            labels.append(label)
    for pattern, label in _TITLE_PATTERNS:
        if title and pattern.search(title):
            labels.append(label)
    if not labels:
        return EVIDENCE_LEVELS["other"]
    return min((EVIDENCE_LEVELS[label] for label in labels), key=lambda level: level.rank)
