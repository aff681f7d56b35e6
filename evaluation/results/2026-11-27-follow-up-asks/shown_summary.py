"""The conversation tables of the runs here, with "not answered" read from the answer shown (as
evaluation/conversations.py does from 2026-11-27), also for the runs made before that change, which read the
model's reply. Usage: .venv/bin/python evaluation/results/2026-11-27-follow-up-asks/shown_summary.py RUN_DIR ..."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from pmc_rag.evaluation.conversations import load_conversations, said_not_answered, summarise_conversations  # noqa

print("| run | answerable turns | answered off topic | 'not answered' when it should | 'not answered' when it should "
      "not | quoted passages | follow-ups answering what they ask | answers repeating the last |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for run in sys.argv[1:]:
    report = json.loads((Path(run) / "results.json").read_text())
    turns = {(c["id"], i): t for c in load_conversations(ROOT / report["meta"]["file"])
             for i, t in enumerate(c["turns"], start=1)}
    records = report["pipelines"]["rag"]["records"]
    for record in records:
        turn = turns[(record["conversation"], record["turn"])]
        record["not_answered"] = said_not_answered({"answer": record["answer"],
                                                    "flags": {"not_answered": record["answer"].startswith(
                                                        "The indexed papers do not answer")}})
        has = turn.get("answer_has")
        record["answers_what_it_asks"] = None if not has else (
            not record["not_answered"] and any(h.lower() in record["answer"].lower() for h in has))
    s = summarise_conversations(records)
    pct = (lambda share: "-" if share is None else f"{share:.0%}")
    print(f"| {Path(run).name} | {s['answerable_turns']} | {s['off_topic_turns']} | "
          f"{pct(s['not_answered_when_it_should'])} of {s['unanswerable_turns']} | "
          f"{pct(s['not_answered_when_it_should_not'])} | {pct(s['quoted_share'])} | "
          f"{s['answers_what_it_asks']} of {s['asked_turns']} | {s['repeats_last_answer']} |")
