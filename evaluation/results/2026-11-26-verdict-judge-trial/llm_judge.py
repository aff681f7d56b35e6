"""The embedded 0.5B model as a verdict judge over (question, gold conclusion): first-token log-probabilities of
yes/no/maybe for dev questions LO..HI. Run from the repository root:

    .venv/bin/python evaluation/results/2026-11-26-verdict-judge-trial/llm_judge.py 0 250
"""
import json, sys, time
from pmc_rag.local_llm.server import load_llama
import numpy as np
d = json.load(open('evaluation/datasets/pubmedqa_dev_questions.json'))
items = list(d.items())
lo, hi = int(sys.argv[1]), int(sys.argv[2])
llm = load_llama('.pmc-rag/models/qwen2.5-coder-0.5b-instruct-q4_k_m.as-f16.gguf', 1024)
ids = {w: llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in ('yes', 'no', 'maybe', 'Yes', 'No', 'Maybe')}
print(ids, file=sys.stderr)
out = []
t0 = time.time()
for i, (pmid, v) in enumerate(items[lo:hi]):
    prompt = ("<|im_start|>system\nYou judge what a study concluded. Answer with one word: yes, no or maybe.<|im_end|>\n"
              f"<|im_start|>user\nThe study's conclusion: {v['LONG_ANSWER']}\n\nQuestion: {v['QUESTION']}\n"
              "According to this conclusion, is the answer yes, no or maybe?<|im_end|>\n<|im_start|>assistant\n")
    toks = llm.tokenize(prompt.encode(), add_bos=False, special=True)
    llm.reset(); llm.eval(toks)
    logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()
    lp = logits - (np.log(np.exp(logits - logits.max()).sum()) + logits.max())
    s = {w: float(np.logaddexp(lp[ids[w]], lp[ids[w.capitalize()]])) for w in ('yes', 'no', 'maybe')}
    out.append({'pmid': pmid, 'gold': v['final_decision'], **s})
print(f'{(time.time()-t0)/(hi-lo):.2f} s each', file=sys.stderr)
json.dump(out, open(f'evaluation/results/2026-11-26-verdict-judge-trial/llm_judge_dev_{lo}_{hi}.json', 'w'))
