"""Citation text handling shared by the citation components: finding ids in model output, and lexical support.

Citation ids are the `source_id`s ingestion gives papers (see ingestion/article.py): `PMC<digits>`,
`PMID:<digits>` for abstracts without a PMCID, `doi:<DOI>` for papers with neither. Small models write them in
many ways; all of these are recognised and normalised: `[PMC123]`, `[PMC123, PMC456]`, `(PMC123)`, `PMC123`,
`pmc 123`, `[PMID: 123]`, `PMID123`, `【PMC123】` (full-width forms), `[doi:10.1371/x]`. A bare bracketed number
(`[2]`) is no id: it is removed and reported, never left to look like one of the answer's numbered citations.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import snowballstemmer
from haystack import Document

from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.components.spellings import american_spelling

ID_PATTERN = _ID = re.compile(
    r"(?P<pmc>\bPMC\s?(?P<pmc_digits>\d{1,10})\b)"
    r"|(?P<pmid>\bPMID\s*[:#]?\s*(?P<pmid_digits>\d{1,10})\b)"
    r"|(?P<doi>\bdoi\s*:\s*(?P<doi_value>10\.\d{4,9}/[^\s\]\),;]+))"
    # A document of the user's own (PDF, text): `doc:` and the first 16 hex digits of its file's SHA-256.
    r"|(?P<doc>\bdoc\s*:\s*(?P<doc_value>[0-9a-f]{16})\b)",
    re.IGNORECASE,
)
# A DOI written without "doi:", as people paste them ("10.1371/journal.pmed.1001473").
_BARE_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\]\),;?]+)")
# A bare bracketed number, "[2]", "[1, 3]", "[2-4]": it names no paper, yet a reader takes it for one of our
# numbered citations, so it is removed like any citation to a paper the model was not shown.
BARE_NUMBERS = re.compile(r"\[\s*\d{1,4}(?:\s*[-\u2013,;]\s*\d{1,4})*\s*\]")
# What is left of "[PMC1, PMC2]" or "(PMID: 3 and PMC4)" once the ids are taken out.
_EMPTIED_BRACKETS = re.compile(r"[\[(](?:[\s,;&]|\band\b)*[\])]", re.IGNORECASE)
# Where a model starts appending its own reference list: everything after it is not part of the answer.
REFERENCE_HEADING = _REFERENCE_HEADING = re.compile(
    r"^\s*(?:#+\s*|\*\*)?(?:references?|sources?|citations?|bibliography|works cited)\b\s*(?:\*\*)?\s*:?",
    re.IGNORECASE | re.MULTILINE,
)
_REFERENCE_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*[\[(]?\s*(?:PMC\s?\d|PMID|doi\s*:|doc\s*:)", re.IGNORECASE)


_BRACKETS = str.maketrans({"【": "[", "】": "]", "〔": "(", "〕": ")", "〖": "[", "〗": "]"})


def normalise_text(text: str) -> str:
    """NFKC (full-width brackets and digits become ASCII), CJK brackets as ASCII, no zero-width characters."""
    text = unicodedata.normalize("NFKC", text or "").translate(_BRACKETS)
    return re.sub(r"[\u200b-\u200d\ufeff]", "", text)


def normalise_id(match: re.Match) -> str:
    if match.group("pmc"):
        return f"PMC{int(match.group('pmc_digits'))}"
    if match.group("pmid"):
        return f"PMID:{int(match.group('pmid_digits'))}"
    if match.group("doc"):
        return f"doc:{match.group('doc_value').lower()}"
    return f"doi:{match.group('doi_value').rstrip('.').lower()}"


def paper_ids(text: str) -> list[str]:
    """The paper ids a text names, normalised, in order: PMC, PMID, `doi:` and `doc:` ids, and bare DOIs."""
    ids = [normalise_id(m) for m in _ID.finditer(text)]
    if "doi:" not in text.lower():
        ids += [f"doi:{m.group(1).rstrip('.').lower()}" for m in _BARE_DOI.finditer(text)]
    return ids


def canonical_id(source_id: str) -> str:
    """The form `normalise_id` gives, for comparing a document's source_id with a cited one."""
    match = _ID.fullmatch(source_id.strip())
    return normalise_id(match) if match else source_id.strip()


def strip_reference_list(text: str) -> tuple[str, str]:
    """Split off a reference list the model appended: (answer, appended list). The list is not the answer."""
    heading = _REFERENCE_HEADING.search(text)
    if heading and heading.start() > 0:
        return text[:heading.start()].rstrip(), text[heading.start():]
    lines = text.rstrip().split("\n")
    tail_start = len(lines)
    while tail_start > 1 and (_REFERENCE_LINE.match(lines[tail_start - 1]) or not lines[tail_start - 1].strip()):
        tail_start -= 1
    if tail_start < len(lines) and any(line.strip() for line in lines[:tail_start]):
        return "\n".join(lines[:tail_start]).rstrip(), "\n".join(lines[tail_start:])
    return text, ""


@dataclass
class CitedSentence:
    """One sentence of an answer with the ids it cites (normalised, in order, without repeats)."""

    text: str  # the sentence with its citation marks removed
    cited: list[str]
    bare: list[str] = field(default_factory=list)  # bare bracketed numbers ("[2]") it held, removed from `text`


def split_cited_sentences(answer: str) -> list[CitedSentence]:
    """Sentences of the answer text, each with the ids cited in it."""
    sentences = []
    for raw in split_sentences(" ".join(answer.split())):
        cited = list(dict.fromkeys(normalise_id(m) for m in _ID.finditer(raw)))
        bare = list(dict.fromkeys(re.sub(r"\s+", "", m.group(0)) for m in BARE_NUMBERS.finditer(raw)))
        opening = _ID.match(raw)
        if opening and re.match(r"\s+[a-z]", raw[opening.end():]):
            # the id is the sentence's subject ("PMC2329613 is a study that ..."): it still cites the paper
            raw = "This paper" + raw[opening.end():]
        text = _drop_unmatched_brackets(_EMPTIED_BRACKETS.sub("", _ID.sub("", BARE_NUMBERS.sub("", raw))))
        text = re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
        if text or cited:
            sentences.append(CitedSentence(text, cited, bare))
    return sentences


def _drop_unmatched_brackets(text: str) -> str:
    """Remove brackets left without a partner (a model's "[PMC7" with no "]", say)."""
    pairs = {"]": "[", ")": "("}
    open_positions: list[int] = []
    unmatched = set()
    for position, character in enumerate(text):
        if character in "[(":
            open_positions.append(position)
        elif character in pairs:
            if open_positions and text[open_positions[-1]] == pairs[character]:
                open_positions.pop()
            else:
                unmatched.add(position)
    unmatched.update(open_positions)
    kept = "".join(c for i, c in enumerate(text) if i not in unmatched)
    return re.sub(r"\s{2,}", " ", kept)


# Words that say nothing about support; a small English list, plus words every question and claim use.
_STOP_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers him his how i if in into is it its itself just may me might more most must my no nor not now of off on once
only or other our out over own same she should so some such than that the their them then there these they this
those through to too under until up very was we were what when where which while who whom why will with would
you your study studies patients results however therefore thus yes non
""".split())

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(american_spelling(word))


def content_words(text: str) -> set[str]:
    """
    Stems of the text's words of three or more characters, minus stop words.

    Hyphenated words count as their parts and words are reduced to their Snowball (Porter 2) stems, so that
    "progression-free survival" matches "progression free survival" and "EGFR-mutant" matches "EGFR mutation";
    British spellings count as American ones ("tumours" matches "tumors", "anaemia" "anemia").
    """
    return set(content_stems(text))


def content_stems(text: str) -> list[str]:
    """The stems `content_words` takes, in the text's order and repeated (for phrases: "infection control")."""
    return [_stem(word) for word in re.findall(r"[a-z0-9]{3,}", normalise_text(text).lower())
            if word not in _STOP_WORDS]


def support(claim: str, evidence: str) -> float | None:
    """Share of the claim's content words found in the evidence (None if the claim has fewer than three)."""
    claim_words = content_words(claim)
    if len(claim_words) < 3:
        return None
    return len(claim_words & content_words(evidence)) / len(claim_words)


def best_sentence(claim: str, evidence: str, exclude: Callable[[str], bool] | None = None) -> tuple[str, float]:
    """The sentence of the evidence that shares the most content words with the claim, and that share (sentences
    for which `exclude` is true are passed over)."""
    claim_words = content_words(claim) or {""}
    best, best_score = "", -1.0
    for sentence in split_sentences(" ".join(evidence.split())):
        if exclude is not None and exclude(sentence):
            continue
        score = len(claim_words & content_words(sentence)) / len(claim_words)
        if score > best_score:
            best, best_score = sentence, score
    return best, max(best_score, 0.0)


def shown_text(document: Document) -> str:
    """What the model saw of an excerpt: its title (in its label) and its text."""
    title = (document.meta.get("title") or "").strip()
    if title and title[-1] not in ".?!":
        title += "."  # a sentence of its own, not the start of the excerpt's first one
    return f"{title}\n{document.content or ''}"


def by_paper(documents: list[Document], source_id_field: str = "source_id") -> dict[str, list[Document]]:
    """The documents grouped by the paper they come from (canonical citation id), in first-seen order."""
    grouped: dict[str, list[Document]] = {}
    for document in documents:
        grouped.setdefault(canonical_id(str(document.meta.get(source_id_field, ""))), []).append(document)
    return grouped


def quoted_words(words: list[str]) -> str:
    """"'a'", "'a' or 'b'", "'a', 'b' or 'c'": words named in a reply."""
    quoted = [f"'{w}'" for w in words]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
