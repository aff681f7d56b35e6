"""Records the relevance gate's inputs for every question (rag.yml without generation: dev, generated tuning and
written tuning questions, never the held-aside ones), for replaying gate rules offline (replay.py).

    .venv/bin/python evaluation/results/2026-11-26-words-apart/trial/record_gate_inputs.py /tmp/gate_inputs.pkl
"""
import functools
import pickle
import sys

from pmc_rag.answering import run_answering
from pmc_rag.components.citations import canonical_id
from pmc_rag.database import ensure_database
from pmc_rag.evaluation.questions import load_questions
from pmc_rag.evaluation.relevance import load_unanswerable
from pmc_rag.evaluation.runner import without_generation
from pmc_rag.paths import DEV_QUESTIONS
from pmc_rag.pipelines import load_declared_pipeline

asked = [(q["question"], q["set"], q.get("kind", "")) for q in
         load_unanswerable("evaluation/datasets/unanswerable_generated.json") if q["set"] == "generated_tuning"]
asked += [(q["question"], q["set"], "written") for q in
          load_unanswerable("evaluation/datasets/unanswerable_questions.json") if q["set"] == "tuning"]
asked += [(q.question, "answerable", "") for q in load_questions(DEV_QUESTIONS)]
ensure_database()
pipeline = load_declared_pipeline("rag", edit=without_generation)
pipeline.warm_up()
gate = pipeline.pipeline.get_component("gate")
# The gate as it was before the rule (2d9202e): the replay adds the rule to its decisions.
gate.min_similarity_with_words_apart, gate.specific_word_max_share = None, 0.01
captured: dict = {}
original = gate.run


@functools.wraps(original)
def recording(**inputs):
    result = original(**inputs)
    documents = inputs.get("documents") or []
    scored = [d for d in inputs.get("scored") or [] if d.score is not None]
    best = max((d.score for d in scored), default=None)
    kept = gate._close_papers(documents, scored, best, inputs.get("query_embedding"), inputs.get("covering") or []) \
        if best is not None and documents else documents
    papers: dict = {}
    for document in kept:
        entry = papers.setdefault(canonical_id(str(document.meta.get("source_id", ""))),
                                  {"title": str(document.meta.get("title") or ""), "texts": []})
        entry["texts"].append(document.content or "")
    captured.update(best=best, word_shares=inputs.get("word_shares") or {}, papers=papers,
                    refused="unanswered" in result)
    return result


gate.run = recording
records = []
for question, group, kind in asked:
    captured.clear()
    run_answering(pipeline, question)
    records.append({"question": question, "set": group, "kind": kind, **captured})
with open(sys.argv[1], "wb") as out:
    pickle.dump(records, out)
