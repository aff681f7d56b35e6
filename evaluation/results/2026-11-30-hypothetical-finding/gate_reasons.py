import json, sys
from pmc_rag.environment import configure_environment
configure_environment()
from pmc_rag.database import ensure_database
ensure_database()
from pmc_rag.evaluation.runner import without_generation
from pmc_rag.pipelines import load_declared_pipeline
from pmc_rag.evaluation.gate_learning import gold_sets
sets = gold_sets()
want = {"plain_tuning": None, "generated_tuning": None, "unanswerable_tuning": None, "vague_dev": None, "pubmedqa_dev": None}
declared = load_declared_pipeline("rag", edit=without_generation)
declared.warm_up()
out = []
for name in want:
    for q, gold in sets[name]:
        o = declared.run(question=q)
        a = o["answer"]
        out.append({"set": name, "question": q, "gold": gold, "not_answered": bool(a.flags.get("not_answered")),
                    "objected": o.get("objected") or [], "why": a.notes[0] if a.notes else ""})
    print(name, sum(r["not_answered"] for r in out if r["set"] == name), file=sys.stderr, flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
