"""How many cited model sentences shown in the recorded runs of 2026-11-26 and 27 say "not" or "no" while no
sentence of their paper's abstract sharing 35% of their words does (the lexical judge's rule of 2026-11-27). Each
paper's whole abstract stands for the excerpts. A trial script, run from the repository root:

    .venv/bin/python evaluation/results/2026-11-27-follow-up-asks/negation_impact.py
"""
import glob
import json
import re
import sys
sys.path.insert(0, '.')
from pmc_rag.components.citations import content_words
from pmc_rag.components.claim_signals import is_negated, without_verdict
from pmc_rag.components.section_chunker import split_sentences
corpus = {f"PMID:{json.loads(l)['pmid']}": json.loads(l) for l in open('corpus/pubmedqa/corpus.jsonl')}
hits = total = neg = 0
for f in sorted(glob.glob('evaluation/results/2026-11-2[67]*/**/results.json', recursive=True)):
    try: d = json.load(open(f))
    except Exception: continue
    if 'variants' not in d: continue
    for v in d['variants'].values():
      for rec in v.get('records', []):
        if 'flags' not in rec: continue
        flags = rec['flags'] if isinstance(rec['flags'], dict) else eval(rec['flags'])
        if flags.get('extractive_fallback') or flags.get('not_answered'):
            continue
        refs = rec['references'] if isinstance(rec['references'], list) else eval(rec['references'])
        for sent in re.split(r'(?<=[.!?])\s+', rec['answer']):
            m = re.findall(r'\[(\d+)\]', sent)
            if not m: continue
            claim = without_verdict(re.sub(r'\s*\[\d+\]', '', sent))
            total += 1
            if not is_negated(claim): continue
            neg += 1
            paper = refs[int(m[0]) - 1] if int(m[0]) <= len(refs) else None
            if paper not in corpus: continue
            text = " ".join(s['text'] for s in corpus[paper]['sections'])
            words = content_words(claim)
            ok = any(is_negated(s) and len(words & content_words(s)) / max(1, len(words)) >= 0.35
                     for s in split_sentences(text))
            if not ok:
                hits += 1
                print(f"HIT | {claim} [{paper}]")
print(total, "cited model sentences shown (all recorded runs, may repeat);", neg, "negated;", hits,
      "without a negated source sentence sharing 35% of its words")
