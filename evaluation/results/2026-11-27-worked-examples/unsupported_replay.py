"""The distinct cited model sentences shown in recorded runs, each judged by the lexical judge against its paper's
whole abstract: how many are not "supported" (which the answer builder now leaves out). From the repository root:

    .venv/bin/python evaluation/results/2026-11-27-worked-examples/unsupported_replay.py 'GLOB'
"""
import glob, json, re, sys
sys.path.insert(0, '.')
from collections import Counter
from pmc_rag.components.lexical_support_judge import LexicalSupportJudge
corpus = {f"PMID:{json.loads(l)['pmid']}": json.loads(l) for l in open('corpus/pubmedqa/corpus.jsonl')}
judge = LexicalSupportJudge()
labels = Counter(); seen = set()
for f in sorted(glob.glob(sys.argv[1], recursive=True)):
    d = json.load(open(f))
    if 'variants' not in d: continue
    for name, v in d['variants'].items():
        for rec in v.get('records', []):
            flags = rec.get('flags') or {}
            if isinstance(flags, str): flags = eval(flags)
            if flags.get('extractive_fallback') or flags.get('not_answered'): continue
            refs = rec.get('references') or []
            if isinstance(refs, str): refs = eval(refs)
            for sent in re.split(r'(?<=[.!?])\s+', rec.get('answer') or ''):
                m = re.findall(r'\[(\d+)\]', sent)
                if not m: continue
                claim = re.sub(r'\s*\[\d+\]', '', sent)
                paper = refs[int(m[0]) - 1] if int(m[0]) <= len(refs) else None
                if paper not in corpus or (claim, paper) in seen: continue
                seen.add((claim, paper))
                text = " ".join(s['text'] for s in corpus[paper]['sections'])
                j = judge.run(claims=[claim], evidence=[text])['judgements'][0]
                labels[j['label']] += 1
                if j['label'] != 'supported':
                    print(f"{j['label'].upper()} {name} | {claim[:200]} [{paper}] {j['reason']}")
print(dict(labels))
