"""The crisis check's second layer: a message is compared with labelled messages by meaning, and called a crisis
when its nearest ones mostly are (`ExemplarLayer`); and the labelled messages it and the classifier learn from.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


class ExemplarLayer:
    """
    Calls a message a crisis when most of its nearest labelled messages are crises (similarity-weighted share of
    the `k` nearest at least `threshold`), and gives the category most of those crises share.

    The exemplars are `labelled_messages()` (ours and everyday chat by others) less `HELD_ASIDE_SETS`, and every
    other PubMedQA dev question as research. k=5 and threshold=0.6 were chosen by
    leave-one-out on the labelled exemplars alone.

    Usage:
    ```python
    layer = ExemplarLayer.load()            # the default embedding model, offline
    layer.nearest_crisis("I have the rope ready")   # 'suicide_self_harm'
    ```
    """

    def __init__(self, encode: "Callable[[list[str]], Any]", texts: list[str], labels: list[bool],
                 categories: list[str], *, k: int = 5, threshold: float = 0.6, vectors: Any = None,
                 model: str | None = None):
        import numpy as np

        self._encode = encode
        self.model = model  # the embedding model `encode` runs, which the crisis classifier's meaning part needs
        # One question is checked up to four times on its way (fixed replies, the answer, its care notes): its
        # vector is computed once. Thread-safe, and a copy per layer.
        self.meaning = lru_cache(maxsize=64)(self._meaning)
        self._vectors = np.asarray(encode(texts) if vectors is None else vectors, dtype="float32")
        self._crisis = np.asarray(labels, dtype=bool)
        self._categories = categories
        self.k, self.threshold = k, threshold

    @classmethod
    def load(cls, model: str | None = None, **settings: Any) -> "ExemplarLayer":
        """The layer with a Sentence Transformers model (default: the project's embedding model, offline) run by
        the query embedder's ONNX runtime, and the shipped exemplars, whose vectors are saved once (2.9 s of every
        `pmc-rag ask` on 2 cores, when Sentence Transformers embedded them at each start)."""
        from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder, embedded_once
        from pmc_rag.environment import configure_environment
        from pmc_rag.models import EMBEDDING_MODEL, seed_embedding_model

        configure_environment()  # offline by default: no minutes of retries on a machine without network
        if model is None:
            seed_embedding_model()
        model = model or EMBEDDING_MODEL
        embedder = OnnxTextEmbedder(model=model, normalize_embeddings=True, device="cpu")
        embedder.warm_up()
        rows = [r for r in labelled_messages() if r["set"] not in HELD_ASIDE_SETS] + research_exemplars()
        texts = [r["text"] for r in rows]
        return cls(lambda messages: [embedder.run(text=m)["embedding"] for m in messages], texts,
                   [r["label"] == "crisis" for r in rows], [r["category"] for r in rows],
                   vectors=embedded_once(model, texts, "crisis"), model=model, **settings)

    @property
    def size(self) -> int:
        """How many labelled messages the layer compares a message with."""
        return len(self._crisis)

    def meaning_of_each(self, texts: list[str]) -> list[Any]:
        """`meaning` of each text: an `encode` for another layer with this one's model."""
        return [self.meaning(text) for text in texts]

    def _meaning(self, text: str) -> Any:
        """The text's normalised embedding (read through `meaning`, which remembers recent texts')."""
        import numpy as np

        return np.asarray(self._encode([text]), dtype="float32")[0]

    def nearest_crisis(self, message: str) -> str | None:
        import numpy as np

        similarities = self._vectors @ self.meaning(message)  # the same vector, remembered for the next check
        nearest = np.argsort(-similarities)[: self.k]
        weights = np.clip(similarities[nearest], 1e-6, None)
        if float((weights * self._crisis[nearest]).sum() / weights.sum()) < self.threshold:
            return None
        crisis_neighbours = [self._categories[i] for i in nearest if self._crisis[i]]
        return max(set(crisis_neighbours), key=crisis_neighbours.count)


HELD_ASIDE_SETS = {"fresh_4", "fresh_5", "fresh_6", "fresh_7", "fresh_8", "fresh_9", "chat_held_aside"}


def labelled_messages() -> list[dict[str, Any]]:
    """The messages written for the check (crisis_messages.json) and everyday messages written by others
    (everyday_chat.json, none of them a crisis)."""
    datasets = resources.files("pmc_rag.evaluation") / "datasets"
    return [message for name in ("crisis_messages.json", "everyday_chat.json")
            for message in json.loads((datasets / name).read_text(encoding="utf-8"))["messages"]]


def research_exemplars() -> list[dict[str, Any]]:
    """Every other PubMedQA dev question (the even-numbered ones in file order), as more examples of research
    questions; `pmc-rag eval --crisis` measures false alarms on the odd-numbered ones."""
    from pmc_rag.evaluation.questions import load_questions
    from pmc_rag.paths import DEV_QUESTIONS

    return [{"text": q.question, "label": "research", "category": "pubmedqa"}
            for q in load_questions(DEV_QUESTIONS)[::2]]
