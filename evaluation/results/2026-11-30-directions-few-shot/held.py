"""Held-aside count of the chosen variant (few_yn, log-odds 2.0), once; zero-shot beside it in the same run."""
import json, sys, time
import numpy as np
sys.path.insert(0, "/work/main")
from evaluation.directions import labelled, MODEL_SYSTEM, MODEL_USER
from pmc_rag.local_llm.server import load_llama
from pmc_rag.models import EMBEDDED_LLMS

tuning, held = labelled()
SHOTS = [110, 228, 81, 115, 241, 106]   # the tuning study's few_yn examples, in its order
corpus = {}
for line in open("/work/main/corpus/pubmedqa/corpus.jsonl"):
    r = json.loads(line); corpus[r["pmid"]] = r["sections"]
def conclusion(pmid):
    secs = corpus[pmid]
    found = [s["text"] for s in secs if s["label"].upper().startswith("CONCLUSION")]
    return found[-1] if found else secs[-1]["text"]
LABEL = {"supports": "yes", "does not support": "no", "unclear": "maybe"}
sealed = [{"question": q["question"], "conclusion": conclusion(q["pmid"]), "verdict": LABEL[q["direction"]]}
          for q in json.load(open("/work/main/evaluation/datasets/directions_held_aside.json"))["questions"]]
llm = load_llama(str(EMBEDDED_LLMS["qwen2.5-coder-1.5b-instruct"].path), 4096)
T = {w: llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in ("yes", "Yes", "no", "No")}
def prefix(shots):
    text = f"<|im_start|>system\n{MODEL_SYSTEM}<|im_end|>\n"
    for i in shots:
        r = tuning[i]
        text += (f"<|im_start|>user\n{MODEL_USER.format(question=r['question'], conclusion=r['conclusion'])}<|im_end|>\n"
                 f"<|im_start|>assistant\n{r['verdict']}<|im_end|>\n")
    return text
out = {}; t0 = time.time()
for name, shots in (("few_yn", SHOTS), ("zero", [])):
    llm.reset(); ptoks = llm.tokenize(prefix(shots).encode(), add_bos=False, special=True); llm.eval(ptoks)
    for part, rows in (("held_half", held), ("sealed_24", sealed)):
        said = []
        for r in rows:
            llm.n_tokens = len(ptoks)
            llm.eval(llm.tokenize(f"<|im_start|>user\n{MODEL_USER.format(question=r['question'], conclusion=r['conclusion'])}<|im_end|>\n<|im_start|>assistant\n".encode(), add_bos=False, special=True))
            l = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
            said.append(float(np.logaddexp(l[T["yes"]], l[T["Yes"]]) - np.logaddexp(l[T["no"]], l[T["No"]])))
        out[(name, part)] = said
        print(name, part, f"{time.time()-t0:.0f} s", flush=True)
llm.close()
json.dump({f"{k[0]}|{k[1]}": v for k, v in out.items()}, open("/tmp/dirs/held.json", "w"))
for part, rows in (("held_half", held), ("sealed_24", sealed)):
    gold = np.array([r["verdict"] for r in rows])
    for name, t in (("few_yn", 2.0), ("zero", 1.5)):
        lo = np.array(out[(name, part)]); said = np.where(lo >= 0, "yes", "no"); shown = np.abs(lo) >= t
        p = np.mean(said[shown] == gold[shown]) if shown.any() else float("nan")
        print(f"| {part} | {name} from {t} | {np.mean(said == gold):.1%} | {shown.mean():.0%} ({shown.sum()}) | {p:.1%} ({int((said[shown] == gold[shown]).sum())} right) |")
