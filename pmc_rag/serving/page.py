"""The question page `pmc-rag serve` shows at its address: one static HTML file (page.html) with its script, no
build step and nothing fetched from elsewhere, so it works offline. It streams from `POST /<endpoint>/stream`."""

from __future__ import annotations

import json
from pathlib import Path

_PAGE = Path(__file__).with_name("page.html")


def page_html(endpoint: str) -> str:
    """The page, asking the answer endpoint named `endpoint`."""
    return _PAGE.read_text(encoding="utf-8").replace("__ENDPOINT__", json.dumps(endpoint))
