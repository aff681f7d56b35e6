"""Why the answering service does not answer a request: its own exceptions, which know no HTTP.

Every caller maps them at its edge: the HTTP adapters (`pmc_rag.serving.http_errors`) to a status code with the
message as `detail`, the CLI to the message alone. `status_code` is the HTTP status each stands for, so that the
mapping is one line and the same everywhere.

Usage:
```python
from pmc_rag.answering.refusals import InputError, Refused

try:
    answer = service.answer(question)
except Refused as refused:
    print(refused.detail)          # what was wrong, said so that the asker can fix it
```
"""

from __future__ import annotations


class Refused(Exception):
    """A request the service will not answer, and why (`detail`), with the HTTP status it stands for."""

    status_code = 500

    def __init__(self, detail: str, status_code: int | None = None, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.detail = detail
        if status_code is not None:
            self.status_code = status_code
        self.headers = headers or {}


class InputError(Refused):
    """The request is not usable (an empty or overlong question, bad filters): the detail says what to change."""

    status_code = 422


class UnknownConversationId(Refused):
    """The conversation id was not issued to this caller, or its conversation has expired."""

    status_code = 404


class AnswerStopped(Refused):
    """The answer was stopped: its caller went away (499), or its deadline passed (504)."""

    status_code = 499


class Unavailable(Refused):
    """The service cannot answer now: the answer queue is full (503, with Retry-After), or the store is down."""

    status_code = 503
