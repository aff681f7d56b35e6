"""Lay questions written by the 1.5B from the conclusions of bundled abstracts no question set uses (a tuning set).

    python generate.py OUT.json
"""
import glob, json, sys, time
from pathlib import Path
from pmc_rag.local_llm.server import load_llama
from pmc_rag.models import EMBEDDED_LLMS

ROOT = Path(__file__).resolve().parents[3]
ASKERS = ["a patient", "a worried parent or relative", "a busy clinician", "a researcher from another field"]
# Worked examples from the plain tuning half (plain-024, -034, -047, -057): its conclusions and their askers' words.
EXAMPLES = [
    ("The low presence of HPV DNA in pterygia does not support the hypothesis that HPV is involved in the development "
     "of pterygia in Denmark.", "a patient", "can the HPV virus cause that growth on the eye called pterygium?"),
    ("Delay of surgery in immature AIS patients whose Cobb's angle exceed 40° initially and showing subsequent "
     "progression of the curve, of more than 10° can lead to an increase in the number of fused segments.",
     "a worried parent or relative",
     "my daughter has scoliosis and is still growing, if we wait for surgery will they have to fuse more of her spine?"),
    ("Nebulized heparin cannot be recommended for prophylaxis against VAP or to hasten recovery from pneumonia in "
     "patients receiving MV.", "a busy clinician", "nebulised heparin to prevent ventilator pneumonia in ICU, does it help?"),
    ("Our results suggest that people do not attach a simple fixed premium to \"safety-related\" interventions but "
     "that preferences depend more subtly on context.", "a researcher from another field",
     "Do people value treatments less when patients caused their own illness?"),
]
SYSTEM = ("You write the question a person would type into a search box, in their own everyday words, not the "
          "study's technical terms or abbreviations. Never mention the study. Write only the question.")
USER = "A study concluded: \"{conclusion}\"\nWrite the question {asker} would type that this answers."


def prompt(conclusion, asker):
    text = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
    for c, a, q in EXAMPLES:
        text += f"<|im_start|>user\n{USER.format(conclusion=c, asker=a)}<|im_end|>\n<|im_start|>assistant\n{q}<|im_end|>\n"
    return text + f"<|im_start|>user\n{USER.format(conclusion=conclusion, asker=asker)}<|im_end|>\n<|im_start|>assistant\n"


def used_papers():
    used = set()
    for f in glob.glob(str(ROOT / "evaluation/datasets/*.json")):
        try:
            data = json.load(open(f))
        except ValueError:
            continue
        rows = data["questions"] if isinstance(data, dict) and "questions" in data else data if isinstance(data, list) else []
        for q in rows:
            if isinstance(q, dict) and q.get("gold_paper"):
                used.add(str(q["gold_paper"]).replace("PMID:", ""))
    return used


def main(out):
    dev = set(json.load(open(ROOT / "evaluation/datasets/pubmedqa_dev_questions.json")))
    used = used_papers()
    papers = [json.loads(line) for line in open(ROOT / "corpus/pubmedqa/corpus.jsonl")]
    papers = [p for p in papers if p["pmid"] not in dev and p["pmid"] not in used]
    llm = load_llama(str(EMBEDDED_LLMS["qwen2.5-coder-1.5b-instruct"].path), 2048)
    rows, start = [], time.time()
    for n, paper in enumerate(papers):
        conclusion = next((s["text"] for s in reversed(paper["sections"]) if s["label"].upper().startswith("CONCLU")),
                          paper["sections"][-1]["text"])
        asker = ASKERS[n % len(ASKERS)]
        reply = llm(prompt(conclusion, asker), max_tokens=48, temperature=0.0,
                    stop=["<|im_end|>", "\n"])["choices"][0]["text"].strip().strip('"')
        rows.append({"id": f"lay-{n + 1:03d}", "asker": asker, "question": reply,
                     "gold_paper": f"PMID:{paper['pmid']}", "gold_sentences": conclusion})
        if (n + 1) % 20 == 0:
            print(f"{n + 1}/{len(papers)} in {time.time() - start:.0f} s", flush=True)
            Path(out).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    Path(out).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    llm.close()


main(sys.argv[1])
