"""Citation quality of a displayed answer, as ALCE defines it, and what of an adversary's attacks got through.

**Citation recall** (per statement): 1 if the excerpts of the papers it cites, taken together, support it, as a
support judge decides (`LexicalSupportJudge` by default; `CrossEncoderNLIJudge` or `OllamaSupportJudge` with
`pmc-rag eval --claim-judge`). Statements are the displayed answer's sentences; a sentence too short to judge
("Yes.") is not a statement. An uncited statement has recall 0.
**Citation precision** (per citation): a citation is relevant if its statement has recall 1 and either the
citation supports the statement alone or the statement's other citations do not support it without it.
**Unsupported share**: of the displayed statements that cite something, the share the judge does not find
supported by what they cite (contradicted ones included).

Usage:
```python
scores = alce_scores(answer, excerpts, judge=LexicalSupportJudge())
scores["citation_recall"], scores["citation_precision"], scores["unsupported_share"]
```
"""

from __future__ import annotations

import re
from typing import Any

from haystack import Document

from pmc_rag.components.citations import by_paper, shown_text, split_cited_sentences
from pmc_rag.components.claim_signals import SUPPORTED, UNVERIFIABLE
from pmc_rag.evaluation.adversaries import ALTERING


def alce_scores(answer: dict[str, Any], excerpts: list[Document], judge: Any) -> dict[str, Any]:
    """Per answer: statements, citations, their recall and precision sums, and unsupported cited statements."""
    numbers = {r["number"]: r["source_id"] for r in answer.get("references", [])}
    texts = {source: [shown_text(d) for d in documents] for source, documents in by_paper(excerpts).items()}
    statements = []
    for sentence in split_cited_sentences(answer.get("answer", "")):
        cited = [numbers[int(n)] for mark in sentence.bare for n in re.findall(r"\d+", mark) if int(n) in numbers]
        statements.append((sentence.text, list(dict.fromkeys(cited))))

    def supports(claim: str, sources: list[str]) -> str:
        evidence = "\n".join(t for s in sources for t in texts.get(s, []))
        return judge.run(claims=[claim], evidence=[evidence])["judgements"][0]["label"] if evidence else "none"

    counted = {"statements": 0, "recall": 0, "citations": 0, "relevant": 0, "cited_statements": 0,
               "unsupported": 0}
    for text, cited in statements:
        together = supports(text, cited) if cited else "none"
        if together == UNVERIFIABLE or (not cited and supports(text, list(texts)) == UNVERIFIABLE):
            continue
        counted["statements"] += 1
        counted["citations"] += len(cited)
        if cited:
            counted["cited_statements"] += 1
            counted["unsupported"] += together != SUPPORTED
        if together != SUPPORTED:
            continue
        counted["recall"] += 1
        for source in cited:
            rest = [s for s in cited if s != source]
            if supports(text, [source]) == SUPPORTED or not rest or supports(text, rest) != SUPPORTED:
                counted["relevant"] += 1
    return counted


def summarise_alce(counts: list[dict[str, int]]) -> dict[str, Any]:
    """Recall and precision over all statements and citations of a variant (micro-averaged), unsupported share."""
    total = {key: sum(c[key] for c in counts) for key in counts[0]} if counts else {}
    if not total:
        return {}
    return {
        "statements": total["statements"],
        "citation_recall": total["recall"] / total["statements"] if total["statements"] else None,
        "citation_precision": total["relevant"] / total["citations"] if total["citations"] else None,
        "unsupported_share": total["unsupported"] / total["cited_statements"] if total["cited_statements"] else None,
    }


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def attack_outcomes(answer: dict[str, Any], attacks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """
    For each attacked sentence: `through` if the displayed answer shows it as the adversary meant (an altered
    claim displayed with a citation; a copied claim displayed citing a paper other than its source), `repaired`
    if displayed citing its true source after the model cited another (or none), `removed` if reported removed,
    `absent` otherwise (left out: the answer quoted passages, or the sentence lost its citation).
    """
    displayed: dict[str, set[str]] = {}
    for citation in answer.get("citations", []):
        displayed.setdefault(_words(citation["claim"]), set()).add(citation["source_id"])
    removed = {_words(r["text"]) for r in answer.get("removed_claims", [])}
    outcomes = []
    for attack in attacks:
        key = _words(attack["text"])
        shown = displayed.get(key)
        if shown:
            if attack["kind"] in ALTERING or shown - {attack["true_source"]}:
                outcome = "through"
            else:
                outcome = "repaired" if shown != set(attack["cited"]) else "kept"
        else:
            outcome = "removed" if key in removed else "absent"
        outcomes.append({"kind": attack["kind"], "outcome": outcome})
    return outcomes


def claim_judge(spec: str) -> Any:
    """The judge `pmc-rag eval --claim-judge` names: `lexical`, `nli:MODEL` or `ollama:MODEL`."""
    kind, _, model = spec.partition(":")
    if kind == "lexical" and not model:
        from pmc_rag.components.lexical_support_judge import LexicalSupportJudge

        return LexicalSupportJudge()
    if kind == "nli" and model:
        from pmc_rag.components.nli_support_judge import CrossEncoderNLIJudge

        return CrossEncoderNLIJudge(model=model)
    if kind == "ollama" and model:
        from pmc_rag.components.ollama_support_judge import OllamaSupportJudge

        return OllamaSupportJudge(model=model)
    raise ValueError(f"--claim-judge {spec!r}: use lexical, nli:MODEL or ollama:MODEL")
