"""The model's sentences made fit to show, and what they say: cleaned (repeats, an unfinished last sentence, the
prompt's labels copied back), screened (remarks on the excerpts, "This is because ...", what "other papers" say
cited to one paper), and whether they compare the subjects a comparison names.

Plain functions `CitedAnswerBuilder` applies to the claims of `CitationVerifier`; no component of its own.

Usage:
```python
from pmc_rag.components.model_sentences import once, with_marks

once([{"text": "It works."}, {"text": "It  works."}])  # the sentence once
with_marks("It works.", ["[1]"])                       # "It works [1]."
```
"""

from __future__ import annotations

import re
from typing import Any

from haystack import Document
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citations import canonical_id, content_words
from pmc_rag.components.claim import Claim
from pmc_rag.components.quotation_chooser import cited_papers

# "The excerpts do not answer the question", "The excerpt states that ...", "The paper does not compare ...": a remark
# on the prompt or the paper, not a finding.
ABOUT_THE_EXCERPTS = re.compile(
    r"\bexcerpts?\b|\baccording to the (?:passages?|context|sources?|texts?)\b|"
    r"\b(?:the|these|this|provided|given) (?:passages?|context|texts?|sources?|abstracts?|papers?|articles?) "
    r"(?:do|does|did)?\s*(?:not\s+)?(?:answer|mention|state|say|provide|discuss|contain|address|describe|report|"
    r"indicate|suggest|show|specify|compare)", re.IGNORECASE)


# "This is because ...": the model's causal link to the sentence before, which no check reads (each sentence is
# checked alone, and the one before may be left out, so "this" points at nothing shown). The rest was checked.
BECAUSE_OF_THE_LAST = re.compile(r"^(?:this|that|these|it) (?:is|was|may be|might be) (?:because|due to)"
                                  r"(?: the fact that)?,? ", re.IGNORECASE)


# The request echoed as a label: "Summary: ...", "TL;DR: ...", "Key results of 'Quantifying ...': The paper ..."
REQUEST_LABEL = re.compile(r"^(?:summary|tl;?\s?dr|overview|key (?:results|findings)|main findings|in summary|"
                            r"outline)\b[^:]{0,160}:\s+(?=[A-Z])", re.IGNORECASE)


OTHER_PAPERS = re.compile(r"\bother (?:papers?|studies|study|trials?|reports?|research|articles?|authors)\b",
                           re.IGNORECASE)


def others_cited_to_the_first(claims: list[Claim], first_paper: Any
                               ) -> tuple[list[Claim], list[tuple[str, str]]]:
    """A two-step answer's sentences that say what "other papers" report but cite only the first paper (the one the
    first step found): left out, with why. The model writes them when the second search found nothing."""
    kept, left_out = [], []
    first = canonical_id(str(first_paper or ""))
    for claim in claims:
        if OTHER_PAPERS.search(claim["text"]) and claim["cited"] and cited_papers([claim]) <= {first}:
            left_out.append((claim["text"], f"it says what other papers report, but cites only {first}"))
        else:
            kept.append(claim)
    return kept, left_out


def capitalised(text: str) -> str:
    """The text with its first letter a capital: what is left of a sentence after its opening words were cut."""
    return text[:1].upper() + text[1:]


def once(claims: list[Claim]) -> list[Claim]:
    """The claims without repeats: a small model may write the same sentence over and over."""
    seen: set[str] = set()
    kept = []
    for claim in claims:
        key = " ".join(claim["text"].lower().split())
        if key not in seen:
            seen.add(key)
            kept.append(claim)
    return kept


def finished(claims: list[Claim], replies: list[ChatMessage] | None) -> tuple[list[Claim], str]:
    """The claims without an unfinished last sentence, when the model stopped at its length limit (the OpenAI API
    says `finish_reason`, Ollama `done_reason`); and that sentence ("" if none)."""
    meta = replies[0].meta if replies else {}
    stopped_at_limit = "length" in (meta.get("finish_reason"), meta.get("done_reason"))
    if stopped_at_limit and claims and claims[-1]["text"].rstrip()[-1:] not in (".", "!", "?", ")", '"'):
        return claims[:-1], claims[-1]["text"]
    return claims, ""


def with_marks(text: str, marks: list[str]) -> str:
    """Put citation marks before the sentence's closing punctuation: "It works [1]."."""
    if not marks:
        return text
    joined = "".join(marks)
    if text and text[-1] in ".!?":
        return f"{text[:-1]} {joined}{text[-1]}"
    return f"{text} {joined}"


def without_section_label(text: str, documents: list[Document]) -> str:
    """The sentence without the excerpt's label copied from the prompt: its header ("Abstract (PubMed, n.d.), ") and
    its section ("Abstract: Results: 46 patients ...")."""
    for document in documents:  # the header as the prompt writes it (rag.yml)
        meta = document.meta
        header = f"{meta.get('title') or 'Abstract'} ({meta.get('journal') or 'PubMed'}, {meta.get('year') or 'n.d.'}), "
        if text.lower().startswith(header.lower()):
            text = text[len(header):]
            break
    text = REQUEST_LABEL.sub("", text)
    for section in sorted({str(d.meta.get("section") or "") for d in documents}, key=len, reverse=True):
        if section and text.lower().startswith(section.lower() + ":"):
            rest = text[len(section) + 1:].strip()
            return capitalised(rest) if rest else text
    return text


# A sentence that compares: "longer than", "compared with", "did not differ", "similar", "superior".
COMPARES = re.compile(r"\b(?:compar\w*|versus|vs\b|than|superior|inferior|similar\w*|equivalen\w*|differ\w*|"
                       r"between)", re.IGNORECASE)


# "compare(d) with/to X", "versus X", "than X", "or X": up to three words of what is compared with
COMPARED_WITH = re.compile(r"\b(?:compar\w* (?:with|to)|versus|vs\.?|than|over|or)\s+((?:[\w-]+\s*){1,3})",
                            re.IGNORECASE)


def compares_subjects(claims: list[Claim], subjects: list[str]) -> bool:
    """Whether a claim compares the subjects: it names each of them (half a subject's words or more: "cold knife
    cone" for "cold knife conization") and says how they compare ("than", "compared", ...)."""
    named = [words for words in map(content_words, subjects) if words]

    def compares(text: str) -> bool:
        words = content_words(text)
        return bool(COMPARES.search(text)) and all(2 * len(subject & words) >= len(subject) for subject in named)

    return any(compares(c["text"]) for c in claims)
