"""The layers hold: components import only Haystack, libraries and other components (import-linter's contract in
pyproject.toml). import-linter reads the package from one folder, and ours installs from four (`package-dir` maps
components/, ingestion/ and evaluation/ into pmc_rag), so the test lays a copy out as it installs and lints that."""

from __future__ import annotations

import ast
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


def test_no_component_reads_a_follow_up_back_out_of_a_joined_text():
    """A follow-up reaches a pipeline as `question` and `follow_up_to` (issue 62): the components that judge the
    reader's words take both, and none splits a joined "<question> (follow-up to: <topic>)" apart again. Only
    the conversation, which keeps its standalone queries in that form, reads them."""
    splitting = {"is_follow_up", "follow_up_text", "follow_up_topic", "FOLLOW_UP_LABEL"}
    readers = {}
    for path in sorted((PROJECT_ROOT / "components").glob("*.py")):
        if path.name == "follow_up_query.py":  # it joins them, for the search text
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} | {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        if names & splitting:
            readers[path.name] = sorted(names & splitting)
    assert readers == {}
    assert {"is_follow_up", "follow_up_text"} <= set(vars(__import__("pmc_rag.answering.conversation",
                                                                   fromlist=["x"])))
