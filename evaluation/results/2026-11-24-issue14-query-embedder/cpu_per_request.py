"""CPU seconds spent by the server's processes and PostgreSQL's between two snapshots, per request.

    python cpu_per_request.py snap before.json
    python -m pmc_rag.evaluation.load_test --endpoints retrieve --clients 20 --requests 500
    python cpu_per_request.py snap after.json
    python cpu_per_request.py diff before.json after.json 500

Linux only (reads /proc). Processes are grouped by command line: `pmc-rag serve` and its workers, and PostgreSQL's
backends; the load generator is not counted (it starts after the first snapshot).
"""

import json
import os
import sys

TICKS = os.sysconf("SC_CLK_TCK")


def group(pid: str) -> str | None:
    try:
        command = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        name = open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return None
    if name.startswith("postgres"):
        return "postgres"
    if "pmc-rag serve" in command or "multiprocessing.spawn" in command:
        return "server (python)"
    return None


def snapshot() -> dict[str, list]:
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        name = group(pid)
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if name:
            found[pid] = [name, (int(fields[11]) + int(fields[12])) / TICKS]  # utime + stime
    return found


def main() -> None:
    if sys.argv[1] == "snap":
        json.dump(snapshot(), open(sys.argv[2], "w"))
        return
    before, after, requests = json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), int(sys.argv[4])
    totals: dict[str, float] = {}
    for pid, (name, seconds) in after.items():
        totals[name] = totals.get(name, 0.0) + seconds - before.get(pid, [name, 0.0])[1]
    for name, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"{name:16s} {seconds:7.1f} s CPU  {1000 * seconds / requests:6.1f} ms per request")
    print(f"{'total':16s} {sum(totals.values()):7.1f} s CPU  {1000 * sum(totals.values()) / requests:6.1f} ms per request")


if __name__ == "__main__":
    main()
