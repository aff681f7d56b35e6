import json, math, numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import cross_val_predict, StratifiedKFold
from sklearn.preprocessing import StandardScaler
from pmc_rag.components.gate_classifier import features
from pmc_rag.evaluation.gate_learning import ANSWERABLE
rows = [r for r in json.load(open("/tmp/lay/tuning_rows.json"))]
ANS = ANSWERABLE | {"lay_generated"}
sets = sorted({r["set"] for r in rows})
def evaluate(name, learn_sets, model_factory, scale=True):
    use = [r for r in rows if r["signals"] is not None]
    X = np.array([features(r["signals"]) for r in use]); y = np.array([r["set"] in ANS for r in use]); s = np.array([r["set"] for r in use])
    if scale: X = StandardScaler().fit_transform(X)
    # probabilities for every row: 5-fold CV over the rows of the learned sets; rows of other sets scored by a fit on all learned
    learn = np.isin(s, list(learn_sets)); prob = np.zeros(len(use))
    cv = StratifiedKFold(5, shuffle=True, random_state=61)
    prob[learn] = cross_val_predict(model_factory(), X[learn], y[learn], cv=cv, method="predict_proba")[:, 1]
    if (~learn).any(): prob[~learn] = model_factory().fit(X[learn], y[learn]).predict_proba(X[~learn])[:, 1]
    neg = np.sort(prob[learn & ~y]); thr = neg[min(len(neg)-1, math.ceil(0.96*len(neg))-1)] + 1e-6
    out = []
    for n in sets:
        m = s == n; total = sum(r["set"] == n for r in rows)
        ok = ((prob[m] >= thr) == (n in ANS)).sum()
        out.append(f"{n} {ok/total:.1%}")
    print(f"{name:45s}", " | ".join(out))
rules = {n: sum(bool(r["rules_answer"]) == (n in ANSWERABLE | {'lay_generated'}) for r in rows if r["set"] == n) / sum(r["set"] == n for r in rows) for n in sets}
print(f"{'rules':45s}", " | ".join(f"{n} {v:.1%}" for n, v in rules.items()))
base = {"pubmedqa_dev", "vague_dev", "plain_tuning", "generated_tuning", "unanswerable_tuning"}
lr = lambda: LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000)
gb = lambda: HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15, class_weight="balanced", random_state=61)
evaluate("LR, as shipped sets", base, lr)
evaluate("LR, + lay_generated", base | {"lay_generated"}, lr)
evaluate("GB, as shipped sets", base, gb, scale=False)
evaluate("GB, + lay_generated", base | {"lay_generated"}, gb, scale=False)
