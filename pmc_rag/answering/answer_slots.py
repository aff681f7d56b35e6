"""A bounded queue for answers: a few generate at once, a few more wait their turn, the rest are told to come back.

Generation is the slow, scarce part (one local model, or an Ollama with a few parallel slots); without a bound,
fifty streaming requests took every worker thread and retrieval waited over a minute behind them.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator

from pmc_rag.answering.refusals import AnswerStopped, Unavailable
from pmc_rag.answering.caller import RequestLifetime


_CHECK_EVERY_S = 0.25  # how often a waiting answer looks whether its client is still there
# The queue whose turn the work running here holds (per thread and task, not per lifetime: outside a served
# request every caller shares the default lifetime).
_holding: contextvars.ContextVar[AnswerSlots | None] = contextvars.ContextVar("pmc_rag_answer_turn", default=None)


class AnswerSlots:
    """
    At most `running` answers at once and `queued` waiting; a request beyond that, or one that waited `max_wait_s`
    for its turn (counted from its arrival) or reached its deadline meanwhile, is refused (`Unavailable`, 503, with
    `Retry-After`). One whose client went away while it waited leaves the queue (`AnswerStopped`, 499).

    Usage:
    ```python
    slots = AnswerSlots(running=2, queued=8, max_wait_s=60)
    with slots.turn(RequestLifetime(deadline_s=240)):   # raises Unavailable (503) when full or waited too long
        answer = run_the_pipeline()
    ```
    """

    def __init__(self, running: int, queued: int, max_wait_s: float):
        self.running, self.queued, self.max_wait_s = running, queued, max_wait_s
        self._turns = threading.BoundedSemaphore(running)
        self._lock = threading.Lock()
        self._admitted = 0  # running and waiting

    def refuse_when_full(self) -> None:
        """Raise the 503 now if a new answer would not be admitted (for streams, before their 200 is sent)."""
        with self._lock:
            if self._admitted >= self.running + self.queued:
                raise self._busy(f"{self._admitted} answers are being written or waiting")

    @contextlib.contextmanager
    def turn(self, lifetime: RequestLifetime) -> Iterator[None]:
        """Wait for a turn and hold it for the block. Work that holds one already (a question's translation took
        it, and its answer follows) goes on in it: one request, one turn."""
        if self.holds_turn():
            yield
            return
        with self._lock:
            if self._admitted >= self.running + self.queued:
                raise self._busy(f"{self._admitted} answers are being written or waiting")
            self._admitted += 1
        give_up_at = lifetime.started + min(self.max_wait_s, lifetime.deadline_s)
        try:
            while not self._turns.acquire(timeout=_CHECK_EVERY_S):
                if lifetime.gone:
                    raise AnswerStopped("the client went away while its answer waited for a turn", 499)
                if time.monotonic() >= give_up_at:
                    raise self._busy(f"this answer waited {time.monotonic() - lifetime.started:.0f} s for a turn")
            holding = _holding.set(self)
            try:
                yield
            finally:
                _holding.reset(holding)
                self._turns.release()
        finally:
            with self._lock:
                self._admitted -= 1

    def holds_turn(self) -> bool:
        """Whether the work running here (this thread or task) holds a turn of this queue."""
        return _holding.get() is self

    def _busy(self, why: str) -> Unavailable:
        retry = max(1, round(self.max_wait_s / 4))
        return Unavailable(f"The server is busy ({why}); ask again in {retry} s. Retrieval (/retrieve/run) is not "
                           "affected.", headers={"Retry-After": str(retry)})
