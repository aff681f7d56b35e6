"""What a request may read: the corpus and the server's collections; uploads only when it names their collection
(`filters.collections`), and then, with API keys, only the collections its key may read (its own, and those shared
with it).

Uploads are kept apart from the corpus: an uploaded file is untrusted text (it may call itself a corpus paper and
say anything), so it is read only by a question that asks for its collection, and cited there under its own id
and labelled (pmc_rag.ingestion.collections). The condition joins the request's own filters, so it holds for every
search a pipeline makes (both retrievals, the subject and follow-up searches, a named paper's reading) and is part
of the answer cache's key.

Usage:
```python
access = access_filter(store, names_collections(request.filters))  # not uploaded OR a readable collection
```
"""

from __future__ import annotations

from typing import Any

from pmc_rag.ingestion.collections import readable_uploads
from pmc_rag.answering.caller import current_owner, keys_in_use

NOT_UPLOADED = {"field": "meta.uploaded_by", "operator": "==", "value": None}


def access_filter(store: Any, names_collections: bool = False) -> dict[str, Any] | None:
    """The condition on chunks this request may read; None for no condition.

    :param names_collections: The request limits itself to collections (`filters.collections`): uploads may be
        read, those of the key's (every upload on a server without keys).
    """
    if not names_collections:
        return NOT_UPLOADED
    if not keys_in_use.get() or store is None:
        return None  # one local user, who asked for these collections by name
    readable = readable_uploads(store, current_owner.get())
    if not readable:
        return NOT_UPLOADED
    return {"operator": "OR", "conditions": [
        NOT_UPLOADED, {"field": "meta.collection", "operator": "in", "value": readable}]}


def names_collections(filters: Any) -> bool:
    """Whether request filters (SearchFilters, their dict, or None) limit the question to collections."""
    if filters is None:
        return False
    named = filters.get("collections") if isinstance(filters, dict) else getattr(filters, "collections", None)
    return bool(named)
