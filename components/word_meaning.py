"""Word checks by meaning: does a text name a word, or another word for the same thing ("kids" and "children",
"stomach" and "gastric")? And does a word carry a question's meaning ("brother" in "my brother has drug resistant
TB, how many drugs does he need?" does not; "anifrolumab" in "Does anifrolumab affect depression?" does)?

Both are read from the embedding model the index already uses, so they reach every word the model knows and grow
with no list: a word is named when a word of the text lies within `min_similarity` of it (cosine of the two words'
embeddings), and a word's weight in a question is how far the question's embedding moves when the word is taken out.

Usage:
```python
meaning = WordMeaning(OnnxTextEmbedder(normalize_embeddings=True))
meaning.synonym("kids", {"children", "urinary", "infection"})                  # 'children'
meaning.weight("my brother has drug resistant TB, how many drugs?", "brother")   # about 0.04: little
```
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from pmc_rag.components.citations import content_words
from pmc_rag.components.spellings import edit_distance

_WORD = re.compile(r"[^\W\d_][\w-]{2,}")


class WordMeaning:
    """Embeddings of single words and of a question without one word, with a bounded cache of word vectors.

    :param embedder: A warm-up-able text embedder with `run(text=...)` and `embed_many(texts)`
        (`OnnxTextEmbedder`), normalising its vectors.
    :param min_similarity: The least cosine similarity of two words' embeddings for one to name the other.
    :param cache_size: How many word vectors to keep (384 floats each for MiniLM: 20,000 are about 30 MB).
    """

    def __init__(self, embedder: Any, min_similarity: float = 0.7, cache_size: int = 20000):
        self.embedder = embedder
        self.min_similarity = min_similarity
        self.cache_size = cache_size
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._texts: OrderedDict[str, Any] = OrderedDict()

    @classmethod
    def loaded(cls, model: str, min_similarity: float = 0.7) -> WordMeaning:
        """Word meanings read with `model` (a Sentence Transformers name or folder, run by `OnnxTextEmbedder`),
        warmed up: what a component's `warm_up` builds from its `meaning_model`."""
        from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder

        meaning = cls(OnnxTextEmbedder(model=model, normalize_embeddings=True), min_similarity=min_similarity)
        meaning.warm_up()
        return meaning

    def warm_up(self) -> None:
        self.embedder.warm_up()

    def vectors(self, words: list[str]) -> Any:
        """The words' embeddings as rows of a matrix, from the cache where it has them."""
        import numpy as np

        missing = [w for w in dict.fromkeys(words) if w not in self._vectors]
        for word, vector in zip(missing, self.embedder.embed_many(missing) if missing else []):
            self._vectors[word] = np.asarray(vector, dtype=np.float32)
        for word in words:
            self._vectors.move_to_end(word)
        while len(self._vectors) > self.cache_size:
            self._vectors.popitem(last=False)
        return np.array([self._vectors[w] for w in words]).reshape(len(words), -1)

    def synonym(self, word: str, text_words: set[str]) -> str | None:
        """The text word closest in meaning to `word`, if within `min_similarity`, else None. `text_words` are a
        text's words, lower case (`text_words()`); a word spelled alike is found by its stem first (`names`)."""
        word = word.lower()
        candidates = sorted(text_words)
        if not candidates:
            return None
        similarities = self.vectors(candidates) @ self.vectors([word])[0]
        best = int(similarities.argmax())
        return candidates[best] if similarities[best] >= self.min_similarity else None

    def weight(self, question: str, word: str) -> float:
        """How much of the question's meaning the word (or phrase) carries: 1 minus the cosine similarity of the
        question's embedding with and without it (0 when the word is not in the question)."""
        import numpy as np

        without = _without(question, word)
        if without == re.sub(r"\s+", " ", question).strip():
            return 0.0
        whole, rest = self._text_vector(question), self._text_vector(without)
        return float(1 - whole @ rest / max(float(np.linalg.norm(whole) * np.linalg.norm(rest)), 1e-12))

    def carried(self, question: str, phrase: str, sentences: list[str]) -> float:
        """The share of the phrase's meaning in the question that the text carries: how far the question's
        similarity to the text's closest sentence drops when the phrase is taken out, over how far the question's
        own embedding moves (its `weight`). Near 1 or above when that sentence says what the phrase means in other
        words; near 0 or below when it is about the rest of the question only (a bruxism study for "Is bruxism
        associated with osteonecrosis?": the question comes as close to it, or closer, without "osteonecrosis")."""
        without = _without(question, phrase)
        if not sentences or without == re.sub(r"\s+", " ", question).strip():
            return 0.0
        closest = self.vectors(sentences)
        whole, rest = self._text_vector(question), self._text_vector(without)
        top = closest[int((closest @ whole).argmax())]
        return float((top @ whole - top @ rest) / max(1.0 - float(whole @ rest), 1e-6))

    def _text_vector(self, text: str) -> Any:
        """A question's embedding, kept for the question's other words (each weighed against the whole)."""
        import numpy as np

        if text not in self._texts:
            self._texts[text] = np.asarray(self.embedder.run(text=text)["embedding"])
            while len(self._texts) > 64:
                self._texts.popitem(last=False)
        return self._texts[text]


def _without(question: str, phrase: str) -> str:
    """The question with the phrase taken out (whole words only), spaces tidied."""
    without = re.sub(r"(?i)(?<![\w-])" + re.escape(phrase) + r"(?![\w-])", " ", question)
    return re.sub(r"\s+", " ", without).strip()


def names(word: str, stems: set[str], words: set[str], meaning: WordMeaning | None) -> bool:
    """Whether a text (its `content_words` stems and its `text_words`) names the word: by stem, or with `meaning`,
    by a word of the same meaning."""
    if content_words(word) <= stems:
        return True
    parts = re.findall(r"[^\W\d_]{3,}", word)[:3]
    return meaning is not None and all(spelled_near(part, words) or meaning.synonym(part, words) is not None
                                       for part in parts)


def spelled_near(word: str, words: set[str]) -> bool:
    """Whether the text has the word misspelled or inflected otherwise ("acupunture" for "acupuncture",
    "depresion" for "depression", "sicker" for "sick"): one edit for words of five letters or more, two for eight
    or more (or two letters fewer at the end)."""
    word = word.lower()
    if len(word) < 5:
        return False
    for other in words:
        if other[:1] != word[:1] or abs(len(other) - len(word)) > 2:
            continue
        limit = 2 if len(word) >= 8 or other == word[:-2] else 1
        if edit_distance(word, other, limit) <= limit:
            return True
    return False


def text_words(text: str) -> set[str]:
    """A text's words of three or more letters, lower case: the candidates `WordMeaning.synonym` compares."""
    return {w.lower() for w in _WORD.findall(text)}
