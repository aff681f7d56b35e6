"""The scale benchmark's synthetic corpus: fitted to the sample, rare words stay rare, the same seed the same corpus."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from pmc_rag.components.section_chunker import SectionChunker
from pmc_rag.evaluation.synthetic_corpus import CorpusStatistics, made_up_word, synthetic_batches, words_of
from pmc_rag.ingestion.sources import read_articles

from conftest import CORPUS


@pytest.fixture(scope="session")
def sample() -> tuple[CorpusStatistics, list[str]]:
    articles = list(read_articles(CORPUS / "pubmedqa/corpus.jsonl"))[:400]
    chunks = SectionChunker().run(documents=[d for a in articles for d in a.section_documents()])["documents"]
    texts = [c.content for c in chunks]
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(len(texts), 8)).astype(np.float32)
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    return CorpusStatistics.of(texts, embeddings, [c.meta["source_id"] for c in chunks]), texts


def test_the_fitted_statistics_are_those_of_literature(sample):
    stats, texts = sample
    assert 0.3 < stats.heaps_beta < 0.8 and 0.8 < stats.zipf_slope < 2.0
    assert 0.05 < stats.topic_share < 0.6  # a paper's chunks share words beyond chance
    assert stats.lengths.mean() == pytest.approx(np.mean([len(words_of(t)) for t in texts if words_of(t)]))


def test_the_vocabulary_grows_with_the_corpus_so_rare_words_remain(sample):
    """Copying the sample up to 20,000 chunks would put every word in at least 20,000 / sample-size chunks (about
    11): no rare word would be left. Here most words are rarer than that, many in one or two chunks."""
    stats, _ = sample
    assert stats.vocabulary_size(10_000) < stats.vocabulary_size(100_000) < stats.vocabulary_size(1_000_000)
    document_frequency = Counter(w for batch in synthetic_batches(stats, 20_000, batch_size=5_000, seed=1)
                                 for t in batch.texts for w in set(t.split()))
    copies = 20_000 / len(stats.lengths)
    counts = list(document_frequency.values())
    assert sum(c < copies for c in counts) > 0.6 * len(counts)
    assert sum(c <= 2 for c in counts) > 0.3 * len(counts)
    sampled = set(stats.vocabulary)
    assert sum(w not in sampled for w in document_frequency) > 1_000  # words past the sample's


def test_the_same_seed_gives_the_same_corpus_and_chunks_are_complete(sample):
    stats, _ = sample
    first, again = (next(synthetic_batches(stats, 300, batch_size=300, seed=5)) for _ in range(2))
    assert first.texts == again.texts and np.array_equal(first.embeddings, again.embeddings)
    assert len(set(first.ids)) == 300 and first.embeddings.shape == (300, 8)
    assert np.allclose(np.linalg.norm(first.embeddings, axis=1), 1, atol=1e-5)
    assert all(m["word_count"] == len(t.split()) > 0 for m, t in zip(first.metas, first.texts))
    assert len({made_up_word(r) for r in range(5_000, 6_000)}) == 1_000
