"""The sentence-pair trials' features (evaluation/sentence_pairs.py): what the learned judges read."""

import numpy as np

from pmc_rag.evaluation.sentence_pairs import pair_features, shared_words


def test_pair_features_are_the_cosine_then_product_then_absolute_difference():
    question = np.array([0.6, 0.8, 0.0])
    sentence = np.array([0.0, 0.6, 0.8])
    features = pair_features(question, sentence)
    assert len(features) == 1 + 2 * 3
    assert abs(features[0] - 0.48) < 1e-9
    assert np.allclose(features[1:4], [0.0, 0.48, 0.0])
    assert np.allclose(features[4:], [0.6, 0.2, 0.8])


def test_shared_words_counts_the_questions_content_words_the_text_has_by_stem():
    question = "Does metformin reduce cardiovascular events?"
    assert shared_words(question, "Metformin reduced cardiovascular events in this trial.") == 1.0
    assert 0 < shared_words(question, "Bedtime insulin added to metformin was effective.") < 0.5
    assert shared_words(question, "Nothing in common here.") == 0.0

