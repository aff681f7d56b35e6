"""Gate settings swept on the tuning sets with the generated lay set beside them (let through / turned away)."""
import json, sys
from pmc_rag.evaluation import gate_learning as gl
sets = {n: q for n, q in gl.question_sets().items() if n in gl.TUNING}
lay = json.loads((gl.DATASETS / "lay_generated_questions.json").read_text())["questions"]
sets["lay_generated"] = [q["question"] for q in lay]
tried = {}
for name, values in (("min_similarity", (0.45, 0.47)), ("min_meaning_carried", (0.5, 0.55)),
                     ("min_word_similarity", (0.65,)), ("min_similarity_with_absent_words", (0.55,)),
                     ("min_similarity_with_words_apart", (0.6,)), ("min_similarity_with_unknown_words", (0.6,))):
    for v in values:
        tried[f"{name}={v}"] = {name: v}
rows = gl.gather(sets, tried=tried)
json.dump(rows, open("/tmp/lay/sweep_rows.json", "w"))
ans = gl.ANSWERABLE | {"lay_generated"}
labels = ["rules"] + list(tried)
print("| set | n | " + " | ".join(labels) + " |")
for n in sets:
    part = [r for r in rows if r["set"] == n]
    cells = [sum(bool(r["rules_answer"]) == (n in ans) for r in part)]
    cells += [sum(r["tried"][l] == (n in ans) for r in part) for l in tried]
    print(f"| {n} | {len(part)} | " + " | ".join(f"{c / len(part):.1%}" for c in cells) + " |")
