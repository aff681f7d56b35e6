"""Whether the excerpts found can answer a question, learned from labelled questions rather than set by thresholds.

The relevance gate measures a few things about a question and its excerpts (`RelevanceGate.signals`): how close
the best passage is, whether some of the question's words are in no indexed chunk, whether the excerpts leave out
a specific word (how rare it is, how much of the question's meaning it carries), whether its rare words are named
apart, in different papers. The rules combine them with fixed thresholds; this logistic regression weighs them,
trained on questions the corpus answers (PubMedQA dev questions, plain-language rewordings) and questions it
cannot (`unanswerable_*` tuning sets): `python -m pmc_rag.evaluation.gate_learning --train` writes
`resources/gate_classifier.json` with the threshold that keeps the tuning unanswerable questions caught.

Usage:
```python
from pmc_rag.components.gate_classifier import GateClassifier

classifier = GateClassifier()
classifier.probability({"best": 0.62, "absent": 1, "absent_weight": 0.05, "absent_rarity": 1.2})  # 0.9...
classifier.answerable({"best": 0.45, "apart": 1})                                                 # False
```
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

RESOURCE = Path(__file__).resolve().parent / "resources" / "gate_classifier.json"

# What the gate measures (`RelevanceGate.signals`), and the products the model weighs beside them: an absent word
# or a word named apart matters less the closer the best passage is.
SIGNALS = ("best", "unknown", "absent", "absent_weight", "absent_rarity", "apart", "specific", "sentence")
FEATURES = SIGNALS + ("best_absent", "best_apart", "best_unknown", "sentence_absent", "sentence_apart")


def features(signals: dict[str, float]) -> list[float]:
    """The model's inputs, in `FEATURES` order: the signals (missing ones 0), then their products with `best`."""
    values = {name: float(signals.get(name, 0.0)) for name in SIGNALS}
    values["best_absent"] = values["best"] * values["absent"]
    values["best_apart"] = values["best"] * values["apart"]
    values["best_unknown"] = values["best"] * values["unknown"]
    values["sentence_absent"] = values["sentence"] * values["absent"]
    values["sentence_apart"] = values["sentence"] * values["apart"]
    return [values[name] for name in FEATURES]


class GateClassifier:
    """The trained gate's weights, read from its JSON file (default: `resources/gate_classifier.json`)."""

    def __init__(self, path: str | Path = RESOURCE):
        self.path = Path(path)
        data = _read(str(self.path))
        if list(data["features"]) != list(FEATURES):
            raise ValueError(f"{self.path} was trained on other features ({data['features']}); retrain it with "
                             "python -m pmc_rag.evaluation.gate_learning --train")
        self.mean: list[float] = data["mean"]
        self.scale: list[float] = data["scale"]
        self.weights: list[float] = data["coef"]
        self.intercept: float = data["intercept"]
        self.threshold: float = data["threshold"]

    def probability(self, signals: dict[str, float]) -> float:
        """The probability that the excerpts answer the question, 0-1."""
        score = self.intercept + sum(w * (x - m) / s for w, x, m, s in
                                     zip(self.weights, features(signals), self.mean, self.scale))
        return 1 / (1 + math.exp(-score))

    def answerable(self, signals: dict[str, float]) -> bool:
        return self.probability(signals) >= self.threshold


@lru_cache(maxsize=4)
def _read(path: str) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"No gate classifier at {path}: train one with "
                                "python -m pmc_rag.evaluation.gate_learning --train") from None


def train_gate_classifier(rows: list[dict[str, float]], answerable: list[bool], *, min_caught: float,
                          path: str | Path = RESOURCE, about: str = "") -> dict[str, Any]:
    """Fit the model (scikit-learn, installed with Sentence Transformers) on the questions' signals, choose the
    threshold on cross-validated probabilities (the lowest that still catches `min_caught` of the unanswerable
    ones), and write the weights as JSON. Returns what was written."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.preprocessing import StandardScaler

    matrix = np.array([features(r) for r in rows])
    labels = np.array(answerable, dtype=bool)
    scaler = StandardScaler().fit(matrix)
    scaled = scaler.transform(matrix)
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000)
    held_out = cross_val_predict(model, scaled, labels, cv=5, method="predict_proba")[:, 1]
    negatives = np.sort(held_out[~labels])
    # the probability below which `min_caught` of the unanswerable questions fall
    threshold = float(negatives[min(len(negatives) - 1, math.ceil(min_caught * len(negatives)) - 1)]) + 1e-6
    model.fit(scaled, labels)
    data = {"about": about or "pmc_rag.components.gate_classifier: logistic regression on RelevanceGate.signals",
            "features": list(FEATURES), "mean": [round(float(v), 6) for v in scaler.mean_],
            "scale": [round(float(v), 6) or 1.0 for v in scaler.scale_],
            "coef": [round(float(v), 6) for v in model.coef_[0]], "intercept": round(float(model.intercept_[0]), 6),
            "threshold": round(threshold, 6),
            "cross_validated": {"answerable_passed": round(float((held_out[labels] >= threshold).mean()), 4),
                                "unanswerable_caught": round(float((held_out[~labels] < threshold).mean()), 4),
                                "answerable": int(labels.sum()), "unanswerable": int((~labels).sum())}}
    Path(path).write_text(json.dumps(data, indent=1), encoding="utf-8")
    _read.cache_clear()
    return data
