"""The abbreviations a paper defines for itself ("traumatic brain injury (TBI)"), and its sentences spelled out.

Papers name their subjects in full once and abbreviate them afterwards, so a conclusion ("BD is not a reliable
prognostic marker for mortality in patients with isolated TBI") shares few words with a question that spells them
out ("Does base deficit predict mortality in patients with severe traumatic brain injury?"), while the
background sentence that defined them shares many. Matching a sentence against the question after spelling out
the paper's own abbreviations lets the finding win.

Usage:
```python
from pmc_rag.components.defined_abbreviations import defined_abbreviations, spelled_out

defined = defined_abbreviations("Base Deficit (BD) is a marker of tissue hypoxia.")   # {"BD": "Base Deficit"}
spelled_out("BD was not a reliable marker.", defined)   # "BD (Base Deficit) was not a reliable marker."
```
"""

from __future__ import annotations

import re

# "long form (SHORT)": a bracketed short form of 2-10 characters, with a capital and no spaces ("TBI", "cIMT",
# "HbA1c"), and up to ten words before it.
_DEFINITION = re.compile(r"((?:[\w'-]+\s+){0,9}[\w'-]+)\s*\(\s*([A-Za-z][A-Za-z0-9-]{1,9})\s*\)")


def defined_abbreviations(text: str) -> dict[str, str]:
    """Each short form defined in `text` (case kept) with its long form, the first definition winning."""
    defined: dict[str, str] = {}
    for match in _DEFINITION.finditer(text or ""):
        short = match.group(2)
        if short in defined or not any(c.isupper() for c in short[1:] + short[0]):
            continue
        long_form = _long_form(short, match.group(1).split())
        if long_form:
            defined[short] = long_form
    return defined


def _long_form(short: str, words: list[str]) -> str | None:
    """The shortest run of the last `words` whose letters hold the short form's, in order, its first letter
    starting the run's first word (after Schwartz and Hearst's matching, 2003); None when there is none."""
    letters = [c.lower() for c in short if c.isalnum()]
    for start in range(len(words) - 1, max(-1, len(words) - len(letters) - 6), -1):
        run = words[start:]
        if len(run) > len(letters) + 2 or run[0][0].lower() != letters[0]:
            continue
        if _holds_in_order(letters, " ".join(run).lower()) and _words_start_letters(letters, run):
            return " ".join(run)
    return None


def _holds_in_order(letters: list[str], text: str) -> bool:
    position = 0
    for letter in letters:
        position = text.find(letter, position)
        if position < 0:
            return False
        position += 1
    return True


def _words_start_letters(letters: list[str], run: list[str]) -> bool:
    """Most words of the run (all but one) begin with one of the short form's letters: "with the use of" does not
    make "ULT" out of "urate-lowering therapy"."""
    parts = [p for word in run for p in word.split("-") if p]
    starting = sum(p[0].lower() in letters for p in parts)
    return starting >= len(parts) - 1


def spelled_out(text: str, defined: dict[str, str]) -> str:
    """`text` with each defined short form followed by its long form in brackets."""
    if not defined:
        return text
    pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(s) for s in sorted(defined, key=len, reverse=True))
                         + r")(?![\w-])")
    return pattern.sub(lambda m: f"{m.group(1)} ({defined[m.group(1)]})", text)
