"""Each tuning set judged by a crisis check trained without it (evaluation/crisis.py run_left_out, copied), with
the classifier probability and the nearest labelled messages share of crises logged per message: /tmp/crisis_knn_tuning.json."""
import json
from collections import defaultdict
from typing import Any
from pmc_rag.environment import configure_environment
configure_environment()
from pmc_rag.evaluation.crisis import *
from pmc_rag.evaluation.crisis import learned_by_the_classifier, PEOPLES_QUESTIONS, peoples_questions, SHIPPED_KIND, READ_IN_ENGLISH_KIND
from pmc_rag.answering.crisis import check_crisis, check_crisis_read_in_english, normalise
from pmc_rag.answering.crisis_exemplars import HELD_ASIDE_SETS, ExemplarLayer, labelled_messages, research_exemplars
from pmc_rag.evaluation.crisis_translations import translate_all
LOG=[]
import numpy as np
def KNN(layer, text, en):
    out=[]
    for t in [text]+([en] if en and en!=text else []):
        sims = layer._vectors @ layer.meaning(t)
        nearest = np.argsort(-sims)[: layer.k]
        w = np.clip(sims[nearest], 1e-6, None)
        out.append(float((w * layer._crisis[nearest]).sum() / w.sum()))
    return max(out)

def run_left_out(layer: ExemplarLayer, translations: dict[str, str] | None = None) -> dict[str, dict[str, int]]:
    """Per tuning set and classifier kind (`words`, `words + meaning`, ...): how its crises and research messages
    were answered (`emergency`, `line`, `none`) by a check whose classifier and exemplars never saw that set; with
    `translations`, the shipped kind also reading each translated message in English (`READ_IN_ENGLISH_KIND`)."""
    import tempfile
    from pathlib import Path

    import numpy as np

    import pmc_rag.answering.crisis as crisis
    from pmc_rag.answering.crisis_classifier import CrisisClassifier, train_crisis_classifier
    rows = [m for m in labelled_messages() if m["set"] not in HELD_ASIDE_SETS] + peoples_questions()
    always = research_exemplars()
    # each text embedded once, not once per fold: normalised as the classifier reads it, as typed for the exemplars
    meanings = {text: layer.meaning(text) for row in rows + always
                for text in (normalise(row["text"]), row["text"])}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    shipped, english_only = crisis.shipped_crisis_classifier, crisis.MEANING_IN_ENGLISH_ONLY
    try:
        for left_out in sorted({r["set"] for r in rows}):
            kept = [r for r in rows if r["set"] != left_out] + always
            learned = [r for r in kept if learned_by_the_classifier(r)]
            texts = [normalise(r["text"]) for r in learned]
            exemplars = [r for r in kept if r.get("set") not in PEOPLES_QUESTIONS.values()]
            fold_layer = ExemplarLayer(layer.meaning_of_each, [r["text"] for r in exemplars],
                                       [r["label"] == "crisis" for r in exemplars],
                                       [r.get("category") for r in exemplars], model=layer.model,
                                       vectors=np.vstack([meanings[r["text"]] for r in exemplars]))
            for kind, with_meaning in (("words", False), ("words + meaning", True), (SHIPPED_KIND, True)):
                crisis.MEANING_IN_ENGLISH_ONLY = kind == SHIPPED_KIND
                path = train_crisis_classifier(
                    texts, [r["label"] == "crisis" for r in learned], path=Path(tempfile.mkdtemp()) / "c.json",
                    meanings=np.vstack([meanings[t] for t in texts]) if with_meaning else None,
                    meaning_model=layer.model)
                classifier = CrisisClassifier(path)
                crisis.shipped_crisis_classifier = lambda c=classifier: c
                for row in rows:
                    if row["set"] != left_out:
                        continue
                    label = "crisis" if row["label"] == "crisis" else "research"
                    decisions = {kind: check_crisis(row["text"], exemplars=fold_layer)}
                    if translations is not None and kind == SHIPPED_KIND:
                        decisions[READ_IN_ENGLISH_KIND] = check_crisis_read_in_english(
                            row["text"], translations.get(row["text"]), exemplars=fold_layer)
                    for name, decision in decisions.items():
                        got = "emergency" if decision.crisis else "line" if decision.possible else "none"
                        counts[f"{left_out} | {name}"][f"{label} {got}"] += 1
                        if name == READ_IN_ENGLISH_KIND:
                            cl = crisis.shipped_crisis_classifier()
                            def pr(t):
                                n = normalise(t)
                                m = fold_layer.meaning(n) if (not crisis.MEANING_IN_ENGLISH_ONLY or crisis._in_english(n)) else None
                                return cl.probability(n, m)
                            en = translations.get(row["text"])
                            LOG.append(dict(set=left_out,label=label,got=got,text=row["text"],reason=decision.reason,
                                p=pr(row["text"]), p_en=pr(en) if en and en != row["text"] else None,
                                alone=check_crisis(row["text"], exemplars=fold_layer).classifier_alone, knn=KNN(fold_layer, row['text'], en)))
    finally:
        crisis.shipped_crisis_classifier = shipped
        crisis.MEANING_IN_ENGLISH_ONLY = english_only
    return {key: dict(value) for key, value in counts.items()}



layer = ExemplarLayer.load()
tr = translate_all([m["text"] for m in labelled_messages()], progress=False)
run_left_out(layer, tr)
json.dump(LOG, open("/tmp/crisis_knn_tuning.json","w"), indent=1)
