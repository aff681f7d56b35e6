"""The layers hold: components import only Haystack, libraries and other components (import-linter's contract in
pyproject.toml). import-linter reads the package from one folder, and ours installs from four (`package-dir` maps
components/, ingestion/ and evaluation/ into pmc_rag), so the test lays a copy out as it installs and lints that."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from pmc_rag.paths import PROJECT_ROOT

FOLDERS = {"pmc_rag": "", "components": "components", "ingestion": "ingestion", "evaluation": "evaluation"}


def installed_layout(into: Path) -> Path:
    """The package's modules under `into`/pmc_rag, as `pip install` lays them out (study results left out)."""
    for folder, inside in FOLDERS.items():
        source = PROJECT_ROOT / folder
        for path in source.rglob("*.py"):
            relative = path.relative_to(source)
            if "results" in relative.parts:
                continue
            target = into / "pmc_rag" / inside / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return into


def lint(layout: Path) -> subprocess.CompletedProcess:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint_imports), str(PROJECT_ROOT / "pyproject.toml")], cwd=layout,
                          env={**os.environ, "PYTHONPATH": str(layout)}, capture_output=True, text=True)


def test_components_import_no_serving_or_set_up_module_the_service_no_http_and_nothing_below_the_server(tmp_path):
    layout = installed_layout(tmp_path)
    result = lint(layout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 kept, 0 broken" in result.stdout


def test_the_contract_catches_a_component_that_imports_the_serving_layer(tmp_path):
    layout = installed_layout(tmp_path)
    gate = layout / "pmc_rag" / "components" / "relevance_gate.py"
    gate.write_text(gate.read_text() + "\nfrom pmc_rag.answering.conversation import standalone_query  # noqa\n")
    result = lint(layout)
    assert result.returncode != 0 and "BROKEN" in result.stdout
    assert "pmc_rag.components.relevance_gate -> pmc_rag.answering.conversation" in result.stdout


def test_the_contract_catches_the_service_raising_http_errors_itself(tmp_path):
    layout = installed_layout(tmp_path)
    service = layout / "pmc_rag" / "answering" / "service.py"
    service.write_text(service.read_text() + "\nfrom fastapi import HTTPException  # noqa\n")
    result = lint(layout)
    assert result.returncode != 0 and "pmc_rag.answering.service -> fastapi" in result.stdout


def test_the_contract_catches_the_answering_package_importing_the_server(tmp_path):
    # The tree before issue 62's answering package: the service imported serving/ modules, serving/ imported it.
    layout = installed_layout(tmp_path)
    guards = layout / "pmc_rag" / "answering" / "guards.py"
    guards.write_text(guards.read_text() + "\nfrom pmc_rag.serving.uploads import Uploads  # noqa\n")
    result = lint(layout)
    assert result.returncode != 0 and "pmc_rag.answering.guards -> pmc_rag.serving.uploads" in result.stdout
