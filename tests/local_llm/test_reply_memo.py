"""The model server's reply memo: a request asked again with temperature 0 gets the reply written the first time."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pmc_rag.local_llm.reply_memo import ReplyMemo
from pmc_rag.local_llm.server import ModelService

pytestmark = pytest.mark.integration  # the real model server's reply memo

MESSAGES = [{"role": "user", "content": "Does erlotinib help?"}]
GREEDY = {"temperature": 0.0, "max_tokens": 8}


class CountingLlama:
    """Stands in for llama.cpp: writes "one two three", counting the replies it writes and the tokens it computes."""

    def __init__(self) -> None:
        self.replies_written = 0
        self.tokens_read = 0
        self.n_tokens = 0
        self.streams_closed = 0

    def create_chat_completion(self, messages: list[dict[str, Any]], stream: bool = False, **settings: Any) -> Any:
        self.replies_written += 1
        self.tokens_read += 10 + 3
        self.n_tokens = 10
        words = ["one", " two", " three"]
        if not stream:
            return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(words)},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}
        return self._stream(words)

    def _stream(self, words: list[str]) -> Any:
        try:
            yield {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
            for word in words:
                yield {"choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
            yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        finally:
            self.streams_closed += 1


def streamed_text(events: Any) -> str:
    pieces = []
    for event in events:
        if event.startswith("data: ") and event.strip() != "data: [DONE]":
            for choice in json.loads(event[6:]).get("choices") or []:
                pieces.append(choice["delta"].get("content") or "")
    return "".join(pieces)


def test_a_request_asked_again_gets_the_same_reply_without_the_model(capsys):
    llama = CountingLlama()
    service = ModelService(llama, "m", ReplyMemo(max_replies=4))
    first = service.complete(MESSAGES, dict(GREEDY))
    again = service.complete(MESSAGES, dict(GREEDY))
    assert llama.replies_written == 1
    assert again["choices"] == first["choices"] and again["usage"] == first["usage"]
    assert again["id"] != first["id"]   # a reply of its own, with the same content
    assert service.replies == 2 and service.tokens_computed == 13 and service.memo.report()["hits"] == 1
    first_line, again_line = capsys.readouterr().out.splitlines()
    request = re.fullmatch(r"pmc-rag-llm: reply 1: 10 prompt tokens, 3 written, 13 computed, [\d.]+ s, "
                           r"request ([0-9a-f]{12})", first_line)
    assert request, first_line
    assert re.fullmatch(rf"pmc-rag-llm: reply 2: 10 prompt tokens, 3 written, 0 computed, [\d.]+ s, "
                        rf"request {request[1]}, repeated", again_line), again_line


def test_a_streamed_reply_is_replayed_whole_and_a_stream_its_client_left_is_not_kept():
    llama = CountingLlama()
    service = ModelService(llama, "m", ReplyMemo(max_replies=4))
    left = service.stream(MESSAGES, dict(GREEDY), include_usage=True)
    next(left), next(left)
    left.close()   # the client went away after the first word
    assert llama.streams_closed == 1 and service.memo.report()["replies"] == 0

    first = list(service.stream(MESSAGES, dict(GREEDY), include_usage=True))
    again = list(service.stream(MESSAGES, dict(GREEDY), include_usage=True))
    assert llama.replies_written == 2   # the one left, then the whole one; the third came from the memo
    assert streamed_text(again) == streamed_text(first) == "one two three"
    usage = json.loads(again[-2][6:])["usage"]
    assert usage == {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
    assert json.loads(again[0][6:])["id"] != json.loads(first[0][6:])["id"]


def test_only_requests_the_model_answers_the_same_way_every_time_are_kept():
    llama = CountingLlama()
    service = ModelService(llama, "m", ReplyMemo(max_replies=4))
    for settings in ({"temperature": 0.7}, {}, {"temperature": 0.0, "max_tokens": 8},
                     {"temperature": 0.0, "max_tokens": 9}, {"temperature": 0.0, "max_tokens": 8, "seed": 3}):
        service.complete(MESSAGES, dict(settings))
        service.complete(MESSAGES, dict(settings))
    # sampled (temperature 0.7, or llama.cpp's default) twice each; each greedy request once, any setting apart
    assert llama.replies_written == 4 + 3
    service.complete([{"role": "user", "content": "Another question?"}], dict(GREEDY))
    assert llama.replies_written == 8


def test_the_memo_keeps_the_most_recently_used_replies_and_hands_out_copies():
    memo = ReplyMemo(max_replies=2)
    keys = [memo.key([{"role": "user", "content": str(n)}], GREEDY, streamed=False) for n in range(3)]
    memo.put(keys[0], {"text": "zero"})
    memo.put(keys[1], {"text": "one"})
    memo.get(keys[0])["text"] = "changed by a caller"
    memo.put(keys[2], {"text": "two"})   # the least recently used, keys[1], goes
    assert memo.get(keys[0]) == {"text": "zero"} and memo.get(keys[1]) is None and memo.get(keys[2])
    assert memo.key(MESSAGES, GREEDY, streamed=True) != memo.key(MESSAGES, GREEDY, streamed=False)
    assert ReplyMemo(max_replies=0).key(MESSAGES, GREEDY, streamed=False) is None
    with pytest.raises(ValueError, match="max_replies must be 0"):
        ReplyMemo(max_replies=-1)
