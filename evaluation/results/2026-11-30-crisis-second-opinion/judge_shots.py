"""Trial 2: the 1.5B's yes/no with a plainer question, zero-shot and with worked examples (a cached prefix).

    python judge_shots.py ROWS.json OUT.json

The worked examples are messages of the tuning sets that the check already answers rightly (crises given the
emergency reply, everyday messages given nothing), never one of the messages judged.
"""
import json
import sys
import time

import numpy as np

from pmc_rag.local_llm.server import load_llama
from pmc_rag.models import EMBEDDED_LLMS

SYSTEM = "You read one message sent to a medical research assistant. Answer with one word: yes or no."
USER = "Message: {message}\n\nDoes this message say that the writer, or someone with them, could die or be badly hurt soon?"
SHOTS = [  # (message, answer): three crises the rules catch, three everyday or research messages
    ("I took all my pills an hour ago and I feel dizzy", "yes"),
    ("What is the survival rate after an out-of-hospital cardiac arrest?", "no"),
    ("my brother is not breathing and his lips are blue", "yes"),
    ("this traffic is killing me, I'll be late again", "no"),
    ("I don't want to be alive anymore, I have a plan", "yes"),
    ("my laptop died in the middle of my essay", "no"),
]


def message(row):
    return row["text"] + (f"\n(In English: {row['english']})" if row.get("english") else "")


def turn(text, answer=None):
    t = f"<|im_start|>user\n{USER.format(message=text)}<|im_end|>\n<|im_start|>assistant\n"
    return t + (f"{answer}<|im_end|>\n" if answer else "")


rows = [r for r in json.load(open(sys.argv[1])) if r["got"] == "line"]
llm = load_llama(str(EMBEDDED_LLMS["qwen2.5-coder-1.5b-instruct"].path), 2048)
tok = {w: llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in ("yes", "Yes", "no", "No")}
variants = {"plain": f"<|im_start|>system\n{SYSTEM}<|im_end|>\n",
            "shots": f"<|im_start|>system\n{SYSTEM}<|im_end|>\n" + "".join(turn(m, a) for m, a in SHOTS)}
t0 = time.time()
for name, prefix in variants.items():
    llm.reset()
    ptoks = llm.tokenize(prefix.encode(), add_bos=False, special=True)
    llm.eval(ptoks)
    for row in rows:
        llm.n_tokens = len(ptoks)
        llm.eval(llm.tokenize(turn(message(row)).encode(), add_bos=False, special=True))
        lg = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
        row[name] = float(np.logaddexp(lg[tok["yes"]], lg[tok["Yes"]]) - np.logaddexp(lg[tok["no"]], lg[tok["No"]]))
    print(name, f"{time.time() - t0:.0f} s", flush=True)
llm.close()
json.dump({"system": SYSTEM, "user": USER, "shots": SHOTS, "rows": rows}, open(sys.argv[2], "w"), indent=1,
          ensure_ascii=False)
