import json, sys
import numpy as np
d = json.load(open(sys.argv[1])); gold = np.array(d["gold"])
print(d["part"], len(gold), {v: int((gold == v).sum()) for v in ("yes", "no", "maybe")})
for name, sc in d["scores"].items():
    s = np.array(sc); y, n, m = s[:, 0], s[:, 1], s[:, 2]
    said = np.where(y >= n, "yes", "no")
    print(f"{name}: accuracy (yes/no) {np.mean(said == gold):.3f}")
    margins = {"yn": np.abs(y - n)}
    if name == "few_3":
        best = np.maximum(y, n)
        margins["over_maybe"] = np.minimum(np.abs(y - n), best - m)
        said3 = np.array(["yes", "no", "maybe"])[s.argmax(1)]
        print(f"   three-way accuracy {np.mean(said3 == gold):.3f}")
    for mname, mg in margins.items():
        line = []
        for t in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0):
            shown = mg >= t
            if mname == "over_maybe": shown &= (np.maximum(y, n) > m)
            if shown.sum() == 0: line.append(f"{t}: -"); continue
            line.append(f"{t}: {shown.mean():.0%} {np.mean(said[shown] == gold[shown]):.1%} ({shown.sum()})")
        print("  ", mname, " | ".join(line))
