"""Trial: the 1.5B's second chance for questions the gate turns away with related findings, with worked examples
(few-shot) against the zero-shot prompt of 2026-11-29 (sentence_pairs second-chance). Tuning sets only."""
import json, re, sys, time
import numpy as np
sys.path.insert(0, "/work/main")
from evaluation.sentence_pairs import FINDINGS_SYSTEM, FINDINGS_USER
from pmc_rag.answering.service import AnswerService
from pmc_rag.database import ensure_database
from pmc_rag.evaluation.gate_learning import question_sets
from pmc_rag.pipelines import load_declared_pipeline
from pmc_rag.serving.access import NOT_UPLOADED
from pmc_rag.local_llm.server import load_llama
from pmc_rag.models import EMBEDDED_LLMS

# Worked examples, written for this trial: "yes" are PubMedQA dev tuning questions (even half) reworded in lay
# words beside sentences quoted from their own conclusions; "no" are generated tuning questions beyond the 120 scored, with the related
# findings the gate showed (gathered below).
YES = [("Is it still dangerous to get Fournier's gangrene?",
        "Despite extensive therapeutic efforts, Fournier's gangrene remains a surgical emergency and early "
        "recognition with prompt radical debridement is the mainstays of management."),
       ("Do people with schizophrenia misjudge motion because of how their eyes track things?",
        "The observed abnormality appears to be a consequence of impairment in generating or integrating the "
        "feedback information from eye movements."),
       ("does laser eye surgery heal differently with surface ablation versus a thin flap?",
        "Ophthalmic pathology and basic science research show that SBK and ASA are improvements in excimer laser "
        "keratorefractive surgery compared to conventional LASIK or PRK, particularly with regard to maintaining "
        "corneal biomechanics.")]
ensure_database()
service = AnswerService(load_declared_pipeline("rag"), name="second-chance-fs")
sets = question_sets()
def related(question):
    a = service.answer(question, access=NOT_UPLOADED)
    if a.flags.get("related_findings"):
        return re.sub(r"\s*\[\d+\]", "", a.answer.split("which may not answer it:", 1)[-1]).strip()
    return None
no_examples = []
for q in sets["generated_tuning"][120:]:
    f = related(q)
    if f:
        no_examples.append((q, f))
    if len(no_examples) == 3:
        break
chosen = {"plain_tuning": sets["plain_tuning"], "vague_dev": sets["vague_dev"],
          "generated_tuning": sets["generated_tuning"][:120], "unanswerable_tuning": sets["unanswerable_tuning"]}
items = []
for name, qs in chosen.items():
    for q in qs:
        f = related(q)
        if f:
            items.append((name, q, f))
print(len(items), "turned away with related findings", flush=True)
llm = load_llama(str(EMBEDDED_LLMS["qwen2.5-coder-1.5b-instruct"].path), 4096)
T = {w: llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in ("yes", "Yes", "no", "No")}
def turn(role, text):
    return f"<|im_start|>{role}\n{text}<|im_end|>\n"
shots = [(q, f, "yes") for q, f in YES] + [(q, f, "no") for q, f in no_examples]
order = [0, 3, 1, 4, 2, 5]
fewshot = turn("system", FINDINGS_SYSTEM) + "".join(
    turn("user", FINDINGS_USER.format(question=shots[i][0], findings=shots[i][1])) + turn("assistant", shots[i][2])
    for i in order)
zero = turn("system", FINDINGS_SYSTEM)
out = {"no_examples": no_examples, "items": [list(x) for x in items], "scores": {}}
t0 = time.time()
for name, prefix in (("few", fewshot), ("zero", zero)):
    llm.reset(); p = llm.tokenize(prefix.encode(), add_bos=False, special=True); llm.eval(p)
    said = []
    for _, q, f in items:
        llm.n_tokens = len(p)
        llm.eval(llm.tokenize((turn("user", FINDINGS_USER.format(question=q, findings=f[:1500]))
                               + "<|im_start|>assistant\n").encode(), add_bos=False, special=True))
        l = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
        said.append(float(np.logaddexp(l[T["yes"]], l[T["Yes"]]) - np.logaddexp(l[T["no"]], l[T["No"]])))
    out["scores"][name] = said
    print(name, f"{time.time()-t0:.0f} s", flush=True)
llm.close()
json.dump(out, open("/tmp/second_chance_fs.json", "w"), indent=0)
ANS = {"plain_tuning", "vague_dev"}
for name, said in out["scores"].items():
    said = np.array(said); pos = said[[n in ANS for n, _, _ in items]]; neg = said[[n not in ANS for n, _, _ in items]]
    auc = float(((pos[:, None] > neg[None]) + 0.5 * (pos[:, None] == neg[None])).mean())
    print(f"{name}: AUC {auc:.3f} ({len(pos)} answerable, {len(neg)} unanswerable)")
    for t in (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0):
        print(f"   from {t}: " + ", ".join(f"{s} {sum(1 for (n, _, _), x in zip(items, said) if n == s and x >= t)}"
                                         for s in chosen))
