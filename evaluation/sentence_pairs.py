"""Can the embeddings we already compute tell, from a question and a sentence together, what the word rules cannot?

    python -m pmc_rag.evaluation.sentence_pairs gate       # the gate learned with the question-sentence pair
    python -m pmc_rag.evaluation.sentence_pairs findings   # finding sentences: tf-idf beside MiniLM embeddings
    python -m pmc_rag.evaluation.sentence_pairs scope      # does a paper's conclusion test the question?
    python -m pmc_rag.evaluation.sentence_pairs cross      # the same, by a cross-encoder fine-tuned here
    python -m pmc_rag.evaluation.sentence_pairs judge      # the same, by an answering model (--model NAME)
    python -m pmc_rag.evaluation.sentence_pairs second-chance   # that model after the gate turned a question away

Trials of issue 61, item 2 ("meaning over word lists"): three a logistic regression over MiniLM vectors (the index's
model): the question's vector times the sentence's, and their absolute difference (a learned similarity), beside
what each judge reads today; the fourth a cross-encoder fine-tuned from MiniLM's weights; the fifth an answering
model asked yes or no. Tuning sets only decide; `--held` also scores the held-aside sets (counts only). The study:
`evaluation/results/2026-11-29-sentence-pairs/`.
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


def _minilm() -> Any:
    """The index's embedding model, as the gate runs it (ONNX Runtime, normalised vectors), warmed up."""
    from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder

    embedder = OnnxTextEmbedder(model=MINILM, normalize_embeddings=True)
    embedder.warm_up()
    return embedder


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
    from pmc_rag.evaluation.finding_sentences import abstract_sentences, held_aside_sentences, split_by_paper

    learn, tuning = split_by_paper(abstract_sentences())
    sets = {"learn": learn, "tuning": tuning} | ({"held": held_aside_sentences()} if held else {})
    embedder = _minilm()
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


def _conclusions() -> dict[str, str]:
    """Each bundled PubMed abstract's conclusion (its last conclusion section, as `section_kinds` names one; else
    its last section), by PMID."""
    from pmc_rag.components.section_kinds import CONCLUSION_SECTION

    conclusions: dict[str, str] = {}
    for line in (PROJECT_ROOT / "corpus" / "pubmedqa" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        paper = json.loads(line)
        found = [s["text"] for s in paper["sections"] if CONCLUSION_SECTION.search(s["label"])]
        conclusions[paper["pmid"]] = found[-1] if found else paper["sections"][-1]["text"]
    return conclusions


class _Conclusions:
    """The abstracts' conclusions embedded, and for each question the closest ones but its own paper's."""

    def __init__(self) -> None:
        import numpy as np

        self.embedder = _minilm()
        self.text = _conclusions()
        self.pmids = list(self.text)
        self.matrix = np.array(self.embedder.embed_many([self.text[p] for p in self.pmids]))

    def pairs(self, questions: list[tuple[str, str | None]], others: int = 2) -> list[tuple[str, str, int, Any, Any]]:
        """(question, conclusion, 1 for its own paper's and 0 for the `others` closest, their two vectors)."""
        import numpy as np

        rows = []
        for (question, own), vector in zip(questions, self.embedder.embed_many([q for q, _ in questions])):
            vector = np.asarray(vector)
            closest = [j for j in np.argsort(-(self.matrix @ vector)) if self.pmids[j] != own][:others]
            for j, label in [*([(self.pmids.index(own), 1)] if own else []), *((j, 0) for j in closest)]:
                rows.append((question, self.text[self.pmids[j]], label, vector, self.matrix[j]))
        return rows

    def with_papers(self, question: str, pmids: tuple[str, ...]) -> list[tuple[str, str, int, Any, Any]]:
        """The question with these papers' conclusions, as `pairs` gives them (labelled 0)."""
        import numpy as np

        vector = np.asarray(self.embedder.embed_many([question])[0])
        return [(question, self.text[p], 0, vector, self.matrix[self.pmids.index(p)]) for p in pmids]


def _question_sets() -> dict[str, list[tuple[str, str | None]]]:
    """The dev questions (even: learned, odd: scored), the plain-language tuning questions about abstracts, and
    the generated tuning questions (no paper of their own), each with its own paper's PMID."""
    dev = json.loads((DATASETS / "pubmedqa_dev_questions.json").read_text(encoding="utf-8"))
    asked = [(v["QUESTION"], pmid) for pmid, v in dev.items()]
    plain = json.loads((DATASETS / "plain_language_questions.json").read_text(encoding="utf-8"))["questions"]
    generated = json.loads((DATASETS / "unanswerable_generated.json").read_text(encoding="utf-8"))["questions"]
    return {"dev even": asked[::2], "dev odd": asked[1::2],
            "plain tuning (abstracts)": [(q["question"], q["gold_paper"].removeprefix("PMID:")) for q in plain
                                         if q["set"] == "plain_tuning" and q["gold_paper"].startswith("PMID:")],
            "generated tuning": [(q["question"], None) for q in generated if q["set"].startswith("generated_tuning")]}


METFORMIN = ("Does metformin reduce cardiovascular events in type 2 diabetes?", ("15125825", "22720085"))


def _flag_row(name: str, label: str, scores: Any, truth: Any, metformin: Any, threshold: float) -> str:
    import numpy as np
    from sklearn.metrics import roc_auc_score

    return (f"| {name} | {label} | {len(truth)} | {roc_auc_score(truth, scores):.3f} | "
            f"{np.mean(scores[truth == 1] < threshold):.1%} | {np.mean(scores[truth == 0] < threshold):.1%} | "
            + ", ".join(f"{m:.2f}" for m in metformin) + f" (flagged below {threshold:.2f}) |")


_FLAG_HEADER = ["| features | set | pairs | AUC | own conclusion flagged | closest others flagged | metformin's two |",
                "|---|---|---:|---:|---:|---:|---|"]


def scope_trial() -> str:
    """Pairs (question, a paper's conclusion) from the PubMedQA dev questions: its own paper's conclusion tests
    it, the two closest other conclusions of the 1,000 abstracts do not. Learned on the even questions; scored
    on the odd ones and on the plain-language tuning questions about abstracts, at the threshold flagging 2% of
    the learned positives; and the metformin question of the issue with the two conclusions its answer quotes."""
    import numpy as np

    index, sets = _Conclusions(), _question_sets()

    def features(rows: list[tuple[str, str, int, Any, Any]]) -> tuple[Any, Any]:
        return (np.array([pair_features(q, c) + [shared_words(question, text)] for question, text, _, q, c in rows]),
                np.array([label for *_, label, _, _ in rows]))

    learned, labels = features(index.pairs(sets["dev even"]))
    quoted, _ = features(index.with_papers(*METFORMIN))
    lines = list(_FLAG_HEADER)
    last = learned.shape[1] - 1
    for name, columns in (("cosine", [0]), ("cosine and shared words", [0, last]), ("pair", slice(0, last)),
                          ("pair and shared words", slice(None))):
        model = _logistic(0.1).fit(learned[:, columns], labels)
        threshold = float(np.quantile(model.predict_proba(learned[:, columns])[labels == 1, 1], 0.02))
        metformin = model.predict_proba(quoted[:, columns])[:, 1]
        for label in ("dev odd", "plain tuning (abstracts)"):
            rows, truth = features(index.pairs(sets[label]))
            said = model.predict_proba(rows[:, columns])[:, 1]
            lines.append(_flag_row(name, label, said, truth, metformin, threshold))
    return "\n".join(lines)


def cross_trial(epochs: int = 2) -> str:
    """A cross-encoder (question and conclusion read together) fine-tuned here from MiniLM's weights with a new
    scoring head: learned from the dev even questions and the plain-language tuning questions (own conclusion 1,
    two closest others 0) and the generated tuning questions (their two closest conclusions 0); scored as
    `scope_trial`. About 2.5 minutes an epoch on 2 cores."""
    import random

    import numpy as np
    import torch
    from huggingface_hub import snapshot_download
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    random.seed(0)
    index, sets = _Conclusions(), _question_sets()
    learned = [(q, t, label) for name in ("dev even", "plain tuning (abstracts)", "generated tuning")
               for q, t, label, _, _ in index.pairs(sets[name])]
    folder = snapshot_download(MINILM, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1)

    def encoded(rows: list[tuple[str, str, int]]) -> Any:
        return tokenizer([r[0] for r in rows], [r[1] for r in rows], truncation=True, max_length=192, padding=True,
                         return_tensors="pt")

    def scores(rows: list[tuple[str, str, int]], batch: int = 64) -> Any:
        model.eval()
        with torch.no_grad():
            return np.concatenate([model(**encoded(rows[i:i + batch])).logits.squeeze(-1).numpy()
                                   for i in range(0, len(rows), batch)])

    positives = sum(r[2] for r in learned)
    loss = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([(len(learned) - positives) / positives]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-5, weight_decay=0.01)
    steps = epochs * math.ceil(len(learned) / 16)
    # a linear warm-up over the first tenth of the steps, then a linear decay to 0
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * (steps - s) / steps)
    for epoch in range(epochs):
        model.train()
        random.shuffle(learned)
        for i in range(0, len(learned), 16):
            batch = learned[i:i + 16]
            loss(model(**encoded(batch)).logits.squeeze(-1), torch.tensor([float(r[2]) for r in batch])).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
        print(f"  epoch {epoch + 1} of {epochs}", flush=True)
    threshold = float(np.quantile(scores([r for r in learned if r[2] == 1]), 0.02))
    metformin = scores([(q, t, label) for q, t, label, _, _ in index.with_papers(*METFORMIN)])
    rows = [(q, t, label) for q, t, label, _, _ in index.pairs(sets["dev odd"])]
    return "\n".join(_FLAG_HEADER + [_flag_row(f"cross-encoder, {epochs} epochs", "dev odd", scores(rows),
                                                np.array([r[2] for r in rows]), metformin, threshold)])


JUDGE_SYSTEM = ("You check whether a study's conclusion answers a question. A conclusion answers it only if it reports "
                "a result on exactly what the question asks about (the same treatment or exposure and the same "
                "outcome). Answer with one word: yes or no.")
JUDGE_USER = "Question: {question}\n\nConclusion: {conclusion}\n\nDoes this conclusion answer the question?"


def judge_trial(model: str, questions: int) -> str:
    """An answering model (`pmc-rag model list`) as the judge: the log-odds of its first word, "yes" against "no"
    (`YesNoJudge`), for the first `questions` dev odd questions (own conclusion and the closest other), the
    plain-language tuning questions (own conclusion) and the generated tuning questions (closest conclusion)."""
    import time

    import numpy as np
    from sklearn.metrics import roc_auc_score

    from pmc_rag.local_llm.yes_no import YesNoJudge

    judge = YesNoJudge(model)
    index, sets = _Conclusions(), _question_sets()
    rows = [(kind, q, t, label) for kind, others in (("dev odd", 1), ("plain tuning (abstracts)", 0),
                                                     ("generated tuning", 1))
            for q, t, label, _, _ in index.pairs(sets[kind][:questions], others=others)]
    rows += [("metformin", q, t, 0) for q, t, _, _, _ in index.with_papers(*METFORMIN)]
    started = time.perf_counter()
    margin = np.array([judge.log_odds(JUDGE_SYSTEM, JUDGE_USER.format(question=q, conclusion=t))
                       for _, q, t, _ in rows])
    judge.close()
    seconds = (time.perf_counter() - started) / len(rows)
    truth = np.array([r[3] for r in rows])
    judged = np.array([r[0] != "metformin" for r in rows])
    threshold = float(np.quantile(margin[judged & (truth == 1)], 0.05))
    lines = [f"{model}: {seconds:.2f} s a pair; AUC {roc_auc_score(truth[judged], margin[judged]):.3f}; "
             f"flagged below {threshold:.2f} (5% of the own conclusions)", "",
             "| pairs | conclusion | n | mean log-odds of yes | flagged |", "|---|---|---:|---:|---:|"]
    for kind in ("dev odd", "plain tuning (abstracts)", "generated tuning", "metformin"):
        for label, what in ((1, "own"), (0, "closest other" if kind != "metformin" else "the two quoted")):
            part = margin[[r[0] == kind and r[3] == label for r in rows]]
            if len(part):
                lines.append(f"| {kind} | {what} | {len(part)} | {part.mean():.2f} | {np.mean(part < threshold):.0%} |")
    return "\n".join(lines)


FINDINGS_SYSTEM = ("You check whether a study's findings answer a question. Findings answer it only if they report a "
                   "result on exactly what the question asks about (the same treatment or exposure and the same "
                   "outcome). Answer with one word: yes or no.")
FINDINGS_USER = "Question: {question}\n\nFindings: {findings}\n\nDo these findings answer the question?"
LOG_ODDS = (0.0, 0.5, 1.0, 1.5)


def second_chance_trial(model: str, generated: int = 120) -> str:
    """The model as a second chance for the questions `rag.yml` turns away with related findings: how many of
    each tuning set it would let through, per log-odds threshold, reading the question and the findings shown."""
    import re

    from pmc_rag.answering.service import AnswerService
    from pmc_rag.database import ensure_database
    from pmc_rag.evaluation.gate_learning import question_sets
    from pmc_rag.local_llm.yes_no import YesNoJudge
    from pmc_rag.pipelines import load_declared_pipeline
    from pmc_rag.serving.access import NOT_UPLOADED

    ensure_database()
    service = AnswerService(load_declared_pipeline("rag"), name="second-chance")
    judge, sets = YesNoJudge(model), question_sets()
    chosen = {"plain_tuning": sets["plain_tuning"], "vague_dev": sets["vague_dev"],
              "generated_tuning": sets["generated_tuning"][:generated],
              "unanswerable_tuning": sets["unanswerable_tuning"]}
    lines = ["| set | questions | turned away with related findings | "
             + " | ".join(f"let through from log-odds {t}" for t in LOG_ODDS) + " |",
             "|---|---:|---:|" + "---:|" * len(LOG_ODDS)]
    for name, questions in chosen.items():
        said = []
        for question in questions:
            answer = service.answer(question, access=NOT_UPLOADED)
            if answer.flags.get("related_findings"):
                findings = re.sub(r"\s*\[\d+\]", "", answer.answer.split("which may not answer it:", 1)[-1]).strip()
                said.append(judge.log_odds(FINDINGS_SYSTEM, FINDINGS_USER.format(question=question, findings=findings)))
        lines.append(f"| {name} | {len(questions)} | {len(said)} | "
                     + " | ".join(str(sum(x >= t for x in said)) for t in LOG_ODDS) + " |")
        print(f"  {name}: {len(questions)} questions", flush=True)
    judge.close()
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trial", choices=("gate", "findings", "scope", "cross", "judge", "second-chance"))
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct",
                        help="judge: an installed model of `pmc-rag model list`")
    parser.add_argument("--questions", type=int, default=30, help="judge: questions of each set")
    parser.add_argument("--held", action="store_true", help="also score the held-aside sets (counts only)")
    args = parser.parse_args(argv)
    from pmc_rag.environment import configure_environment

    configure_environment()
    print({"gate": lambda: gate_trial(args.held), "findings": lambda: findings_trial(args.held),
           "scope": scope_trial, "cross": cross_trial,
           "judge": lambda: judge_trial(args.model, args.questions),
           "second-chance": lambda: second_chance_trial(args.model)}[args.trial]())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
