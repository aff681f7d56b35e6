"""Which sentence each dev question's gold paper is quoted with, before and after a change to CitedAnswerBuilder,
judged by the gold conclusion and results (evaluation/trust.py's 80%-of-words rule). A trial script, not shipped.

The gold paper's whole abstract (corpus/pubmedqa/corpus.jsonl), one section per excerpt, goes to the builder's
quotation step of the commit named and of the working tree; no model, no retrieval, no database.

    .venv/bin/python evaluation/results/2026-11-27-spelled-out-abbreviations/replay_quotations.py e67afca
"""
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from haystack import Document  # noqa: E402

from evaluation.questions import load_questions  # noqa: E402
from evaluation.trust import _shares_most_words  # noqa: E402
from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder  # noqa: E402
from pmc_rag.components.citations import content_words  # noqa: E402


def builder_at(commit: str):
    source = subprocess.run(["git", "show", f"{commit}:components/cited_answer_builder.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "builder_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("builder_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CitedAnswerBuilder


corpus = {json.loads(line)["pmid"]: json.loads(line) for line in (ROOT / "corpus/pubmedqa/corpus.jsonl").open()}
questions = load_questions(ROOT / "evaluation/datasets/pubmedqa_dev_questions.json")
before, after = builder_at(sys.argv[1])(extractive_sentences=1), CitedAnswerBuilder(extractive_sentences=1)
hits = {"before": 0, "after": 0}
changed = []
for question in questions:
    documents = [Document(id=f"{question.id}-{i}", content=section["text"],
                          meta={"source_id": f"PMID:{question.id}", "section": "Abstract: " + section["label"].title()})
                 for i, section in enumerate(corpus[question.id]["sections"])]
    words = content_words(question.question)
    quoted = []
    for name, builder in (("before", before), ("after", after)):
        claims = builder._quotations(words, set(), documents, True)
        quoted.append(claims[0]["text"] if claims else "")
        hits[name] += _shares_most_words(quoted[-1], question.gold_findings)
    if quoted[0] != quoted[1]:
        judged = [_shares_most_words(q, question.gold_findings) for q in quoted]
        changed.append(("+" if judged[1] > judged[0] else "-" if judged[1] < judged[0] else "=", question.question,
                        *quoted))
print(f"{len(questions)} questions; the quoted sentence is one of the gold findings: before {hits['before']}, "
      f"after {hits['after']}; {len(changed)} quotations changed "
      f"({sum(c[0] == '+' for c in changed)} into a gold finding, {sum(c[0] == '-' for c in changed)} out of one)")
for mark, question, old, new in changed:
    print(f"\n{mark} {question}\n  before: {old}\n  after:  {new}")
