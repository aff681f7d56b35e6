"""
What a follow-up asks for beyond its own words: a count, how the study was done, a duration, harms, significance
or a rate.

A reader who has the paper's conclusion asks next "How many patients took part?", "How was it measured?", "What
about its side effects?". Their answers are not where a verdict's answer is: a count or a method is in the methods
or participants, and side effects are written "toxicity", "well tolerated" or "complications". `asked_for` reads
the ask from the follow-up's wording, so that the quotation step looks for the right kind of sentence.

Usage:
```python
from pmc_rag.components.follow_up_asks import asked_for

ask = asked_for("How many patients took part in it?")
ask.kind, ask.in_methods                                   # ("count", True)
ask.fits("Patients (N=44) with idiopathic PD.", "Abstract: Participants")   # True
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmc_rag.components.citations import content_words
from pmc_rag.components.claim_signals import states_an_aim
from pmc_rag.components.follow_up_query import follow_up_query

# A number as papers write one: digits, or a number word ("Seventeen patients", "Forty consecutive ...").
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
                     r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|"
                     r"ninety|hundred|thousand)\b", re.IGNORECASE)
# A count: a number or share within three words before who or what was counted ("Seven individuals", "136 breasts
# of 134 patients", "14% of patients"), or "N=44". Not any number beside them ("participants ... a 6-minute walk
# test").
_COUNT = re.compile(r"(?:\d[\d,.]*%?|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
                    r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
                    r"eighty|ninety|hundred|thousand)(?:-\w+)?)(?:\s+\S+){0,3}?\s+(?:patients?|participants?|"
                    r"subjects?|people|persons?|individuals?|women|men|children|adults?|students?|members?|cases?|"
                    r"procedures?|operations?|samples?|specimens?|pregnancies|teeth|eyes|hearts|infants?|"
                    r"respondents?|trainees?|volunteers?|controls?|dentists?|nurses?|physicians?|doctors?)\b|"
                    r"\bn\s*=\s*\d", re.IGNORECASE)
_TIME = re.compile(r"\b(?:days?|weeks?|months?|years?|yrs?)\b|\d-year|\d-month", re.IGNORECASE)
_RATE = re.compile(r"%|\bper ?cent|\brates?\b|\bproportion\b|\bof the \d+|\bof \d+\b", re.IGNORECASE)
# Where a paper says how its study was done.
_METHODS_SECTION = re.compile(r"method|material|participant|patient|subject|design|setting|population|sample|"
                              r"measure|intervention|data source|procedure", re.IGNORECASE)
# Where it says why: never an answer to how it was done.
_WHY_SECTION = re.compile(r"background|introduction|objective|aim|purpose|context|rationale", re.IGNORECASE)


@dataclass(frozen=True)
class Ask:
    """
    What a follow-up asks for.

    :param kind: "count", "duration", "method", "harms", "significance" or "rate".
    :param words: The stems of the words papers use for it ("toxic", "toler" for "side effects").
    :param in_methods: The answer may be a sentence of the methods or participants, which the quotation step
        otherwise never quotes.
    :param wanted: What it asks for, in words, for the answer's notes ("a number", "which equations").
    :param misleading: Stems of the follow-up's own words that mean something else alone: "effect" of "side
        effects" is the stem of "effective".
    :param search_words: Words the follow-up's search adds, so that the passages that answer are found.
    """

    kind: str
    words: frozenset[str]
    in_methods: bool
    wanted: str
    misleading: frozenset[str] = frozenset()
    search_words: str = ""
    counted: frozenset[str] = frozenset()  # what "how many ..." counts, singular ("sheep", "goat", "study")

    def may_quote(self, sentence: str, section: str | None) -> bool:
        """Whether a sentence the quotation step would skip as a method may answer this ask: only for asks about
        how the study was done, and never an aim or background."""
        return self.in_methods and not _WHY_SECTION.search(str(section or "")) and not states_an_aim(sentence)

    @property
    def wants_number(self) -> bool:
        """A count, a duration or a rate: a sentence without its number cannot answer, whatever words it shares."""
        return self.kind in ("count", "duration", "rate")

    @property
    def weight(self) -> int:
        """What a fitting sentence counts for in the quotation step, in words shared."""
        return 2 if self.wants_number else 1

    def fits(self, sentence: str, section: str | None) -> bool:
        """Whether the sentence is the kind of sentence that answers: a count, a duration, a rate, a method."""
        if self.kind == "count":
            # people counted ("How many patients ...") as papers count them, "N=44" too; anything else by its name
            people = not self.counted or any(_COUNT.search(f"2 {word}") for word in self.counted)
            return bool(people and _COUNT.search(sentence)) or _counts(sentence, self.counted)
        if self.kind == "duration":
            return bool(_NUMBER.search(sentence) and _TIME.search(sentence))
        if self.kind == "rate":
            return bool(_NUMBER.search(sentence) and _RATE.search(sentence))
        if self.kind == "method":
            return bool(_METHODS_SECTION.search(str(section or "")))
        return bool(self.words & content_words(sentence))

    def says(self, sentence: str) -> bool:
        """Whether a sentence, wherever it comes from (a model's), gives what is asked: its number, or the words
        papers use for it ("assessed", "toxicity", "equation")."""
        return self.fits(sentence, None) if self.wants_number else bool(self.words & content_words(sentence))


def _stems(text: str) -> frozenset[str]:
    return frozenset(content_words(text))


# In order: "How many patients had complications?" is a count. A count, a duration or a rate is recognised by its
# number (`Ask.fits`), not by words.
_ASKS = [
    ("count", re.compile(r"\bhow (?:many|large|big)\b|\bsample size\b|\bnumber of (?:patients|participants|"
                         r"subjects|people|cases)\b", re.IGNORECASE), frozenset(), True, "a number",
     "patients participants enrolled included"),
    ("duration", re.compile(r"\bhow long\b|\bfollow(?:ed)?[- ]?up\b|\bduration\b", re.IGNORECASE), frozenset(), True,
     "a duration", "follow-up months years"),
    ("rate", re.compile(r"\bhow (?:often|common|frequent(?:ly)?)\b|\b(?:success|response|survival|complication|"
                        r"recurrence|mortality|accuracy) rates?\b|\bwhat (?:percentage|proportion|share)\b",
                        re.IGNORECASE), frozenset(), False, "a rate or share", "rate"),
    # Papers say "assessed" where a reader asks how something was "measured".
    ("method", re.compile(r"\bhow (?:was|were|is|are|did|do|does)\b.*\b(?:measur|test|assess|evaluat|determin|"
                          r"diagnos|done|perform|defin|scor|select|recruit|analy[sz]|calculat|estimat)\w*",
                          re.IGNORECASE), _stems("measured assessed evaluated tested determined"), True,
     "how it was measured or done", "measured assessed methods"),
    ("harms", re.compile(r"\b(?:side[- ]effects?|adverse|complications?|safety|safe|harms?|harmful|toxicit\w*|"
                         r"tolerat\w*)\b", re.IGNORECASE),
     _stems("toxicity toxicities adverse tolerated tolerability safety safe complications morbidity harms side"),
     False, "harms or side effects", "toxicity tolerated adverse events safety complications"),
    ("significance", re.compile(r"\bsignifican\w*|\bp[- ]values?\b", re.IGNORECASE),
     _stems("significant significantly different difference"), False, "whether the results were significant",
     "significant difference"),
]
# "Which costs did they compare?", "What outcomes did they measure?": the thing named is what the answer must
# name, though the topic question named it too ("cost savings").
_WHICH = re.compile(r"\b(?:which|what) (?:\w+ )?(tests?|methods?|equations?|measures?|outcomes?|scales?|costs?|"
                    r"instruments?|questionnaires?|criteria|techniques?|patients|participants|population|drugs?|"
                    r"doses?|groups?)\b", re.IGNORECASE)


def asked_for(question: str) -> Ask | None:
    """The kind of thing the question asks for, or None when it asks for a finding (the usual case)."""
    for kind, pattern, words, in_methods, wanted, search_words in _ASKS:
        if pattern.search(question):
            misleading = _stems("effects") if re.search(r"\bside[- ]effects?\b", question, re.IGNORECASE) else None
            return Ask(kind, words, in_methods, wanted, misleading or frozenset(), search_words,
                       _what_is_counted(question) if kind == "count" else frozenset())
    which = _WHICH.search(question)
    return Ask("method", _stems(which.group(1)), True, f"which {which.group(1).lower()}") if which else None


# What a question counts: the words after "how many" up to its verb or preposition ("How many sheep and goats were
# sampled?"); a number within four words before one of them is a count of it ("four or more likely effective
# drugs"), whatever the thing counted.
_HOW_MANY = re.compile(r"\bhow many\s+((?:[\w-]+\s+){0,3}?[\w-]+?)(?=\s+(?:were|was|are|is|did|do|does|had|have|has|"
                       r"took|got|received|underwent|in|of|with|from|at|for|on|per)\b|\s*[?,.]|$)", re.IGNORECASE)
_TOKEN = re.compile(r"[\w.,%-]+")
# a whole token that is a number ("1,180", "four"), not a word made with one ("six-variable", "3D")
_A_NUMBER = re.compile(r"\d[\d,.]*%?|" + _NUMBER.pattern.split("|", 1)[1], re.IGNORECASE)


def _what_is_counted(question: str) -> frozenset[str]:
    found = _HOW_MANY.search(question)
    return frozenset(_singular(w) for w in found.group(1).split() if w.lower() not in ("and", "or", "the")) \
        if found else frozenset()


def _counts(sentence: str, counted: frozenset[str]) -> bool:
    tokens = _TOKEN.findall(sentence)
    return bool(counted) and any(
        _A_NUMBER.fullmatch(token) and any(_singular(after) in counted for after in tokens[i + 1:i + 6])
        for i, token in enumerate(tokens))


def _singular(word: str) -> str:
    # "studies" counts as "study", "goats" as "goat" (plurals only: the question and the sentence agree in the rest)
    word = word.lower().strip(".,")
    return word[:-3] + "y" if word.endswith("ies") else word[:-1] if word.endswith("s") and not \
        word.endswith("ss") else word


_HOW_MUCH = re.compile(r"\bhow (?:many|long|large|big)\b", re.IGNORECASE)


def missing_detail(question: str, sentences: list[str]) -> str | None:
    """The caveat for an answer to "How many ...?" or "How long ...?" none of whose `sentences` has the number asked
    for (a conclusion quoted, a finding without its count); None otherwise. Only counts and durations: a number
    tells for sure whether a sentence gives them, where the words for harms or methods do not; and only when the
    question says "how many" or "how long" ("Do the programs require follow-up?" asks yes or no)."""
    ask = asked_for(question)
    if ask is None or ask.kind not in ("count", "duration") or not _HOW_MUCH.search(question):
        return None
    if any(ask.says(re.sub(r"\[\d+\]", "", sentence)) for sentence in sentences):  # not its citation marks
        return None
    return (f"No sentence of this answer gives {ask.wanted}, which the question asks for: the papers found may not "
            "report it, or not in the passages read.")


def searched_for(question: str, follow_up_to: str | None = None) -> str:
    """What a question searches for. A follow-up (`follow_up_to`, the question it follows up): its words, then the
    words papers use for what it asks, then its topic (`follow_up_query`). "What about its side effects? toxicity
    tolerated adverse events ... (follow-up to: ...)" finds the paper's safety results, which never say "side
    effects". Any other question is searched as it is."""
    if not follow_up_to:
        return question
    ask = asked_for(question)
    if ask is None or not ask.search_words:
        return follow_up_query(question, follow_up_to)
    return follow_up_query(f"{question} {ask.search_words}", follow_up_to)


def follow_up_words(question: str, topic_question: str) -> set[str]:
    """The content words a follow-up (its own words, `question`) adds to its topic question. Not "follow" either:
    while follow-ups came joined to their topic by "(follow-up to: ...)", that word was always taken out with the
    topic's, and the follow-up quotations were measured so ("How long were the patients followed?" then quotes
    "... long-term treatment for 3 years", and otherwise the last answer again)."""
    return content_words(question) - content_words(f"{topic_question} follow-up to")
