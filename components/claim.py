"""A claim: one sentence of an answer and the papers it cites, typed.

Claims travel from `CitationVerifier` (the model's sentences and their citations) through `ClaimChecker` (is each
supported by what it cites?) and `VerdictCheck` (may a yes/no stay on it?) to `CitedAnswerBuilder`, which numbers
them; `QuotationChooser` makes claims of the papers' own sentences. They stay plain dicts at run time (what Haystack
passes between components and the tests write by hand); `Claim` names their keys and types in one place.

Usage:
```python
from pmc_rag.components.claim import Claim

claim: Claim = {"text": "Erlotinib prolonged progression-free survival.", "cited": ["PMC4816447"], "attached": [],
                "support": 0.8}
```
"""

from __future__ import annotations

from typing import Required, TypedDict

from haystack import Document


class Claim(TypedDict, total=False):
    text: Required[str]           # the sentence as shown
    cited: Required[list[str]]    # the papers it cites (canonical ids: PMC..., PMID:..., doi:..., doc:...)
    attached: list[str]           # cited by post-hoc attribution: the model did not cite them itself
    invalid: list[str]            # ids the model cited that it was not shown (removed)
    support: float | None         # share of its content words found in the best cited excerpt, 0-1
    judgement: str                # the claim check's verdict: supported, unsupported, unverifiable, unchecked
    reason: str                   # why, when not supported
    recited_from: list[str]       # the papers the model cited, which do not support it (re-cited to one that does)
    dropped: list[str]            # cited papers the check took off it
    passage: Document             # a quoted sentence: the excerpt it is quoted from
