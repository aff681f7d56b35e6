"""The learned finding-sentence judge: its file reads back to what scikit-learn fitted, and it does better than
the word list on the held-aside full-text sentences (pmc_rag.evaluation.finding_sentences)."""

from __future__ import annotations

import pytest

from pmc_rag.components.finding_classifier import FindingClassifier, shipped_classifier, train_finding_classifier

SENTENCES = [
    ("Median progression-free survival was 11.0 months (95% CI 9.1-12.9).", True),
    ("Erlotinib reduced the risk of progression by 63% compared with chemotherapy (p < 0.001).", True),
    ("We conclude that first-line erlotinib is effective in EGFR-mutant lung cancer.", True),
    ("Rash occurred in 60% of patients and diarrhoea in 25%.", True),
    ("These results suggest that screening improves survival in older adults.", True),
    ("The aim of this study was to assess erlotinib in EGFR-mutant lung cancer.", False),
    ("Patients were randomised to erlotinib or chemotherapy and followed for two years.", False),
    ("Lung cancer is the leading cause of cancer death worldwide.", False),
    ("Data were collected from medical records between 2005 and 2010.", False),
    ("We sought to determine whether screening improves survival in older adults.", False),
]


def test_the_file_reads_back_to_what_scikit_learn_fitted(tmp_path):
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: F401  (installed with Sentence Transformers)

    sentences, findings = zip(*SENTENCES)
    path = train_finding_classifier(list(sentences) * 2, list(findings) * 2, tmp_path / "tiny.json", min_df=1)
    classifier = FindingClassifier(path)
    # the same fit again, in scikit-learn, to compare probabilities with the pure-Python reading
    from sklearn.linear_model import LogisticRegression

    from pmc_rag.components.finding_classifier import terms

    vectorizer = TfidfVectorizer(analyzer=terms, min_df=1, sublinear_tf=True, norm="l2", smooth_idf=True)
    matrix = vectorizer.fit_transform(list(sentences) * 2)
    model = LogisticRegression(C=4.0, class_weight="balanced", max_iter=2000).fit(matrix, list(findings) * 2)
    unseen = ["Survival improved by 11 months with erlotinib.", "The purpose was to describe the cohort."]
    expected = model.predict_proba(vectorizer.transform(unseen))[:, 1]
    assert [classifier.probability(s) for s in unseen] == pytest.approx(list(expected), abs=1e-3)
    assert FindingClassifier(path).probability("") == pytest.approx(1 / (1 + 2.718281828 ** -classifier.intercept))


def test_the_shipped_classifier_tells_findings_from_aims_methods_and_background():
    classifier = shipped_classifier()
    said = [(sentence, classifier.is_finding(sentence)) for sentence, _ in SENTENCES]
    assert said == [(sentence, finding) for sentence, finding in SENTENCES]


# The word list `finding_rank` used before the classifier replaced it (2026-11-29), on the same held-aside sentences
# (evaluation/results/2026-11-29-finding-rank-learned/): F1 0.452, accuracy 0.659.
WORD_LIST_F1, WORD_LIST_ACCURACY = 0.452, 0.659


def test_on_the_held_aside_full_texts_the_learned_judge_beats_the_word_list_it_replaced():
    from pmc_rag.evaluation.finding_sentences import finding_rank_says_finding, held_aside_sentences, scores

    held_aside = held_aside_sentences()
    truth = [item.finding for item in held_aside]
    now = scores(truth, [finding_rank_says_finding(item.sentence) for item in held_aside])
    assert len(held_aside) > 2000 and now["f1"] > WORD_LIST_F1 + 0.1 and now["accuracy"] > WORD_LIST_ACCURACY
