#!/usr/bin/env bash
# From a fresh clone to a working system: install into .venv, prepare the offline models, start the embedded
# PostgreSQL + pgvector, ingest the bundled sample corpus if the index is empty, then serve hayhooks.yml's
# endpoints on http://127.0.0.1:1416 until Ctrl-C (--no-serve: stop after setting up). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
exec .venv/bin/pmc-rag setup --serve "$@"
