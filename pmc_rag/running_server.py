"""Where a running `pmc-rag serve` for this data folder listens, so that `pmc-rag ask` can ask it.

`pmc-rag serve` writes `PMC_RAG_HOME/serve.json` (its address, its process id and the pipeline file of each REST
answer endpoint) once it has the port, and removes it when it stops. `pmc-rag ask` reads it: when that server is
alive and answers with the pipeline asked for, the question goes to it over HTTP, and the command never loads
Haystack, the models or the database (standard library only here, so importing it costs nothing).

Usage:
```python
record_server("http://127.0.0.1:1416", {"rag": Path("pipelines/rag.yml")})   # the server, once it listens
served = server_for(Path("pipelines/rag.yml"))                                # ("http://...", "rag") or None
answer = ask_server(*served, question="Is erlotinib effective?")              # the answer object, as JSON
```
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pmc_rag.paths import home

RECORD = "serve.json"


class ServerRefused(Exception):
    """The server refused the question (a 4xx): `detail` says why, as `pmc-rag ask` in process would."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


def record_server(url: str, answer_endpoints: dict[str, Path]) -> Path:
    """Write this process's server record (its address, pid, and each answer endpoint's pipeline file)."""
    path = home() / RECORD
    record = {"url": url, "pid": os.getpid(),
              "answer_endpoints": {name: str(Path(p).resolve()) for name, p in answer_endpoints.items()}}
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


def forget_server() -> None:
    """Remove the record, if this process wrote it."""
    path = home() / RECORD
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def server_for(pipeline: Path) -> tuple[str, str] | None:
    """The running server of this data folder (its URL) and the endpoint that answers with `pipeline`, else None."""
    try:
        record = json.loads((home() / RECORD).read_text(encoding="utf-8"))
        os.kill(int(record["pid"]), 0)  # alive? (signal 0 sends nothing)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    wanted = str(Path(pipeline).resolve())
    endpoint = next((name for name, path in record.get("answer_endpoints", {}).items() if path == wanted), None)
    return (record["url"], endpoint) if endpoint else None


def ask_server(url: str, endpoint: str, question: str, timeout_s: float = 300) -> dict[str, Any] | None:
    """The server's answer object for `question`; None when the server cannot be asked (gone, needs a key this
    caller lacks, failed): then the question is answered in process. Raises `ServerRefused` for a refusal."""
    headers = {"Content-Type": "application/json"}
    key = (os.environ.get("PMC_RAG_API_KEY") or "").split(",")[0].strip()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(f"{url}/{endpoint}/run", data=json.dumps({"question": question}).encode(),
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            return json.loads(reply.read())["result"]
    except urllib.error.HTTPError as error:
        if error.code in (413, 422):  # the question itself: the same refusal in process
            try:
                raise ServerRefused(str(json.loads(error.read()).get("detail"))) from None
            except ValueError:
                return None
        return None
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        return None
