"""British spellings read as American ones, so that words match across the two.

Stemming keeps them apart ("normalised" -> "normalis", "normalized" -> "normal") and PostgreSQL's text search
indexes them as different words, yet papers from both sides of the Atlantic must support each other's claims and
answer each other's questions.

    >>> american_spelling("oesophageal"), american_spelling("randomised")
    ('esophageal', 'randomized')
    >>> american_variants("Is haemodialysis safe in paediatric patients?")
    {'haemodialysis': 'hemodialysis', 'paediatric': 'pediatric'}
"""

from __future__ import annotations

import re

# Applied to both sides of a comparison, so a rule that also rewrites an unrelated word ("exercise" ->
# "exercize") is harmless unless it makes two real words one; each rule is narrowed to avoid that ("four" stays).
_RULES = [(re.compile(pattern), replacement) for pattern, replacement in (
    (r"(?<=[a-z]{3})is(e|ed|es|ing|ation|ations|er|ers)$", r"iz\1"),   # randomised, normalisation
    (r"(?<=[a-z]{2})ys(e|ed|es|ing)$", r"yz\1"),                       # analysed, paralysed
    (r"(?<=[a-z]{2})our(s|ed|ing|ite|ites|able)?$", r"or\1"),           # tumour, behaviour, odour
    (r"(haem|aem|paed|gynaec|caes|anaes|faec|^aetiol)", None),          # haemorrhage, anaemia, paediatric
    (r"^(oesoph|oedem|oestr|foet|coel|homoeo)", None),                  # oesophagus, oedema, oestrogen, foetal
    (r"(?<=[a-z]{3})oea(s|l)?$", r"ea\1"),                              # diarrhoea, dyspnoea
    (r"(?<=[a-z]{2})(t|b)re(s)?$", r"\1er\2"),                          # centre, litre, fibre
    (r"(?<=[a-z]{3})ogue(s)?$", r"og\1"),                               # analogue, catalogue
    (r"^ageing$", "aging"),
)]


def american_spelling(word: str) -> str:
    """The American spelling of a lower-case word (the word itself if it has no British spelling we know)."""
    for pattern, replacement in _RULES:
        if replacement is None:   # a digraph inside a word part: "ae" and "oe" become "e"
            word = pattern.sub(lambda m: m.group(0).replace("ae", "e").replace("oe", "e"), word)
        else:
            word = pattern.sub(replacement, word)
    return word


def american_variants(text: str) -> dict[str, str]:
    """The text's words (lower-cased) whose American spelling differs, each with that spelling."""
    return {word: american for word in dict.fromkeys(re.findall(r"[a-z]+", text.lower()))
            if (american := american_spelling(word)) != word}


def edit_distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein distance (adjacent swaps count one), or limit + 1 when it is larger."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]
