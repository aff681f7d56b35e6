"""Expands medical abbreviations in a question before retrieval ("MI" -> "MI (myocardial infarction)")."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from haystack import component, default_from_dict, default_to_dict

from pmc_rag.components.citations import content_words

RESOURCES = Path(__file__).resolve().parent / "resources"
DEFAULT_LISTS = ["medical_abbreviations.tsv", "diabetes_abbreviations.tsv"]
_TOKEN = re.compile(r"(?<![\w-])([A-Za-z][A-Za-z0-9-]*[A-Z0-9][A-Za-z0-9-]*)(?![\w-])")


@component
class AbbreviationExpander:
    """
    Adds the meaning after each abbreviation it knows, so that both retrieval legs can match either form.

    Only tokens with a capital letter or digit after the first character are considered, and they are matched
    case-sensitively, so ordinary words are never "expanded". Ambiguity is handled deliberately:

    * one known meaning: expanded;
    * several (454 abbreviations in the list, e.g. MI, DM, ACS): the sense pinned in `preferred_senses` if there
      is one; otherwise the single sense whose words also occur in the rest of the question; otherwise the
      abbreviation is left as it is, because a wrong expansion would steer retrieval away from the answer.

    The lists are TSV files with `abbreviation` and `meaning` columns, by default the shipped
    `resources/medical_abbreviations.tsv` and `resources/diabetes_abbreviations.tsv` (HbA1c, GDM, SGLT2, GLP-1...).

    Usage:
    ```python
    from pmc_rag.components.abbreviation_expander import AbbreviationExpander

    expander = AbbreviationExpander(preferred_senses={"MI": "myocardial infarction"})
    expander.run(query="Does SGLT2 inhibition lower the risk of MI?")["query"]
    # 'Does SGLT2 (sodium-glucose cotransporter 2) inhibition lower the risk of MI (myocardial infarction)?'
    ```
    """

    def __init__(self, *, lists: list[str] | None = None, preferred_senses: dict[str, str] | None = None):
        """
        :param lists: TSV files to read, as paths or as names of files in `components/resources/`.
        :param preferred_senses: The sense to use for an ambiguous abbreviation, e.g. `{"DM": "diabetes mellitus"}`.
        """
        self.lists = lists or list(DEFAULT_LISTS)
        self.preferred_senses = preferred_senses or {}
        self._senses: dict[str, list[str]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, lists=self.lists, preferred_senses=self.preferred_senses)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AbbreviationExpander:
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if self._senses is not None:
            return
        senses: dict[str, dict[str, None]] = defaultdict(dict)
        for name in self.lists:
            path = Path(name) if Path(name).is_file() else RESOURCES / name
            if not path.is_file():
                raise FileNotFoundError(f"abbreviation list {name} not found (looked for {path})")
            with path.open(encoding="utf-8", newline="") as handle:
                for row in csv.DictReader(handle, delimiter="\t"):
                    abbreviation, meaning = (row.get("abbreviation") or "").strip(), (row.get("meaning") or "").strip()
                    if abbreviation and meaning:
                        senses[abbreviation][meaning.lower()] = None
        self._senses = {abbreviation: list(meanings) for abbreviation, meanings in senses.items()}

    @component.output_types(query=str, expansions=dict[str, str])
    def run(self, query: str) -> dict[str, Any]:
        """
        :param query: The question.
        :returns: `query`: the question with meanings added in brackets; `expansions`: abbreviation -> meaning.
        """
        self.warm_up()
        assert self._senses is not None
        expansions: dict[str, str] = {}
        for token in dict.fromkeys(_TOKEN.findall(query)):
            meaning = self._meaning(token, query)
            if meaning and meaning not in query.lower():
                expansions[token] = meaning
        expanded = _TOKEN.sub(lambda m: f"{m.group(1)} ({expansions[m.group(1)]})" if m.group(1) in expansions
                              else m.group(1), query)
        return {"query": expanded, "expansions": expansions}

    def _meaning(self, token: str, query: str) -> str | None:
        senses = self._senses.get(token, [])
        if len(senses) == 1:
            return senses[0]
        if token in self.preferred_senses:
            return self.preferred_senses[token]
        context = content_words(query.replace(token, " "))
        matching = [sense for sense in senses if content_words(sense) & context]
        return matching[0] if len(matching) == 1 else None
