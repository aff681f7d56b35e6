"""Can the embeddings we already compute tell, from a question and a sentence together, what the word rules cannot?

    python -m pmc_rag.evaluation.sentence_pairs gate       # the gate learned with the question-sentence pair
    python -m pmc_rag.evaluation.sentence_pairs findings   # finding sentences: tf-idf beside MiniLM embeddings
    python -m pmc_rag.evaluation.sentence_pairs scope      # does a paper's conclusion test the question?

Three trials of issue 61, item 2 ("meaning over word lists"), each a logistic regression over MiniLM vectors (the
index's model): the question's vector times the sentence's, and their absolute difference (a learned similarity),
beside what each judge reads today. Tuning sets only decide; `--held` also scores the held-aside sets (counts only).
The study: `evaluation/results/2026-11-29-sentence-pairs/`.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from pmc_rag.paths import PROJECT_ROOT

DATASETS = PROJECT_ROOT / "evaluation" / "datasets"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def pair_features(question_vector: Any, sentence_vector: Any) -> list[float]:
    """Cosine, then the elementwise product and absolute difference of two normalised vectors."""
    import numpy as np

    return [float(question_vector @ sentence_vector), *(question_vector * sentence_vector),
            *np.abs(question_vector - sentence_vector)]


def shared_words(question: str, text: str) -> float:
    """The share of the question's content words (stemmed) that the text has."""
    from pmc_rag.components.citations import content_stems

    asked = set(content_stems(question))
    return len(asked & set(content_stems(text))) / max(len(asked), 1)


def _logistic(c: float) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, class_weight="balanced", max_iter=5000)


def gate_rows() -> list[dict[str, Any]]:
    """`gate_learning.gather` over every set, each question also with its vector and the vector of the closest
    sentence of the gate's kept excerpts (three closest papers), taken as the gate measures."""
    import numpy as np

    from pmc_rag.components import relevance_gate
    from pmc_rag.evaluation import gate_learning

    vectors: dict[str, tuple[Any, Any]] = {}
    measure = relevance_gate.RelevanceGate.measure

    def measure_and_keep(gate: Any, documents: Any, scored: Any, best: float, *args: Any) -> Any:
        measured = measure(gate, documents, scored, best, *args)
        question = args[-1]
        papers = list(relevance_gate.by_paper(measured.kept).values())[:3]
        sentences = [s for chunks in papers for chunk in chunks if relevance_gate.is_readable_evidence(chunk)
                     for s in relevance_gate.split_sentences(" ".join((chunk.content or "").split()))
                     if len(s.split()) >= 4]
        q = gate._meaning.vectors([question])[0]
        closest = gate._meaning.vectors(sentences) if sentences else np.zeros((1, len(q)), dtype=np.float32)
        vectors[question] = (q, closest[int(np.argmax(closest @ q))])
        return measured

    relevance_gate.RelevanceGate.measure = measure_and_keep  # a trial's tap, undone below
    try:
        rows = gate_learning.gather(gate_learning.question_sets())
    finally:
        relevance_gate.RelevanceGate.measure = measure
    for row in rows:
        row["pair"] = vectors.get(row["question"])
    return rows


def gate_trial(held: bool) -> str:
    """The learned gate from the gate's signals alone and with the pair, 5-fold on the tuning sets, the threshold
    catching 96% of the tuning unanswerable questions (as `gate_learning`); beside the rules of rag.yml."""
    import numpy as np
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.preprocessing import StandardScaler

    from pmc_rag.components.gate_classifier import features
    from pmc_rag.evaluation.gate_learning import ANSWERABLE, HELD_ASIDE, MIN_CAUGHT, TUNING

    rows = [r for r in gate_rows() if r["signals"] is not None and r["pair"] is not None]
    variants = {"signals": lambda r: features(r["signals"]),
                "signals and pair": lambda r: features(r["signals"]) + pair_features(*r["pair"])}
    tuning = [r for r in rows if r["set"] in TUNING]
    answerable = np.array([r["set"] in ANSWERABLE for r in tuning])
    said: dict[str, dict[int, bool]] = {}
    for name, read in variants.items():
        scaler = StandardScaler().fit([read(r) for r in tuning])
        matrix = scaler.transform([read(r) for r in tuning])
        crossed = cross_val_predict(_logistic(0.1), matrix, answerable, method="predict_proba",
                                    cv=StratifiedKFold(5, shuffle=True, random_state=0))[:, 1]
        negatives = np.sort(crossed[~answerable])
        threshold = negatives[min(len(negatives) - 1, math.ceil(MIN_CAUGHT * len(negatives)) - 1)] + 1e-6
        said[name] = {id(r): bool(p >= threshold) for r, p in zip(tuning, crossed)}
        if held:
            model = _logistic(0.1).fit(matrix, answerable)
            for r in rows:
                if r["set"] in HELD_ASIDE:
                    said[name][id(r)] = bool(model.predict_proba(scaler.transform([read(r)]))[0, 1] >= threshold)
    lines = ["| set | part | questions | measure | rules (rag.yml) | " + " | ".join(variants) + " |",
             "|---|---|---:|---|---:|" + "---:|" * len(variants)]
    for name in TUNING + (HELD_ASIDE if held else ()):
        part = [r for r in rows if r["set"] == name]
        right = name in ANSWERABLE
        cells = [sum(bool(r["rules_answer"]) == right for r in part)] + [
            sum(said[v][id(r)] == right for r in part) for v in variants]
        lines.append(f"| {name} | {'tuning (5-fold)' if name in TUNING else 'held aside'} | {len(part)} | "
                     f"{'let through' if right else 'turned away'} | "
                     + " | ".join(f"{c / len(part):.1%}" for c in cells) + " |")
    return "\n".join(lines)


def findings_trial(held: bool) -> str:
    """The finding-sentence classifier as shipped (tf-idf) beside MiniLM embeddings, alone and added."""
    import numpy as np
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics import precision_recall_fscore_support

    from pmc_rag.components.finding_classifier import terms
    from pmc_rag.components.word_meaning import WordMeaning
    from pmc_rag.evaluation.finding_sentences import abstract_sentences, held_aside_sentences, split_by_paper

    learn, tuning = split_by_paper(abstract_sentences())
    sets = {"learn": learn, "tuning": tuning} | ({"held": held_aside_sentences()} if held else {})
    embedder = WordMeaning.loaded(MINILM).embedder
    vectors = {k: np.array(embedder.embed_many([i.sentence for i in v])) for k, v in sets.items()}
    tfidf = TfidfVectorizer(analyzer=terms, min_df=2, sublinear_tf=True).fit([i.sentence for i in learn])
    words = {k: tfidf.transform([i.sentence for i in v]) for k, v in sets.items()}
    variants = {"tf-idf (as shipped)": (lambda k: words[k], 4.0),
                "embedding": (lambda k: csr_matrix(vectors[k]), 1.0),
                "tf-idf and embedding": (lambda k: hstack([words[k], csr_matrix(vectors[k])]).tocsr(), 4.0)}
    lines = ["| judge | set | sentences | precision | recall | F1 |", "|---|---|---:|---:|---:|---:|"]
    for name, (read, c) in variants.items():
        model = _logistic(c).fit(read("learn"), [i.its_own_finding for i in learn])
        for part, label in (("tuning", "tuning (abstracts held out)"), ("held", "held aside (full texts)")):
            if part in sets:
                p, r, f, _ = precision_recall_fscore_support([i.finding for i in sets[part]], model.predict(read(part)),
                                                             average="binary")
                lines.append(f"| {name} | {label} | {len(sets[part])} | {p:.3f} | {r:.3f} | {f:.3f} |")
    return "\n".join(lines)


def scope_trial() -> str:
    """Pairs (question, a paper's conclusion) from the PubMedQA dev questions: its own paper's conclusion tests
    it, the two closest other conclusions of the 1,000 abstracts do not. Learned on the even questions; scored
    on the odd ones and on the plain-language tuning questions about abstracts, at the threshold flagging 2% of
    the learned positives; and the metformin question of the issue with the two conclusions its answer quotes."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from pmc_rag.components.word_meaning import WordMeaning

    embedder = WordMeaning.loaded(MINILM).embedder
    conclusions: dict[str, str] = {}
    for line in (PROJECT_ROOT / "corpus" / "pubmedqa" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        paper = json.loads(line)
        found = [s["text"] for s in paper["sections"] if "CONCLU" in s["label"].upper()]
        conclusions[paper["pmid"]] = found[-1] if found else paper["sections"][-1]["text"]
    pmids = list(conclusions)
    matrix = np.array(embedder.embed_many([conclusions[p] for p in pmids]))

    def pairs(questions: list[tuple[str, str]]) -> tuple[Any, Any]:
        rows, labels = [], []
        for (question, own), vector in zip(questions, embedder.embed_many([q for q, _ in questions])):
            vector = np.asarray(vector)
            others = [j for j in np.argsort(-(matrix @ vector)) if pmids[j] != own][:2]
            for j, label in [(pmids.index(own), 1), *((j, 0) for j in others)]:
                rows.append(pair_features(vector, matrix[j]) + [shared_words(question, conclusions[pmids[j]])])
                labels.append(label)
        return np.array(rows), np.array(labels)

    dev = json.loads((DATASETS / "pubmedqa_dev_questions.json").read_text(encoding="utf-8"))
    asked = [(v["QUESTION"], pmid) for pmid, v in dev.items()]
    plain = [(q["question"], q["gold_paper"].removeprefix("PMID:")) for q in json.loads(
        (DATASETS / "plain_language_questions.json").read_text(encoding="utf-8"))["questions"]
        if q["set"] == "plain_tuning" and q["gold_paper"].startswith("PMID:")]
    learned, labels = pairs(asked[::2])
    metformin = "Does metformin reduce cardiovascular events in type 2 diabetes?"
    quoted = np.array([pair_features(np.asarray(embedder.embed_many([metformin])[0]), matrix[pmids.index(p)])
                       + [shared_words(metformin, conclusions[p])] for p in ("15125825", "22720085")])
    lines = ["| features | set | pairs | AUC | own conclusion flagged | closest others flagged | metformin's two |",
             "|---|---|---:|---:|---:|---:|---|"]
    last = learned.shape[1] - 1
    for name, columns in (("cosine", [0]), ("cosine and shared words", [0, last]), ("pair", slice(0, last)),
                          ("pair and shared words", slice(None))):
        model = _logistic(0.1).fit(learned[:, columns], labels)
        threshold = float(np.quantile(model.predict_proba(learned[:, columns])[labels == 1, 1], 0.02))
        said = ", ".join(f"{p:.2f}" for p in model.predict_proba(quoted[:, columns])[:, 1])
        for label, (rows, truth) in (("dev odd", pairs(asked[1::2])), ("plain tuning (abstracts)", pairs(plain))):
            p = model.predict_proba(rows[:, columns])[:, 1]
            lines.append(f"| {name} | {label} | {len(truth)} | {roc_auc_score(truth, p):.3f} | "
                         f"{np.mean(p[truth == 1] < threshold):.1%} | {np.mean(p[truth == 0] < threshold):.1%} | "
                         f"{said} (flagged below {threshold:.2f}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trial", choices=("gate", "findings", "scope"))
    parser.add_argument("--held", action="store_true", help="also score the held-aside sets (counts only)")
    args = parser.parse_args(argv)
    from pmc_rag.environment import configure_environment

    configure_environment()
    print({"gate": lambda: gate_trial(args.held), "findings": lambda: findings_trial(args.held),
           "scope": scope_trial}[args.trial]())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
