"""The request gate's browser checks, alone: which Host names are served and which pages may send requests."""

from __future__ import annotations

import pytest

from pmc_rag.serving.browsers import BrowserPolicy, host_name


@pytest.mark.parametrize("header, name", [("127.0.0.1:1416", "127.0.0.1"), ("[::1]:1416", "::1"),
                                          ("LocalHost", "localhost"), ("example.org", "example.org"), ("::1", "::1")])
def test_host_names_are_read_without_port_or_brackets(header, name):
    assert host_name(header) == name


def test_only_the_names_the_server_was_started_with_are_served():
    local = BrowserPolicy("127.0.0.1")
    for host in ("127.0.0.1:1416", "localhost:1416", "[::1]:1416", "LOCALHOST"):
        assert local.host_refusal({"host": host}) is None, host
    assert local.host_refusal({}) is None  # HTTP/1.0: no browser sends no Host
    refused = local.host_refusal({"host": "attacker.example:1416"})
    assert "attacker.example" in refused and "server.allowed_hosts" in refused
    lab = BrowserPolicy("0.0.0.0", allowed_hosts=("pmc-rag.lab.example",))
    assert lab.host_refusal({"host": "pmc-rag.lab.example"}) is None
    assert lab.host_refusal({"host": "other.example"}) is not None
    assert BrowserPolicy("0.0.0.0").host_refusal({"host": "anything.example"}) is None  # keys guard a wildcard
    assert BrowserPolicy("127.0.0.1", allowed_hosts=("*",)).host_refusal({"host": "x.example"}) is None


def test_pages_elsewhere_may_not_send_requests_but_the_server_s_own_and_configured_ones_may():
    policy = BrowserPolicy("127.0.0.1", allowed_origins=("http://localhost:3000",))
    own = {"host": "127.0.0.1:1416", "origin": "http://127.0.0.1:1416"}
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert policy.origin_refusal(method, own) is None
        assert policy.origin_refusal(method, {**own, "origin": "http://localhost:3000"}) is None
        assert policy.origin_refusal(method, {**own, "origin": "https://evil.example"}) is not None
        assert policy.origin_refusal(method, {**own, "origin": "null"}) is not None
        assert policy.origin_refusal(method, {**own, "origin": "http://127.0.0.1:9999"}) is not None  # another port
        assert policy.origin_refusal(method, {"host": own["host"], "sec-fetch-site": "cross-site"}) is not None
        assert policy.origin_refusal(method, {"host": own["host"], "sec-fetch-site": "same-origin"}) is None
        assert policy.origin_refusal(method, {"host": own["host"]}) is None  # curl, the openai client
    assert policy.origin_refusal("GET", {**own, "origin": "https://evil.example"}) is None  # CORS guards reading
    assert BrowserPolicy("127.0.0.1", allowed_origins=("*",)).origin_refusal(
        "POST", {**own, "origin": "https://any.example"}) is None
