#!/usr/bin/env bash
# Record the embedded model's replies the tests replay (tests/fixtures/recorded_replies.jsonl): the whole suite
# runs once with the real model answering, and every reply to a copied pipeline is written down. Run it after a
# change to what the model is shown (a prompt, the excerpts, the model); a test whose prompt has no recorded reply
# fails and says to. Extra arguments go to pytest (e.g. one test file to record only its replies).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
replies=tests/fixtures/recorded_replies.jsonl
if [ $# -eq 0 ]; then
  rm -f "$replies"   # a whole run records every reply there is: nothing stale is kept
fi
status=0
PMC_RAG_TEST_REPLIES=record .venv/bin/python -m pytest -q "$@" || status=$?
# one line per prompt, the last recorded reply kept, in a stable order (small diffs when recorded again)
.venv/bin/python - "$replies" <<'PY'
import json, sys
path = sys.argv[1]
entries = {}
for line in open(path, encoding="utf-8"):
    if line.strip():
        entry = json.loads(line)
        entries[entry["key"]] = entry
with open(path, "w", encoding="utf-8") as file:
    for key in sorted(entries):
        file.write(json.dumps(entries[key], ensure_ascii=False) + "\n")
print(f"{len(entries)} replies recorded in {path}")
PY
exit "$status"   # a failing test is reported; what was recorded before it is kept
