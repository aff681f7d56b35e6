"""What a pipeline asks of the local model (its `local_model:` section, read and checked), the key the server
requires, and the errors that say why the server cannot be used. `supervisor.py` starts and watches the server.

    from pmc_rag.local_llm.spec import LocalModelSpec

    spec = LocalModelSpec.from_yaml({"model": "qwen2.5-0.5b-instruct", "url": "http://127.0.0.1:1417/v1"}, "rag.yml")
    spec.port   # 1417
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from pmc_rag.paths import home

API_KEY_ENV = "PMC_RAG_LLM_API_KEY"


_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class LocalModelError(RuntimeError):
    """The local model server cannot be used; the message names the cause and the fix."""


class ForeignModelServer(LocalModelError):
    """A pmc-rag model server of another data folder (PMC_RAG_HOME) holds the address: it refuses this one's key,
    and no prompt of this one's may go there."""


def _whole_number(section: dict[str, Any], key: str, default: int, what: str, where: str) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}: `local_model.{key}` must be a whole number of {what}, 0 or more "
                         f"(0 keeps none), not {value!r}")
    return value


@dataclass(frozen=True)
class LocalModelSpec:
    """A pipeline's `local_model:` section."""

    model: str
    url: str
    n_ctx: int = 4096
    model_path: str | None = None
    weights: str = "packaged"
    idle_minutes: float = 30.0
    start_timeout: float = 120.0
    prompt_cache_mb: int = 256
    remembered_replies: int = 128

    @classmethod
    def from_yaml(cls, section: Any, where: str) -> LocalModelSpec:
        from pmc_rag.models import EMBEDDED_LLMS, PACKAGED, REENCODINGS

        if not isinstance(section, dict):
            raise ValueError(f"{where}: `local_model` must be a mapping with `model` and `url`")
        unknown = set(section) - {"model", "url", "n_ctx", "model_path", "weights", "idle_minutes", "start_timeout",
                                  "prompt_cache_mb", "remembered_replies"}
        if unknown:
            raise ValueError(f"{where}: `local_model` has unknown key(s) {sorted(unknown)}")
        model = str(section.get("model", ""))
        if model not in EMBEDDED_LLMS and not section.get("model_path"):
            raise ValueError(f"{where}: `local_model.model` {model!r} is not an embedded model "
                             f"({sorted(EMBEDDED_LLMS)}); or give `model_path:` a GGUF file of your own")
        weights = str(section.get("weights", PACKAGED))
        if weights not in (PACKAGED, *REENCODINGS):
            raise ValueError(f"{where}: `local_model.weights` {weights!r}: choose {PACKAGED} (as the packages ship "
                             f"them) or {' or '.join(REENCODINGS)} (re-encoded once, for faster prompt reading)")
        if section.get("model_path"):
            weights = PACKAGED   # `weights` is for the embedded models: a GGUF of your own is served as it is
        url = str(section.get("url", ""))
        parsed = urlparse(url)
        if parsed.scheme != "http" or parsed.hostname not in _LOOPBACK or not parsed.port:
            raise ValueError(f"{where}: `local_model.url` must be http://127.0.0.1:<port>/v1 (the server is started "
                             f"on this machine), not {url!r}")
        return cls(model=model, url=url.rstrip("/"), n_ctx=int(section.get("n_ctx", 4096)),
                   model_path=section.get("model_path"), weights=weights, idle_minutes=float(section.get("idle_minutes", 30)),
                   start_timeout=float(section.get("start_timeout", 120)),
                   prompt_cache_mb=_whole_number(section, "prompt_cache_mb", cls.prompt_cache_mb, "megabytes", where),
                   remembered_replies=_whole_number(section, "remembered_replies", cls.remembered_replies, "replies",
                                                    where))

    @property
    def port(self) -> int:
        return int(urlparse(self.url).port)

    @property
    def host(self) -> str:
        return str(urlparse(self.url).hostname)


def api_key() -> str:
    """The key the local server requires: $PMC_RAG_LLM_API_KEY, else one made once per PMC_RAG_HOME.

    It is exported, so that the YAML's generator (`api_key: {type: env_var, env_vars: [PMC_RAG_LLM_API_KEY]}`)
    sends it.
    """
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        path = home() / "llm" / "api_key"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(24))
        key = path.read_text().strip()
        os.environ[API_KEY_ENV] = key
    return key
