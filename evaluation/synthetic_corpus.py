"""Synthetic chunks that look like the sample's, at any size, for the scale benchmark.

Copying the sample to reach a million chunks would make every rare term common (a word in one sample chunk would
be in hundreds), so BM25 would see a corpus unlike any real one. Instead the words are drawn from a model fitted
to the sample:

- the vocabulary grows with the corpus as in the sample (Heaps' law, V = K * T^beta, fitted on the sample's own
  growth), so a larger corpus has more distinct words, not just more copies;
- the commonest words keep the sample's own frequencies, and the rest follow the sample's Zipf slope out to that
  vocabulary size (words past the sample's vocabulary are made-up pronounceable words);
- chunk lengths are drawn from the sample's, and words repeat within a chunk as often as in the sample (a chunk
  about a drug names it several times);
- papers have topics: each synthetic paper takes one sample paper as its topic and draws a share of its words from
  that paper's words, the share by which chunks of one sample paper share words beyond chance. So the words of a
  question (mammography, women, screening) meet in the same chunks as they do in literature; with words drawn
  independently, no chunk would hold more than one or two of them. (The sample's own words keep their rates, so
  a word seen once in the sample is in about as many chunks as copying would give; it is the growing vocabulary
  that keeps most words rare.)
- embeddings are random blends of a real chunk embedding of the topic paper and of any other chunk, plus noise,
  so they cluster as real ones do, rather than spreading evenly over the sphere.

    stats = CorpusStatistics.of(texts, embeddings, papers)
    for batch in synthetic_batches(stats, 100_000, batch_size=20_000): ...
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterator

import numpy as np

_WORD = re.compile(r"[a-z][a-z0-9'-]*|[0-9]+(?:\.[0-9]+)?")
_HEAD = 1000  # the commonest words keep their sample frequencies exactly
_SYLLABLES = ["ba", "ke", "lo", "mu", "ti", "ra", "so", "ne", "vi", "du", "ga", "pe", "zo", "fi", "hu", "ja"]


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class CorpusStatistics:
    vocabulary: list[str]       # the sample's words, commonest first
    counts: np.ndarray          # their counts in the sample
    lengths: np.ndarray         # words per sample chunk
    heaps_k: float
    heaps_beta: float
    zipf_slope: float           # frequency ~ rank ** -zipf_slope past the head
    repeat_share: float         # chance that a word repeats one earlier in its chunk (beyond chance)
    topic_share: float          # chance that a word comes from the paper's topic (beyond chance)
    topic_words: np.ndarray     # the sample papers' words (as ranks in `vocabulary`), paper after paper
    topic_starts: np.ndarray    # where each sample paper's words start in topic_words (one more: the end)
    embeddings: np.ndarray      # the sample's chunk embeddings (rows, unit length), paper after paper
    embedding_starts: np.ndarray  # where each sample paper's embeddings start (one more: the end)

    @classmethod
    def of(cls, texts: list[str], embeddings: np.ndarray, papers: list[str], seed: int = 0) -> CorpusStatistics:
        """From the sample's chunk texts, their embeddings and the paper each chunk belongs to."""
        rng = np.random.default_rng(seed)
        kept = [(words_of(t), p) for t, p in zip(texts, papers)]
        kept = [(c, p) for c, p in kept if c]
        chunks = [c for c, _ in kept]
        counts = Counter(w for c in chunks for w in c)
        vocabulary = [w for w, _ in counts.most_common()]
        frequencies = np.array([counts[w] for w in vocabulary], dtype=np.float64)
        # Heaps: vocabulary size after each tenth of the (shuffled) sample
        seen: set[str] = set()
        tokens, points = 0, []
        order = rng.permutation(len(chunks))
        marks = set(np.linspace(len(chunks) // 10, len(chunks) - 1, 10, dtype=int).tolist())
        for i, index in enumerate(order):
            seen.update(chunks[index])
            tokens += len(chunks[index])
            if i in marks:
                points.append((tokens, len(seen)))
        beta, log_k = np.polyfit(np.log([p[0] for p in points]), np.log([p[1] for p in points]), 1)
        # Zipf slope over the ranks past the head whose counts are not yet dominated by words seen once or twice
        ranks = np.arange(1, len(frequencies) + 1)
        fit = (ranks > _HEAD) & (frequencies >= 3)
        slope = -np.polyfit(np.log(ranks[fit]), np.log(frequencies[fit]), 1)[0] if fit.sum() > 10 else 1.0
        observed = np.mean([1 - len(set(c)) / len(c) for c in chunks])
        rank = {w: i for i, w in enumerate(vocabulary)}
        by_paper: dict[str, list[list[str]]] = {}
        for c, p in kept:
            by_paper.setdefault(p, []).append(c)
        paper_words = [np.array([rank[w] for c in cs for w in c]) for cs in by_paper.values()]
        topic_starts = np.concatenate([[0], np.cumsum([len(w) for w in paper_words])])
        # the embeddings grouped by paper, in the same paper order (papers whose chunks had no words have none)
        index = {p: i for i, p in enumerate(by_paper)}
        paper_of = np.array([index.get(p, len(index)) for p in papers])
        order = np.argsort(paper_of, kind="stable")
        embedding_starts = np.searchsorted(paper_of[order], np.arange(len(index) + 1))
        stats = cls(vocabulary, frequencies, np.array([len(c) for c in chunks]), float(np.exp(log_k)), float(beta),
                    float(slope), 0.0, _topic_share(list(by_paper.values()), rng), np.concatenate(paper_words),
                    topic_starts, embeddings[order], embedding_starts)
        # Some repetition happens by chance (common words); only the rest is added on purpose.
        chance = np.mean([1 - len(set(c)) / len(c) for c in _draw_chunks(stats, 2000, rng)])
        return cls(**{**stats.__dict__, "repeat_share": float(max(observed - chance, 0.0))})

    def vocabulary_size(self, chunks: int) -> int:
        """Distinct words expected in a corpus of this many chunks (never fewer than the sample's)."""
        tokens = chunks * float(self.lengths.mean())
        return max(len(self.vocabulary), int(self.heaps_k * tokens ** self.heaps_beta))

    def word_probabilities(self, chunks: int) -> np.ndarray:
        """Probability of each word rank in a corpus of this many chunks."""
        size = self.vocabulary_size(chunks)
        head = min(_HEAD, len(self.vocabulary))
        total = self.counts.sum()
        probabilities = np.empty(size)
        probabilities[:head] = self.counts[:head] / total
        tail = np.arange(head + 1, size + 1, dtype=np.float64) ** -self.zipf_slope
        probabilities[head:] = tail / tail.sum() * (1 - probabilities[:head].sum())
        return probabilities


def _topic_share(papers: list[list[list[str]]], rng: np.random.Generator) -> float:
    """How much more often a chunk's words occur in the rest of its own paper than in another paper's chunks."""
    own, other = [], []
    several = [p for p in papers if len(p) > 1]
    for paper in several:
        stranger = several[rng.integers(len(several))]
        for i, chunk in enumerate(paper):
            rest = {w for j, c in enumerate(paper) if j != i for w in c}
            elsewhere = {w for c in stranger[: len(paper) - 1] for w in c}
            own.append(np.mean([w in rest for w in chunk]))
            other.append(np.mean([w in elsewhere for w in chunk]))
    return float(max(np.mean(own) - np.mean(other), 0.0)) if own else 0.0


def made_up_word(rank: int) -> str:
    """A pronounceable word for a rank past the sample's vocabulary (distinct per rank)."""
    syllables = []
    while True:
        rank, digit = divmod(rank, len(_SYLLABLES))
        syllables.append(_SYLLABLES[digit])
        if rank == 0:
            return "".join(syllables) + "x"


def _draw_chunks(stats: CorpusStatistics, count: int, rng: np.random.Generator, corpus_chunks: int | None = None,
                 words: np.ndarray | None = None, topics: np.ndarray | None = None) -> list[list[str]]:
    """`count` chunks of words; `topics` gives each chunk's sample paper (random if not given)."""
    probabilities = stats.word_probabilities(corpus_chunks or count)
    if words is None:
        words = _words_for(stats, len(probabilities))
    if topics is None:
        topics = rng.integers(0, len(stats.topic_starts) - 1, count)
    lengths = rng.choice(stats.lengths, size=count)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    ranks = np.searchsorted(np.cumsum(probabilities), rng.random(int(lengths.sum())) * probabilities.sum())
    ranks = np.minimum(ranks, len(probabilities) - 1)
    if stats.topic_share > 0:
        topic = np.repeat(topics, lengths)
        from_topic = rng.random(len(ranks)) < stats.topic_share
        first, end = stats.topic_starts[topic[from_topic]], stats.topic_starts[topic[from_topic] + 1]
        ranks[from_topic] = stats.topic_words[first + (rng.random(len(first)) * (end - first)).astype(int)]
    if stats.repeat_share > 0:
        # A repeated word copies an earlier position of the same chunk (copies of copies resolved by jumping).
        position = np.arange(len(ranks))
        start = np.repeat(starts, lengths)
        repeat = (rng.random(len(ranks)) < stats.repeat_share) & (position > start)
        source = position.copy()
        source[repeat] = start[repeat] + (rng.random(int(repeat.sum())) * (position[repeat] - start[repeat])).astype(int)
        while True:
            jumped = source[source]
            if np.array_equal(jumped, source):
                break
            source = jumped
        ranks = ranks[source]
    chosen = words[ranks]
    return [chosen[s:s + n].tolist() for s, n in zip(starts, lengths)]


def _words_for(stats: CorpusStatistics, size: int) -> np.ndarray:
    known = len(stats.vocabulary)
    return np.array(stats.vocabulary[:size] + [made_up_word(r) for r in range(known, size)], dtype=object)


@dataclass
class SyntheticBatch:
    ids: list[str]
    texts: list[str]
    metas: list[dict]
    embeddings: np.ndarray  # float32, unit rows


def synthetic_batches(stats: CorpusStatistics, chunks: int, batch_size: int = 20_000, seed: int = 0,
                      chunks_per_paper: int = 6) -> Iterator[SyntheticBatch]:
    """`chunks` synthetic chunks in batches; the same seed gives the same corpus."""
    rng = np.random.default_rng(seed)
    words = _words_for(stats, stats.vocabulary_size(chunks))
    sample = stats.embeddings.astype(np.float32)
    papers = len(stats.topic_starts) - 1
    paper_topics = rng.permutation(max(papers, chunks // chunks_per_paper + 1)) % papers
    for first in range(0, chunks, batch_size):
        count = min(batch_size, chunks - first)
        topics = paper_topics[np.arange(first, first + count) // chunks_per_paper]
        texts = [" ".join(c) for c in _draw_chunks(stats, count, rng, corpus_chunks=chunks, words=words,
                                                   topics=topics)]
        # near one of the topic paper's chunks, blended with any other chunk
        first_row, end_row = stats.embedding_starts[topics], stats.embedding_starts[topics + 1]
        a = first_row + (rng.random(count) * (end_row - first_row)).astype(int)
        b = rng.integers(0, stats.embedding_starts[-1], count)
        share = rng.uniform(0.5, 1.0, (count, 1)).astype(np.float32)
        vectors = share * sample[a] + (1 - share) * sample[b]
        vectors += rng.normal(0, 0.25 / np.sqrt(sample.shape[1]), vectors.shape).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        numbers = range(first, first + count)
        yield SyntheticBatch(
            ids=[f"syn-{n}" for n in numbers], texts=texts,
            metas=[{"source_id": f"SYN:{n // chunks_per_paper}", "title": f"Synthetic paper {n // chunks_per_paper}",
                    "word_count": len(t.split()), "year": 1990 + n % 35} for n, t in zip(numbers, texts)],
            embeddings=vectors)
