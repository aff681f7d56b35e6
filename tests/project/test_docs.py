"""The README stays a first read, and the docs site builds with every link and anchor found."""

from __future__ import annotations

import re
import subprocess
import sys

from pmc_rag.paths import PROJECT_ROOT


def test_the_readme_fits_on_a_few_screens_and_its_links_to_the_docs_exist():
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    linked = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert linked, "the README points to the docs"
    assert [path for path in linked if not (PROJECT_ROOT / path).is_file()] == []


def test_the_docs_build_strictly(tmp_path):
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "site" / "asking" / "index.html").is_file()


def test_every_study_in_the_results_folder_is_listed_on_the_results_page():
    listed = (PROJECT_ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    studies = [p.name for p in (PROJECT_ROOT / "evaluation" / "results").iterdir()
               if p.is_dir() and any(f.name.endswith(".md") for f in p.iterdir())]
    assert [s for s in studies if f"`{s}/`" not in listed] == []
