"""Finding sentences from MiniLM embeddings beside the shipped tf-idf classifier (reads embed_sets.py's arrays).

    python embed_sets.py && python train.py
"""
import json
import math
import random

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from pmc_rag.components.finding_classifier import shipped_classifier, terms
from pmc_rag.evaluation.finding_sentences import scores

L = {n: (np.load(f"/tmp/fe/{n}.npy"), json.load(open(f"/tmp/fe/{n}.json"))) for n in ("learn", "tuning", "held")}
y = np.array([r["own"] for r in L["learn"][1]])  # what the shipped classifier learns: its own findings
shipped = shipped_classifier()


def logit(p):
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def row(name, said):
    cells = []
    for n in ("tuning", "held"):
        s = scores([r["finding"] for r in L[n][1]], list(said[n]))
        cells.append(f"{s['precision']:.3f} / {s['recall']:.3f} / {s['f1']:.3f}")
    print(f"| {name} | " + " | ".join(cells) + " |")


print("| judge | tuning: abstracts not learned from, P / R / F1 | held aside: full-text papers, P / R / F1 |")
print("|---|---:|---:|")
tfidf = {n: np.array([[logit(shipped.probability(r["sentence"]))] for r in L[n][1]]) for n in L}
row("shipped: tf-idf, logistic regression", {n: tfidf[n][:, 0] >= 0 for n in ("tuning", "held")})
for c in (0.5, 2, 8):
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=3000).fit(L["learn"][0], y)
    row(f"MiniLM embedding, logistic regression (C={c})", {n: model.predict(L[n][0]) for n in ("tuning", "held")})
both = {n: np.hstack([L[n][0], tfidf[n]]) for n in L}
model = LogisticRegression(C=0.5, class_weight="balanced", max_iter=3000).fit(both["learn"], y)
row("embedding and the tf-idf score together (C=0.5)", {n: model.predict(both[n]) for n in ("tuning", "held")})

# In-domain data: the full-text papers in four folds by paper, three learned from beside the abstracts.
learn, held = L["learn"][1], L["held"][1]
papers = sorted({r["paper"] for r in held})
random.Random(61).shuffle(papers)
folds = [set(papers[i::4]) for i in range(4)]
for repeat in (1, 5):
    said, truth = [], []
    for fold in folds:
        train = learn + [r for r in held if r["paper"] not in fold] * repeat
        vectorizer = TfidfVectorizer(analyzer=terms, min_df=2, sublinear_tf=True)
        matrix = vectorizer.fit_transform([r["sentence"] for r in train])
        model = LogisticRegression(C=4, class_weight="balanced", max_iter=3000).fit(matrix, [r["own"] for r in train])
        test = [r for r in held if r["paper"] in fold]
        said += list(model.predict(vectorizer.transform([r["sentence"] for r in test])))
        truth += [r["finding"] for r in test]
    s = scores(truth, said)
    print(f"| tf-idf, abstracts and the other folds' full texts (x{repeat}) | | "
          f"{s['precision']:.3f} / {s['recall']:.3f} / {s['f1']:.3f} (4 folds by paper) |")
