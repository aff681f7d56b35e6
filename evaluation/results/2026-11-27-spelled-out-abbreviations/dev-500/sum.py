"""Sums the five dev-500 runs of this folder into the figures of its README (run from the repository root)."""
import json, glob
keys = ["questions", "verdicts_shown", "wrong_verdicts_shown", "uncited_sentences_shown", "questions_shown_as_claims",
        "not_answered", "quotation_answers", "quotation_answers_quoting_gold_findings"]
tot = {k: 0 for k in keys}; right = 0; gold_cited = []
for f in sorted(glob.glob('evaluation/results/2026-11-27-spelled-out-abbreviations/dev-500/*/results.json')):
    v = json.load(open(f))['variants']['rag']
    t = v['summary']['trust']
    for k in keys: tot[k] += t[k]
    for r in v['records']:
        right += bool(r.get('predicted_verdict') and r['predicted_verdict'] == r.get('gold_verdict'))
    print(f, {k: t[k] for k in keys})
print(tot)
q = tot['questions']
print(f"wrong {tot['wrong_verdicts_shown']/q:.3f} quotation share {tot['quotation_answers']/q:.3f} "
      f"quoting gold {tot['quotation_answers_quoting_gold_findings']}/{tot['quotation_answers']} "
      f"({tot['quotation_answers_quoting_gold_findings']/max(1,tot['quotation_answers']):.3f}) verdict acc {right/q:.3f}")
