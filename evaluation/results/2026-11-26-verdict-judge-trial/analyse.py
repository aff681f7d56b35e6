"""Accuracy of the judge's verdicts against the gold labels: with a yes/no bias, on its confident subset, and where it
agrees with the negation rule.

    python evaluation/results/2026-11-26-verdict-judge-trial/analyse.py evaluation/results/2026-11-26-verdict-judge-trial/llm_judge_dev_0_250.json
"""
import json, sys, re
r = json.load(open(sys.argv[1]))
d = json.load(open('evaluation/datasets/pubmedqa_dev_questions.json'))
NEG = re.compile(r"\b(not|no|neither|nor|failed to|fail to|cannot|lack of|unrelated|independent of|insufficient|similar|comparable)\b", re.I)
n=len(r); ay=sum(x['gold']=='yes' for x in r)/n
print('n',n,'always-yes',round(ay,3))
# argmax yes/no only
acc=sum((('yes' if x['yes']>=x['no'] else 'no')==x['gold']) for x in r)/n
print('argmax yes/no acc',round(acc,3))
for b in [-2,-1,-0.5,0,0.5,1,2]:
    acc=sum((('yes' if x['yes']-x['no']>=b else 'no')==x['gold']) for x in r)/n
    print('bias',b,'acc',round(acc,3))
# confident subsets
for m in [0,1,2,3,4]:
    shown=[x for x in r if abs(x['yes']-x['no'])>=m]
    wrong=sum((('yes' if x['yes']>x['no'] else 'no')!=x['gold']) for x in shown)
    print('margin',m,'shown',len(shown),'wrong',wrong, 'wrong/all %.3f'%(wrong/n))
# combine with rule
for m in [0,1,2]:
    shown=[];wrong=0
    for x in r:
        lab='yes' if x['yes']>x['no'] else 'no'
        rl='no' if NEG.search(d[x['pmid']]['LONG_ANSWER']) else 'yes'
        if lab==rl and abs(x['yes']-x['no'])>=m:
            shown.append(x); wrong+= lab!=x['gold']
    print('agree+margin',m,'shown',len(shown),'wrong',wrong,'right',len(shown)-wrong)
