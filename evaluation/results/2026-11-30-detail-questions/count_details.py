"""Counts only: of each run (OUT.json), the answers citing the named paper and giving one of its gold details."""
import json, sys
qs = {q["id"]: q for q in json.load(open(sys.argv[1]))["questions"]}
norm = lambda t: t.replace("\u2013", "-").replace("\u2212", "-").lower()
for path in sys.argv[2:]:
    rows = json.load(open(path))
    cites = sum(qs[r["id"]]["papers"][0] in r["refs"] for r in rows)
    gives = sum(qs[r["id"]]["papers"][0] in r["refs"] and any(norm(g) in norm(r["answer"]) for g in qs[r["id"]]["gold_details"]) for r in rows)
    print(path, "cite the named paper", cites, "| give a gold detail", gives, "of", len(rows))
