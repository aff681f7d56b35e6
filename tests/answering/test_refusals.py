"""The answering service refuses with its own exceptions; HTTP codes are given at the edge, the same everywhere."""

from __future__ import annotations

import inspect

import pytest
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient

from pmc_rag.answering.refusals import AnswerStopped, InputError, Refused, Unavailable, UnknownConversationId
from pmc_rag.serving.http_errors import add_refusal_handler, as_http, refusals_as_http


def test_each_refusal_stands_for_one_status_and_keeps_its_message():
    assert [r("why").status_code for r in (InputError, UnknownConversationId, AnswerStopped, Unavailable)] == [
        422, 404, 499, 503]
    assert AnswerStopped("too late", 504).status_code == 504 and InputError("bad").detail == "bad"
    busy = as_http(Unavailable("busy", headers={"Retry-After": "15"}))
    assert isinstance(busy, HTTPException) and busy.status_code == 503 and busy.headers == {"Retry-After": "15"}
    assert not issubclass(Refused, HTTPException)  # the service knows nothing of FastAPI


def test_an_endpoint_method_raises_http_errors_and_keeps_the_signature_hayhooks_reads():
    class Endpoint:
        @refusals_as_http
        def run_api(self, question: str, top_k: int | None = None) -> str:
            """Answers a question."""
            if not question:
                raise InputError("`question` is empty")
            return question

    assert list(inspect.signature(Endpoint.run_api).parameters) == ["self", "question", "top_k"]
    assert Endpoint.run_api.__doc__ == "Answers a question." and Endpoint().run_api("q") == "q"
    with pytest.raises(HTTPException) as refused:
        Endpoint().run_api("")
    assert refused.value.status_code == 422 and refused.value.detail == "`question` is empty"
    assert isinstance(refused.value.__cause__, InputError)


def test_the_apps_own_routes_answer_a_refusal_with_its_status_and_detail():
    app = FastAPI()
    add_refusal_handler(app)

    @app.get("/busy")
    def busy() -> None:
        raise Unavailable("The server is busy; ask again in 15 s", headers={"Retry-After": "15"})

    reply = TestClient(app).get("/busy")
    assert reply.status_code == 503 and reply.json() == {"detail": "The server is busy; ask again in 15 s"}
    assert reply.headers["retry-after"] == "15"
