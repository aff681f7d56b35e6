"""The model's opening yes/no/maybe, shown only where the sentence it opens stands behind it.

Usage:
```python
from pmc_rag.components.verdict_check import VerdictCheck

check = VerdictCheck(policy="checked")
result = check.run(claims=[{"text": "No: parents reported higher quality with a regular clinician.",
                            "cited": ["PMC1"], "support": 0.8}])
result["claims"][0]["text"], result["withheld"]  # ("Parents reported higher quality ...", "No")
```
"""

from __future__ import annotations

import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict

from pmc_rag.components.claim import Claim
from pmc_rag.components.claim_signals import is_negated, without_verdict

VERDICT_POLICIES = ("checked", "none", "model")

VERDICT = re.compile(r"^\W*(yes|no|maybe)\b\W", re.IGNORECASE)


@component
class VerdictCheck:
    """
    Decides whether a claim's opening verdict ("Yes, ...", "No: ...", "Maybe.") may be shown. `checked`: only on a
    supported claim that says it the same way (a "No" on a sentence that says "not" or "no", a "Yes" on one that
    does not); `none`: never; `model`: as the model wrote it. A verdict written as a sentence of its own ("Yes.")
    stands or falls with the sentence after it. `CitedAnswerBuilder` applies it to the sentences it shows.
    """

    def __init__(self, *, policy: str = "checked", min_support: float = 0.35):
        """
        :param policy: `checked`, `none` or `model` (above).
        :param min_support: Least support for a claim to count as supported, when no judge gave a `judgement`.
        """
        if policy not in VERDICT_POLICIES:
            raise ValueError(f"verdicts must be one of {', '.join(VERDICT_POLICIES)}, not {policy!r}")
        self.policy = policy
        self.min_support = min_support

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, policy=self.policy, min_support=self.min_support)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerdictCheck:
        return default_from_dict(cls, data)

    @component.output_types(claims=list[Claim], withheld=str)
    def run(self, claims: list[Claim]) -> dict[str, Any]:
        """
        :param claims: Claims as `CitationVerifier` gives them (`text`, `cited`, `support`, perhaps `judgement`).
        :returns: `claims` with a verdict that may not be shown cut from its sentence, and the first verdict word
            held back (`withheld`, "" if none).
        """
        shown, withheld = [], ""
        for claim in self.joined(claims):
            verdict = self.opening(claim["text"])
            if verdict and not self.stands(verdict, claim["text"], self.supported(claim)):
                withheld = withheld or verdict
                claim = {**claim, "text": self.without(claim["text"])}
            shown.append(claim)
        return {"claims": shown, "withheld": withheld}

    def supported(self, claim: Claim) -> bool:
        if "judgement" in claim:
            return claim["judgement"] == "supported"
        return (claim.get("support") or 0) >= self.min_support

    @staticmethod
    def opening(text: str) -> str | None:
        """The verdict word a sentence opens with, or None."""
        match = VERDICT.match(text)
        return match.group(1) if match else None

    def stands(self, verdict: str, text: str, supported: bool) -> bool:
        """Whether the verdict opening `text` may be shown, by the policy."""
        if self.policy == "model":
            return True
        return self.policy == "checked" and supported and says_as_the_verdict(verdict, text)

    @staticmethod
    def without(text: str) -> str:
        """The sentence without its opening verdict, capitalised."""
        rest = without_verdict(text)
        return rest[:1].upper() + rest[1:]

    @staticmethod
    def joined(claims: list[Claim]) -> list[Claim]:
        """A verdict written as a sentence of its own ("Yes.") joined to the sentence after it, which it stands or
        falls with."""
        joined: list[Claim] = []
        pending = ""
        for claim in claims:
            if not without_verdict(claim["text"]).strip(" .") and VERDICT.match(claim["text"] + " "):
                pending += claim["text"].strip() + " "
                continue
            joined.append({**claim, "text": pending + claim["text"]} if pending else claim)
            pending = ""
        if pending:
            joined.append({"text": pending.strip(), "cited": [], "attached": [], "support": None})
        return joined


def says_as_the_verdict(verdict: str, text: str) -> bool:
    """Whether the sentence after a verdict says what the verdict does: the 0.5B model, shown worked examples,
    opened findings with "No:" whatever they said ("No: parents reported higher quality with a regular clinician";
    the gold label was yes, 2026-11-27)."""
    negated = is_negated(without_verdict(text))
    return {"yes": not negated, "no": negated}.get(verdict.lower(), True)
