"""How likely a message is a crisis, learned from labelled messages rather than written as rules.

A linear classifier (tf-idf, logistic regression) over the message's words, word pairs and letter runs of two to
five (which carry misspellings and other languages' words: "suicidarme", "voglio morire"), and, where the crisis
check has the embedding model loaded, the message's sentence embedding beside them (its meaning, which carries
wordings no labelled message used). Without the embedding the words alone decide, with their own weights.
Trained on the labelled crisis messages less the held-aside sets, the even-numbered PubMedQA dev questions and the
tuning half of the plain-language questions (patients' own questions, research however personal). `pmc-rag eval --crisis --train`
writes `components/resources/crisis_classifier.json`. Reading it needs no library; its meaning part needs the
embedding model's vector of the message, which the caller passes.

The crisis check (`pmc_rag.answering.crisis`) asks it where its rules are unsure: it confirms or demotes an
uncertain rule, and it flags messages no rule catches as possible danger (an answer with a crisis line on top).

Usage:
```python
classifier = shipped_crisis_classifier()
classifier.probability("i'm so tired of existing")                          # about 0.4
classifier.probability("Does lithium prevent suicide in bipolar disorder?")  # about 0.0
classifier.probability(text, meaning=vector)  # with the message's embedding (`classifier.meaning_model`'s)
```
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from pmc_rag.paths import PROJECT_ROOT

RESOURCE = PROJECT_ROOT / "components" / "resources" / "crisis_classifier.json"
_WORD = re.compile(r"(?u)\b\w\w+\b")


def features(normalised: str) -> list[str]:
    """Words, adjacent word pairs and each word's letter runs of 2 to 5 (the word padded with a space each side),
    of a message already normalised by the crisis check (lower case, accents dropped)."""
    words = _WORD.findall(normalised)
    terms = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    for word in normalised.split():
        padded = f" {word} "
        terms += [f"#{padded[i:i + n]}" for n in range(2, 6) for i in range(max(len(padded) - n + 1, 1))]
    return terms


class CrisisClassifier:
    """The trained weights, read from their JSON file."""

    def __init__(self, path: str | Path = RESOURCE):
        data = _read(str(path))
        self.vocabulary: dict[str, int] = data["vocabulary"]
        self.idf: list[float] = data["idf"]
        self.weights: list[float] = data["coef"]
        self.intercept: float = data["intercept"]
        with_meaning = data.get("with_meaning") or {}
        #: The embedding model whose vectors the meaning part reads; None: the words alone decide.
        self.meaning_model: str | None = with_meaning.get("model")
        self._with_meaning = with_meaning

    def probability(self, normalised: str, meaning: Sequence[float] | None = None) -> float:
        """The probability that the (normalised) message is a crisis, 0-1.

        :param meaning: The message's normalised embedding by `meaning_model`; None: the words alone decide."""
        counts = Counter(i for term in features(normalised) if (i := self.vocabulary.get(term)) is not None)
        values = {i: (1 + math.log(count)) * self.idf[i] for i, count in counts.items()}
        norm = math.sqrt(sum(v * v for v in values.values())) or 1.0
        if meaning is not None and self.meaning_model:
            weights = self._with_meaning["coef_words"]
            score = self._with_meaning["intercept"] + sum(
                w * float(v) for w, v in zip(self._with_meaning["coef_meaning"], meaning, strict=True))
        else:
            weights, score = self.weights, self.intercept
        score += sum(weights[i] * v / norm for i, v in values.items())
        return 1 / (1 + math.exp(-max(min(score, 50.0), -50.0)))


@lru_cache(maxsize=1)
def shipped_crisis_classifier() -> CrisisClassifier | None:
    """The shipped classifier, read once; None where its file is missing (the rules still decide)."""
    return CrisisClassifier() if RESOURCE.exists() else None


@lru_cache(maxsize=2)
def _read(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def train_crisis_classifier(messages: list[str], crises: list[bool], path: str | Path = RESOURCE,
                            c: float = 10.0, min_df: int = 2, about: str = "", meanings: Any = None,
                            meaning_model: str | None = None) -> Path:
    """Fit the classifier on normalised messages (scikit-learn, installed with Sentence Transformers) and write
    its weights as JSON: the words alone, and, given `meanings` (the messages' normalised embeddings by
    `meaning_model`, one row each), the words and the embedding together."""
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = TfidfVectorizer(analyzer=features, min_df=min_df, sublinear_tf=True, norm="l2")
    matrix = vectorizer.fit_transform(messages)

    def fit(x: Any) -> Any:
        return LogisticRegression(C=c, class_weight="balanced", max_iter=3000).fit(x, crises)

    model = fit(matrix)
    with_meaning = None
    if meanings is not None:
        both = fit(hstack([matrix, csr_matrix(meanings)]).tocsr())
        words = matrix.shape[1]
        with_meaning = {"model": meaning_model, "coef_words": [round(float(v), 4) for v in both.coef_[0][:words]],
                        "coef_meaning": [round(float(v), 4) for v in both.coef_[0][words:]],
                        "intercept": round(float(both.intercept_[0]), 4)}
    vocabulary = {term: int(i) for term, i in sorted(vectorizer.vocabulary_.items(), key=lambda t: t[1])}
    data = {"about": "pmc_rag.answering.crisis_classifier: tf-idf of words, word pairs and letter runs of 2-5, "
                     "logistic regression; crisis (someone in danger now) against research and other messages",
            "trained_on": about or f"{len(messages)} messages",
            "vocabulary": vocabulary, "idf": [round(float(v), 4) for v in vectorizer.idf_],
            "coef": [round(float(v), 4) for v in model.coef_[0]], "intercept": round(float(model.intercept_[0]), 4),
            "with_meaning": with_meaning}
    path = Path(path)
    path.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")
    _read.cache_clear()
    shipped_crisis_classifier.cache_clear()
    return path
