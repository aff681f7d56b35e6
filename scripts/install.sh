#!/usr/bin/env bash
# Create .venv and install pmc-rag into it. Idempotent: a second run with an unchanged pyproject.toml does nothing.
# Used by scripts/setup.sh and scripts/test.sh; not usually run on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
STAMP=$VENV/.pmc-rag-installed

pick_python() {
  for candidate in "${PYTHON:-}" python3.11 python3.12 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 13)))'; then
      echo "$candidate"; return 0
    fi
  done
  echo "pmc-rag needs Python 3.11 or 3.12 (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ -x "$VENV/bin/pmc-rag" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  python=$(pick_python)
  echo "==> Creating $VENV with $python"
  "$python" -m venv "$VENV"
fi
pip=("$VENV/bin/python" -m pip --disable-pip-version-check)

# The CPU build of torch goes in first: left to sentence-transformers, pip would fetch the newest CUDA build
# (several GB). A local wheel that pip already knows about (its find-links) is used if there is one; otherwise
# PyTorch's CPU index (override with TORCH_INDEX_URL).
if ! "$VENV/bin/python" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
  echo "==> Installing torch 2.13.0 (CPU build)"
  if ! "${pip[@]}" install --quiet --no-index --no-deps torch==2.13.0 2>/dev/null; then
    "${pip[@]}" install --quiet torch==2.13.0 --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"
  fi
fi

# llama-cpp-python has no binary wheel on PyPI: the first install compiles it (about 4 minutes on 2 cores);
# pip caches the built wheel, so later installs take seconds.
echo "==> Installing pmc-rag and its dependencies (the first time takes several minutes)"
"${pip[@]}" install --quiet --editable '.[test]'
echo "$want" > "$STAMP"
