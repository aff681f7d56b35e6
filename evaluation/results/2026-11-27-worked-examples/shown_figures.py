"""The gold-based figures of what a reader is shown, recomputed for recorded runs with the current evaluation code
(`evaluation/trust.py`, which gained "model answers stating the findings" during this trial). From the repository
root:

    .venv/bin/python evaluation/results/2026-11-27-worked-examples/shown_figures.py \
        evaluation/results/2026-11-27-worked-examples/*/results.json
"""
import json, sys
sys.path.insert(0, '.')
from pmc_rag.evaluation.questions import load_questions
from pmc_rag.evaluation.trust import summarise_trust, trust_scores
questions = {q.id: q for q in load_questions('evaluation/datasets/pubmedqa_dev_questions.json')}
for path in sys.argv[1:]:
    d = json.load(open(path))
    for name, v in d['variants'].items():
        recs = [r for r in v['records'] if 'answer' in r]
        t = summarise_trust([{"trust": trust_scores(r, questions[r['id']])} for r in recs])
        print(f"{path} {name}: n={t['questions']} verdicts {t['verdicts_shown']} wrong {t['wrong_verdicts_shown']} "
              f"quotation share {t['quotation_share']:.3f} quotations quoting findings "
              f"{t['quotation_answers_quoting_gold_findings']}/{t['quotation_answers']}, model answers stating "
              f"findings {t['model_answers_stating_gold_findings']}/{t['model_answers']}, "
              f"not answered {t['not_answered']}")
