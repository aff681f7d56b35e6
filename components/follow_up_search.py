"""A second search for questions whose first results name what must be looked up next."""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any

from haystack import Document, component, default_to_dict
from haystack.core.serialization import component_from_dict, component_to_dict

from pmc_rag.components.citations import canonical_id, content_words
from pmc_rag.components.section_kinds import is_readable_evidence

# What a drug, gene, mutation or trial looks like in text: a drug suffix, or capitals and digits together.
_DRUG = re.compile(r"^[a-z]{3,}(?:tinib|rafenib|ciclib|parib|mab|cillin|mycin|cycline|floxacin|quinolones?|azole|"
                   r"pril|sartan|statin|parin|olol|dipine|prazole|vir|platin|taxel|rubicin|ionamide|formin|"
                   r"glitazone|gliptin|lukast|terol|methasone|nisone|olone|codone|morphine|caine|zepam|azepine|"
                   r"xetine|pramine|barbital)$")
_CODE = re.compile(r"^(?=.*[A-Z])(?=.*\d)[A-Za-z0-9-]{3,}$|^[A-Z]{3,}[a-z]?$")
# "that mutation", "those genes": the follow-up asks about a code-like name, not a drug.
_CODE_POINTER = re.compile(r"\b(?:mutations?|genes?|markers?|variants?|alleles?|trials?|proteins?|receptors?)\b",
                           re.IGNORECASE)
# "that cohort", "those genes": the word the follow-up points at. A name the text puts just before it ("the MultiCare
# cohort", "EGFR mutations", "the MDRD equation") is a name of that kind.
_POINTED = re.compile(r"\b(?:that|those|this|these|the same)\s+([a-z]+)", re.IGNORECASE)
# Beside that word, a name: "MultiCare", "Cockcroft-Gault", an enzyme ("cutinase"); not any capitalised word
# ("Belonging", the first word of a sentence).
_PROPER = re.compile(r"^[A-Z][a-z]+[A-Z-]|^[a-z]{3,}ase$")
# "that drug", "that inhibitor": only a drug's name will do ("EGFR" is no answer to "that drug").
_DRUG_POINTER = re.compile(r"\b(?:drugs?|medicines?|medications?|inhibitors?|agents?)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]{2,}")
# Capitals that name no drug, gene or trial: file types of supporting information ("(DOC)"), statistics, places,
# bibliographic databases, Roman numerals ("stage III").
_NOT_NAMES = set("""DOC DOCX PDF XLS XLSX TIF TIFF PNG PPT ZIP TXT CSV XML HTML
CI OR HR RR SD SE SEM IQR AUC ROC ICC PPV NPV NNT SMD BMI ANOVA USA UK WHO NIH FDA DNA RNA PCR
MEDLINE EMBASE PUBMED CINAHL COCHRANE III IIIA IIIB IIIC VII VIII XII""".split())
# Assays, imaging and rating scales: how a study measured, not what it is about ("ELISA" is no answer to "What
# pathogen did the study look for ... how is it transmitted?"), unless the question asks for a method.
_METHOD_NAMES = set("""ELISA QPCR RT-PCR RT-QPCR FISH IHC MRI FMRI CT PET SPECT ECG EKG EEG HPLC
PHQ-9 PHQ9 GAD-7 HADS EQ-5D EQ-VAS SF-36 SF-12 BDI BDI-II HAMD HAM-D MADRS MMSE MOCA VAS""".split())
_METHOD_KIND = re.compile(r"^(?:questionnaire|scale|instrument|test|assay|method|equation|score|measure|technique|"
                          r"tool|index|survey)s?$", re.IGNORECASE)
# "What pathogen did ... look for, and how is it transmitted?": with no "that <kind>" in the follow-up, the kind
# of thing is the one the first part asks for.
_ASKED_KIND = re.compile(r"^\s*(?:what|which)\s+([a-z]+)\b", re.IGNORECASE)


@component
class FollowUpSearch:
    """
    For a question in two steps ("Which drug did the FIELT trial test, and what do other papers report about that
    drug?"), finds in the first step's excerpts the thing the second step asks about ("erlotinib") and searches
    again for it, in other papers; then again from those results, up to `max_searches` searches in all or
    `time_budget_s`, whichever comes first. A name no other paper mentions is no lead: the next search tries the
    next name of the same results. It stops early when the results name nothing new.

    What the first excerpts name is chosen among the words of the best paper's title and excerpts that the
    question does not use: a word that reads as a drug name (by its suffix), else as a gene, mutation or trial
    name (capitals, with digits; these first when the follow-up asks about a mutation, gene or marker), the one
    used most, among those the index knows (the BM25 retriever's `word_shares`). Only
    chunks that contain it count as found. The excerpts found are
    added after the first ones (they are retrieved, so they may be cited; nothing else can be), and `steps` says
    in words what each search looked for and found: the answer shows it in its notes.

    When the question named its paper (`read_paper`), the first excerpts are that paper's passages, read rather
    than searched for, and the notes say so ("Step 1: read the paper the question names, PMC4816447 ...").

    Without `follow_up` (every other kind of question) the excerpts pass as they are and nothing is searched.

    Usage:
    ```python
    from pmc_rag.components.follow_up_search import FollowUpSearch

    search = FollowUpSearch(retriever=PgvectorBM25Retriever(document_store=store, top_k=3), max_searches=2)
    search.run(documents=first_excerpts, question="Which drug did the FIELT trial test, and ...",
               follow_up="what do other papers report about that drug?")
    # {"documents": [...first, ...found], "steps": ["Search 1: ... Search 2: 'erlotinib' ..."]}
    ```
    """

    def __init__(self, *, retriever: Any, max_searches: int = 2, time_budget_s: float = 5.0, per_search: int = 3,
                 max_documents: int = 8):
        """
        :param retriever: A text retriever (`run(query, filters, top_k)`) that also returns `word_shares`:
            `PgvectorBM25Retriever`.
        :param max_searches: Searches in all, the question's own first search included (at least 2 to do anything).
        :param time_budget_s: No further search starts once this much time has gone.
        :param per_search: Chunks kept from each further search.
        :param max_documents: The most excerpts passed on.
        """
        self.retriever = retriever
        self.max_searches = max_searches
        self.time_budget_s = time_budget_s
        self.per_search = per_search
        self.max_documents = max_documents

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, retriever=component_to_dict(self.retriever, "retriever"),
                               max_searches=self.max_searches, time_budget_s=self.time_budget_s,
                               per_search=self.per_search, max_documents=self.max_documents)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FollowUpSearch:
        parameters = dict(data["init_parameters"])
        retriever = parameters["retriever"]
        from haystack.core.serialization import import_class_by_name

        parameters["retriever"] = component_from_dict(import_class_by_name(retriever["type"]), retriever,
                                                      "retriever")
        return cls(**parameters)

    def warm_up(self) -> None:
        if hasattr(self.retriever, "warm_up"):
            self.retriever.warm_up()

    @component.output_types(documents=list[Document], steps=list[str], looked_up=list[str])
    def run(self, documents: list[Document], question: str = "", follow_up: str | None = None,
            read_paper: str | None = None, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        :param documents: The first search's excerpts, best first.
        :param question: The whole question (its words are not what is looked up).
        :param follow_up: The question's second step (`QuestionRouter`, route `multi_step`); none: no search.
        :param read_paper: The paper the first step read instead of searching (`PaperReader`'s `paper_id`), when
            the question named it.
        :param filters: The request's filters (a year range, a collection): the further searches keep to them.
        :returns: `documents`: the first search's excerpts, then those of the further searches; `steps`: each
            search in words; `looked_up`: the names searched for in other papers, found there or not.
        """
        if not follow_up or not documents:
            return {"documents": documents, "steps": [], "looked_up": []}
        started = time.monotonic()
        found = list(documents)
        papers = {canonical_id(str(d.meta.get("source_id", ""))) for d in documents}
        asked = content_words(question)
        steps = [f"Step 1: read the paper the question names, {canonical_id(read_paper)} ({len(documents)} "
                 f"passage(s): its abstract and findings first)." if read_paper else
                 f"Search 1: the question's first part found {len(papers)} paper(s) ({', '.join(sorted(papers))})."]
        latest = documents
        looked_up: list[str] = []
        pointed = _POINTED.search(follow_up) or _ASKED_KIND.search(question)
        wanted = {"kind": pointed.group(1) if pointed else None, "codes_first": bool(_CODE_POINTER.search(follow_up)),
                  "drugs_only": bool(_DRUG_POINTER.search(follow_up))}
        for number in range(2, self.max_searches + 1):
            if time.monotonic() - started > self.time_budget_s:
                steps.append(f"Search {number} was not made: the time budget ({self.time_budget_s:g} s) was spent.")
                break
            name = self._named_thing(latest, asked, **wanted)
            if name is None:
                steps.append(f"Search {number} was not made: the results name nothing new to look up.")
                break
            asked |= content_words(name)
            # The name alone is searched: with the follow-up's words ("other papers report"), other subjects won.
            other_papers = {"operator": "AND", "conditions": [
                {"field": "meta.source_id", "operator": "not in", "value": sorted(papers)},
                *([filters] if filters else [])]}
            results = self.retriever.run(query=name, filters=other_papers, top_k=self.per_search)["documents"]
            # a figure caption is not what a paper reports (issue 32)
            new = [d for d in results if is_readable_evidence(d)
                   and _mentions(f"{d.meta.get('title') or ''} {d.content or ''}", name)]
            steps.append(f"Search {number}: {name!r} (named by the " + ("first" if latest is documents else "new")
                         + " results) in other papers: " + (f"found {len(new)} excerpt(s) from " + ", ".join(
                             sorted({canonical_id(str(d.meta.get('source_id', ''))) for d in new})) + "."
                            if new else "found no other paper that mentions it."))
            looked_up.append(name)
            if new:
                found += new
                papers |= {canonical_id(str(d.meta.get("source_id", ""))) for d in new}
                latest = new
            # else a name no other paper mentions leads nowhere: the next search tries the next name the same
            # results use ("EGFRex20ins", then "EGFR")
        return {"documents": found[: self.max_documents], "steps": [" ".join(steps)], "looked_up": looked_up}

    def _named_thing(self, documents: list[Document], asked: set[str], *, kind: str | None = None,
                     codes_first: bool = False, drugs_only: bool = False) -> str | None:
        """The drug, gene, mutation, cohort or trial name that the best paper's title and excerpts use most and the
        question does not, among those the index knows; None when there is none. First a name the text puts just
        before the `kind` of thing the follow-up points at ("EGFR" of "EGFR mutations" for "that mutation"); then
        drug names, then code-like names (the other way round with `codes_first`). `drugs_only`: a drug's name or
        nothing."""
        top = canonical_id(str(documents[0].meta.get("source_id", "")))
        text = " ".join([str(documents[0].meta.get("title") or "")] + [
            d.content or "" for d in documents if canonical_id(str(d.meta.get("source_id", ""))) == top])
        # another spelling of a word asked or looked up ("EGFRexon20ins" after "EGFRex20ins") is no new name
        tried = {w.lower()[:6] for w in asked if len(w) >= 6}
        not_names = _NOT_NAMES if kind and _METHOD_KIND.match(kind) else _NOT_NAMES | _METHOD_NAMES
        words = [w for w in _WORD.findall(text) if w.upper() not in not_names and not content_words(w) <= asked
                 and not (len(w) >= 6 and w.lower()[:6] in tried)]
        drugs = Counter(w.lower() for w in words if _DRUG.match(w.lower()))
        codes = Counter(w for w in words if _CODE.match(w))
        eligible = set(words)
        beside = Counter(w for w in _words_before(text, kind) if w in eligible and (
            _DRUG.match(w.lower()) or (not drugs_only and (_CODE.match(w) or _PROPER.match(w)))))
        by_kind = [[w for w, _ in drugs.most_common(5)], [] if drugs_only else [w for w, _ in codes.most_common(5)]]
        candidates = list(dict.fromkeys([w for w, _ in beside.most_common(3)]
                                        + (by_kind[1] + by_kind[0] if codes_first else by_kind[0] + by_kind[1])))
        if not candidates:
            return None
        shares = self.retriever.run(query=" ".join(candidates), top_k=1).get("word_shares", {})
        known = [w for w in candidates if 0 < shares.get(w.lower(), shares.get(w, 0))]
        return known[0] if known else None


def _words_before(text: str, kind: str | None, span: int = 2) -> list[str]:
    """The words up to `span` before each use of the word `kind` (singular or plural) in the text."""
    if not kind:
        return []
    stem = kind.lower().rstrip("s")
    tokens = _WORD.findall(text)
    return [w for i, token in enumerate(tokens) if token.lower().rstrip("s") == stem
            for w in tokens[max(0, i - span):i]]


def _mentions(text: str, name: str) -> bool:
    """Whether the text names it: a code-like name as written ("EGFR" is not "eGFR"), a drug in any case."""
    if _CODE.match(name):
        return re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text) is not None
    return name.lower() in text.lower()
