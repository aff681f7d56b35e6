"""Question sets for evaluation, in either of two formats (chosen by content, not by file name).

**PubMedQA's own format** (as `evaluation/datasets/pubmedqa_dev_questions.json`), one JSON object:
`{"<PMID>": {"QUESTION": ..., "LONG_ANSWER": ..., "final_decision": "yes"|"no"|"maybe", ...}}`. The gold paper
is `PMID:<PMID>`; the gold answer chunk is that paper's conclusion (its `Abstract: Conclusion...` section).

**JSONL**, one question per line (blank lines and lines starting with `#` are skipped):

    {"question": "Does X reduce Y?", "gold_source_ids": ["PMC5468301"], "gold_verdict": "yes",
     "gold_answer": "X reduced Y by 20%.", "answer_sections": ["abstract: conclusion"], "id": "q1"}

`question` and `gold_source_ids` (ids as the index stores them: `PMC…`, `PMID:…`, `doi:…`; a bare number is read
as a PMID) are required; the rest are optional. `answer_sections` are lower-case section-title prefixes of the
chunks that hold the answer; without them, answer-chunk metrics are not computed for that question.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pmc_rag.components.citations import canonical_id

VERDICTS = ("yes", "no", "maybe")


class QuestionFileError(ValueError):
    """A question file cannot be read; the message names the file, the line and what to fix."""


@dataclass
class Question:
    question: str
    gold_source_ids: list[str]
    gold_answer: str | None = None
    gold_verdict: str | None = None
    # Section titles (lower-case prefixes) that hold the answer, e.g. "abstract: conclusion".
    answer_sections: list[str] = field(default_factory=list)
    id: str = ""
    # The gold paper's own conclusion and results sentences (PubMedQA: LONG_ANSWER and the RESULTS contexts):
    # what a quotation that answers the question quotes.
    gold_findings: list[str] = field(default_factory=list)

    def is_answer_section(self, section: str | None) -> bool:
        section = str(section or "").lower()
        return any(section.startswith(prefix) for prefix in self.answer_sections)


def load_questions(path: str | Path) -> list[Question]:
    """Read a question file in PubMedQA's format or in JSONL (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise QuestionFileError(f"{path}: no such question file")
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None  # several objects: JSONL
        if isinstance(data, dict) and "question" not in data:
            return _from_pubmedqa(path, data)
    return _from_jsonl(path, text)


def _from_pubmedqa(path: Path, data: dict) -> list[Question]:
    questions = []
    for pmid, item in data.items():
        if not isinstance(item, dict) or not isinstance(item.get("QUESTION"), str):
            raise QuestionFileError(f"{path}: entry {pmid!r} has no QUESTION; PubMedQA's format is "
                                    '{"<PMID>": {"QUESTION": "...", "final_decision": "yes", ...}}')
        verdict = item.get("final_decision")
        questions.append(Question(
            question=item["QUESTION"], gold_source_ids=[_source_id(str(pmid))], gold_answer=item.get("LONG_ANSWER"),
            gold_verdict=verdict if verdict in VERDICTS else None, answer_sections=["abstract: conclusion"],
            id=str(pmid), gold_findings=[item.get("LONG_ANSWER") or ""] + [
                text for text, label in zip(item.get("CONTEXTS") or [], item.get("LABELS") or [])
                if "RESULT" in str(label).upper()]))
    if not questions:
        raise QuestionFileError(f"{path}: holds no questions")
    return questions


def _from_jsonl(path: Path, text: str) -> list[Question]:
    questions = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}, line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise QuestionFileError(f"{where}: not valid JSON ({error}); each line must be one JSON object") from error
        if not isinstance(item, dict):
            raise QuestionFileError(f"{where}: must be a JSON object with `question` and `gold_source_ids`")
        question, gold = item.get("question"), item.get("gold_source_ids")
        if not isinstance(question, str) or not question.strip():
            raise QuestionFileError(f"{where}: `question` must be a non-empty string")
        if isinstance(gold, str):
            gold = [gold]
        if not isinstance(gold, list) or not gold or not all(isinstance(g, str | int) for g in gold):
            raise QuestionFileError(f"{where}: `gold_source_ids` must be a non-empty list of ids, e.g. "
                                    '["PMC5468301"] or ["PMID:21645018"]')
        verdict = item.get("gold_verdict")
        if verdict is not None and str(verdict).lower() not in VERDICTS:
            raise QuestionFileError(f"{where}: `gold_verdict` must be one of {list(VERDICTS)} (or left out)")
        sections = item.get("answer_sections") or []
        if not isinstance(sections, list) or not all(isinstance(s, str) for s in sections):
            raise QuestionFileError(f"{where}: `answer_sections` must be a list of section-title prefixes")
        questions.append(Question(
            question=question.strip(), gold_source_ids=[_source_id(str(g)) for g in gold],
            gold_answer=item.get("gold_answer"), gold_verdict=str(verdict).lower() if verdict else None,
            answer_sections=[s.lower() for s in sections], id=str(item.get("id", number))))
    if not questions:
        raise QuestionFileError(f"{path}: holds no questions")
    return questions


def _source_id(raw: str) -> str:
    """Ids as the index stores them (bare digits are PMIDs)."""
    raw = raw.strip()
    return canonical_id(f"PMID:{raw}" if raw.isdigit() else raw)
