#!/usr/bin/env bash
# Run the test suite (installing into .venv first if needed). Extra arguments go to pytest.
#   scripts/test.sh            every test (what CI runs)
#   scripts/test.sh --quick    all but the `integration` tests (the real model's own behaviour, restarts, kills,
#                              the browser): the other answering tests replay replies recorded from the real model
# Tests start their own embedded PostgreSQL in a temporary folder (or use PMC_RAG_TEST_PG_CONN_STR) and never
# touch the database in .pmc-rag/ (they do put the verified embedded model in .pmc-rag/models/ if it is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
if [ "${1:-}" = "--quick" ]; then
  shift
  exec .venv/bin/python -m pytest -m "not integration" "$@"
fi
exec .venv/bin/python -m pytest "$@"
