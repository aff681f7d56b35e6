"""Replays "the N rarest specific words must be named together by one paper, below similarity T" on the recorded
gate inputs (record_gate_inputs.py: the gate's decisions without the rule), and prints refusals per set.

    .venv/bin/python evaluation/results/2026-11-26-words-apart/trial/replay.py /tmp/gate_inputs.pkl
"""
import collections
import pickle
import sys

from pmc_rag.components.citations import content_words
from pmc_rag.components.relevance_gate import _REQUEST_WORD

with open(sys.argv[1], "rb") as recorded:
    records = pickle.load(recorded)


def named_apart(record, rarest, max_share):
    words = sorted((share, w) for w, share in record["word_shares"].items()
                   if share <= max_share and not _REQUEST_WORD.match(w) and content_words(w))
    words = [w for _, w in words][:rarest]
    papers = [content_words(" ".join([p["title"], *p["texts"]])) for p in record["papers"].values()]
    return len(words) >= 2 and not any(all(content_words(w) <= stems for w in words) for stems in papers)


for rarest in (2, 3, 4, 99):
    for max_share in (0.01, 0.02, 0.03):
        for threshold in (0.62, 0.65, 0.66, 0.68, 0.7, 0.75):
            asked, refused = collections.Counter(), collections.Counter()
            for r in records:
                group = r["set"] + (f" ({r['kind']})" if r["kind"] else "")
                asked[group] += 1
                refused[group] += r["refused"] or (r["best"] is not None and r["best"] < threshold
                                                   and named_apart(r, rarest, max_share))
            print(f"rarest {rarest:>2}, share {max_share}, below {threshold}:",
                  ", ".join(f"{g} {refused[g]}/{asked[g]}" for g in sorted(asked)))
