"""What a streamed answer shows while it is made: progress, never the model's words.

A model's reply is checked whole (each claim against its excerpts, the verdict, the citations) before a reader
sees it; a sentence shown while it was written could be an injected claim the checks then remove, and a chat
client's transcript keeps every word it was sent. So a stream reports what the answer is doing (searching,
reading n passages, writing and checking), then sends the checked answer.

Usage:
```python
progress = AnswerProgress(numbers={}, report=print)
service.answer(question, stream=progress, on_token=progress.on_token)
# ('status', 'reading 5 passages from 3 papers'), ('status', 'writing and checking the answer')
```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class AnswerProgress:
    """The answering service's stream hooks: the conversation's citation numbers (which the service sets, for Open
    WebUI's source events), the excerpts the model reads, and the first word it writes, reported as
    ("status", text) to `report`."""

    def __init__(self, numbers: dict[str, int], report: Callable[[tuple[str, str]], Any]):
        self.numbers = numbers  # shared with the conversation: new papers get the next free number
        self.report = report
        self.writing = False

    def set_excerpts(self, documents: list[Any]) -> None:
        papers = len({d.meta.get("source_id") for d in documents})
        self.report(("status", f"reading {len(documents)} passages from {papers} paper{'s' * (papers != 1)}"))

    def on_token(self, chunk: Any) -> None:
        if not self.writing and (getattr(chunk, "content", "") or "").strip():
            self.writing = True
            self.report(("status", "writing and checking the answer"))
