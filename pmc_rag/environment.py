"""Environment defaults every pmc-rag entry point applies before Haystack or Hugging Face are imported."""

from __future__ import annotations

import logging
import os

# Our package, whose components pipeline YAML names as types (Haystack loads only haystack* by default).
ALLOWED_MODULES = ["pmc_rag.*"]


def configure_environment() -> None:
    """Set the defaults, leaving any value the user has set alone.

    * HF_HUB_OFFLINE=1: models load from the local cache without asking the hub; without it, each load retries
      the network for minutes on a machine that has none. Set HF_HUB_OFFLINE=0 to let a YAML-named model download.
    * HAYSTACK_TELEMETRY_ENABLED=False: no usage reports.
    * HAYSTACK_DESERIALIZATION_ALLOWLIST: lets Hayhooks (which reads only this variable) load our components.
    * Quieter start-up: no per-load progress bars, no "could not reach the Hub" notices in offline mode.
    * XDG_CACHE_HOME=PMC_RAG_HOME/cache (HF_HOME kept at ~/.cache/huggingface): see `_caches_in_home`.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")
    # The pgvector store notes at every start that its HNSW index exists already.
    logging.getLogger("haystack_integrations.document_stores.pgvector.document_store").setLevel(logging.ERROR)
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    allowed = [m.strip() for m in os.environ.get("HAYSTACK_DESERIALIZATION_ALLOWLIST", "").split(",") if m.strip()]
    os.environ["HAYSTACK_DESERIALIZATION_ALLOWLIST"] = ",".join(dict.fromkeys([*allowed, *ALLOWED_MODULES]))
    _caches_in_home()


def _caches_in_home() -> None:
    """What libraries keep under ~/.cache goes to PMC_RAG_HOME/cache instead: ONNX Runtime writes a device id and a
    telemetry store there as soon as it is imported, Hayhooks its dashboard token. Hugging Face's cache stays where
    it was (the offline embedding model is there). A user's own XDG_CACHE_HOME is left alone."""
    from pathlib import Path

    from pmc_rag.paths import home

    if os.environ.get("XDG_CACHE_HOME"):
        return
    os.environ.setdefault("HF_HOME", str(Path.home() / ".cache" / "huggingface"))
    os.environ["XDG_CACHE_HOME"] = str(home() / "cache")
