"""How many lines of hand-written patterns the judging modules hold (issue 61: "hand-written patterns that grow
with every round"), counted the same way at any commit.

    python -m pmc_rag.evaluation.pattern_lines                 # the working tree
    python -m pmc_rag.evaluation.pattern_lines --at bd44e43    # a commit, for before and after

Counted, by reading each module's syntax tree (not its text): the source lines of every regular expression given
to `re` (`re.compile`, `re.search`, ...), and of every literal list, set, tuple or dict of five or more strings (a
word list). Lines are counted once, whichever the pattern spans.
"""

from __future__ import annotations

import argparse
import ast
import subprocess

from pmc_rag.paths import PROJECT_ROOT

# Code moved out of the four modules on 2026-11-29 is counted with them (components/subject_words.py, the relevance
# gate's word patterns; pmc_rag/answering/crisis_exemplars.py, the crisis check's second layer); a module a commit
# lacks reads as empty.
MODULES = ("components/claim_signals.py", "components/question_router.py", "components/relevance_gate.py",
           "components/subject_words.py", "pmc_rag/answering/crisis.py", "pmc_rag/answering/crisis_exemplars.py")
_RE_FUNCTIONS = {"compile", "search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"}


def pattern_lines(source: str) -> dict[str, int]:
    """The module's lines, its regular expressions' lines, its word lists' lines and how many expressions."""
    tree = ast.parse(source)
    regex_lines: set[int] = set()
    list_lines: set[int] = set()
    expressions = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RE_FUNCTIONS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args:
            pattern = node.args[0]
            if not (isinstance(pattern, ast.Name) or isinstance(pattern, ast.Attribute)):
                expressions += 1
                regex_lines.update(range(pattern.lineno, (pattern.end_lineno or pattern.lineno) + 1))
        elif isinstance(node, (ast.List, ast.Set, ast.Tuple, ast.Dict)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            strings = [i for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
            if len(strings) >= 5 and len(strings) >= len(items) / 2:
                list_lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return {"lines": len(source.splitlines()), "regex_lines": len(regex_lines),
            "word_list_lines": len(list_lines - regex_lines), "expressions": expressions}


def read(path: str, at: str | None) -> str:
    if at is None:
        return (PROJECT_ROOT / path).read_text(encoding="utf-8")
    shown = subprocess.run(["git", "show", f"{at}:{path}"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else ""


def table(at: str | None = None) -> str:
    rows = ["| module | lines | regular-expression lines | word-list lines | expressions |", "|---|---:|---:|---:|---:|"]
    total = {"lines": 0, "regex_lines": 0, "word_list_lines": 0, "expressions": 0}
    for path in MODULES:
        counts = pattern_lines(read(path, at))
        total = {k: total[k] + counts[k] for k in total}
        rows.append(f"| `{path}` | {counts['lines']} | {counts['regex_lines']} | {counts['word_list_lines']} | "
                    f"{counts['expressions']} |")
    rows.append(f"| all | {total['lines']} | {total['regex_lines']} | {total['word_list_lines']} | "
                f"{total['expressions']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at", metavar="COMMIT", help="count the modules as they were at this commit")
    args = parser.parse_args(argv)
    print(table(args.at))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
