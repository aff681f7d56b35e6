"""What a model server's log says about repeated requests: replies, time, and the part a reply memo could save.

    python repeated_requests.py server.log [more.log ...]

Reads the per-reply lines (`pmc-rag-llm: reply 12: ... request 2f248aecbb82[, repeated]`) and the supervisor's
`== <time> ...started` lines. A repeat is a request whose fingerprint was already answered by the same server
process (a restart forgets), which is what the reply memo can hand back.
"""

from __future__ import annotations

import re
import sys

REPLY = re.compile(r"pmc-rag-llm: (?:streamed )?reply \d+: (\S+) prompt tokens, (\S+) written, (\d+) computed, "
                   r"([\d.]+) s, request ([0-9a-f]{12})(, repeated)?")


def summarise(lines: list[str]) -> dict[str, float]:
    seen: set[str] = set()
    totals = {"replies": 0, "seconds": 0.0, "computed": 0, "repeats": 0, "repeat_seconds": 0.0,
              "repeat_computed": 0, "answered_from_memo": 0}
    for line in lines:
        if line.startswith("== ") and "start" in line:
            seen.clear()   # a new server process: nothing remembered
            continue
        match = REPLY.search(line)
        if not match:
            continue
        seconds, computed, request = float(match[4]), int(match[3]), match[5]
        totals["replies"] += 1
        totals["seconds"] += seconds
        totals["computed"] += computed
        totals["answered_from_memo"] += bool(match[6])
        if request in seen:
            totals["repeats"] += 1
            totals["repeat_seconds"] += seconds
            totals["repeat_computed"] += computed
        seen.add(request)
    return totals


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path, errors="replace") as log:
            report = summarise(log.read().splitlines())
        print(f"{path}: {report['replies']} replies, {report['seconds']:.0f} s, {report['computed']} tokens "
              f"computed; {report['repeats']} repeats of a request the same server had answered "
              f"({report['repeat_seconds']:.0f} s, {report['repeat_computed']} computed); "
              f"{report['answered_from_memo']} answered from the reply memo")
