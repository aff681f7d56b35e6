#!/usr/bin/env bash
# Run the test suite (installing into .venv first if needed). Extra arguments go to pytest.
#   scripts/test.sh            every test (what CI runs)
#   scripts/test.sh --quick    all but the `integration` tests (the real model's own behaviour, other processes,
#                              real HTTP servers and time limits, restarts, kills, the browser): the other answering
#                              tests replay replies recorded from the real model
# The tests run on every core (pytest-xdist; PMC_RAG_TEST_WORKERS=N for N workers, 0 for one process): each worker
# starts its own PostgreSQL and, where a test needs it, its own model server.
# The vectors of the bundled articles the tests ingest are embedded once and kept in .pmc-rag/cache/pmc-rag/test-vectors/
# for later runs (PMC_RAG_TEST_VECTORS=run: this run only).
# Tests start their own embedded PostgreSQL in a temporary folder (or use PMC_RAG_TEST_PG_CONN_STR) and never
# touch the database in .pmc-rag/ (they do put the verified embedded model in .pmc-rag/models/ if it is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
# A temporary folder of this run's own, removed after it. pytest's default (/tmp/pytest-of-<user>/pytest-N) is
# shared by every run of the user: it keeps only the three newest runs' folders and deletes older ones when a run
# starts, so runs started meanwhile (another checkout, a quick check) can delete a running suite's PostgreSQL data
# folder under it. Give --basetemp yourself to keep the folder.
BASETEMP=$(mktemp -d -t pmc-rag-tests.XXXXXX)
trap 'rm -rf "$BASETEMP"' EXIT
MARKERS=()
if [ "${1:-}" = "--quick" ]; then
  shift
  MARKERS=(-m "not integration")
  export PMC_RAG_TEST_QUICK=1   # tests that repeat one check over many inputs take a sample (tests/bm25_helpers.py)
fi
# A worker per core, at most 4: past that, each worker's own PostgreSQL and models cost more memory than it saves.
# `worksteal`: a worker that runs out of tests takes some of another's, so the long ones that come last in the
# collection do not leave a core idle (the whole suite 9 min 43 s, against 11 min 24 s with xdist's default, on a
# 2-core AMD EPYC Zen 4).
WORKERS=${PMC_RAG_TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}
.venv/bin/python -m pytest --basetemp "$BASETEMP" -n "$WORKERS" --dist worksteal ${MARKERS[@]+"${MARKERS[@]}"} "$@"
