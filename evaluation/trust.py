"""What a reader is shown, judged by things the answering pipeline never sees: the gold verdict and the gold
paper's own conclusion and results (PubMedQA). None of these figures uses the claim checker's judge.

Per answer (`trust_scores`):
- `wrong_verdict_shown`: the answer opens with yes/no/maybe, that differs from the gold verdict, and the answer
  cites a paper (a wrong verdict with the authority of a citation);
- `uncited_sentences`: displayed sentences without a citation, in an answer that is neither quotations nor "not
  answered";
- `questions_shown`: displayed sentences that are a question, or restate the question (all but one of their
  content words are the question's) with or without a verdict word in front; in a quotation answer, only a
  question (the quoted sentences are the paper's own);
- for quotation answers (`extractive_fallback`), `quotes` and `quotes_answering`: the quoted sentences, and those
  whose content words are mostly (80%) in one sentence of the gold conclusion or results;
- for the model's own answers, `model_sentences` and `model_sentences_answering`: the cited sentences shown, and
  those that share most words with the gold conclusion or results in the same way (a paraphrase in other words
  does not count, so this undercounts; a copied aim or method does not count either).
"""

from __future__ import annotations

import re
from typing import Any

from pmc_rag.components.citations import content_words
from pmc_rag.evaluation.metrics import predicted_verdict

_CITATION = re.compile(r"\[\d+(?:\s*[,;–-]\s*\d+)*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:\s*\[\d+(?:\s*[,;–-]\s*\d+)*\])*\s+(?=[A-Z\"“(])|(?<=\])\s+(?=[A-Z\"“(])")
_VERDICT_WORDS = {"yes", "no", "maybe"}


def displayed_sentences(text: str) -> list[str]:
    """The answer's displayed sentences, each with the citations that follow it."""
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(text or ""):
        pieces.append(text[start:match.end()].strip())
        start = match.end()
    pieces.append((text or "")[start:].strip())
    return [p for p in pieces if p]


def restates_question(sentence: str, question: str) -> bool:
    """A question, or the question restated as a statement (with or without "Yes,"/"No," in front)."""
    bare = _CITATION.sub("", sentence).strip()
    if bare.endswith("?"):
        return True
    words = content_words(bare) - _VERDICT_WORDS
    return len(words) >= 2 and len(words - content_words(question)) <= 1


def _shares_most_words(sentence: str, findings: list[str], share: float = 0.8) -> bool:
    words = content_words(_CITATION.sub("", sentence))
    if not words:
        return False
    return any(len(words & content_words(finding)) >= share * len(words)
               for text in findings for finding in displayed_sentences(text))


def trust_scores(answer: dict[str, Any], question: Any) -> dict[str, Any]:
    text = answer.get("answer") or ""
    flags = answer.get("flags", {})
    sentences = displayed_sentences(text)
    verdict = predicted_verdict(text)
    cites = bool(answer.get("references")) or bool(_CITATION.search(text))
    quotations, not_answered = bool(flags.get("extractive_fallback")), bool(flags.get("not_answered"))
    scores: dict[str, Any] = {
        "verdict_shown": verdict is not None and cites,
        "wrong_verdict_shown": bool(verdict and question.gold_verdict and verdict != question.gold_verdict and cites),
        "uncited_sentences": [] if quotations or not_answered else [s for s in sentences
                                                                     if not _CITATION.search(s)],
        # a quotation is the paper's own sentence: its words may be the question's ("Time to treatment had no
        # impact on survival") without restating it, so there only a question mark counts
        "questions_shown": [] if not_answered else [s for s in sentences if (
            _CITATION.sub("", s).strip().endswith("?") if quotations else restates_question(s, question.question))],
        "not_answered": not_answered,
    }
    if not not_answered:
        cited = [s for s in sentences if _CITATION.search(s)]
        kind = "quotes" if quotations else "model_sentences"
        scores[kind] = len(cited)
        scores[f"{kind}_answering"] = sum(_shares_most_words(s, question.gold_findings) for s in cited)
    return scores


def summarise_trust(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures over one variant's answered questions."""
    scored = [r["trust"] for r in records if "trust" in r]
    if not scored:
        return {}
    quoted = [t for t in scored if "quotes" in t]
    modelled = [t for t in scored if "model_sentences" in t]
    return {
        "questions": len(scored),
        "verdicts_shown": sum(t["verdict_shown"] for t in scored),
        "wrong_verdicts_shown": sum(t["wrong_verdict_shown"] for t in scored),
        "wrong_verdicts_shown_rate": sum(t["wrong_verdict_shown"] for t in scored) / len(scored),
        "uncited_sentences_shown": sum(len(t["uncited_sentences"]) for t in scored),
        "answers_with_uncited_sentences": sum(bool(t["uncited_sentences"]) for t in scored),
        "questions_shown_as_claims": sum(len(t["questions_shown"]) for t in scored),
        "not_answered": sum(t["not_answered"] for t in scored),
        "quotation_answers": len(quoted),
        "quotation_share": len(quoted) / len(scored),
        "quotation_answers_quoting_gold_findings": sum(t["quotes_answering"] > 0 for t in quoted),
        "quotation_answers_quoting_gold_findings_rate":
            sum(t["quotes_answering"] > 0 for t in quoted) / len(quoted) if quoted else None,
        "model_answers": len(modelled),
        "model_answers_stating_gold_findings": sum(t["model_sentences_answering"] > 0 for t in modelled),
        "model_answers_stating_gold_findings_rate":
            sum(t["model_sentences_answering"] > 0 for t in modelled) / len(modelled) if modelled else None,
    }
