"""What the server checks and changes in a question before anything else sees it.

- `clean_question`: empty, too long, or holding control characters -> `InputError` (a 4xx with the reason).
- `redact_personal_data`: names after a cue ("my name is", "Mr", "patient"), emails, phone numbers, record
  numbers and dates of birth become `[NAME]`, `[EMAIL]`, `[PHONE]`, `[RECORD]`, `[DOB]`. It runs before the
  question is logged, stored, cached or retrieved with, so nothing downstream sees the original. It is a
  pattern list, not a guarantee: a name with no cue ("Ask John about statins") passes.
- `small_talk_reply`: greetings and thanks get a short reply without retrieval.
- `emergency_reply`: a message describing someone in danger now gets a pointer to emergency services, or to a
  crisis line for a wish to die (`pmc_rag.answering.crisis`).
- `fixed_reply`: either of the two above, as the server and `pmc-rag ask` both use them.
- `reads_as_personal`: a question about the writer's own care, whose answer says it is not medical advice.
- `SearchFilters`: the filters clients may send, checked field by field, then turned into Haystack filters
  (which pgvector passes to SQL as parameters; the checks make crafted values a 422 rather than a no-match).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pmc_rag.components.citations import canonical_id
from pmc_rag.answering.refusals import InputError
from pmc_rag.answering.crisis import check_crisis
from pmc_rag.answering.crisis_replies import crisis_reply
from pmc_rag.ingestion.documents import COLLECTION_NAME, COLLECTION_RULE


def clean_question(question: Any, max_chars: int) -> str:
    if not isinstance(question, str):
        raise InputError(f"`question` must be a string, not {type(question).__name__}")
    controls = sorted({f"U+{ord(c):04X}" for c in question if unicodedata.category(c) == "Cc" and c not in "\n\t\r"})
    if controls:
        raise InputError(f"`question` contains control characters ({', '.join(controls[:5])}); send plain text")
    # A lone UTF-16 surrogate ("\ud800" in JSON) is no character: no tokenizer or database can take it.
    surrogates = sorted({f"U+{ord(c):04X}" for c in question if unicodedata.category(c) == "Cs"})
    if surrogates:
        raise InputError(f"`question` contains a lone surrogate ({', '.join(surrogates[:5])}), which is not a "
                         "character; send valid Unicode text (a JSON \\u escape pair for characters beyond U+FFFF)")
    question = " ".join(question.split())
    if not question:
        raise InputError("`question` is empty; ask a question in plain words")
    if len(question) > max_chars:
        raise InputError(f"`question` is {len(question)} characters; the limit is {max_chars}. Ask something "
                         "shorter (the server setting is server.max_question_chars in hayhooks.yml)")
    return question


_REDACTIONS = [
    ("[EMAIL]", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
    ("[DOB]", re.compile(r"\b(?:DOB|d\.o\.b\.?|date of birth|born(?: on)?)\s*[:#]?\s*"
                         r"(?:\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|\d{1,2}\s+[A-Z][a-z]+\s+\d{4}|[A-Z][a-z]+\s+\d{1,2},?\s+\d{4})",
                         re.IGNORECASE)),
    ("[RECORD]", re.compile(r"\b(?:MRN|medical record(?: number)?|record (?:number|no\.?)|patient (?:ID|number)|"
                            r"NHS (?:number|no\.?)|SSN|social security number)\s*[:#]?\s*[A-Z0-9-]{4,}",
                            re.IGNORECASE)),
    ("[PHONE]", re.compile(r"(?<![\w.])\+?\(?\d{2,4}\)?[\s.-]\d{2,4}[\s.-]\d{3,4}(?:[\s.-]\d{2,4})?(?![\w.])")),
    ("[NAME]", re.compile(r"\b(?:(?i:my name is|I am called|I'm called)\s+|"
                          r"(?:Mr|Mrs|Ms|Miss|Mx|Dr)\.?\s+|(?i:patient|my (?:husband|wife|son|daughter|mother|father|"
                          r"friend|partner|client))\s+)"
                          r"(?P<name>[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)")),
]


def redact_personal_data(text: str) -> tuple[str, list[str]]:
    """The text with personal data replaced, and the kinds it holds redacted (e.g. ["[EMAIL]"]).

    Redacting twice changes nothing and reports the same kinds (the server redacts at its door and again in
    the endpoint).
    """
    for label, pattern in _REDACTIONS:
        if label == "[NAME]":
            def keep_cue(match: re.Match) -> str:
                return match.group(0)[: match.start("name") - match.start(0)] + "[NAME]"
            text = pattern.sub(keep_cue, text)
        else:
            text = pattern.sub(label, text)
    return text, [label for label, _ in _REDACTIONS if label in text]


_SMALL_TALK = re.compile(
    r"^(?:(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening)|greetings)(?: there)?|"
    r"(?:many )?thanks?(?: you)?(?: (?:so|very) much)?(?: a lot)?|thank you|ty|cheers|bye|goodbye|ok(?:ay)?|great|"
    r"bonjour|salut|merci(?: beaucoup)?|hallo|guten (?:morgen|tag|abend)|danke(?: schön| schon)?|hola|"
    r"buen(?:os|as) (?:d[ií]as|tardes|noches)|gracias(?: por (?:la|tu|su) (?:respuesta|ayuda))?)"
    r"[\s!.,:)]*$", re.IGNORECASE)

SMALL_TALK_REPLY = ("Hello! Ask me a question about the biomedical literature, for example \"Does metformin lower "
                    "HbA1c in type 2 diabetes?\", and I will answer from the indexed papers with citations.")
THANKS_REPLY = "You're welcome. Ask another question whenever you like."


def small_talk_reply(question: str) -> str | None:
    if not _SMALL_TALK.match(question.strip()):
        return None
    return THANKS_REPLY if re.match(r"(?i)\s*(?:many )?(?:thank|ty\b|cheers|merci|danke|gracias)", question) \
        else SMALL_TALK_REPLY


def emergency_reply(question: str, follow_up: bool = False) -> str | None:
    """The reply when the question describes someone in danger now (an emergency, or a wish to die), else None.

    A research question on the same subject ("Does aspirin reduce deaths after heart attack?") gets a literature
    answer as usual. The rules are in `pmc_rag.answering.crisis`; `follow_up`: the question continues a
    conversation about research (`check_crisis`).
    """
    return crisis_reply(check_crisis(question, follow_up=follow_up))


_PERSONAL_QUESTION = re.compile(
    r"\b(?:should|can|could|may|must) (?:i|we|my (?:\w+ )?(?:husband|wife|son|daughter|child|baby|mother|father|mum|"
    r"mom|dad|partner))\b|\bis it (?:safe|ok|okay|dangerous) (?:for (?:me|my)|to)\b|"
    r"\b(?:i|i'm|i am|i've) (?:take|taking|been taking|on|was prescribed|am prescribed|have|had)\b|"
    r"\bmy (?:doctor|gp|dose|medication|medicine|meds|tablets|pills|prescription|symptoms|diagnosis)\b",
    re.IGNORECASE)

NOT_MEDICAL_ADVICE = ("This reads as a question about your own or someone's care. The answer summarises research "
                      "papers and is not medical advice: ask a doctor or pharmacist before changing any treatment.")


def reads_as_personal(question: str) -> bool:
    """Whether the question asks about the writer's (or their family's) own care ("Should I stop my statins?"),
    which research papers cannot decide."""
    return bool(_PERSONAL_QUESTION.search(question))


def fixed_reply(question: str, follow_up: bool = False) -> tuple[str, str] | None:
    """`("emergency", text)` or `("small_talk", text)` for a question answered without the literature, else None.
    The server and `pmc-rag ask` both ask this first, so they refuse and greet alike."""
    reply = small_talk_reply(question)  # a whole message that is a greeting or thanks and nothing more
    if reply:
        return "small_talk", reply
    reply = emergency_reply(question, follow_up)
    return ("emergency", reply) if reply else None


_JOURNAL = r"^[\w][\w .,:&()'/-]{0,199}$"


_CITATION_ID = r"PMC\d{1,10}|PMID:\d{1,10}|doc:[0-9a-f]{16}|doi:10\.\d{4,9}/[^\s'\";]{1,200}"


class SearchFilters(BaseModel):
    """Filters a client may send with a question; every field optional, all must hold."""

    model_config = ConfigDict(extra="forbid")

    year_from: int | None = Field(None, ge=1800, le=2100, description="Earliest publication year.")
    year_to: int | None = Field(None, ge=1800, le=2100, description="Latest publication year.")
    journal: str | None = Field(None, description="Exact journal title, e.g. 'PLoS ONE'.")
    article_type: str | None = Field(None, pattern=r"^[A-Za-z][A-Za-z _-]{0,63}$",
                                     description="JATS article type or MEDLINE publication type, "
                                                 "e.g. 'research-article', 'Randomized Controlled Trial'.")
    min_evidence_level: int | None = Field(
        None, ge=1, le=6, description="Keep evidence at least this strong: 1 systematic review/meta-analysis, "
                                      "2 randomised trial, 3 cohort/case-control, 4 case report/series, "
                                      "5 review/guideline, 6 other.")
    source_ids: list[str] | None = Field(None, max_length=100, description=(
        "Only these papers: PMC ids, 'PMID:<digits>', 'doi:<doi>' or 'doc:<16 hex digits>' (your own documents)."))
    collections: list[str] | None = Field(None, max_length=50, description=(
        "Only the documents of these collections (uploaded or ingested with --collection)."))

    @field_validator("journal")
    @classmethod
    def _journal(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(_JOURNAL, value):
            raise ValueError("a journal title may contain letters, digits, spaces and . , : & ( ) ' / - "
                             "(at most 200 characters)")
        return value

    @field_validator("collections")
    @classmethod
    def _collections(cls, values: list[str] | None) -> list[str] | None:
        bad = [v for v in values or [] if not re.fullmatch(COLLECTION_NAME, v)]
        if bad:
            raise ValueError(f"not collection names: {bad[:3]}; {COLLECTION_RULE}")
        return values

    @field_validator("source_ids")
    @classmethod
    def _source_ids(cls, values: list[str] | None) -> list[str] | None:
        if values is None:
            return None
        bad = [v for v in values if not re.fullmatch(_CITATION_ID, canonical_id(v))]
        if bad:
            raise ValueError(f"not citation ids: {bad[:3]}; write PMC<digits>, PMID:<digits>, doi:<doi> or "
                             "doc:<16 hex digits>")
        return [canonical_id(v) for v in values]

    def to_haystack(self) -> dict[str, Any] | None:
        conditions: list[dict[str, Any]] = []
        if self.year_from is not None:
            conditions.append({"field": "meta.year", "operator": ">=", "value": self.year_from})
        if self.year_to is not None:
            conditions.append({"field": "meta.year", "operator": "<=", "value": self.year_to})
        if self.journal:
            conditions.append({"field": "meta.journal", "operator": "==", "value": self.journal})
        if self.article_type:
            conditions.append({"field": "meta.article_type", "operator": "==", "value": self.article_type})
        if self.min_evidence_level is not None:
            conditions.append({"field": "meta.evidence_rank", "operator": "<=", "value": self.min_evidence_level})
        if self.source_ids:
            conditions.append({"field": "meta.source_id", "operator": "in", "value": self.source_ids})
        if self.collections:
            conditions.append({"field": "meta.collection", "operator": "in", "value": self.collections})
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else {"operator": "AND", "conditions": conditions}
