"""`pmc-rag eval --crisis`: misses and false alarms of the crisis check on the labelled messages, per set.

A miss (a crisis answered as research) is worse than a false alarm, so misses are listed in full. Each set is
reported twice: the rules alone, and the rules with the exemplar layer (which never sees the held-aside set
`fresh_4`; the other sets are its exemplars, so on them it is measured on what it was built from). The 250
odd-numbered PubMedQA dev questions, none of them a crisis and none an exemplar (the even-numbered ones are), are
a further check of false alarms.

A message may also be *possible* danger: answered, with a crisis line on top (`CrisisDecision.possible`). A crisis
given only that line is counted apart (`possible only`), not as a miss; a research message given it is a false
alarm of the milder kind (`crisis line`), counted apart from the false emergency replies.

    python -m pmc_rag.evaluation.crisis --train     # retrain the classifier (components/resources/crisis_classifier.json)
    python -m pmc_rag.evaluation.crisis --left-out  # each tuning set judged by a classifier and exemplars without it

On the sets it learned from, the check is near-perfect by construction. `--left-out` measures each tuning set (and
the plain-language tuning half) with a classifier and an exemplar layer trained without that set, the words alone
beside words and meaning: the tuning figure a new wording would see. The held-aside sets take no part.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from pmc_rag.answering.crisis import check_crisis, check_crisis_by_rules, check_crisis_read_in_english, normalise
from pmc_rag.answering.crisis_exemplars import HELD_ASIDE_SETS, ExemplarLayer, labelled_messages, research_exemplars

# Held aside and never read message by message: its figures are reported, its failures not listed.
SEALED_SETS = {"fresh_5", "fresh_6", "fresh_7", "fresh_8", "fresh_9", "chat_held_aside"}


def learned_by_the_classifier(row: dict[str, Any]) -> bool:
    """Everyday chat written by others (everyday_chat.json) is an exemplar, not the classifier's lesson: learned by
    the classifier (2026-11-29) it cut the everyday messages flagged (sealed chat: 167 -> 63 of 770) but missed
    more crises (left out 4 -> 5 of 334 at the best threshold; sealed 1 -> 4 of 122)."""
    return not str(row.get("set", "")).startswith("chat_")


def run_crisis(progress: bool = True, exemplars: ExemplarLayer | None = None,
               translations: dict[str, str] | None = None) -> dict[str, Any]:
    """Every labelled message (and every PubMedQA dev question, the odd-numbered ones as set `pubmedqa_dev_odd`)
    through both checks; counts per set and check, the misses and false alarms, and the check's time per message.

    :param translations: Message -> its English translation (`crisis_translations`): the layered check reads a
        translated message both ways, as the answering service does. None: as typed only."""
    from pmc_rag.evaluation.questions import load_questions
    from pmc_rag.paths import DEV_QUESTIONS

    layer = exemplars or ExemplarLayer.load()
    messages = labelled_messages() + [
        {"text": q.question, "label": "research", "set": "pubmedqa_dev_odd"}
        for q in load_questions(DEV_QUESTIONS)[1::2]]
    counts: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    wrong: list[dict[str, Any]] = []
    times_ms: list[float] = []
    for number, message in enumerate(messages, 1):
        crisis = message["label"] == "crisis"
        started = time.perf_counter()
        layered = check_crisis_read_in_english(message["text"], (translations or {}).get(message["text"]),
                                               exemplars=layer)
        times_ms.append((time.perf_counter() - started) * 1000)
        for check, decision in (("rules", check_crisis_by_rules(message["text"])),
                                ("rules + exemplars + classifier", layered)):
            tally = counts[message["set"]][check]
            tally["crises" if crisis else "not_crises"] += 1
            if decision.possible:
                tally["possible_only" if crisis else "crisis_lines"] += 1
                if crisis:
                    continue
            if decision.crisis != crisis:
                tally["misses" if crisis else "false_alarms"] += 1
                wrong.append({"set": message["set"], "check": check, "label": message["label"],
                              "text": message["text"], "reason": decision.reason})
        if progress and number % 100 == 0:
            print(f"  {number}/{len(messages)} messages", flush=True)
    times_ms.sort()
    return {"counts": {s: {c: dict(t) for c, t in checks.items()} for s, checks in counts.items()},
            "wrong": [w for w in wrong if w["set"] not in SEALED_SETS], "held_aside_sets": sorted(HELD_ASIDE_SETS),
            "sealed_sets": sorted(SEALED_SETS),
            "time_ms": {"p50": times_ms[len(times_ms) // 2], "p95": times_ms[int(len(times_ms) * 0.95)],
                        "max": times_ms[-1]}}


def crisis_markdown(report: dict[str, Any]) -> str:
    lines = ["| set | check | misses | crises given only the crisis line | false emergency replies | "
             "research given the crisis line |", "|---|---|---:|---:|---:|---:|"]
    for name, checks in report["counts"].items():
        aside = " (held aside)" if name in report["held_aside_sets"] else ""
        for check, t in checks.items():
            lines.append(f"| {name}{aside} | {check} | {t.get('misses', 0)} of {t.get('crises', 0)} | "
                         f"{t.get('possible_only', 0)} | {t.get('false_alarms', 0)} of {t.get('not_crises', 0)} | "
                         f"{t.get('crisis_lines', 0)} |")
    timing = report["time_ms"]
    lines += ["", f"Time per message (the whole check): p50 {timing['p50']:.1f} ms, p95 {timing['p95']:.1f} ms, "
                  f"max {timing['max']:.1f} ms", ""]
    sealed = set(report.get("sealed_sets", []))
    if sealed:
        lines.append(f"(The messages of {', '.join(sorted(sealed))} are not listed: sealed sets are not read, so "
                     "that no rule is written from their failures.)")
    for item in report["wrong"]:
        if item["check"] == "rules + exemplars + classifier" and item["set"] not in sealed:
            kind = "MISSED" if item["label"] == "crisis" else "false alarm"
            lines.append(f"- {kind} ({item['set']}): {item['text']!r} ({item['reason']})")
    return "\n".join(lines)


# Research questions in people's own words that the classifier learns from and the exemplars do not hold (a
# patient's question sits near the conversational crises in meaning): their sets, by question file.
PEOPLES_QUESTIONS = {"plain_language_questions.json": "plain_tuning"}


def peoples_questions() -> list[dict[str, Any]]:
    """`PEOPLES_QUESTIONS` as labelled rows (research, with their set's name)."""
    from pmc_rag.evaluation.plain_questions import DATASETS
    from pmc_rag.evaluation.plain_questions import load as load_plain

    return [{"text": q["question"], "label": "research", "set": name, "category": None}
            for file, name in PEOPLES_QUESTIONS.items() for q in load_plain(DATASETS / file) if q["set"] == name]


def training_messages() -> tuple[list[str], list[bool], str]:
    """What the classifier learns from: the labelled messages less the held-aside sets, the even-numbered PubMedQA
    dev questions and the tuning half of the plain-language questions (research, however personal)."""
    rows = [m for m in labelled_messages() if m["set"] not in HELD_ASIDE_SETS and learned_by_the_classifier(m)]
    rows += research_exemplars()
    rows += peoples_questions()
    about = (f"{len(rows)} messages: crisis_messages.json less {sorted(HELD_ASIDE_SETS)}, the even-numbered PubMedQA "
             "dev questions, plain_language_questions.json plain_tuning (everyday_chat.json: exemplars only)")
    return [normalise(r["text"]) for r in rows], [r["label"] == "crisis" for r in rows], about


# The classifier as the crisis check uses it: words, and meaning where the message is English (`crisis.py`).
SHIPPED_KIND = "words + meaning in English"
READ_IN_ENGLISH_KIND = SHIPPED_KIND + ", translations read too"


def run_left_out(layer: ExemplarLayer, translations: dict[str, str] | None = None) -> dict[str, dict[str, int]]:
    """Per tuning set and classifier kind (`words`, `words + meaning`, ...): how its crises and research messages
    were answered (`emergency`, `line`, `none`) by a check whose classifier and exemplars never saw that set; with
    `translations`, the shipped kind also reading each translated message in English (`READ_IN_ENGLISH_KIND`)."""
    import tempfile
    from pathlib import Path

    import numpy as np

    import pmc_rag.answering.crisis as crisis
    from pmc_rag.answering.crisis_classifier import CrisisClassifier, train_crisis_classifier
    rows = [m for m in labelled_messages() if m["set"] not in HELD_ASIDE_SETS] + peoples_questions()
    always = research_exemplars()
    # each text embedded once, not once per fold: normalised as the classifier reads it, as typed for the exemplars
    meanings = {text: layer.meaning(text) for row in rows + always
                for text in (normalise(row["text"]), row["text"])}
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    shipped, english_only = crisis.shipped_crisis_classifier, crisis.MEANING_IN_ENGLISH_ONLY
    try:
        for left_out in sorted({r["set"] for r in rows}):
            kept = [r for r in rows if r["set"] != left_out] + always
            learned = [r for r in kept if learned_by_the_classifier(r)]
            texts = [normalise(r["text"]) for r in learned]
            exemplars = [r for r in kept if r.get("set") not in PEOPLES_QUESTIONS.values()]
            fold_layer = ExemplarLayer(layer.meaning_of_each, [r["text"] for r in exemplars],
                                       [r["label"] == "crisis" for r in exemplars],
                                       [r.get("category") for r in exemplars], model=layer.model,
                                       vectors=np.vstack([meanings[r["text"]] for r in exemplars]))
            for kind, with_meaning in (("words", False), ("words + meaning", True), (SHIPPED_KIND, True)):
                crisis.MEANING_IN_ENGLISH_ONLY = kind == SHIPPED_KIND
                path = train_crisis_classifier(
                    texts, [r["label"] == "crisis" for r in learned], path=Path(tempfile.mkdtemp()) / "c.json",
                    meanings=np.vstack([meanings[t] for t in texts]) if with_meaning else None,
                    meaning_model=layer.model)
                classifier = CrisisClassifier(path)
                crisis.shipped_crisis_classifier = lambda c=classifier: c
                for row in rows:
                    if row["set"] != left_out:
                        continue
                    label = "crisis" if row["label"] == "crisis" else "research"
                    decisions = {kind: check_crisis(row["text"], exemplars=fold_layer)}
                    if translations is not None and kind == SHIPPED_KIND:
                        decisions[READ_IN_ENGLISH_KIND] = check_crisis_read_in_english(
                            row["text"], translations.get(row["text"]), exemplars=fold_layer)
                    for name, decision in decisions.items():
                        got = "emergency" if decision.crisis else "line" if decision.possible else "none"
                        counts[f"{left_out} | {name}"][f"{label} {got}"] += 1
    finally:
        crisis.shipped_crisis_classifier = shipped
        crisis.MEANING_IN_ENGLISH_ONLY = english_only
    return {key: dict(value) for key, value in counts.items()}


def totals_by_kind(counts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """`run_left_out`'s counts summed over the sets, per classifier kind."""
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for key, tally in counts.items():
        for name, value in tally.items():
            totals[key.split(" | ")[1]][name] += value
    return totals


def left_out_markdown(counts: dict[str, dict[str, int]]) -> str:
    lines = ["| set left out | classifier | crises missed | crises given only the crisis line | research given the "
             "emergency reply | research given the crisis line |", "|---|---|---:|---:|---:|---:|"]
    totals = totals_by_kind(counts)
    for key, tally in [(k, counts[k]) for k in sorted(counts)] + [(f"all | {k}", totals[k]) for k in sorted(totals)]:
        crises = sum(v for n, v in tally.items() if n.startswith("crisis"))
        research = sum(v for n, v in tally.items() if n.startswith("research"))
        left_out, kind = key.split(" | ")
        lines.append(f"| {left_out} | {kind} | {tally.get('crisis none', 0)} of {crises} | "
                     f"{tally.get('crisis line', 0)} | {tally.get('research emergency', 0)} of {research} | "
                     f"{tally.get('research line', 0)} |")
    return "\n".join(lines)


def beside_markdown(report: dict[str, Any], left_out: dict[str, dict[str, int]], kind: str = SHIPPED_KIND) -> str:
    """Tuning beside held aside, the figure that matters being the gap: the tuning sets as judged left out (by the
    shipped kind of classifier, `kind`), the held-aside sets and the odd PubMedQA half as the shipped check judges
    them."""
    tuning = totals_by_kind(left_out)[kind]
    held: dict[str, int] = defaultdict(int)
    for name, checks in report["counts"].items():
        if name in report["held_aside_sets"] or name == "pubmedqa_dev_odd":
            for figure, value in checks["rules + exemplars + classifier"].items():
                held[figure] += value
    crises = sum(v for n, v in tuning.items() if n.startswith("crisis"))
    others = sum(v for n, v in tuning.items() if n.startswith("research"))
    rows = [("crises missed", tuning["crisis none"], crises, held["misses"], held["crises"]),
            ("crises given only the crisis line", tuning["crisis line"], crises, held["possible_only"], held["crises"]),
            ("others given the emergency reply", tuning["research emergency"], others, held["false_alarms"],
             held["not_crises"]),
            ("others given the crisis line", tuning["research line"], others, held["crisis_lines"], held["not_crises"])]
    return "\n".join(["| figure | tuning, each set left out | held aside |", "|---|---:|---:|"] + [
        f"| {name} | {a} of {n} ({a / max(n, 1):.1%}) | {b} of {m} ({b / max(m, 1):.1%}) |"
        for name, a, n, b, m in rows])


def crisis_report(left_out: bool = False, read_in_english: bool = False, progress: bool = True
                  ) -> tuple[dict[str, Any], str]:
    """`pmc-rag eval --crisis`'s report and its tables: every set (`run_crisis`); with `left_out`, each tuning set
    judged left out and tuning beside held aside; with `read_in_english`, each message in another language read
    in English too (translated first where not yet kept: the pipeline's model must be running)."""
    from pmc_rag.evaluation.crisis_translations import translate_all

    layer = ExemplarLayer.load()
    translations = translate_all([m["text"] for m in labelled_messages()], progress=progress) \
        if read_in_english else None
    report = run_crisis(progress=progress, exemplars=layer, translations=translations)
    report["read_in_english"] = read_in_english
    table = crisis_markdown(report)
    if left_out:
        report["left_out"] = run_left_out(layer, translations)
        kind = READ_IN_ENGLISH_KIND if read_in_english else SHIPPED_KIND
        table += ("\n\nEach tuning set judged by a classifier and exemplars trained without it:\n\n"
                  + left_out_markdown(report["left_out"]) + f"\n\nTuning beside held aside ({kind}):\n\n"
                  + beside_markdown(report, report["left_out"], kind))
    return report, table


def main(argv: list[str] | None = None) -> int:
    import argparse

    from pmc_rag.answering.crisis_classifier import train_crisis_classifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", action="store_true", help="retrain the classifier, then report")
    parser.add_argument("--left-out", action="store_true",
                        help="judge each tuning set with a classifier and exemplars trained without it")
    parser.add_argument("--read-in-english", action="store_true",
                        help="read each message in another language in English too (`pmc-rag model start` first)")
    args = parser.parse_args(argv)
    if args.left_out:
        print(crisis_report(left_out=True, read_in_english=args.read_in_english, progress=False)[1])
        return 0
    if args.train:
        import numpy as np

        texts, crises, about = training_messages()
        layer = ExemplarLayer.load()  # the embedding model the crisis check reads meaning with
        meanings = np.vstack([layer.meaning(text) for text in texts])
        path = train_crisis_classifier(texts, crises, about=about, meanings=meanings, meaning_model=layer.model)
        print(f"trained on {len(texts)} messages -> {path}")
    print(crisis_report(read_in_english=args.read_in_english)[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
