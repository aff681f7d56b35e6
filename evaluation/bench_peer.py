"""Our default pipeline beside a stock Haystack RAG pipeline: same questions, same store, same model, one process.

    pmc-rag bench peer [--limit 30] [--offset 300]

The stock pipeline is what a team would write from Haystack's documentation, with stock components only:
`SentenceTransformersTextEmbedder` -> `PgvectorEmbeddingRetriever` and `PgvectorKeywordRetriever` (top 5 each) ->
`DocumentJoiner` (reciprocal rank fusion, top 5) -> `ChatPromptBuilder` (the excerpts labelled by paper id, "cite
each claim") -> `OpenAIChatGenerator` asking the same embedded model server, with the same generation settings, as
`rag.yml`'s generator. Ours is `pipelines/rag.yml` as `pmc-rag ask` runs it.

Both are warmed up on one question first (not counted); then each question is asked of one and the other in turn.
Every figure is judged the same way for both, from the text a reader is shown, against the PubMedQA gold (never by
our own checks):

- answer time p50/p95 (the pipeline's run, wall clock);
- gold paper shown: the gold paper among the excerpts the model read;
- cites gold: the answer cites the gold paper; invalid citations: answers citing a paper the model was not shown;
- uncited sentences: sentences of the answer with no citation mark;
- states the finding: a sentence of the answer holds at least half the content words of a sentence of the paper's
  own conclusion (PubMedQA's long answer), as `plain_questions` judges;
- wrong verdicts: an answer opening with yes or no that the gold label contradicts.
"""

from __future__ import annotations

import re
import statistics
import time
from typing import Any

from pmc_rag.evaluation.metrics import nearest_rank
from pmc_rag.evaluation.plain_questions import says_gold
from pmc_rag.paths import DEV_QUESTIONS

# As a team would write it from Haystack's tutorials, asking for citations. No example id: the 0.5B model copies an
# example such as [PMC1234567] into every answer (seen in a first run of this bench, 2026-11-28).
STOCK_SYSTEM = ("Answer the biomedical question in one to three sentences, using only the excerpts below. After each "
                "sentence, cite the paper it comes from by the label in square brackets that starts its excerpt. If "
                "the excerpts do not answer the question, say so.")
STOCK_USER = ("{% for document in documents %}[{{ document.meta.source_id }}] {{ document.meta.title }}: "
              "{{ document.content }}\n\n{% endfor %}Question: {{ question }}")
TOP_K = 5


def stock_pipeline(document_store: Any, generator_settings: dict[str, Any]) -> Any:
    """The stock Haystack RAG pipeline over `document_store`, asking the model `generator_settings` describe."""
    from haystack import Pipeline
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.components.joiners import DocumentJoiner
    from haystack.dataclasses import ChatMessage
    from haystack.utils import Secret
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder
    from haystack_integrations.components.retrievers.pgvector import (
        PgvectorEmbeddingRetriever,
        PgvectorKeywordRetriever,
    )

    from pmc_rag.models import EMBEDDING_MODEL

    pipeline = Pipeline()
    pipeline.add_component("embedder", SentenceTransformersTextEmbedder(model=EMBEDDING_MODEL, progress_bar=False))
    pipeline.add_component("semantic", PgvectorEmbeddingRetriever(document_store=document_store, top_k=TOP_K))
    pipeline.add_component("keyword", PgvectorKeywordRetriever(document_store=document_store, top_k=TOP_K))
    pipeline.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=TOP_K))
    pipeline.add_component("prompt_builder", ChatPromptBuilder(
        template=[ChatMessage.from_system(STOCK_SYSTEM), ChatMessage.from_user(STOCK_USER)],
        required_variables=["question", "documents"]))
    pipeline.add_component("generator", OpenAIChatGenerator(
        model=generator_settings["model"], api_base_url=generator_settings["api_base_url"],
        api_key=Secret.from_env_var("PMC_RAG_LLM_API_KEY"), timeout=generator_settings.get("timeout", 60),
        max_retries=0, generation_kwargs=generator_settings.get("generation_kwargs") or {}))
    pipeline.connect("embedder.embedding", "semantic.query_embedding")
    pipeline.connect("semantic.documents", "joiner.documents")
    pipeline.connect("keyword.documents", "joiner.documents")
    pipeline.connect("joiner.documents", "prompt_builder.documents")
    pipeline.connect("prompt_builder.prompt", "generator.messages")
    return pipeline


def ask_stock(pipeline: Any, question: str) -> dict[str, Any]:
    started = time.perf_counter()
    out = pipeline.run({"embedder": {"text": question}, "keyword": {"query": question},
                        "prompt_builder": {"question": question}}, include_outputs_from={"joiner"})
    seconds = time.perf_counter() - started
    reply = out["generator"]["replies"][0].text or ""
    shown = [d.meta.get("source_id") for d in out["joiner"]["documents"]]
    return {"seconds": seconds, "text": reply, "shown": shown, "cited": _cited_ids(reply)}


def ask_ours(pipeline: Any, question: str) -> dict[str, Any]:
    from pmc_rag.answering.pipeline_run import run_answering

    started = time.perf_counter()
    answer, outputs = run_answering(pipeline, question)
    seconds = time.perf_counter() - started
    shown = [d.meta.get("source_id") for d in outputs.get("excerpts") or []]
    return {"seconds": seconds, "text": answer.answer, "shown": shown,
            "cited": [r.source_id for r in answer.references]}


def _cited_ids(text: str) -> list[str]:
    from pmc_rag.components.citations import paper_ids

    return list(dict.fromkeys(paper_ids(text)))


# [1] in our answers, [PMC1234567] or [PMID:1] in the stock pipeline's
CITATION_MARK = re.compile(r"\[[^\]]{1,40}\]")


def judged(result: dict[str, Any], gold_paper: str, gold_answer: str, gold_verdict: str | None) -> dict[str, Any]:
    from pmc_rag.components.citations import canonical_id
    from pmc_rag.components.section_chunker import split_sentences

    shown = {canonical_id(str(s)) for s in result["shown"] if s}
    cited = {canonical_id(str(c)) for c in result["cited"]}
    sentences = [s for s in split_sentences(result["text"]) if len(s.split()) >= 3]
    opening = re.match(r"\W*(yes|no)\b", result["text"], re.IGNORECASE)
    return {
        "seconds": result["seconds"],
        "gold_shown": gold_paper in shown,
        "cites_gold": gold_paper in cited,
        "invalid": bool(cited - shown),
        "uncited_sentences": sum(1 for s in sentences if not CITATION_MARK.search(s)),
        "states_finding": says_gold([CITATION_MARK.sub("", s) for s in sentences], split_sentences(gold_answer or "")),
        "wrong_verdict": bool(opening and gold_verdict in ("yes", "no") and opening.group(1).lower() != gold_verdict),
        "not_answered": not sentences,
    }



def table(rows: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["| pipeline | questions | answer p50 | answer p95 | gold paper shown | cites gold | states the finding | "
             "answers with an invalid citation | uncited sentences shown | wrong verdicts |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, judged_rows in rows.items():
        n = len(judged_rows)
        seconds = [r["seconds"] for r in judged_rows]
        shares = {key: f"{sum(r[key] for r in judged_rows) / n:.0%}"
                  for key in ("gold_shown", "cites_gold", "states_finding")}
        lines.append(f"| {name} | {n} | {statistics.median(seconds):.1f} s | {nearest_rank(seconds, 0.95):.1f} s | "
                     f"{shares['gold_shown']} | {shares['cites_gold']} | {shares['states_finding']} | "
                     f"{sum(r['invalid'] for r in judged_rows)} | {sum(r['uncited_sentences'] for r in judged_rows)} | "
                     f"{sum(r['wrong_verdict'] for r in judged_rows)} |")
    ours, stock = (statistics.median(r["seconds"] for r in rows[k]) for k in rows)
    lines.append("")
    lines.append(f"Answer time p50, ours / stock: {ours / stock:.2f}.")
    return "\n".join(lines)


def run_benchmark(limit: int = 30, offset: int = 300) -> int:
    from pmc_rag.database import ensure_database
    from pmc_rag.environment import configure_environment
    from pmc_rag.evaluation.questions import load_questions
    from pmc_rag.pipelines import document_store_of, load_declared_pipeline, pipeline_spec

    configure_environment()
    print(f"Database: {ensure_database().description}", flush=True)
    ours = load_declared_pipeline("rag")
    _, spec = pipeline_spec("rag")
    settings = next(g["init_parameters"] for g in spec["components"]["generator"]["init_parameters"]["chat_generators"]
                    if g["type"].endswith("OpenAIChatGenerator"))
    stock = stock_pipeline(document_store_of(ours.pipeline), settings)
    questions = load_questions(DEV_QUESTIONS)[offset:offset + limit]
    print(f"{len(questions)} dev questions ({offset + 1}-{offset + len(questions)}); warming both up ...", flush=True)
    ask_ours(ours, questions[0].question)   # also starts the model server and exports its key
    stock.warm_up()
    ask_stock(stock, questions[0].question)
    rows: dict[str, list[dict[str, Any]]] = {"pmc-rag (rag.yml)": [], "stock Haystack": []}
    for index, question in enumerate(questions, 1):
        gold = question.gold_source_ids[0]
        for name, ask, pipeline in (("pmc-rag (rag.yml)", ask_ours, ours), ("stock Haystack", ask_stock, stock)):
            rows[name].append(judged(ask(pipeline, question.question), gold, question.gold_answer or "",
                                     question.gold_verdict))
        print(f"  {index}/{len(questions)}: ours {rows['pmc-rag (rag.yml)'][-1]['seconds']:.1f} s, "
              f"stock {rows['stock Haystack'][-1]['seconds']:.1f} s", flush=True)
    print()
    print(table(rows))
    return 0
