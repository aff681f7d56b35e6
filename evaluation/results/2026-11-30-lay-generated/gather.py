"""Gate signals of the tuning sets and the generated lay set (tuning), saved for offline training."""
import json, sys
from pathlib import Path
from pmc_rag.evaluation import gate_learning as gl

part = sys.argv[1]  # tuning | held-aside
sets = {n: q for n, q in gl.question_sets().items() if n in (gl.TUNING if part == "tuning" else gl.HELD_ASIDE)}
if part == "tuning":
    lay = json.loads((gl.DATASETS / "lay_generated_questions.json").read_text())["questions"]
    sets["lay_generated"] = [q["question"] for q in lay]
rows = gl.gather(sets)
Path(sys.argv[2]).write_text(json.dumps(rows))
print(len(rows), "rows")
