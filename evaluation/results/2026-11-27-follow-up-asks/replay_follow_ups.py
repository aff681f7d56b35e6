"""Which sentence each follow-up of a conversation file is answered with when it falls back to quotations, at a
commit and in the working tree, judged by the turn's `answer_has` (written by reading the abstract). A trial
script, not shipped: no model, no retrieval; each topic paper's whole abstract (corpus/pubmedqa/corpus.jsonl, one
section per excerpt) goes to CitedAnswerBuilder._extract as the server's follow-up would.

    .venv/bin/python evaluation/results/2026-11-27-follow-up-asks/replay_follow_ups.py 8382f31 \
        evaluation/datasets/conversations.json
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

from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder  # noqa: E402


def builder_at(commit: str):
    source = subprocess.run(["git", "show", f"{commit}:components/cited_answer_builder.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "builder_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("builder_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CitedAnswerBuilder


corpus = {f"PMID:{json.loads(line)['pmid']}": json.loads(line)
          for line in (ROOT / "corpus/pubmedqa/corpus.jsonl").open()}
conversations = json.loads(Path(sys.argv[2]).read_text())["conversations"]
builders = {"before": builder_at(sys.argv[1])(extractive_sentences=1),
            "after": CitedAnswerBuilder(extractive_sentences=1)}
right = {"before": 0, "after": 0}
asked = 0
for conversation in conversations:
    paper = conversation["topic_source_ids"][0]
    if paper not in corpus:
        continue  # a full-text paper: its chunks are in the database, not in the abstracts file
    documents = [Document(id=f"{paper}-{i}", content=section["text"],
                          meta={"source_id": paper, "section": "Abstract: " + section["label"].title()})
                 for i, section in enumerate(corpus[paper]["sections"])]
    topic = conversation["turns"][0]["question"]
    for turn in conversation["turns"][1:]:
        if not turn.get("answer_has"):
            continue
        asked += 1
        question = f"{turn['question']} (follow-up to: {topic})"
        quoted = {}
        for name, builder in builders.items():
            claims = builder._extract(question, documents, topic)
            quoted[name] = claims[0]["text"] if claims else ""
            right[name] += any(expected.lower() in quoted[name].lower() for expected in turn["answer_has"])
        marks = ["+" if any(e.lower() in quoted[n].lower() for e in turn["answer_has"]) else "-" for n in builders]
        print(f"{''.join(marks)} {conversation['id']}: {turn['question']}\n  before: {quoted['before']}\n"
              f"  after:  {quoted['after']}")
print(f"\n{asked} follow-ups of abstracts; the quotation has what the follow-up asks: before {right['before']}, "
      f"after {right['after']}")
