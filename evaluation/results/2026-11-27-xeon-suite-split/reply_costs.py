"""What the model servers' replies cost, from their logs' per-reply lines (python reply_costs.py LOG...)."""
import re
import sys

LINE = re.compile(r"pmc-rag-llm: (?:streamed )?reply \d+: (\S+) prompt tokens, (\S+) written, (\d+) computed, "
                  r"([\d.]+) s")
replies = [match.groups() for path in sys.argv[1:] for match in map(LINE.match, open(path, errors="replace"))
           if match]
prompt = sum(int(p) for p, *_ in replies if p != "?")
written = sum(int(w) for _, w, *_ in replies if w != "?")
computed = sum(int(c) for *_, c, _ in replies)
seconds = sum(float(s) for *_, s in replies)
print(f"{len(replies)} replies, {seconds:.0f} s busy; {prompt} prompt tokens, {written} written, {computed} computed "
      f"({prompt - (computed - written)} prompt tokens restored from kept prompts)")
