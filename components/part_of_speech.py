"""Parts of speech of a question's words, read in context: Brill's transformation-based tagger.

The relevance gate's word checks treat a word few indexed chunks contain as a subject the papers must name. In a
question typed in everyday English that word is often not a subject at all but a verb or a comparative: "when
diabetes *runs* in your family", "are Medicare patients getting *sicker*", "do colloids *stop* blood pressure
drops" (issue 61). Which it is depends on the words around it, so a word list cannot say; a tagger trained on
tagged text can. Eric Brill's tagger (1992) learned a lexicon (each word's likeliest Penn Treebank tag), rules for
unknown words (by suffix, prefix, characters, neighbours) and contextual rules that correct a tag from the tags
and words around it, from the Brown corpus and the Penn Treebank; its lexicon and rules are in
`resources/brill_*.txt` (licences: `resources/LICENSE.brill_tagger`). This module applies them; it learns nothing.

Usage:
```python
from pmc_rag.components.part_of_speech import tagged

tagged("if you're fit does that protect your small blood vessels when diabetes runs in your family?")
# [('if', 'IN'), ('you', 'PRP'), ..., ('diabetes', 'NN'), ('runs', 'VBZ'), ('in', 'IN'), ...]
```
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

RESOURCES = Path(__file__).resolve().parent / "resources"
TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’\-.][A-Za-z0-9]+)*|n't|'\w+|[^\w\s]")
# Brill's marks for the positions before a sentence's first word and after its last
START, END = "STAART", "END"


class _Rule(NamedTuple):
    source: str  # the tag changed (contextual rules; a lexical rule's tag to change, or "" for any)
    target: str
    trigger: str
    arguments: tuple[str, ...]


@lru_cache(maxsize=1)
def _lexicon() -> dict[str, str]:
    words: dict[str, str] = {}
    for line in (RESOURCES / "brill_lexicon.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            word, tag = line.split(" ", 1)
            words.setdefault(word, tag)
    return words


def known_word(word: str) -> bool:
    """Whether the tagger's lexicon (94,236 words of the Brown corpus and the Penn Treebank) has the word, as
    written or in lower case: "Dutch" and "elderly" are, a trial's acronym ("FIELT") or a drug's name is not."""
    lexicon = _lexicon()
    return word in lexicon or word.lower() in lexicon


def _rules(name: str) -> list[list[str]]:
    return [line.split() for line in (RESOURCES / name).read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]


@lru_cache(maxsize=1)
def _contextual_rules() -> list[_Rule]:
    return [_Rule(parts[0], parts[1], parts[2], tuple(parts[3:])) for parts in _rules("brill_contextual_rules.txt")]


@lru_cache(maxsize=1)
def _lexical_rules() -> list[_Rule]:
    """Brill's rules for unknown words: "NN s fhassuf 1 NNS x" (a word tagged NN ending in "s" becomes NNS) or,
    without the leading tag, "ly hassuf 2 RB x" (any word ending in "ly" becomes RB)."""
    rules = []
    for parts in _rules("brill_lexical_rules.txt"):
        if parts[2] in _LEXICAL_TRIGGERS_F:  # from-tag, argument, "f" + trigger, (length), to-tag, "x"
            source, argument, trigger = parts[0], parts[1], parts[2][1:]
        else:  # argument, trigger, (length), to-tag, "x"
            source, argument, trigger = "", parts[0], parts[1]
        rules.append(_Rule(source, parts[-2], trigger, (argument,)))
    return rules


_LEXICAL_TRIGGERS_F = {"fhassuf", "fdeletesuf", "faddsuf", "fhaspref", "fdeletepref", "faddpref", "fchar",
                       "fgoodleft", "fgoodright"}


def _lexical_tag(word: str, previous: str, following: str) -> str:
    """An unknown word's tag: a number CD, a capitalised word NNP, else NN, then Brill's lexical rules in order."""
    lexicon = _lexicon()
    tag = "CD" if re.fullmatch(r"[\d.,]+", word) else "NNP" if word[:1].isupper() else "NN"
    for rule in _lexical_rules():
        if rule.source and rule.source != tag:
            continue
        affix = rule.arguments[0]
        applies = {
            "hassuf": word.endswith(affix),
            "haspref": word.startswith(affix),
            "char": affix in word,
            "deletesuf": word.endswith(affix) and word[:-len(affix)] in lexicon,
            "deletepref": word.startswith(affix) and word[len(affix):] in lexicon,
            "addsuf": word + affix in lexicon,
            "addpref": affix + word in lexicon,
            # Brill read these from word pairs of his corpus; here, the question's own neighbours
            "goodleft": following == affix,
            "goodright": previous == affix,
        }.get(rule.trigger, False)
        if applies:
            tag = rule.target
    return tag


# Brill's contextual triggers: each reads the rule's arguments `a` against the tags `t` and the lower-case words
# `w` around position `i` (`_at` pads both ends with START and END).
_TRIGGERS: dict[str, Callable[[tuple[str, ...], list[str], list[str], int], bool]] = {
    "PREVTAG": lambda a, t, w, i: _at(t, i - 1) == a[0],
    "NEXTTAG": lambda a, t, w, i: _at(t, i + 1) == a[0],
    "PREV2TAG": lambda a, t, w, i: _at(t, i - 2) == a[0],
    "NEXT2TAG": lambda a, t, w, i: _at(t, i + 2) == a[0],
    "PREV1OR2TAG": lambda a, t, w, i: a[0] in (_at(t, i - 1), _at(t, i - 2)),
    "NEXT1OR2TAG": lambda a, t, w, i: a[0] in (_at(t, i + 1), _at(t, i + 2)),
    "PREV1OR2OR3TAG": lambda a, t, w, i: a[0] in (_at(t, i - 1), _at(t, i - 2), _at(t, i - 3)),
    "NEXT1OR2OR3TAG": lambda a, t, w, i: a[0] in (_at(t, i + 1), _at(t, i + 2), _at(t, i + 3)),
    "SURROUNDTAG": lambda a, t, w, i: _at(t, i - 1) == a[0] and _at(t, i + 1) == a[1],
    "PREVBIGRAM": lambda a, t, w, i: _at(t, i - 2) == a[0] and _at(t, i - 1) == a[1],
    "NEXTBIGRAM": lambda a, t, w, i: _at(t, i + 1) == a[0] and _at(t, i + 2) == a[1],
    "PREVWD": lambda a, t, w, i: _at(w, i - 1) == a[0].lower(),
    "NEXTWD": lambda a, t, w, i: _at(w, i + 1) == a[0].lower(),
    "PREV1OR2WD": lambda a, t, w, i: a[0].lower() in (_at(w, i - 1), _at(w, i - 2)),
    "NEXT1OR2WD": lambda a, t, w, i: a[0].lower() in (_at(w, i + 1), _at(w, i + 2)),
    "CURWD": lambda a, t, w, i: w[i] == a[0].lower(),
    "WDPREVTAG": lambda a, t, w, i: _at(t, i - 1) == a[0] and w[i] == a[1].lower(),
    "WDNEXTTAG": lambda a, t, w, i: w[i] == a[0].lower() and _at(t, i + 1) == a[1],
    "WDAND2AFT": lambda a, t, w, i: w[i] == a[0].lower() and _at(w, i + 2) == a[1].lower(),
    "WDAND2TAGAFT": lambda a, t, w, i: w[i] == a[0].lower() and _at(t, i + 2) == a[1],
    "WDAND2TAGBFR": lambda a, t, w, i: _at(t, i - 2) == a[0] and w[i] == a[1].lower(),
    "LBIGRAM": lambda a, t, w, i: _at(w, i - 1) == a[0].lower() and w[i] == a[1].lower(),
    "RBIGRAM": lambda a, t, w, i: w[i] == a[0].lower() and _at(w, i + 1) == a[1].lower(),
}


def _at(sequence: list[str], j: int) -> str:
    return sequence[j] if 0 <= j < len(sequence) else (START if j < 0 else END)


def tagged(text: str) -> list[tuple[str, str]]:
    """The text's tokens with their Penn Treebank tags (NN noun, VBZ verb, JJR comparative, ...), in order."""
    words = TOKEN.findall(text)
    lexicon = _lexicon()
    tags = []
    for i, word in enumerate(words):
        known = lexicon.get(word) or (lexicon.get(word.lower()) if i == 0 or not word[:1].isupper() else None)
        tags.append(known or _lexical_tag(word, words[i - 1] if i else START,
                                          words[i + 1] if i + 1 < len(words) else END))
    lowered = [w.lower() for w in words]  # Brill's word triggers, read regardless of case here
    for rule in _contextual_rules():
        trigger = _TRIGGERS.get(rule.trigger)
        for i in range(len(words)):
            if tags[i] == rule.source and trigger is not None and trigger(rule.arguments, tags, lowered, i):
                tags[i] = rule.target
    return list(zip(words, tags))


# Tags of words that say what a subject does or is like, not what it is: verbs (not their -ing and -ed forms, which
# often name a subject: "gambling", "smoking"), adverbs, comparatives and superlatives.
_PREDICATE_TAGS = {"VB", "VBD", "VBP", "VBZ", "RB", "RBR", "RBS", "JJR", "JJS"}
_NOUN_TAGS = {"NN", "NNS", "NNP", "NNPS"}
_CLAUSE_ENDS = {".", ",", ":", "IN", "CC", "TO", END}


def predicate_words(text: str) -> set[str]:
    """The text's words (lower case) that the tagger reads, in their context, as a verb, an adverb, a comparative
    or an adjective ending its clause ("keep it steady?"), where the lexicon knows the word as that kind first:
    "diabetes *runs* in your family", "getting *sicker*", but not "specific to *depression*", which the rules
    misread as a verb, nor an unknown word."""
    pairs = tagged(text)
    lexicon = _lexicon()
    words = set()
    for i, (word, tag) in enumerate(pairs):
        following = pairs[i + 1][1] if i + 1 < len(pairs) else END
        # an adjective is a predicate where the clause ends after it ("keep the pressure steady?"); before a
        # noun, however tagged ("international normalized ratio"), it is part of the subject's name
        alone = tag == "JJ" and following in _CLAUSE_ENDS
        known = lexicon.get(word.lower(), lexicon.get(word))
        # The tag in context must agree with the word's usual kind: the contextual rules turned "international"
        # before "normalized ratio" into an adverb. A word the lexicon lacks is never one: the rules guess its tag
        # from its letters, and "pre-eclampsia" reads as an adjective by its hyphen, a drug name as a verb.
        if (tag in _PREDICATE_TAGS and known in _PREDICATE_TAGS) or (alone and known == "JJ"):
            words.add(word.lower())
    return words
