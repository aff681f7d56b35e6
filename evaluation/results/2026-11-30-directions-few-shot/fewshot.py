"""Trial: the 1.5B's direction with worked examples (few-shot), against the shipped zero-shot prompt, tuning half only."""
import json, random, sys, time
import numpy as np
sys.path.insert(0, "/work/main")
from evaluation.directions import labelled, MODEL_SYSTEM, MODEL_USER
from pmc_rag.local_llm.yes_no import chatml
from pmc_rag.local_llm.server import load_llama
from pmc_rag.models import EMBEDDED_LLMS

PART = sys.argv[1] if len(sys.argv) > 1 else "tuning"
tuning, held = labelled()
rng = random.Random(61)
by = {v: [i for i, r in enumerate(tuning) if r["verdict"] == v] for v in ("yes", "no", "maybe")}
shots_yn = rng.sample(by["yes"], 3) + rng.sample(by["no"], 3)
shots_3 = shots_yn + rng.sample(by["maybe"], 3)
rng.shuffle(shots_yn); rng.shuffle(shots_3)
exclude = set(shots_3)
rows = [r for i, r in enumerate(tuning) if i not in exclude] if PART == "tuning" else held
llm = load_llama(str(EMBEDDED_LLMS["qwen2.5-coder-1.5b-instruct"].path), 4096)
tok = lambda w: llm.tokenize(w.encode(), add_bos=False, special=False)[0]
T = {w: tok(w) for w in ("yes", "Yes", "no", "No", "maybe", "Maybe")}

SYS3 = ("You read a study's conclusion and say what it answers to a question. Answer with one word: yes, no or "
        "maybe (maybe: the conclusion is mixed, uncertain, or does not settle the question).")
USER3 = ("Question: {question}\n\nThe study's conclusion: {conclusion}\n\nAccording to this conclusion, is the "
         "answer to the question yes, no or maybe?")

def fewshot(system, user_t, shots):
    text = f"<|im_start|>system\n{system}<|im_end|>\n"
    for i in shots:
        r = tuning[i]
        text += (f"<|im_start|>user\n{user_t.format(question=r['question'], conclusion=r['conclusion'])}<|im_end|>\n"
                 f"<|im_start|>assistant\n{r['verdict']}<|im_end|>\n")
    return text

def logits_after(prefix_tokens, suffix):
    """Logits of the next token after prefix+suffix, reusing the prefix's cache."""
    llm.n_tokens = len(prefix_tokens) if prefix_tokens else 0
    if llm.n_tokens == 0 and prefix_tokens:
        pass
    llm.eval(llm.tokenize(suffix.encode(), add_bos=False, special=True))
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()

def prime(prefix):
    llm.reset()
    toks = llm.tokenize(prefix.encode(), add_bos=False, special=True)
    llm.eval(toks)
    return toks

def lo(l, a, b):
    return float(np.logaddexp(l[T[a]], l[T[a.capitalize()]]) - np.logaddexp(l[T[b]], l[T[b.capitalize()]]))

out = []
t0 = time.time()
variants = {
    "zero": (f"<|im_start|>system\n{MODEL_SYSTEM}<|im_end|>\n", MODEL_USER),
    "few_yn": (fewshot(MODEL_SYSTEM, MODEL_USER, shots_yn), MODEL_USER),
    "few_3": (fewshot(SYS3, USER3, shots_3), USER3),
}
scores = {k: [] for k in variants}
for name, (prefix, user_t) in variants.items():
    ptoks = prime(prefix)
    for n, r in enumerate(rows):
        l = logits_after(ptoks, f"<|im_start|>user\n{user_t.format(**r)}<|im_end|>\n<|im_start|>assistant\n")
        y = float(np.logaddexp(l[T["yes"]], l[T["Yes"]])); no = float(np.logaddexp(l[T["no"]], l[T["No"]]))
        m = float(np.logaddexp(l[T["maybe"]], l[T["Maybe"]]))
        scores[name].append((y, no, m))
        if (n + 1) % 50 == 0: print(name, n + 1, f"{time.time()-t0:.0f} s", flush=True)
json.dump({"part": PART, "shots_yn": shots_yn, "shots_3": shots_3, "gold": [r["verdict"] for r in rows],
           "scores": scores}, open(f"/tmp/dirs/{PART}.json", "w"))
llm.close()
print("done", f"{time.time()-t0:.0f} s")
