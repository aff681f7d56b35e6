"""Running a statement on a connection the server may have closed since its last use.

pmc-rag's sessions with the embedded PostgreSQL end after a few seconds idle (so that a server asked to shut down
is not kept waiting by them), and any server may restart; a component that keeps a connection between runs then
holds one that fails on first use. `run_reconnecting` connects anew and runs the work once more in that case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import psycopg

T = TypeVar("T")


def run_reconnecting(connection: Callable[[], psycopg.Connection], reconnect: Callable[[], None],
                     work: Callable[[psycopg.Connection], T]) -> T:
    """
    `work(connection())`; if it fails because the session is gone, `reconnect()` and run `work` once more. A
    transaction on a lost session was rolled back by the server, so running it again is safe. Errors on a live
    session (a bad statement, a timeout) are raised as they are.

    Usage:
    ```python
    rows = run_reconnecting(lambda: self._connection, self._reconnect,
                            lambda c: c.execute("SELECT id FROM chunks LIMIT 5").fetchall())
    ```
    """
    current = connection()
    try:
        return work(current)
    except psycopg.OperationalError:
        if not (current.closed or current.broken):
            raise
    reconnect()
    return work(connection())
