"""How many distinct cited model sentences shown in recorded runs (default: those of 2026-11-26 and 27) the
lexical judge now calls contradicted through the negation-scope rule ("'not provide' on one side, said plainly on
the other"), each judged against its paper's whole abstract. From the repository root:

    .venv/bin/python evaluation/results/2026-11-27-worked-examples/negation_scope_replay.py ['GLOB']
"""
import glob, json, re, sys
sys.path.insert(0, '.')
from pmc_rag.components.claim_signals import without_verdict
from pmc_rag.components.lexical_support_judge import LexicalSupportJudge
corpus = {f"PMID:{json.loads(l)['pmid']}": json.loads(l) for l in open('corpus/pubmedqa/corpus.jsonl')}
judge = LexicalSupportJudge()
pattern = sys.argv[1] if len(sys.argv) > 1 else 'evaluation/results/2026-11-2[67]*/**/results.json'
seen, hits, total = set(), 0, 0
for f in sorted(glob.glob(pattern, recursive=True)):
    try: d = json.load(open(f))
    except Exception: continue
    if 'variants' not in d: continue
    for v in d['variants'].values():
        for rec in v.get('records', []):
            if 'flags' not in rec: continue
            flags = rec['flags'] if isinstance(rec['flags'], dict) else eval(rec['flags'])
            if flags.get('extractive_fallback') or flags.get('not_answered'): continue
            refs = rec['references'] if isinstance(rec['references'], list) else eval(rec['references'])
            for sent in re.split(r'(?<=[.!?])\s+', rec['answer']):
                m = re.findall(r'\[(\d+)\]', sent)
                if not m: continue
                claim = re.sub(r'\s*\[\d+\]', '', sent)
                paper = refs[int(m[0]) - 1] if int(m[0]) <= len(refs) else None
                if paper not in corpus or (claim, paper) in seen: continue
                seen.add((claim, paper)); total += 1
                text = " ".join(s['text'] for s in corpus[paper]['sections'])
                j = judge.run(claims=[claim], evidence=[text])['judgements'][0]
                if 'plainly' in j['reason']:
                    hits += 1
                    print(f"HIT | {claim} [{paper}]\n    {j['reason']} | {j['sentence'][:300]}\n")
print(total, "distinct cited model sentences shown;", hits, "now contradicted by the negation-scope rule")
