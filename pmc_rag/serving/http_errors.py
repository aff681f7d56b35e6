"""The answering service's refusals as HTTP errors: the one place the two meet.

Hayhooks turns any exception but FastAPI's `HTTPException` into a 500, so each endpoint method that calls the
service is wrapped (`refusals_as_http`); the server's own routes get the same mapping from an exception handler
(`add_refusal_handler`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from pmc_rag.answering.refusals import Refused

Method = TypeVar("Method", bound=Callable[..., Any])


def as_http(refused: Refused) -> HTTPException:
    return HTTPException(refused.status_code, refused.detail, headers=refused.headers or None)


def refusals_as_http(method: Method) -> Method:
    """`method`, raising an `HTTPException` where it would raise a `Refused` (signature and docstring kept, which
    Hayhooks reads)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Refused as refused:
            raise as_http(refused) from refused

    return wrapper  # type: ignore[return-value]


def add_refusal_handler(app: FastAPI) -> None:
    """A `Refused` raised in one of the app's own routes answers with its status and `{"detail": ...}`."""

    async def handler(_: Request, refused: Exception) -> JSONResponse:
        assert isinstance(refused, Refused)
        return JSONResponse({"detail": refused.detail}, status_code=refused.status_code,
                            headers=refused.headers or None)

    app.add_exception_handler(Refused, handler)
