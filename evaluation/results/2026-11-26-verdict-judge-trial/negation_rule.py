"""A negation-word rule over the gold conclusion: "no" if it has a negation, else "yes".

    python evaluation/results/2026-11-26-verdict-judge-trial/negation_rule.py 0 250
"""
import json, re, sys
from collections import Counter
d = json.load(open('evaluation/datasets/pubmedqa_dev_questions.json'))
items = list(d.items())
NEG = re.compile(r"\b(not|no|neither|nor|failed to|fail to|did not|does not|do not|cannot|lack of|without any|unrelated|independent of|insufficient|similar|comparable|no longer)\b", re.I)
HEDGE = re.compile(r"\b(may|might|could|possibly|unclear|further (studies|research|trials)|larger|needed|warranted|remains? (unclear|uncertain|to be)|inconclusive|trend)\b", re.I)
def rule(c):
    neg = len(NEG.findall(c)); hedge = len(HEDGE.findall(c))
    if neg == 0: return 'yes'
    return 'no'
lo, hi = int(sys.argv[1]), int(sys.argv[2])
conf = Counter()
for pmid, v in items[lo:hi]:
    conf[(v['final_decision'], rule(v['LONG_ANSWER']))] += 1
n = hi - lo
acc = sum(c for (g, p), c in conf.items() if g == p) / n
print('acc', round(acc, 3), 'always-yes', round(sum(c for (g, p), c in conf.items() if g == 'yes') / n, 3))
for p in ('yes', 'no', 'maybe'):
    tot = sum(c for (g, q), c in conf.items() if q == p)
    print(p, 'predicted', tot, 'right', conf[(p, p)], {g: conf[(g, p)] for g in ('yes', 'no', 'maybe')})
