"""Which sentence states a finding: labelled sentences to learn it from, and a held-aside set to check it on.

    python -m pmc_rag.evaluation.finding_sentences             # the table: patterns against the classifier
    python -m pmc_rag.evaluation.finding_sentences --train     # (re)train components/resources/finding_sentences.json
    python -m pmc_rag.evaluation.finding_sentences --floor     # how many findings each classifier floor demotes

The quotation step shows a paper's own finding, and which sentence is one has been decided by hand-written
patterns (`claim_signals.finding_rank`). Here that is learned instead, and measured on material written another way:

- **Tuning set**: the sentences of the bundled PubMed abstracts (`corpus/pubmedqa`, 1,000 structured abstracts),
  each labelled by its abstract section (BACKGROUND, OBJECTIVE, METHODS, RESULTS, CONCLUSIONS and their 130 other
  spellings). Abstracts are split 80/20 by paper: the classifier learns from the 80 and is scored on the 20.
- **Held-aside set**: the sentences of the bundled full-text papers (`corpus/pmc_oa`, `corpus/plos`: 23 papers, none
  of them in the tuning set), labelled by the title of the section they stand in (Introduction, Methods, Results,
  Conclusions, and the abstract's own parts). Sections whose title does not say one kind (Discussion, "Methods and
  Findings", Limitations, summaries) are left out. It was written down (this file's `held_aside_sentences`) and
  scored with the patterns before the classifier existed, and its failures are not read to change either.

A finding is a sentence of a Results or Conclusions section. Both judges see the sentence alone, never its
section's title (which is what labels the set; the answer step knows the title where there is one, but not in a
Discussion, a summary or a user's PDF, where the sentence is all there is).
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pmc_rag.paths import PROJECT_ROOT

CORPUS = PROJECT_ROOT / "corpus"
KINDS = ("background", "method", "result", "conclusion")
FINDING_KINDS = {"result", "conclusion"}

# A section title (or an abstract label) says one kind; titles naming two ("Methods and Results") say none.
_MIXED = re.compile(r"\b(?:methods?|methodology|measurements?|materials?) and (?:main )?(?:results?|findings)\b|"
                    r"\bdo and find\b|\bdiscussion\b|\blimitations?\b|\bsummary\b|\bunlabell?ed\b", re.IGNORECASE)
_TITLE_KINDS = [
    ("conclusion", re.compile(r"conclu|interpretation|implications?\b|significance|what do these (?:findings|"
                              r"results) mean", re.IGNORECASE)),
    ("result", re.compile(r"\bresults?\b|\bfindings\b|\boutcomes?\b(?! measure)", re.IGNORECASE)),
    ("method", re.compile(r"method|design|setting|patients|participants|subjects|materials?\b|interventions?|"
                          r"measure|population|data (?:sources|extraction|synthesis|collection)|study selection|"
                          r"what did the researchers do", re.IGNORECASE)),
    ("background", re.compile(r"background|introduction|objectives?|purposes?|aims?\b|context|hypothes[ie]s|"
                              r"rationale|why was this study done|\bobject\b", re.IGNORECASE)),
]


def section_kind(title: str) -> str | None:
    """The kind of sentence a section of this title holds, or None when it holds several kinds."""
    title = re.sub(r"^(?:abstract|editors' summary|patient summary)\s*:\s*", "", title.strip(), flags=re.IGNORECASE)
    title = title.split(" / ")[0]  # a subsection stands in its section
    if not title or _MIXED.search(title):
        return None
    return next((kind for kind, pattern in _TITLE_KINDS if pattern.search(title)), None)


@dataclass(frozen=True)
class Labelled:
    paper: str
    kind: str
    sentence: str

    @property
    def finding(self) -> bool:
        return self.kind in FINDING_KINDS

    @property
    def its_own_finding(self) -> bool:
        """What the classifier learns: a sentence of a Results or Conclusions section, less those that say what
        others found, what the study could not show, or what future work needs ("Further studies are needed"):
        conclusions hold such sentences, and a quotation must not offer them as the paper's answer. Judged by
        `claim_signals`' existing patterns for others' work, so the classifier can learn the kind from its words
        ("Additional studies ... are necessary") rather than from one more pattern."""
        from pmc_rag.components.claim_signals import not_its_own_finding

        return self.finding and not not_its_own_finding(self.sentence)


def _sentences(text: str) -> Iterator[str]:
    from pmc_rag.components.section_chunker import split_sentences

    for sentence in split_sentences(text):
        if len(sentence.split()) >= 5:  # a heading, a number, "n = 12": no sentence to judge
            yield sentence.strip()


def abstract_sentences(path: Path = CORPUS / "pubmedqa" / "corpus.jsonl") -> list[Labelled]:
    """The tuning set: each abstract sentence with the kind of its labelled section."""
    labelled = []
    for line in path.read_text(encoding="utf-8").splitlines():
        paper = json.loads(line)
        for section in paper["sections"]:
            kind = section_kind(section["label"])
            if kind:
                labelled += [Labelled(paper["pmid"], kind, s) for s in _sentences(section["text"])]
    return labelled


def held_aside_sentences(folders: tuple[Path, ...] = (CORPUS / "pmc_oa", CORPUS / "plos")) -> list[Labelled]:
    """The held-aside set: each full-text paper's sentences with the kind its section's title says."""
    from pmc_rag.ingestion.sources import expand_paths, read_articles
    from pmc_rag.ingestion.xml import IngestError

    files, _ = expand_paths([str(folder) for folder in folders])
    labelled = []
    for path in files:
        for article in read_articles(path):
            if isinstance(article, IngestError):
                continue
            for section in article.sections:
                kind = section_kind(section.title) if section.kind in ("abstract", "body") else None
                if kind:
                    labelled += [Labelled(article.source_id, kind, s) for s in _sentences(section.text)]
    return labelled


def split_by_paper(labelled: list[Labelled], held_share: float = 0.2, seed: int = 61
                   ) -> tuple[list[Labelled], list[Labelled]]:
    """(learn, score): whole papers on each side, the same split every time."""
    papers = sorted({item.paper for item in labelled})
    random.Random(seed).shuffle(papers)
    scored = set(papers[: round(len(papers) * held_share)])
    return [i for i in labelled if i.paper not in scored], [i for i in labelled if i.paper in scored]


def finding_rank_says_finding(sentence: str) -> bool:
    """`finding_rank` on a sentence alone: its rules (aims, captions, others' work), then the classifier."""
    from pmc_rag.components.claim_signals import finding_rank

    return finding_rank(sentence, None) == 2


def scores(truth: list[bool], said: list[bool]) -> dict[str, float]:
    true_positive = sum(t and s for t, s in zip(truth, said))
    precision = true_positive / max(1, sum(said))
    recall = true_positive / max(1, sum(truth))
    return {"accuracy": sum(t == s for t, s in zip(truth, said)) / max(1, len(truth)), "precision": precision,
            "recall": recall, "f1": 2 * precision * recall / max(1e-9, precision + recall)}


def report(judges: dict[str, object], sets: dict[str, list[Labelled]]) -> str:
    """A markdown table: each judge's figures on each set, tuning beside held aside."""
    rows = ["| judge | set | sentences | findings | accuracy | precision | recall | F1 |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, judge in judges.items():
        for set_name, items in sets.items():
            truth = [item.finding for item in items]
            figures = scores(truth, [judge(item.sentence) for item in items])
            rows.append(f"| {name} | {set_name} | {len(items)} | {sum(truth)} | {figures['accuracy']:.3f} | "
                        f"{figures['precision']:.3f} | {figures['recall']:.3f} | {figures['f1']:.3f} |")
    return "\n".join(rows)


def floor_report(sets: dict[str, list[Labelled]], floors: tuple[float, ...] = (0.01, 0.02, 0.03, 0.05, 0.1)) -> str:
    """A markdown table: at each floor, how many findings and other sentences the classifier puts under it (the
    quotation step takes those for an aim, a method or background, whatever their section:
    `claim_signals.NOT_A_FINDING_BELOW`)."""
    from pmc_rag.components.finding_classifier import shipped_classifier

    classifier = shipped_classifier()
    rows = ["| set | floor | findings under it | other sentences under it |", "|---|---:|---:|---:|"]
    for set_name, items in sets.items():
        scored = [(classifier.probability(item.sentence), item.finding) for item in items]
        findings, others = sum(f for _, f in scored), sum(not f for _, f in scored)
        for floor in floors:
            under = sum(p < floor and f for p, f in scored)
            rows.append(f"| {set_name} | {floor:g} | {under} of {findings} ({under / max(1, findings):.1%}) | "
                        f"{sum(p < floor and not f for p, f in scored)} of {others} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", action="store_true", help="train the classifier and write its file first")
    parser.add_argument("--floor", action="store_true", help="only the table of the classifier's floor (how many "
                                                             "findings and other sentences each floor demotes)")
    args = parser.parse_args(argv)
    learn, tuning = split_by_paper(abstract_sentences())
    held_aside = held_aside_sentences()
    if args.floor:
        print(floor_report({"tuning (abstracts held out)": tuning, "held aside (full texts)": held_aside}))
        return 0
    judges: dict[str, object] = {}
    if args.train:
        from pmc_rag.components.finding_classifier import train_finding_classifier

        train_finding_classifier([i.sentence for i in learn], [i.its_own_finding for i in learn])
    try:
        from pmc_rag.components.finding_classifier import FindingClassifier

        classifier = FindingClassifier()
        judges["classifier (finding_sentences.json)"] = classifier.is_finding
        judges["finding_rank: its rules (aims, captions, others' work), then the classifier"] = \
            finding_rank_says_finding
    except (ImportError, FileNotFoundError):
        pass
    print(f"learned from {len(learn)} sentences of {len({i.paper for i in learn})} abstracts")
    print(report(judges, {"tuning (abstracts held out)": tuning, "held aside (full texts)": held_aside}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
