"""Which browsers may reach the server: requests addressed to a name it was started with, and changes only from
its own page or a configured one.

A web page the user visits can send a form POST to `http://127.0.0.1:1416` without asking first (a multipart or
text body needs no CORS preflight): it cannot read the reply, but the upload is stored. And a page on a domain
that re-points its DNS to 127.0.0.1 (DNS rebinding) can read replies too, though its requests still say
`Host: attacker.example`. So:

- `host_refusal`: every request's `Host` must be a loopback name, the address the server was started on, or one
  of `server.allowed_hosts` (421 Misdirected Request otherwise). Starlette's `TrustedHostMiddleware` does the
  same check but answers a bare 400 "Invalid host header"; the message here says which setting to change.
- `origin_refusal`: a request that changes or asks something (any method but GET, HEAD, OPTIONS) sent by a
  browser must come from the server's own page or an origin in `server.cors_origins` (403 otherwise). Browsers
  send `Origin` with every such request, and `Sec-Fetch-Site` besides; clients that are not browsers (curl, the
  openai client, Open WebUI's backend) send neither and are let through, to meet the API key check.

Usage:
```python
policy = BrowserPolicy(server_host="127.0.0.1", allowed_hosts=(), allowed_origins=("http://localhost:3000",))
policy.host_refusal({"host": "attacker.example"})                     # "... 'attacker.example' ..."
policy.origin_refusal("POST", {"host": "127.0.0.1:1416", "origin": "https://evil.example"})  # "... refused ..."
```
"""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_ADDRESSES = frozenset({"", "0.0.0.0", "::"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def host_name(host_header: str) -> str:
    """"127.0.0.1:1416" -> "127.0.0.1"; "[::1]:1416" -> "::1"; lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class BrowserPolicy:
    """The Host and Origin checks of the request gate (see the module's docstring)."""

    def __init__(self, server_host: str, allowed_hosts: tuple[str, ...] = (),
                 allowed_origins: tuple[str, ...] = ()):
        """
        :param server_host: The address the server listens on (`server.host`).
        :param allowed_hosts: More names requests may be addressed to (`server.allowed_hosts`; "*": any).
        :param allowed_origins: Web pages allowed to call the server (`server.cors_origins`; "*": any).
        """
        self.any_host = "*" in allowed_hosts or (server_host in WILDCARD_ADDRESSES and not allowed_hosts)
        self.hosts = LOOPBACK_NAMES | {host_name(server_host)} | {host_name(h) for h in allowed_hosts}
        self.any_origin = "*" in allowed_origins
        self.origins = {origin.rstrip("/").lower() for origin in allowed_origins}

    def host_refusal(self, headers: dict[str, str]) -> str | None:
        """Why the request's `Host` is refused (421), or None. A request without one (HTTP/1.0) is no browser's."""
        host = headers.get("host")
        if host is None or self.any_host or host_name(host) in self.hosts:
            return None
        shown = host[:100]
        return (f"this server does not answer requests addressed to {shown!r}; it answers "
                f"{', '.join(sorted(self.hosts))} (add a name this machine is reached by to server.allowed_hosts "
                "in hayhooks.yml)")

    def origin_refusal(self, method: str, headers: dict[str, str]) -> str | None:
        """Why a browser's request from another site is refused (403), or None."""
        if method in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None:
            origin = origin.strip().rstrip("/").lower()
            if self.any_origin or origin in self.origins or self._own(origin, headers.get("host")):
                return None
            return (f"a web page at {origin[:100]!r} may not send requests to this server; only its own page may "
                    "(to allow another page, such as Open WebUI's, add its origin to server.cors_origins in "
                    "hayhooks.yml)")
        if headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
            return ("a web page on another site may not send requests to this server; only its own page may "
                    "(server.cors_origins in hayhooks.yml lists the pages allowed)")
        return None

    @staticmethod
    def _own(origin: str, host: str | None) -> bool:
        """Whether `origin` is the server's own page: the same host and port the request is addressed to."""
        if origin == "null" or host is None:
            return False
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()
