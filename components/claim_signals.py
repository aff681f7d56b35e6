"""What a claim asserts beyond its words: negation, numbers with their units, and direction of change.

A claim can share every content word with its source and still say the opposite: "X was not associated with Y",
"mortality fell by 45%" against a source reporting 54%, "higher" against "lower". Lexical support cannot see
these; the functions here find them, so `LexicalSupportJudge` can call such a claim contradicted. The same
tables let the evaluation's adversarial generators make such claims (`negate`, `change_numbers`,
`reverse_direction`), so what the checker catches and what the adversaries produce cannot drift apart.

Usage:
```python
from pmc_rag.components.claim_signals import conflicts

conflicts("Erlotinib was not associated with longer survival.",
          "Erlotinib was associated with longer survival.")   # ["negation: ..."]
```
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from pmc_rag.components.citations import content_stems, content_words
from pmc_rag.components.section_kinds import FINDINGS_SECTION

# The labels every support judge gives (ClaimChecker reads them).
SUPPORTED, CONTRADICTED, UNSUPPORTED, UNVERIFIABLE = "supported", "contradicted", "unsupported", "unverifiable"

# Words and phrases that negate what a sentence says about its subject.
_NEGATION = re.compile(
    r"\b(?:not|no|never|neither|nor|without|cannot|none|nothing|unable to|fail(?:ed|s)? to|lack(?:ed|s)? of"
    r"|absence of|non-?significant(?:ly)?|insignificant(?:ly)?)\b|n't\b",
    re.IGNORECASE,
)
# Negative words that do not negate what the sentence asserts: "whether or not", a subgroup defined by what it
# lacks ("those who had not received radiotherapy", "with or without").
_NOT_A_NEGATION = re.compile(
    r"\b(?:whether or not|or not|with or without|not only(?=.*\bbut\b)|no longer than|no more than|no less than|"
    r"(?:who|which|that) (?:had|have|has|did|do|does|were|was) not \w+|(?:those|patients|people|women|men|children|"
    r"subjects|participants|controls?) (?:without|not \w+ing))\b", re.IGNORECASE)
# "Yes, ...", "No. ...": the answer's verdict is not part of the claim about the source.
# (Punctuation required: "No change occurred ..." is a claim.)
_VERDICT_PREFIX = re.compile(r"^\s*(?:yes|no|maybe)\s*[,.:;!\u2013\u2014-]+\s*", re.IGNORECASE)

# Direction of change, as pairs of opposites; a word and its partner are swapped to reverse a claim.
DIRECTION_PAIRS = [
    ("increased", "decreased"), ("increase", "decrease"), ("increases", "decreases"), ("increasing", "decreasing"),
    ("higher", "lower"), ("greater", "smaller"), ("larger", "smaller"), ("more", "less"), ("longer", "shorter"),
    ("rose", "fell"), ("raised", "lowered"), ("prolonged", "shortened"), ("extended", "shortened"), ("raised", "reduced"), ("elevated", "reduced"), ("improved", "worsened"),
    ("improves", "worsens"), ("improvement", "deterioration"), ("gain", "loss"), ("above", "below"),
]
_UP = {up for up, _ in DIRECTION_PAIRS} | {"rise", "rises", "risen", "elevation", "enhanced", "boosted", "prolong", "prolongs"}
_DOWN = {down for _, down in DIRECTION_PAIRS} | {
    "fewer", "reduce", "reduces", "reduction", "reductions", "decline", "declined", "declines", "drop", "dropped",
    "fall", "falls", "diminished", "attenuated", "lowered", "lowers", "worse", "shortened"}
_WORD = re.compile(r"[A-Za-z]+(?:'t)?")

_UNITS = (r"%|percent|per cent|mg/kg|mg/dl|mmol/l|mmhg|mg|µg|ug|mcg|g|kg|ml|l|mmol|iu|units?|years?|months?"
          r"|weeks?|days?|hours?|h|min|minutes?|fold|times|cm|mm|m")
_NUMBER = re.compile(rf"(?<![\w.\-/])(\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)?|\.\d+)\s*({_UNITS})?(?![\w])",
                     re.IGNORECASE)
_NUMBER_WORDS = {"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
                 "nine": "9", "ten": "10", "twice": "2", "half": "0.5"}
_NUMBER_WORD = re.compile(rf"\b({'|'.join(_NUMBER_WORDS)})\b", re.IGNORECASE)


# A sentence that states what a study set out to do ("To assess whether X predicts Y.", "The aim was...") says
# nothing either way about the answer, so it cannot contradict a claim.
_AIM = re.compile(r"^\W*(?:to (?:assess|determine|evaluate|compare|examine|investigate|analy[sz]e|study|test|"
                  r"explore|identify|describe|estimate|measure|review|report)|(?:the|our|this) (?:aim|objective|"
                  r"purpose|goal)s?\b|(?:we|this study|the present study|the study) (?:aimed|sought|set out|"
                  r"examined|assessed|evaluated|investigated|compared|tested|asked)\b|(?:objective|aims?|purpose|"
                  r"background|introduction)\s*:|(?:this|the|our|the present)(?: [\w-]+){0,3} (?:study|trial|analysis|"
                  r"review|work) (?:was|is) (?:planned|designed|conducted|undertaken|intended) to\b|"
                  r"in this (?:study|work|paper|trial),? we (?:have )?(?:explored|aimed|sought|investigated|examined|"
                  r"assessed|evaluated)\b)", re.IGNORECASE)


def states_an_aim(sentence: str) -> bool:
    return bool(_AIM.match(sentence))


# What a quotation may be: a finding (rank 2: from a conclusion or results section, or stating one), any other
# sentence (1), or one that answers nothing (0: an aim, a caption or table row, a method, background).
_NOT_A_FINDING_SECTION = re.compile(r"background|introduction|objective|aim|purpose|method|design|setting|"
                                    r"participant|patients|intervention|outcome measure|table|figure", re.IGNORECASE)
_CAPTION = re.compile(r"^\W*(?:table|figure|fig\.|supplementa\w*|(?:baseline |demographic )?characteristics of|"
                      r"flow ?chart|abbreviations?)\b", re.IGNORECASE)
# In a discussion, sentences that are not the study's own finding: others' work, limitations and what future work
# needs, and claims to be the first to look ("To our knowledge, our study is the first to rigorously evaluate ...").
_NOT_ITS_OWN_FINDING = re.compile(
    r"\b(?:previous(?:ly)?|prior|earlier|other|another|several|many|some|recent|more recent) (?:[\w-]+ )?(?:studies|"
    r"study|reports?|trials?|authors|investigators|researchers|work|reviews?)\b|\b(?:has|have) (?:also )?been "
    r"(?:reported|shown|suggested|demonstrated|proposed|described|hypothesi[sz]ed)\b|\bet al\b|\blimitations?\b|"
    r"\bshortcomings?\b|\bmay not have been\b|\b(?:further|future) (?:studies|research|work|investigations?)\b|"
    r"\bthe first (?:[\w-]+ ){0,3}to (?:rigorously |systematically )?(?:evaluate|assess|examine|investigate|explore|"
    r"describe|report|compare|study)\b", re.IGNORECASE)
# ... unless the sentence says it is the study's own: "notwithstanding the limitations of such a study, we
# conclude that ...".
_ITS_OWN_FINDING = re.compile(r"\b(?:we (?:conclude|found|find|show(?:ed)?|demonstrated?|observed)|in conclusion|"
                              r"our (?:results|findings|data|study|trial) (?:show|suggest|indicate|demonstrate)\w*)\b",
                              re.IGNORECASE)


def not_its_own_finding(sentence: str) -> bool:
    """Others' work, a limitation, what future work needs, or a claim to be first: not the study's own finding."""
    return bool(_NOT_ITS_OWN_FINDING.search(sentence)) and not _ITS_OWN_FINDING.search(sentence)


def finding_rank(sentence: str, section: Any) -> int:
    """2: a finding; 1: another sentence; 0: an aim, a caption or table row, a method, or background.

    Where the section's title does not say (a Discussion, an unlabelled abstract, a user's PDF page), the trained
    classifier (`finding_classifier`) decides whether the sentence states a finding, and it is the floor under
    every section: a sentence it is sure is an aim, a method or background is never a finding."""
    section = str(section or "")
    classifier = _finding_classifier()
    probability = classifier.probability(sentence)
    if states_an_aim(sentence) or _CAPTION.match(sentence) or probability < NOT_A_FINDING_BELOW:
        return 0
    others = not_its_own_finding(sentence)
    if FINDINGS_SECTION.search(section):
        return 1 if others else 2
    states_one = probability >= classifier.threshold
    if _NOT_A_FINDING_SECTION.search(section):
        return 1 if states_one else 0
    return 2 if states_one and not others else 1


# Under this, the trained classifier is sure a sentence is an aim, a method or background, whatever its section: a
# conclusions section that opens by restating the aim ("The present study was carried out to explore the
# feasibility of detecting asthma by RS of sera.") is quoted from its findings. Chosen on the tuning abstracts
# (the 200 held out of training): 1 of 1,196 findings under 0.03, and 140 of 1,063 other sentences; at 0.05, 11
# findings. On the held-aside full-text sentences: 7 of 1,020 findings, 47 of 1,519 others
# (pmc_rag.evaluation.finding_sentences --floor).
NOT_A_FINDING_BELOW = 0.03


def _finding_classifier() -> Any:
    from pmc_rag.components.finding_classifier import shipped_classifier

    return shipped_classifier()


def check_pairs(claims: list[str], evidence: list[str]) -> None:
    """Every support judge takes claims and evidence pairwise: refuse lists that do not pair up."""
    if len(claims) != len(evidence):
        raise ValueError(f"claims and evidence must pair up: {len(claims)} claims, {len(evidence)} evidence")


# "(TBI)", "(cIMT)", "(ACE-I)": a short bracketed word with two or more capitals.
_BRACKETED_ABBREVIATION = re.compile(r"\((?=[^()\s]*[A-Z][^()\s]*[A-Z])[A-Za-z0-9/\-]{2,10}\)")


def restates_question(sentence: str, question: str) -> bool:
    """A question ("Does X improve Y?"), or the question restated as a statement, with or without a verdict in
    front ("Yes, X improves Y."): every content word but one is the question's own. Such a sentence says nothing
    the question did not, so no excerpt can be shown to support it as a finding."""
    bare = re.sub(r"\[[^\]]*\]", "", sentence).strip()
    # A question, or one quoted inside a sentence ('Yes, the question "Stage I NSCLC: really an early stage?" can
    # be answered yes'): a finding has no question mark.
    if "?" in bare:
        return True
    # An abbreviation in brackets only renames the words before it ("traumatic brain injury (TBI)"): it is not
    # something the sentence adds to the question (seen in an eval, 2026-11-27, dev 401-500).
    words = content_words(_BRACKETED_ABBREVIATION.sub(" ", without_verdict(bare)))
    return len(words) >= 2 and len(words - content_words(question)) <= 1


def without_verdict(claim: str) -> str:
    """The claim without a leading "Yes," / "No." / "Maybe:" (the answer's verdict on the question)."""
    return _VERDICT_PREFIX.sub("", claim, count=1)


def is_negated(text: str) -> bool:
    return bool(_NEGATION.search(_NOT_A_NEGATION.sub(" ", text)))


# A group described by what it did not do ("patients who had not smoked") is not a negated finding, but the same
# group with and without the "not" are two different groups.
_NEGATED_GROUP = re.compile(r"\b(who|which|that) (had|have|has|did|do|does|were|was) not (\w+)", re.IGNORECASE)


def negated_group_flip(claim: str, evidence_sentence: str) -> str | None:
    """A group described with "not" on one side and without it on the other ("who have not chronic conditions"
    against "who have chronic conditions"): that group, else None."""
    for negated, plain in ((claim, evidence_sentence), (evidence_sentence, claim)):
        for match in _NEGATED_GROUP.finditer(negated):
            group = " ".join(match.groups())
            if re.search(rf"\b{re.escape(group)}\b", plain, re.IGNORECASE) and not _NEGATED_GROUP.search(plain):
                return f"{match.group(1)} {match.group(2)} not {match.group(3)}"
    return None


# What "not" negates is the word it stands before, past auxiliaries and adverbs ("did not significantly reduce").
_VERBAL_NEGATION = re.compile(r"\b(?:not|never|fail(?:ed|s)? to|unable to)\b", re.IGNORECASE)
_BEFORE_THE_NEGATED = {"be", "been", "being", "is", "are", "was", "were", "significantly", "statistically",
                       "appear", "appears", "appeared", "seem", "seems", "seemed", "to", "have", "has", "had", "do",
                       "does", "did", "a", "an", "the", "any", "always", "necessarily", "clearly", "also", "yet"}
# A negation (`_NEGATION`) earlier in a word's clause negates it there ("no reduction", "None of the identifiers ...
# have been validated"); a comma or "but" ends a clause ("With lack of venous material, X provides ...").
_CLAUSE_END = {",", ";", ":", "but", "whereas", "although", "while", "however"}


def _plain_words(text: str) -> list[str]:
    """Lower-case words and clause marks, with "n't" and "cannot" spelled "not", and the phrases that do not
    negate taken out."""
    text = _NOT_A_NEGATION.sub(" ", text)
    text = re.sub(r"n't\b", " not", re.sub(r"\bcannot\b", "can not", text, flags=re.IGNORECASE))
    return re.findall(r"[a-z0-9]+|[,;:]", text.lower())


def _negated_words(text: str) -> list[tuple[str, str]]:
    """(phrase, stem) for each word a "not", "never" or "failed to" negates: [("not provide", "provid")]."""
    words = " ".join(_plain_words(text))
    found = []
    for match in _VERBAL_NEGATION.finditer(words):
        negated = next((w for w in words[match.end():].split()[:4] if w not in _BEFORE_THE_NEGATED), None)
        stems = content_stems(negated) if negated else []
        if stems:
            found.append((f"{match.group(0)} {negated}", stems[0]))
    return found


def _in_a_negated_clause(words: list[str], place: int) -> bool:
    start = max((i + 1 for i, word in enumerate(words[:place]) if word in _CLAUSE_END), default=0)
    return bool(_NEGATION.search(" ".join(words[start:place])))


def _stated_plainly(stem: str, text: str) -> bool:
    """Whether the text has the word, and never after a negation in the same clause."""
    words = _plain_words(text)
    places = [i for i, word in enumerate(words) if content_stems(word)[:1] == [stem]]
    return bool(places) and not any(_in_a_negated_clause(words, i) for i in places)


def negated_word_flip(claim: str, evidence_sentence: str) -> str | None:
    """A word negated on one side that the other side states plainly, though both say "not" or "no" somewhere:
    "X does not provide a good alternative" against "In patients with lack of venous material, X provides a good
    alternative" (a paraphrase the 0.5B model wrote, 2026-11-27). The negated phrase, else None."""
    for negated, plain in ((claim, evidence_sentence), (evidence_sentence, claim)):
        for phrase, stem in _negated_words(negated):
            if _stated_plainly(stem, plain):
                return phrase
    return None


@dataclass(frozen=True)
class Quantity:
    value: str       # normalised: "1000", "0.5", "45"
    unit: str | None  # lower case, "%" for percent


def _normalise_value(raw: str) -> str:
    value = raw.replace(",", "")
    if value.startswith("."):
        value = "0" + value
    if "." in value:
        value = value.rstrip("0").rstrip(".")
    return value


def _normalise_unit(raw: str | None) -> str | None:
    if not raw:
        return None
    unit = raw.lower().replace("per cent", "%").replace("percent", "%")
    return unit.rstrip("s") if unit not in {"%", "mmhg", "ms"} and len(unit) > 2 else unit


def quantities(text: str) -> list[Quantity]:
    """The numbers a text states, with the unit written after each ("45%", "2.5 mg", "twelve" is not counted)."""
    return [quantity for quantity, _ in _quantities_in_place(text)]


def _quantities_in_place(text: str) -> list[tuple[Quantity, tuple[str, str]]]:
    """Each quantity with the words just before and after it ("" at either end of the text)."""
    text = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(1).lower()], text)
    found = []
    for match in _NUMBER.finditer(text):
        before = _TOKEN.findall(text[:match.start()])
        after = _TOKEN.findall(text[match.end():])
        found.append((Quantity(_normalise_value(match.group(1)), _normalise_unit(match.group(2))),
                      (before[-1].lower() if before else "", after[0].lower() if after else "")))
    return found


_TOKEN = re.compile(r"[A-Za-z0-9]+")
# Words that sit beside numbers of every kind ("1 to 4", "3 of 5"): sharing one says nothing of which number
# a claim's number stands for. Sharing both neighbours, or a word like "Patient" or "morbidity", does.
_CONNECTIVES = {"to", "and", "of", "in", "with", "vs", "versus", "or", "than", "the", "a", "at", "by", "for", "from",
                "between", "was", "were", "is", "are", "on", "after", "per", "mg", "p"}


def directions(text: str) -> set[str]:
    """"up" and/or "down": the directions of change a text's words state."""
    return _directions(Counter(word.lower() for word in _WORD.findall(text)))


def _directions(words: Counter) -> set[str]:
    return ({"up"} if set(words) & _UP else set()) | ({"down"} if set(words) & _DOWN else set())


def reversed_direction(claim: str, evidence_sentence: str) -> tuple[set[str], set[str]] | None:
    """The directions stated only by the claim and only by the sentence, when they are opposite: the words the
    two do not share are compared, so a sentence saying "reduced X and improved Y" is not taken to agree with a
    claim saying "elevated X and improved Y"."""
    claim_words = Counter(word.lower() for word in _WORD.findall(claim))
    sentence_words = Counter(word.lower() for word in _WORD.findall(evidence_sentence))
    claimed, stated = _directions(claim_words - sentence_words), _directions(sentence_words - claim_words)
    return (claimed, stated) if claimed and stated and not claimed & stated else None


def unmatched_quantities(claim: str, evidence_sentence: str, elsewhere: str = "") -> list[Quantity]:
    """
    The claim's quantities that the evidence does not state: the value, with the same unit when both give one.
    Each number of the evidence sentence answers for one number of the claim ("3 of the 3 clinics" is not "1 of
    the 3 clinics"). A number stated `elsewhere` in the excerpt answers for any, except where the claim's number
    takes the place of one the sentence states and the claim leaves out: "in Patient 3" against "in Patient 1"
    (while another sentence mentions three patients), "between 3 and 16 years" against "between 1 and 16".
    """
    stated = _quantities_in_place(evidence_sentence)
    stated_elsewhere = quantities(elsewhere)
    unused = list(stated)
    unmatched = []
    for quantity, place in _quantities_in_place(claim):
        match = next((s for s in unused if _same(s[0], quantity)), None)
        if match is not None:
            unused.remove(match)
        else:
            unmatched.append((quantity, place))
    missing = []
    for quantity, place in unmatched:
        in_sentence = any(_same(q, quantity) for q, _ in stated)
        replaced = any(_takes_place_of(place, other) for _, other in unused)
        if not any(_same(q, quantity) for q in stated_elsewhere) or replaced or (in_sentence and unused):
            # "3 of the 3" against "1 of the 3": the second 3 stands where the sentence says 1
            missing.append(quantity)
    return missing


def _takes_place_of(claimed: tuple[str, str], stated: tuple[str, str]) -> bool:
    """Whether a claimed number stands where the sentence has another: the same word on both sides of it, or
    the same word on one side that is not a connective."""
    same = [c for c, s in zip(claimed, stated) if c and c == s]
    return len(same) == 2 or any(word not in _CONNECTIVES for word in same)


def _same(stated: Quantity, claimed: Quantity) -> bool:
    return stated.value == claimed.value and not (claimed.unit and stated.unit and stated.unit != claimed.unit)


def conflicts(claim: str, evidence_sentence: str, evidence: str | None = None) -> list[str]:
    """
    Ways in which the claim says something other than the evidence sentence it is closest to: a negation one has
    and the other lacks, a number (or unit) the evidence does not state, an opposite direction of change.
    `evidence` is the whole excerpt: a number stated anywhere in it counts as stated.
    """
    claim = without_verdict(claim)
    found = []
    if is_negated(claim) != is_negated(evidence_sentence):
        found.append("negation: the claim is negated, the source is not" if is_negated(claim) else
                     "negation: the source is negated, the claim is not")
    elif group := negated_group_flip(claim, evidence_sentence):
        found.append(f"negation: '{group}' on one side only")
    elif flipped := negated_word_flip(claim, evidence_sentence):
        found.append(f"negation: '{flipped}' on one side, said plainly on the other")
    elsewhere = (evidence or "").replace(evidence_sentence, " ")
    missing = unmatched_quantities(claim, evidence_sentence, elsewhere)
    if missing:
        shown = ", ".join(f"{q.value}{' ' + q.unit if q.unit and q.unit != '%' else q.unit or ''}" for q in missing)
        found.append(f"numbers: the source does not state {shown}")
    reversal = reversed_direction(claim, evidence_sentence)
    if reversal:
        claimed, stated = reversal
        found.append(f"direction: the claim says {'/'.join(sorted(claimed))}, the source says "
                     f"{'/'.join(sorted(stated))}")
    return found


# --- making such claims (the evaluation's adversarial generators use these) ---------------------------------

_SWAP = {**{a: b for a, b in DIRECTION_PAIRS}, **{b: a for a, b in DIRECTION_PAIRS}}
_AUXILIARY = re.compile(r"\b(was|were|is|are|did|does|do|has|have|had|can|could|will|would|may|might)\b(?! not)",
                        re.IGNORECASE)


def negate(sentence: str) -> str | None:
    """The sentence with its negation removed, or "not" added after its first auxiliary verb; None if neither."""
    if is_negated(sentence):
        flipped = re.sub(r"\s*\bnot\b", "", sentence, count=1, flags=re.IGNORECASE)
        flipped = re.sub(r"\bno\b\s*", "", flipped, count=1, flags=re.IGNORECASE) if flipped == sentence else flipped
        return flipped if not is_negated(flipped) else None
    match = _AUXILIARY.search(sentence)
    return f"{sentence[:match.end()]} not{sentence[match.end():]}" if match else None


def change_numbers(sentence: str) -> str | None:
    """The sentence with its first number changed (doubled plus one, keeping its form); None without a number."""
    match = _NUMBER.search(sentence)
    if not match:
        return None
    raw = match.group(1).replace(",", "")
    value = float("0" + raw if raw.startswith(".") else raw)
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    changed = f"{value * 2 + 1:.{decimals}f}"
    return sentence[:match.start(1)] + changed + sentence[match.end(1):]


def reverse_direction(sentence: str) -> str | None:
    """The sentence with its first direction word replaced by its opposite; None without one."""
    for match in _WORD.finditer(sentence):
        opposite = _SWAP.get(match.group(0).lower())
        if opposite:
            if match.group(0)[0].isupper():
                opposite = opposite.capitalize()
            return sentence[:match.start()] + opposite + sentence[match.end():]
    return None
