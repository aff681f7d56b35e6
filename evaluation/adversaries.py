"""Adversarial generators: chat generators that write misleading answers from the excerpts in the prompt, so the
evaluation (`pmc-rag eval --adversary KIND`) and the tests can show what the citation and claim checks let through.

Each answer is a verdict ("Yes."), one honest sentence copied from the first excerpt and cited to it, and attacked
sentences of one kind:

| kind | what it writes |
|---|---|
| `misattribute` | sentences copied from one paper's excerpt, cited to another paper that was also shown |
| `negate` | a sentence of an excerpt with its negation added or removed, cited to that excerpt |
| `numbers` | a sentence with its first number changed, cited to its excerpt |
| `direction` | a sentence with increased/decreased, higher/lower (...) swapped, cited to its excerpt |
| `fabricate` | copied sentences cited to a paper id and a DOI that were never shown |
| `hidden_refs` | copied sentences with no inline citation, then a reference list naming the wrong papers |

The answer is deterministic given the prompt, so `plan(messages)` tells the evaluation which sentences were attacked
and where they really come from.

Usage:
```python
generator = AdversarialChatGenerator(attack="negate")
reply = generator.run(messages=prompt_messages)["replies"][0]
reply.meta["attacks"]   # [{"kind": "negate", "text": "...", "true_source": "PMC1", "cited": ["PMC1"]}]
```
"""

from __future__ import annotations

import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citations import content_words
from pmc_rag.components.claim_signals import change_numbers, negate, reverse_direction
from pmc_rag.components.section_chunker import split_sentences

ATTACKS = ("misattribute", "negate", "numbers", "direction", "fabricate", "hidden_refs")
# Attacks whose sentences say something the source does not: they must never be displayed as supported.
ALTERING = {"negate": negate, "numbers": change_numbers, "direction": reverse_direction}
FABRICATED_IDS = ("PMC99999999", "doi:10.9999/not.shown")
_LABEL = re.compile(r"^\[(?P<id>[^\]]+)\] [^\n]*:\s*$")
_MIN_WORDS = 8


def excerpts_in_prompt(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """(label, text) of each excerpt in the prompt's user message, in order (the prompt of pipelines/rag.yml)."""
    text = next((m.text or "" for m in reversed(messages) if m.is_from("user")), "")
    excerpts: list[tuple[str, str]] = []
    label, lines = None, []
    for line in text.split("\n"):
        match = _LABEL.match(line)
        if match or line.startswith("Question:"):
            if label:
                excerpts.append((label, " ".join(" ".join(lines).split())))
            label, lines = (match.group("id") if match else None), []
        elif label:
            lines.append(line)
    return excerpts


def _sentences(text: str) -> list[str]:
    """The excerpt's sentences of at least eight words, the ones sharing most content words first."""
    found = [s for s in split_sentences(text) if len(s.split()) >= _MIN_WORDS and s[-1] in ".!?"]
    return sorted(found, key=lambda s: -len(content_words(s)))


@component
class AdversarialChatGenerator:
    """A chat generator that writes misleading, cited answers from its prompt's excerpts (see the module)."""

    def __init__(self, *, attack: str, claims: int = 2):
        """
        :param attack: One of `ATTACKS`.
        :param claims: Attacked sentences per answer (fewer when the excerpts offer fewer).
        """
        if attack not in ATTACKS:
            raise ValueError(f"unknown attack {attack!r}; choose one of {', '.join(ATTACKS)}")
        self.attack = attack
        self.claims = claims

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, attack=self.attack, claims=self.claims)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdversarialChatGenerator:
        return default_from_dict(cls, data)

    @component.output_types(replies=list[ChatMessage], meta=dict[str, Any])
    def run(self, messages: list[ChatMessage], **_: Any) -> dict[str, Any]:
        """:returns: `replies`: one answer; its `meta` holds `model` and the `attacks` it made. `meta`: empty
        (the output a fallback generator has, so the adversary takes its place in a pipeline as it is)."""
        text, attacks = self.plan(messages)
        return {"replies": [ChatMessage.from_assistant(text, meta={"model": f"adversary:{self.attack}",
                                                                   "attacks": attacks})], "meta": {}}

    def plan(self, messages: list[ChatMessage]) -> tuple[str, list[dict[str, Any]]]:
        """The answer this generator writes for the prompt, and the attacked sentences in it."""
        papers: dict[str, list[str]] = {}
        for label, text in excerpts_in_prompt(messages):
            papers.setdefault(label, []).extend(_sentences(text))
        labels = [label for label, sentences in papers.items() if sentences]
        if not labels:
            return "The excerpts do not answer the question.", []
        honest_label = labels[0]
        honest = papers[honest_label][0]
        used = {honest}
        parts, attacks = ["Yes.", f"{honest[:-1]} [{honest_label}]{honest[-1]}"], []
        references = []
        for index, label in enumerate(labels[1:] + labels[:1]):  # other papers first: a different sentence
            if len(attacks) == self.claims:
                break
            sentence = self._source_sentence(papers[label], used)
            if sentence is None:
                continue
            written, cited = sentence, [label]
            if self.attack in ALTERING:
                written = ALTERING[self.attack](sentence)
                if written is None:
                    continue
            elif self.attack == "misattribute":
                others = [other for other in labels if other != label]
                if not others:
                    continue
                cited = [others[index % len(others)]]
            elif self.attack == "fabricate":
                cited = [FABRICATED_IDS[len(attacks) % len(FABRICATED_IDS)]]
            elif self.attack == "hidden_refs":
                cited = []
                references.append(next(other for other in reversed(labels) if other != label)
                                  if len(labels) > 1 else label)
            used.add(sentence)
            marks = "".join(f" [{c}]" for c in cited)
            parts.append(f"{written[:-1]}{marks}{written[-1]}")
            attacks.append({"kind": self.attack, "text": written, "true_source": label, "cited": cited})
        if references:
            parts.append("\n\nReferences:\n" + "\n".join(f"- [{r}]" for r in references))
        return " ".join(parts), attacks

    def _source_sentence(self, sentences: list[str], used: set[str]) -> str | None:
        for sentence in sentences:
            if sentence in used:
                continue
            if self.attack in ALTERING and ALTERING[self.attack](sentence) is None:
                continue
            return sentence
        return None
