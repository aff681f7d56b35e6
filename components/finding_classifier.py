"""Whether a sentence states a finding, learned from labelled abstracts rather than written as patterns.

A linear classifier over the sentence's words and word pairs (tf-idf, logistic regression), trained on the
sentences of the bundled PubMed abstracts labelled by their sections (Results and Conclusions are findings;
Background, Objective and Methods are not): `pmc_rag.evaluation.finding_sentences --train` writes
`resources/finding_sentences.json`, and measures it beside the patterns on the bundled full-text papers, which it
never saw. Reading it needs no model and no library: a few hundred dictionary look-ups a sentence.

Usage:
```python
from pmc_rag.components.finding_classifier import FindingClassifier

classifier = FindingClassifier()
classifier.probability("Median progression-free survival was 11 months (95% CI 9-13).")  # 0.9...
classifier.is_finding("The aim of this study was to assess erlotinib.")                  # False
```
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

RESOURCE = Path(__file__).resolve().parent / "resources" / "finding_sentences.json"
_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default: words of two or more characters
# Numbers (and the percentages, p values and intervals made of them) mark results whatever their value.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def normalise(text: str) -> str:
    """What the classifier reads: lower case, every number the token `numtok`."""
    return _NUMBER.sub(" numtok ", text.lower())


def terms(text: str) -> list[str]:
    """The sentence's words and adjacent word pairs, as the vectorizer counts them."""
    words = _TOKEN.findall(normalise(text))
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


class FindingClassifier:
    """The trained classifier's weights, read from its JSON file (default: `resources/finding_sentences.json`)."""

    def __init__(self, path: str | Path = RESOURCE):
        self.path = Path(path)
        data = _read(str(self.path))
        self.vocabulary: dict[str, int] = data["vocabulary"]
        self.idf: list[float] = data["idf"]
        self.weights: list[float] = data["coef"]
        self.intercept: float = data["intercept"]
        self.threshold: float = data.get("threshold", 0.5)

    def probability(self, sentence: str) -> float:
        """The probability that the sentence states a finding (a result or a conclusion), 0-1."""
        counts = Counter(index for term in terms(sentence) if (index := self.vocabulary.get(term)) is not None)
        values = {index: (1 + math.log(count)) * self.idf[index] for index, count in counts.items()}
        norm = math.sqrt(sum(v * v for v in values.values())) or 1.0
        score = self.intercept + sum(self.weights[i] * v / norm for i, v in values.items())
        return 1 / (1 + math.exp(-score))

    def is_finding(self, sentence: str) -> bool:
        return self.probability(sentence) >= self.threshold


@lru_cache(maxsize=1)
def shipped_classifier() -> FindingClassifier:
    """The classifier of `resources/finding_sentences.json`, read once."""
    return FindingClassifier()


@lru_cache(maxsize=4)
def _read(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def train_finding_classifier(sentences: list[str], findings: list[bool], path: str | Path = RESOURCE,
                             min_df: int = 2, c: float = 4.0) -> Path:
    """Fit the classifier (scikit-learn, installed with Sentence Transformers) and write its weights as JSON."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = TfidfVectorizer(analyzer=terms, min_df=min_df, sublinear_tf=True, norm="l2", smooth_idf=True)
    matrix = vectorizer.fit_transform(sentences)
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(matrix, findings)
    vocabulary = {term: int(index) for term, index in sorted(vectorizer.vocabulary_.items(), key=lambda t: t[1])}
    data = {"about": "pmc_rag.components.finding_classifier: tf-idf of words and word pairs (numbers as 'numtok'), "
                     "logistic regression; a finding is a sentence of a Results or Conclusions section",
            "trained_on": f"{len(sentences)} sentences of the bundled PubMed abstracts (80% of the papers)",
            "vocabulary": vocabulary, "idf": [round(float(v), 5) for v in vectorizer.idf_],
            "coef": [round(float(v), 5) for v in model.coef_[0]], "intercept": round(float(model.intercept_[0]), 5),
            "threshold": 0.5}
    path = Path(path)
    path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    _read.cache_clear()
    shipped_classifier.cache_clear()
    return path
