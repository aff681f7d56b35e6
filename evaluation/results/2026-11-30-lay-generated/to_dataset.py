"""/tmp/lay/lay.json (generate.py) -> evaluation/datasets/lay_generated_questions.json, in the plain sets' form."""
import json, sys
from pathlib import Path
from pmc_rag.components.section_chunker import split_sentences

rows = json.load(open(sys.argv[1]))
questions = []
for r in rows:
    q = " ".join(r["question"].split())
    if len(q.split()) < 3:
        continue  # nothing asked
    questions.append({"id": r["id"], "set": "lay_generated", "source": "pubmedqa_abstract", "asker": r["asker"],
                      "question": q, "gold_paper": r["gold_paper"],
                      "gold_sentences": [s.strip() for s in split_sentences(r["gold_sentences"]) if s.strip()],
                      "gold_verdict": None, "title_question": None})
Path(sys.argv[2]).write_text(json.dumps({"about": (
    "Lay questions written by the embedded Qwen2.5-Coder 1.5B (Q4_K_M, greedy) from the conclusions of bundled "
    "PubMed abstracts that no other question set uses, each as one of four askers (a patient, a worried parent or "
    "relative, a busy clinician, a researcher from another field), with four worked examples from the plain tuning "
    "half; gold: the abstract and its conclusion's sentences. A tuning set (read freely), 2026-11-30."),
    "questions": questions}, indent=1, ensure_ascii=False) + "\n")
print(len(questions), "questions")
