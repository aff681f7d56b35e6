"""What a request may read: the corpus and the server's collections, and of the uploaded collections only those of
its key's (its own, and those shared with it).

The condition joins the request's own filters, so it holds for every search a pipeline makes (both retrievals,
the subject and follow-up searches, a named paper's reading) and is part of the answer cache's key.

Usage:
```python
filters = with_access(request_filters, store)   # request_filters AND (not uploaded OR a collection it may read)
```
"""

from __future__ import annotations

from typing import Any

from pmc_rag.ingestion.collections import readable_uploads
from pmc_rag.serving.caller import current_owner, keys_in_use

NOT_UPLOADED = {"field": "meta.uploaded_by", "operator": "==", "value": None}


def access_filter(store: Any) -> dict[str, Any] | None:
    """The condition on chunks this request's key may read; None without keys (one local user reads all)."""
    if not keys_in_use.get() or store is None:
        return None
    readable = readable_uploads(store, current_owner.get())
    if not readable:
        return NOT_UPLOADED
    return {"operator": "OR", "conditions": [
        NOT_UPLOADED, {"field": "meta.collection", "operator": "in", "value": readable}]}


def with_access(filters: dict[str, Any] | None, store: Any) -> dict[str, Any] | None:
    """`filters` (Haystack's form, or None) narrowed to what this request may read."""
    access = access_filter(store)
    if access is None:
        return filters
    return access if not filters else {"operator": "AND", "conditions": [filters, access]}
