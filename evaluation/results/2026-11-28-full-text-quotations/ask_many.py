"""Asks each question of a file (one per line) through a pipeline, as `pmc-rag eval` does (no conversation,
cache or redaction), and writes the question, the model's reply, the answer, its notes, references and the
section of each cited sentence's evidence to a JSON file:

    .venv/bin/python ask_many.py rag tuning_questions.txt answers.json
"""
import sys, json
from pmc_rag.environment import configure_environment
configure_environment()
from pmc_rag.database import ensure_database
ensure_database()
from pmc_rag.pipelines import load_declared_pipeline
from pmc_rag.answer_service import AnswerService
svc = AnswerService(load_declared_pipeline(sys.argv[1]), name="trial")
out = []
for q in open(sys.argv[2]).read().splitlines():
    answer, outputs = svc.answer_for_evaluation(q)
    out.append({"question": q, "raw": answer["raw_answer"], "answer": answer["answer"], "notes": answer["notes"],
                "refs": [(r["source_id"], r.get("section"), r.get("title")) for r in answer["references"]],
                "evidence": [(c["number"], c["section"], c["evidence"]) for c in answer["citations"]],
                "flags": answer["flags"]})
    print("Q:", q); print("  RAW:", answer["raw_answer"][:300].replace("\n", " ")); print("  ANSWER:", answer["answer"][:600]); print("  REFS:", out[-1]["refs"]); sys.stdout.flush()
json.dump(out, open(sys.argv[3], "w"), indent=1)
