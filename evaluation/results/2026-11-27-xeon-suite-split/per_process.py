"""CPU-seconds by kind of process from procmon.py's JSON (python per_process.py procs.json)."""
import collections
import json
import re
import sys


def kind(cmd: str) -> str:
    if "-m pytest" in cmd:
        return "pytest (the tests, the in-process app and its pipelines)"
    if "postgres" in cmd:
        return "PostgreSQL (every backend)"
    if "chrom" in cmd:
        return "Chromium"
    if "pmc_rag.local_llm.server" in cmd:
        return "model servers"
    if "local_llm" in cmd or "llama" in cmd:
        return "model server checks (trial runs of a build)"
    command = re.search(r"pmc_rag\.cli (\S+)|bin/pmc-rag (\S+)", cmd)
    if command:
        return f"`pmc-rag {command.group(1) or command.group(2)}` processes"
    return "other"


totals = collections.defaultdict(lambda: [0, 0.0])
for process in json.load(open(sys.argv[1])):
    totals[kind(process["cmd"])][0] += 1
    totals[kind(process["cmd"])][1] += process.get("cpu", 0.0)
print("| processes | how many | CPU-seconds |\n|---|---:|---:|")
for name, (count, cpu) in sorted(totals.items(), key=lambda item: -item[1][1]):
    print(f"| {name} | {count} | {cpu:.0f} |")
print(f"| **all** | {sum(c for c, _ in totals.values())} | {sum(s for _, s in totals.values()):.0f} |")
