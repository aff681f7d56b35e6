"""Trial: an embedded model's yes/no as a second opinion on messages the crisis check gives only the crisis line.

    python judge.py ROWS.json OUT.json            # ROWS: the left-out decisions (gather.py), tuning sets only

Each message the check answered with the line (possible danger) is read by the 0.5B and the 1.5B, and its log-odds
of "yes" against "no" kept; the translation the check read is given beside a message in another language.
"""
import json
import sys
import time

from pmc_rag.local_llm.yes_no import YesNoJudge

SYSTEM = "You screen messages sent to a medical research assistant. Answer with one word: yes or no."
USER = ("Message: {message}\n\nIs the person who wrote this, or someone with them, in danger right now (about to end "
        "their life or harm themselves, or having a medical emergency) and in need of urgent help?")


def prompt(row):
    message = row["text"] + (f"\n(In English: {row['english']})" if row.get("english") else "")
    return USER.format(message=message)


rows = [r for r in json.load(open(sys.argv[1])) if r["got"] == "line"]
out = {"system": SYSTEM, "user": USER, "rows": rows}
for model in ("qwen2.5-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"):
    judge, t0 = YesNoJudge(model), time.time()
    for n, row in enumerate(rows):
        row[model] = judge.log_odds(SYSTEM, prompt(row))
        if (n + 1) % 50 == 0:
            print(model, n + 1, f"{time.time() - t0:.0f} s", flush=True)
    judge.close()
    print(model, f"{(time.time() - t0) / len(rows):.2f} s a message", flush=True)
json.dump(out, open(sys.argv[2], "w"), indent=1, ensure_ascii=False)
