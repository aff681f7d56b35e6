"""Read an untrusted file (an upload) in a child process with a memory and a time limit.

A PDF or XML file can be built to exhaust a reader: a content stream that inflates to gigabytes, a hundred
thousand pages, a parser bug that crashes native code. Read in the server's own process, such a file takes the
server down with it. Here the reading happens in a child process that may use at most `memory_mb` of address
space and `timeout_s` of time; whatever the file does, the caller gets the articles or an `IngestError` that
says what happened.

Usage:
```python
items = read_contained(Path("/tmp/upload/0-report.pdf"), "report.pdf", timeout_s=60, memory_mb=1024)
# a list of Article and IngestError, as `read_articles` yields them; raises IngestError if the reader was stopped
```
"""

from __future__ import annotations

import pickle
import resource
import signal
import subprocess
import sys
from pathlib import Path

from pmc_rag.ingestion.article import Article
from pmc_rag.ingestion.xml import IngestError

# Exit status of a child that ran out of memory in Python code (a native allocation failure is a signal instead).
_OUT_OF_MEMORY = 3


def read_contained(path: Path, shown_name: str, *, timeout_s: float = 60.0,
                   memory_mb: int = 1024) -> list[Article | IngestError]:
    """Everything `read_articles(path)` yields, read in a limited child process.

    :param shown_name: How the file is named in errors (the user's file name, not the temporary path).
    :raises IngestError: The reader took longer than `timeout_s`, needed more than `memory_mb`, or crashed.
    """
    command = [sys.executable, "-m", "pmc_rag.ingestion.contained", str(path), str(int(memory_mb)),
               str(int(timeout_s) + 1)]
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:  # run() has killed the child
        raise IngestError(f"{shown_name}: reading it took longer than {timeout_s:g} s, so it was stopped (a file "
                          "built to exhaust the reader?); if it is genuine, split it or raise "
                          "uploads.read_timeout_s in hayhooks.yml") from None
    if done.returncode == 0:
        items = pickle.loads(done.stdout)  # written by our own child below, from our own classes
        return [_renamed(item, path, shown_name) for item in items]
    if done.returncode == _OUT_OF_MEMORY or b"MemoryError" in done.stderr or b"bad_alloc" in done.stderr:
        raise IngestError(f"{shown_name}: reading it needed more than {memory_mb} MB, so it was stopped (a file "
                          "built to exhaust memory?); if it is genuine, split it or raise uploads.read_memory_mb "
                          "in hayhooks.yml")
    if done.returncode == -9 or done.returncode == -24:  # SIGKILL / SIGXCPU: the CPU-time limit
        raise IngestError(f"{shown_name}: reading it took longer than {timeout_s:g} s of CPU time, so it was "
                          "stopped (a file built to exhaust the reader?)")
    if done.returncode < 0:  # native code (PDFium) aborts or crashes when an allocation fails under the limit
        raise IngestError(f"{shown_name}: the reader was stopped on it ({signal.Signals(-done.returncode).name}): "
                          f"it needed more than {memory_mb} MB or is built to crash readers (a file built to "
                          "exhaust memory?); if it is genuine, export it again or raise uploads.read_memory_mb")
    raise IngestError(f"{shown_name}: the reader failed on it (exit status {done.returncode}: "
                      f"{done.stderr.decode(errors='replace').strip()[-300:]}); export or download it again")


def _renamed(item: Article | IngestError, path: Path, shown_name: str) -> Article | IngestError:
    if isinstance(item, IngestError):
        return IngestError(str(item).replace(str(path), shown_name))
    return item


def _main(argv: list[str]) -> int:
    path, memory_mb, cpu_s = Path(argv[0]), int(argv[1]), int(argv[2])
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    from pmc_rag.ingestion.sources import read_articles

    try:
        items = list(read_articles(path))
        data = pickle.dumps(items)
    except MemoryError:
        return _OUT_OF_MEMORY
    sys.stdout.buffer.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
