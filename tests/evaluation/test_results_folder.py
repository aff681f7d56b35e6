"""Results stay out of the code: a study keeps its README and tables; records and scripts are regenerated."""

from __future__ import annotations

import subprocess

from pmc_rag.paths import PROJECT_ROOT

RESULTS = PROJECT_ROOT / "evaluation" / "results"
MAX_BYTES = 100_000


def tracked_results() -> list[str]:
    listed = subprocess.run(["git", "ls-files", str(RESULTS)], cwd=PROJECT_ROOT, capture_output=True, text=True)
    return [line for line in listed.stdout.splitlines() if line]


def test_the_results_folder_holds_no_script_no_raw_records_and_nothing_large():
    files = tracked_results()
    assert files, "git ls-files found nothing: run the tests from a clone"
    assert [f for f in files if f.endswith(".py")] == [], "a study script belongs in pmc_rag.evaluation or in history"
    assert [f for f in files if f.endswith((".json", ".jsonl"))] == [], "raw records are written again, not kept"
    large = [f for f in files if (PROJECT_ROOT / f).stat().st_size > MAX_BYTES]
    assert large == [], f"over {MAX_BYTES:,} bytes: {large}"
    assert sum((PROJECT_ROOT / f).stat().st_size for f in files) < 3_000_000
