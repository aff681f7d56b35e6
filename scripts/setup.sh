#!/usr/bin/env bash
# From a fresh clone to a working system: install into .venv, prepare the offline models, start the embedded
# PostgreSQL + pgvector, and ingest the bundled sample corpus if the index is empty. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
exec .venv/bin/pmc-rag setup "$@"
