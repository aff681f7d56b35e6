"""Two `pmc-rag eval` runs of rag.yml on the same questions, side by side: the gold-based trust figures, the gold
paper cited, prompt length and timings, and how many answers differ.

    python evaluation/results/2026-11-26-gap-per-paper/compare.py BEFORE/results.json AFTER/results.json
"""
import json
import statistics
import sys


def load(path):
    variant = json.load(open(path))["variants"]["rag"]
    return {r["id"]: r for r in variant["records"]}, variant["summary"].get("trust", variant["summary"])


def main(before_path, after_path):
    (before, before_trust), (after, after_trust) = load(before_path), load(after_path)
    print("| | before | after |\n|---|---:|---:|")
    for key in ("wrong_verdicts_shown", "verdicts_shown", "uncited_sentences_shown", "questions_shown_as_claims",
                "not_answered", "quotation_answers", "quotation_share", "quotation_answers_quoting_gold_findings"):
        print(f"| {key} | {before_trust.get(key)} | {after_trust.get(key)} |")
    for name, pick in (("gold paper cited", lambda r: r["citations"].get("cites_gold", False)),):
        print(f"| {name} | {sum(map(pick, before.values())) / len(before):.2f} | "
              f"{sum(map(pick, after.values())) / len(after):.2f} |")
    for name, pick in (("prompt tokens p50", lambda r: (r.get("usage") or {}).get("prompt_tokens")),
                       ("first token p50 (ms)", lambda r: r.get("first_token_ms")),
                       ("answer p50 (ms)", lambda r: r["timings_ms"]["total"])):
        values = [[v for v in map(pick, run.values()) if v] for run in (before, after)]
        print(f"| {name} | {statistics.median(values[0]):.0f} | {statistics.median(values[1]):.0f} |")
    differ = sum(before[k]["answer"] != after.get(k, {}).get("answer") for k in before)
    print(f"\nanswers that differ: {differ} of {len(before)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
