"""The first run of native kernels on a CPU, made in a child process and remembered.

Native libraries pick their kernels by the CPU they run on (ONNX Runtime's, PyTorch's bf16 ones, llama.cpp's), so
code that passed on one machine can crash on another: llama.cpp's AMX kernel did, on a Xeon, and took the server,
the CLI and the test run down with it. Code that first uses such kernels runs them here, in a child: a crash costs
the child and comes back as a message, and a pass leaves a marker file so the trial runs once per CPU.

    result = trial_once_per_cpu(SCRIPT, ["model.onnx"], marker=folder / f"model.works-on-{cpu_key()}")
    if not result.passed:
        log.warning("falling back: %s", result.problem)
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TrialResult:
    """How the child ended: `returncode` is None when it gave no answer in time; `output` is its standard output,
    `last_line` the last line it wrote to standard error."""

    returncode: int | None
    output: str = ""
    last_line: str = ""
    timeout: float = 0.0

    @property
    def passed(self) -> bool:
        return self.returncode == 0

    @property
    def problem(self) -> str:
        """What went wrong, for a log line: "killed by signal 11: ...", "exit status 1: ...", "no answer in 300 s"."""
        if self.returncode is None:
            return f"no answer in {self.timeout:.0f} s"
        how = f"killed by signal {-self.returncode}" if self.returncode < 0 else f"exit status {self.returncode}"
        return f"{how}{': ' + self.last_line if self.last_line else ''}"


def trial_once_per_cpu(script: str, args: list[str], marker: Path, timeout: float = 300) -> TrialResult:
    """Runs `python -c script *args` in a child process unless `marker` exists, and creates `marker` if it passes
    (exit status 0). Name the marker after what was tried and `cpu_key()`, so another CPU or another file is tried
    again."""
    if marker.exists():
        return TrialResult(returncode=0)
    try:
        child = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return TrialResult(returncode=None, timeout=timeout)
    result = TrialResult(returncode=child.returncode, output=child.stdout,
                         last_line=(child.stderr.strip().splitlines() or [""])[-1])
    if result.passed:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    return result


def cpu_key() -> str:
    """A short digest of this CPU's model and instruction-set flags: the same on every machine of one kind."""
    described = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags", "Features")):
                described += line
    except OSError:  # not Linux
        described += platform.processor()
    return hashlib.sha256(described.encode()).hexdigest()[:12]


def cpu_flags() -> set[str]:
    """The instruction-set flags Linux reports for this CPU (empty elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
