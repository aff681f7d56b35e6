"""Trial: the gate's objected words judged one by one by the model against the closest paper's sentences."""
import json, re, sys, time
from pathlib import Path
import numpy as np

from pmc_rag.components import relevance_gate
from pmc_rag.components.relevance_gate import RelevanceGate
from pmc_rag.components.citations import by_paper, canonical_id
from pmc_rag.components.subject_words import phrase_around
from pmc_rag.evaluation import gate_learning

OUT = Path(sys.argv[1])
PARTS = sys.argv[2].split(",") if len(sys.argv) > 2 else list(gate_learning.TUNING)
records = {}
original = RelevanceGate.run

import functools
@functools.wraps(original)
def tapped(self, **inputs):
    result = original(self, **inputs)
    if self._classifier is None and "documents" not in result:
        records[inputs.get("question")] = {"why": result.get("why_unanswered", ""),
            "docs": [(canonical_id(str(d.meta.get("source_id", ""))), d.content) for d in
                     (result.get("related") or []) + result.get("unanswered", [])]}
    return result

RelevanceGate.run = tapped
sets = {k: v for k, v in gate_learning.question_sets().items() if k in PARTS}
rows = gate_learning.gather(sets)
RelevanceGate.run = original
out = []
for row in rows:
    if row["rules_answer"] is False and row["question"] in records:
        out.append({"set": row["set"], "question": row["question"], **records[row["question"]]})
OUT.write_text(json.dumps(out, ensure_ascii=False, indent=1))
print(len(out), "turned away recorded")
