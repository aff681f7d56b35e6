"""A pytest plugin that records each test's wall time and the share of the machine's CPU busy meanwhile.

    PYTHONPATH=evaluation/results/2026-11-27-suite-profile SUITE_CPU_LOG=cpu.jsonl \
        .venv/bin/python -m pytest -q -p suite_cpu_plugin

Busy is read from /proc/stat, so it counts every process: the tests' model server, PostgreSQL, browsers.
"""
import json
import os
import time

_out = open(os.environ.get("SUITE_CPU_LOG", "suite_cpu.jsonl"), "a")
_started: dict[str, tuple[float, int, int]] = {}


def _busy_and_total() -> tuple[int, int]:
    values = list(map(int, open("/proc/stat").readline().split()[1:]))
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def pytest_runtest_logstart(nodeid, location):
    _started[nodeid] = (time.time(), *_busy_and_total())


def pytest_runtest_logfinish(nodeid, location):
    started, busy, total = _started.pop(nodeid)
    busy_now, total_now = _busy_and_total()
    _out.write(json.dumps({"test": nodeid, "wall": time.time() - started,
                           "busy": (busy_now - busy) / max(1, total_now - total)}) + "\n")
    _out.flush()
