"""Question sets for evaluation.

PubMedQA's own format (as `evaluation/datasets/pubmedqa_dev_questions.json`): `{"<PMID>": {"QUESTION": ...,
"LONG_ANSWER": ..., "final_decision": "yes"|"no"|"maybe", ...}}`. The gold paper is `PMID:<PMID>`; the gold
answer chunk is that paper's conclusion (a chunk of its `Abstract: Conclusion...` section).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from haystack import Document


@dataclass
class Question:
    question: str
    gold_source_ids: list[str]
    gold_answer: str | None = None
    gold_verdict: str | None = None
    # Section titles (lower-case prefixes) that hold the answer, e.g. "abstract: conclusion".
    answer_sections: list[str] = field(default_factory=list)

    def is_gold_paper(self, document: Document) -> bool:
        return document.meta.get("source_id") in self.gold_source_ids

    def is_answer_chunk(self, document: Document) -> bool:
        section = str(document.meta.get("section") or "").lower()
        return self.is_gold_paper(document) and any(section.startswith(prefix) for prefix in self.answer_sections)


def load_pubmedqa(path: str | Path) -> list[Question]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [
        Question(
            question=item["QUESTION"],
            gold_source_ids=[f"PMID:{pmid}"],
            gold_answer=item.get("LONG_ANSWER"),
            gold_verdict=item.get("final_decision"),
            answer_sections=["abstract: conclusion"],
        )
        for pmid, item in data.items()
    ]
