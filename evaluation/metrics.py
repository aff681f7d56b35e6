"""Evaluation metrics: per question, then summed up over a question set. Definitions are in docs/evaluation.md
("Evaluating variants"); each one is tested on small hand-computed cases in tests/evaluation/test_evaluation.py.

Ranking metrics use Haystack's own evaluators (`DocumentRecallEvaluator`, `DocumentMRREvaluator`,
`DocumentNDCGEvaluator`); this module decides what they are given:

- **paper level**: the ranked chunks reduced to papers (each paper at the rank of its best chunk), compared by
  `meta.source_id` with the gold papers;
- **answer-chunk level**: the ranked chunks as they are, compared by chunk id with the chunks that hold the
  answer (for PubMedQA, the chunk(s) of the gold abstract's conclusion).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from haystack import Document
from haystack.components.evaluators import DocumentMRREvaluator, DocumentNDCGEvaluator, DocumentRecallEvaluator
from haystack.components.evaluators.document_recall import RecallMode

from pmc_rag.evaluation.citation_quality import summarise_alce
from pmc_rag.evaluation.questions import VERDICTS

CUTOFFS = (1, 5, 10)
NDCG_CUTOFF = 10

_paper_recall = DocumentRecallEvaluator(mode=RecallMode.MULTI_HIT, document_comparison_field="meta.source_id")
_paper_mrr = DocumentMRREvaluator(document_comparison_field="meta.source_id")
_paper_ndcg = DocumentNDCGEvaluator(document_comparison_field="meta.source_id")
_chunk_recall = DocumentRecallEvaluator(mode=RecallMode.SINGLE_HIT, document_comparison_field="id")
_chunk_mrr = DocumentMRREvaluator(document_comparison_field="id")
_chunk_ndcg = DocumentNDCGEvaluator(document_comparison_field="id")


def papers_in_rank_order(chunks: Sequence[Document]) -> list[Document]:
    """One document per paper, at the rank of its first (best) chunk."""
    seen, papers = set(), []
    for chunk in chunks:
        source_id = chunk.meta.get("source_id")
        if source_id not in seen:
            seen.add(source_id)
            papers.append(chunk)
    return papers


def paper_scores(ranked_chunks: Sequence[Document], gold_source_ids: Sequence[str]) -> dict[str, float]:
    """recall@k (share of the gold papers among the first k papers), MRR and nDCG@10 over papers."""
    papers = papers_in_rank_order(ranked_chunks)
    gold = [Document(content="", meta={"source_id": source_id}) for source_id in dict.fromkeys(gold_source_ids)]
    return _ranking_scores("paper", papers, gold, _paper_recall, _paper_mrr, _paper_ndcg)


def answer_chunk_scores(ranked_chunks: Sequence[Document], answer_chunk_ids: Sequence[str]) -> dict[str, float]:
    """recall@k (1 if any chunk holding the answer is among the first k chunks), MRR and nDCG@10 over chunks."""
    gold = [Document(id=chunk_id, content="") for chunk_id in dict.fromkeys(answer_chunk_ids)]
    return _ranking_scores("chunk", list(ranked_chunks), gold, _chunk_recall, _chunk_mrr, _chunk_ndcg)


def _ranking_scores(level: str, ranked: list[Document], gold: list[Document], recall: Any, mrr: Any,
                    ndcg: Any) -> dict[str, float]:
    scores = {f"{level}_recall@{k}": recall.run([gold], [ranked[:k]])["score"] for k in CUTOFFS}
    scores[f"{level}_mrr"] = mrr.run([gold], [ranked[:max(CUTOFFS)]])["score"]
    scores[f"{level}_ndcg@{NDCG_CUTOFF}"] = ndcg.run([gold], [ranked[:NDCG_CUTOFF]])["score"]
    return scores


def citation_scores(answer: dict[str, Any], gold_source_ids: Sequence[str]) -> dict[str, Any]:
    """For one answer object: how many citations it displays, how many point at an excerpt the model was shown (or,
    in an answer the papers do not answer, one of the related papers' excerpts it quotes), whether a gold paper is
    cited, their mean support, and whether the answer fell back to quoting passages."""
    shown = {source["source_id"] for source in answer.get("sources", [])
             if source.get("in_prompt") or source.get("related")}
    citations = answer.get("citations", [])
    supports = [c["support"] for c in citations if c.get("support") is not None]
    return {
        "citations": len(citations),
        "citations_valid": sum(c["source_id"] in shown for c in citations),
        "cites_gold": any(r["source_id"] in gold_source_ids for r in answer.get("references", [])),
        "support_mean": statistics.fmean(supports) if supports else None,
        "extractive_fallback": bool(answer.get("flags", {}).get("extractive_fallback")),
    }


# "No" opens a verdict only when punctuation follows ("No, ...", "**No**."): "No technical problems were found"
# (a quoted finding) answers nothing with its first word.
_VERDICT = re.compile(r"^\W*(?:(yes|maybe)\b|(no)(?=\W*?[,.;:!\-\u2013\u2014]|\W*$))", re.IGNORECASE)


def predicted_verdict(answer_text: str) -> str | None:
    """The yes/no/maybe the displayed answer starts with (the prompt asks for one first), or None."""
    match = _VERDICT.match(answer_text or "")
    return (match.group(1) or match.group(2)).lower() if match else None


def confusion_matrix(pairs: Iterable[tuple[str, str | None]]) -> dict[str, dict[str, int]]:
    """Gold verdict -> predicted verdict (`none`: the answer gave none) -> count."""
    matrix = {gold: {predicted: 0 for predicted in (*VERDICTS, "none")} for gold in VERDICTS}
    for gold, predicted in pairs:
        matrix[gold][predicted or "none"] += 1
    return matrix


def accuracy_by_class(pairs: Iterable[tuple[str, str | None]]) -> dict[str, float | None]:
    """Per gold verdict, the share of its questions answered with it."""
    pairs = list(pairs)
    return {gold: mean(float(predicted == gold) for g, predicted in pairs if g == gold) for gold in VERDICTS}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between closest ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def nearest_rank(values: Sequence[float], share: float) -> float:
    """The value at rank `share` (0-1) of the sorted values, the nearest rank, no interpolation (the benchmarks'
    p95 of a few dozen timings is then one of them)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def summarise(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One variant's figures from its per-question records (see `pmc_rag.evaluation.runner` for a record's fields)."""
    summary: dict[str, Any] = {"questions": len(records), "errors": sum(1 for r in records if r.get("error"))}
    ok = [r for r in records if not r.get("error")]
    retrieval_keys = sorted({k for r in ok for k in r.get("retrieval", {})})
    summary["retrieval"] = {k: mean(r["retrieval"].get(k) for r in ok) for k in retrieval_keys}
    summary["questions_with_answer_chunks"] = sum(1 for r in ok if "chunk_mrr" in r.get("retrieval", {}))
    summary["gold_not_indexed"] = sum(1 for r in ok if not r.get("gold_indexed", True))
    answered = [r for r in ok if "citations" in r]
    if answered:
        displayed = sum(r["citations"]["citations"] for r in answered)
        valid = sum(r["citations"]["citations_valid"] for r in answered)
        summary["citations"] = {
            "displayed": displayed,
            "validity": valid / displayed if displayed else None,
            "invalid": displayed - valid,
            "gold_cited_rate": mean(float(r["citations"]["cites_gold"]) for r in answered),
            "support_mean": mean(r["citations"]["support_mean"] for r in answered),
            "extractive_fallback_rate": mean(float(r["citations"]["extractive_fallback"]) for r in answered),
        }
        summary["answered_by"] = dict(Counter(r.get("model") or "no model" for r in answered).most_common())
        judged = [r for r in answered if r.get("gold_verdict")]
        if judged:
            pairs = [(r["gold_verdict"], r["predicted_verdict"]) for r in judged]
            summary["verdicts"] = {"questions": len(judged),
                                   "accuracy": sum(gold == predicted for gold, predicted in pairs) / len(judged),
                                   # a verdict that always says "yes" scores the share of yes questions: per
                                   # gold class, it scores 1, 0, 0
                                   "accuracy_by_class": accuracy_by_class(pairs),
                                   "confusion": confusion_matrix(pairs)}
        from pmc_rag.evaluation.trust import summarise_trust  # trust imports this module

        trust = summarise_trust(answered)
        if trust:
            summary["trust"] = trust
        alce = [r["alce"] for r in answered if "alce" in r]
        if alce:
            summary["claims"] = {**summarise_alce(alce),
                                 "removed": sum(r.get("claims_removed", 0) for r in answered),
                                 "recited": sum(r.get("claims_recited", 0) for r in answered)}
        attacks = [a for r in answered for a in r.get("attacks", [])]
        if attacks:
            summary["attacks"] = {"attacked": len(attacks), **Counter(a["outcome"] for a in attacks)}
        faithfulness = [r["faithfulness"] for r in answered if r.get("faithfulness") is not None]
        if faithfulness:
            summary["faithfulness"] = statistics.fmean(faithfulness)
        summary["tokens"] = {"in_mean": mean(r.get("usage", {}).get("prompt_tokens") for r in answered),
                             "out_mean": mean(r.get("usage", {}).get("completion_tokens") for r in answered)}
        first = [r["first_token_ms"] for r in answered if "first_token_ms" in r]
        speeds = [r["generation_tokens_per_s"] for r in answered if "generation_tokens_per_s" in r]
        summary["streaming"] = {"first_token_ms": {"p50": percentile(first, 50), "p95": percentile(first, 95)},
                                "generation_tokens_per_s": percentile(speeds, 50)}
        # the verdict accuracy an answer that always said "yes" would have, on the same questions
        summary["always_yes_accuracy"] = (sum(r["gold_verdict"] == "yes" for r in judged) / len(judged)
                                          if judged else None)
    stages = sorted({stage for r in ok for stage in r.get("timings_ms", {})}, key=lambda s: (s == "total", s))
    summary["timings_ms"] = {stage: {"p50": percentile([r["timings_ms"][stage] for r in ok
                                                        if stage in r["timings_ms"]], 50),
                                     "p95": percentile([r["timings_ms"][stage] for r in ok
                                                        if stage in r["timings_ms"]], 95)} for stage in stages}
    return summary
