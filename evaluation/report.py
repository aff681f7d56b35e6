"""What `pmc-rag eval` shows and keeps: markdown tables, a JSON file with every record, and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pmc_rag.evaluation.metrics import CUTOFFS, NDCG_CUTOFF

# Stages slower than this (p50, ms) are listed in the speed table; the rest add little.
NOTABLE_STAGE_MS = 20


def _figure(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def markdown(report: dict[str, Any]) -> str:
    """Retrieval, citations and answers, speed, and verdict confusion matrices, as markdown tables."""
    meta, variants = report["meta"], report["variants"]
    lines = [f"Evaluation of {len(variants)} variant(s) on {meta['questions']} question(s) from "
             f"`{meta['questions_file']}`, {meta['date']}"
             + (" (retrieval only)" if meta["retrieval_only"] else ""), ""]

    header = (["variant", "errors"] + [f"paper R@{k}" for k in CUTOFFS] + ["paper MRR", f"paper nDCG@{NDCG_CUTOFF}"]
              + [f"chunk R@{k}" for k in CUTOFFS] + ["chunk MRR", f"chunk nDCG@{NDCG_CUTOFF}"])
    rows = []
    for name, entry in variants.items():
        if "error" in entry:
            rows.append([name, "not run: " + entry["error"][:160]] + [""] * (len(header) - 2))
            continue
        summary, scores = entry["summary"], entry["summary"]["retrieval"]
        rows.append([name, str(summary["errors"])]
                    + [_figure(scores.get(f"paper_recall@{k}")) for k in CUTOFFS]
                    + [_figure(scores.get("paper_mrr")), _figure(scores.get(f"paper_ndcg@{NDCG_CUTOFF}"))]
                    + [_figure(scores.get(f"chunk_recall@{k}")) for k in CUTOFFS]
                    + [_figure(scores.get("chunk_mrr")), _figure(scores.get(f"chunk_ndcg@{NDCG_CUTOFF}"))])
    lines += ["**Retrieval** (paper: the gold paper among the ranked papers; chunk: the chunk holding the answer)",
              "", *_table(header, rows), ""]

    answering = {n: e for n, e in variants.items() if "citations" in e.get("summary", {})}
    if answering:
        header = ["variant", "answered by", "citation validity", "invalid", "gold cited", "support", "extractive",
                  "verdict acc."]
        if any("faithfulness" in e["summary"] for e in answering.values()):
            header.append("faithfulness")
        rows = []
        for name, entry in answering.items():
            summary = entry["summary"]
            citations, verdicts = summary["citations"], summary.get("verdicts", {})
            validity = citations["validity"]
            bug = " **BUG**" if validity is not None and validity < 1 else ""
            row = [name, ", ".join(summary.get("answered_by", {})), _figure(validity) + bug,
                   str(citations["invalid"]), _figure(citations["gold_cited_rate"]),
                   _figure(citations["support_mean"], 2), _figure(citations["extractive_fallback_rate"]),
                   _figure(verdicts.get("accuracy"))]
            if "faithfulness" in header:
                row.append(_figure(summary.get("faithfulness")))
            rows.append(row)
        lines += ["**Citations and answers**", "", *_table(header, rows), ""]

    trusted = {n: e for n, e in answering.items() if e["summary"].get("trust")}
    if trusted:
        header = ["variant", "verdicts shown", "wrong verdicts shown", "uncited sentences shown",
                  "questions shown as claims", "not answered", "quotation share", "quotations quoting the findings",
                  "model answers stating the findings"]
        rows = []
        for name, entry in trusted.items():
            t = entry["summary"]["trust"]
            rows.append([name, str(t["verdicts_shown"]),
                         f"{t['wrong_verdicts_shown']} ({_figure(t['wrong_verdicts_shown_rate'])})",
                         f"{t['uncited_sentences_shown']} in {t['answers_with_uncited_sentences']} answers",
                         str(t["questions_shown_as_claims"]), str(t["not_answered"]), _figure(t["quotation_share"]),
                         f"{t['quotation_answers_quoting_gold_findings']} of {t['quotation_answers']} "
                         f"({_figure(t['quotation_answers_quoting_gold_findings_rate'])})",
                         f"{t.get('model_answers_stating_gold_findings', 0)} of {t.get('model_answers', 0)} "
                         f"({_figure(t.get('model_answers_stating_gold_findings_rate'))})"])
        lines += ["**What a reader is shown, judged by the gold labels** (independent of the claim checker: wrong "
                  "verdict = a cited answer opening with a yes/no/maybe the gold label contradicts; quotations "
                  "quoting the findings = quoting the gold paper's own conclusion or results; model answers "
                  "stating the findings = the model's cited sentences include one in the words of that conclusion or "
                  "those results)", "",
                  *_table(header, rows), ""]

    checked = {n: e for n, e in answering.items() if "claims" in e["summary"]}
    if checked:
        header = ["variant", "statements", "citation recall", "citation precision", "unsupported", "re-cited",
                  "removed", "attacked", "through", "repaired", "removed (attacks)", "absent"]
        rows = []
        for name, entry in checked.items():
            claims, attacks = entry["summary"]["claims"], entry["summary"].get("attacks", {})
            through = attacks.get("through", 0)
            rows.append([name, str(claims["statements"]), _figure(claims["citation_recall"]),
                         _figure(claims["citation_precision"]), _figure(claims["unsupported_share"]),
                         str(claims["recited"]), str(claims["removed"]),
                         str(attacks.get("attacked", "")), (f"**{through}**" if through else str(through))
                         if attacks else "", str(attacks.get("repaired", "")) if attacks else "",
                         str(attacks.get("removed", "")) if attacks else "",
                         str(attacks.get("absent", "")) if attacks else ""])
        judge = meta.get("claim_judge", {}).get("type", "").rsplit(".", 1)[-1]
        lines += [f"**Claims, as the checker grades itself** (ALCE citation recall and precision, judged by "
                  f"{judge or 'the claim judge'}, which also filtered them; "
                  "unsupported: share of cited statements its citations do not support; attacks: sentences an "
                  "adversarial generator wrote, `through` = displayed as the adversary meant)", "",
                  *_table(header, rows), ""]

    if meta.get("local_models"):
        lines += _models_table(answering)

    header = ["variant", "p50", "p95", "first token p50", "tokens in", "tokens out", "slowest stages (p50 / p95)"]
    rows = []
    for name, entry in variants.items():
        if "summary" not in entry:
            continue
        timings, tokens = entry["summary"]["timings_ms"], entry["summary"].get("tokens", {})
        first_token = entry["summary"].get("streaming", {}).get("first_token_ms", {})
        stages = sorted(((stage, t) for stage, t in timings.items() if stage != "total"
                         and (t["p50"] or 0) >= NOTABLE_STAGE_MS), key=lambda item: -(item[1]["p50"] or 0))
        rows.append([name, _ms(timings.get("total", {}).get("p50")), _ms(timings.get("total", {}).get("p95")),
                     _ms(first_token.get("p50")), _figure(tokens.get("in_mean"), 0), _figure(tokens.get("out_mean"), 0),
                     ", ".join(f"{stage} {_ms(t['p50'])} / {_ms(t['p95'])}" for stage, t in stages[:4])])
    lines += ["**Speed** (per question, one question at a time)", "", *_table(header, rows), ""]

    for name, entry in answering.items():
        verdicts = entry["summary"].get("verdicts")
        if not verdicts:
            continue
        predicted = ["yes", "no", "maybe", "none"]
        rows = [[gold] + [str(verdicts["confusion"][gold][p]) for p in predicted] for gold in ("yes", "no", "maybe")]
        by_class = verdicts.get("accuracy_by_class", {})
        lines += [f"Verdicts of `{name}` (rows: gold, columns: the answer's first word; accuracy per gold class: "
                  + ", ".join(f"{gold} {_figure(by_class.get(gold))}" for gold in ("yes", "no", "maybe")) + ")", "",
                  *_table(["gold \\ answer", *predicted], rows), ""]
    return "\n".join(lines)


def _models_table(answering: dict[str, Any]) -> list[str]:
    """One row per embedded model (`pmc-rag eval --local-models`): what a reader gets from it, and what it costs."""
    header = ["variant", "verdict acc.", "always yes", "wrong verdicts shown", "claims removed", "quotation share",
              "first token p50 / p95", "answer p50 / p95", "tokens/s", "peak memory"]
    rows = []
    for name, entry in answering.items():
        summary = entry["summary"]
        trust, streaming = summary.get("trust", {}), summary.get("streaming", {})
        first, total = streaming.get("first_token_ms", {}), summary["timings_ms"].get("total", {})
        peak = summary.get("model_server_peak_mb")
        rows.append([name, _figure(summary.get("verdicts", {}).get("accuracy")),
                     _figure(summary.get("always_yes_accuracy")),
                     f"{trust.get('wrong_verdicts_shown', '')} ({_figure(trust.get('wrong_verdicts_shown_rate'))})",
                     str(summary.get("claims", {}).get("removed", "")), _figure(trust.get("quotation_share")),
                     f"{_ms(first.get('p50'))} / {_ms(first.get('p95'))}",
                     f"{_ms(total.get('p50'))} / {_ms(total.get('p95'))}",
                     _figure(streaming.get("generation_tokens_per_s"), 1),
                     f"{peak:,.0f} MB" if peak else ""])
    return ["**Embedded models side by side** (the same pipeline and questions; verdict accuracy against the gold "
            "labels, with what always answering \"yes\" would score; claims removed: sentences the claim check "
            "took out; tokens/s: generated, after the first; peak memory: the model server's resident peak)", "",
            *_table(header, rows), ""]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]


def write_json(report: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")


def write_chart(report: dict[str, Any], path: Path) -> None:
    """Bars per variant: retrieval (paper R@5, paper MRR, chunk R@5), answers (gold cited, verdict accuracy),
    and the end-to-end p50 time on a log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ran = {name: entry["summary"] for name, entry in report["variants"].items() if "summary" in entry}
    if not ran:
        return
    names = list(ran)
    panels = [
        ("Retrieval", {"paper R@5": [s["retrieval"].get("paper_recall@5") for s in ran.values()],
                       "paper MRR": [s["retrieval"].get("paper_mrr") for s in ran.values()],
                       "chunk R@5": [s["retrieval"].get("chunk_recall@5") for s in ran.values()]}),
        ("Answers", {"gold paper cited": [s.get("citations", {}).get("gold_cited_rate") for s in ran.values()],
                     "verdict accuracy": [s.get("verdicts", {}).get("accuracy") for s in ran.values()],
                     "extractive fallback": [s.get("citations", {}).get("extractive_fallback_rate")
                                             for s in ran.values()]}),
        ("Speed: p50 per question (s, log)", {"p50": [(s["timings_ms"].get("total", {}).get("p50") or 0) / 1000
                                                      for s in ran.values()]}),
    ]
    figure, axes = plt.subplots(len(panels), 1, figsize=(max(8, 0.9 * len(names) + 3), 11), sharex=True)
    for axis, (title, series) in zip(axes, panels, strict=True):
        width = 0.8 / len(series)
        for i, (label, values) in enumerate(series.items()):
            positions = [x + (i - (len(series) - 1) / 2) * width for x in range(len(names))]
            axis.bar(positions, [v or 0 for v in values], width, label=label)
        axis.set_title(title, loc="left", fontsize=10)
        if title.startswith("Speed"):
            axis.set_yscale("log")
        else:
            axis.set_ylim(0, 1.2)  # headroom for the legend
            axis.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
            axis.legend(fontsize=8, ncol=len(series), loc="upper right")
        axis.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    meta = report["meta"]
    figure.suptitle(f"pmc-rag eval: {meta['questions']} questions, {meta['date']}", fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
