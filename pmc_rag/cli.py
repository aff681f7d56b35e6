"""The `pmc-rag` command.

    pmc-rag setup                 prepare models and database; ingest the sample corpus if the index is empty
    pmc-rag ingest PATH...        ingest PMC/JATS, PubMed XML, PubMedQA JSONL, PDF or text files, folders or globs
    pmc-rag collections [delete NAME]   the collections of your own documents; delete one
    pmc-rag ask "QUESTION"        a short answer with numbered citations, and its references
    pmc-rag status                what is indexed, where, and which models are ready
    pmc-rag pipeline show NAME    the plain Haystack YAML a pipeline file (a variant, say) stands for
    pmc-rag model start|stop|status   the local model server that runs the embedded LLM
    pmc-rag bench ingest          chunks/s of parsing, embedding and writing, against plain Haystack
    pmc-rag bench keyword         BM25 latency (p50/p95) and hits at the corpus's size and at 100k chunks
    pmc-rag bench scale           retrieval at 10k/100k/1M synthetic chunks: stages' p50/p95, exactness, recall
    pmc-rag bench llm             embedded model: portable settings' cost, in process vs. the model server
    pmc-rag bench devices         embedding chunks/s per device, precision and batch size [--export DIR]
    pmc-rag bench stream          streamed answers: the model's first token against the first checked sentence
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pmc_rag.environment import configure_environment
from pmc_rag.paths import DEFAULT_ANSWER_PIPELINE

# Exit codes: 0 all done; 1 nothing could be done (the message says why); 3 done, but some input was skipped.
EXIT_FAILED = 1
EXIT_PARTIAL = 3


def main(argv: list[str] | None = None) -> int:
    configure_environment()
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_FAILED
    try:
        return args.handler(args)
    except KeyboardInterrupt:  # Ctrl-C is how a user stops `serve` (and may stop an ingest): no traceback for it
        print("pmc-rag: stopped (Ctrl-C); what was stored before stays stored", file=sys.stderr)
        return 130
    except Exception as error:
        if not isinstance(error, _errors_said_in_one_line()):
            raise
        # Whatever was committed before the error stays stored; the message says what went wrong.
        print(f"pmc-rag: error: {error}", file=sys.stderr)
        return EXIT_FAILED


def _errors_said_in_one_line() -> tuple[type[BaseException], ...]:
    """The errors whose message tells the user what was wrong: no traceback for them. Imported only when one
    happens, since importing Haystack imports torch, seconds that `pmc-rag model stop` has no need of."""
    import psycopg
    from haystack.core.errors import PipelineRuntimeError
    from haystack.document_stores.errors import DocumentStoreError

    from pmc_rag.database import DatabaseError
    from pmc_rag.ingestion.xml import IngestError
    from pmc_rag.local_llm.supervisor import LocalModelError
    from pmc_rag.models import ModelError
    from pmc_rag.pipelines import PipelineError

    return (DatabaseError, ModelError, LocalModelError, PipelineError, DocumentStoreError, PipelineRuntimeError,
            psycopg.Error, ValueError, OSError, IngestError)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pmc-rag", description="Cited question answering over PMC and PubMed.")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    setup = commands.add_parser("setup", help="prepare models and database; ingest the sample corpus if empty")
    setup.add_argument("--pipeline", default="indexing", help="indexing pipeline YAML (default: %(default)s)")
    setup.add_argument("--answer-pipeline", default=DEFAULT_ANSWER_PIPELINE,
                       help="answering pipeline whose local model server to start and try (default: %(default)s)")
    setup.add_argument("--no-sample", action="store_true", help="do not ingest the bundled sample corpus")
    setup.add_argument("--serve", action=argparse.BooleanOptionalAction, default=False,
                       help="then serve hayhooks.yml's endpoints until Ctrl-C (scripts/setup.sh passes --serve)")
    setup.set_defaults(handler=_setup)

    ingest = commands.add_parser("ingest", help="ingest files, folders or globs")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="file, folder or glob (quote globs)")
    ingest.add_argument("--pipeline", default="indexing", help="indexing pipeline YAML (default: %(default)s)")
    ingest.add_argument("--dry-run", action="store_true", help="parse and chunk only; embed and write nothing")
    ingest.add_argument("--batch-words", type=int, default=20_000,
                        help="words of text per embedding batch and transaction (default: %(default)s)")
    ingest.add_argument("--no-progress", action="store_true", help="no progress bar")
    ingest.add_argument("--collection", metavar="NAME",
                        help="put the documents into this collection (to limit questions to it, or delete it)")
    ingest.set_defaults(handler=_ingest)

    collections = commands.add_parser("collections", help="list the collections; `delete NAME` removes one")
    collections.add_argument("action", nargs="?", choices=["list", "delete"], default="list")
    collections.add_argument("name", nargs="?", help="the collection to delete")
    collections.add_argument("--pipeline", default="indexing", help="indexing pipeline YAML (default: %(default)s)")
    collections.set_defaults(handler=_collections)

    ask = commands.add_parser("ask", help="answer a question with citations")
    ask.add_argument("question", help="the question, in plain language (quote it)")
    ask.add_argument("--pipeline", default=DEFAULT_ANSWER_PIPELINE,
                     help="answering pipeline YAML (default: %(default)s)")
    ask.add_argument("--json", action="store_true", help="print the whole answer object as JSON")
    ask.add_argument("--explain", action="store_true",
                     help="every note, the sentences removed, and which model answered and why")
    ask.set_defaults(handler=_ask)

    serve = commands.add_parser("serve", help="serve the endpoints of hayhooks.yml over HTTP (REST and OpenAI chat)")
    serve.add_argument("--config", default=None, help="a hayhooks.yml (default: the project's)")
    serve.add_argument("--host", default=None, help="override server.host (other than 127.0.0.1 needs an API key)")
    serve.add_argument("--port", type=int, default=None, help="override server.port")
    serve.set_defaults(handler=_serve)

    evaluate = commands.add_parser("eval", help="compare pipeline variants on a question set: retrieval, citations, "
                                                "answers, speed")
    evaluate.add_argument("--pipelines", nargs="+", metavar="YAML", default=None,
                          help="pipeline names or files (default: every variant shipped in pipelines/)")
    evaluate.add_argument("--questions", default=None, metavar="FILE",
                          help="PubMedQA JSON or JSONL question file (default: the shipped 500 PubMedQA dev questions)")
    evaluate.add_argument("--limit", type=int, default=None, help="only the first N questions")
    evaluate.add_argument("--offset", type=int, default=0, metavar="N",
                          help="skip the first N questions (a held-aside slice: --offset 100 --limit 50)")
    evaluate.add_argument("--local-models", nargs="+", default=None, metavar="NAME[:WEIGHTS]",
                          help="answer with each of these embedded models in turn (see `pmc-rag model list`), one "
                               "row per model: verdicts, what the claim check removed, first token, tokens/s, "
                               "peak memory; `NAME:packaged`, `NAME:f16`, `NAME:q8_0` also set its weights")
    evaluate.add_argument("--retrieval-only", action="store_true", help="skip generation (answer pipelines rank only)")
    evaluate.add_argument("--judge-model", default=None, metavar="OLLAMA_MODEL",
                          help="score faithfulness with this Ollama model as judge (off by default; slow)")
    evaluate.add_argument("--adversary", nargs="+", default=None, metavar="KIND",
                          help="answer with adversarial generators instead of the model, to show what the checks let "
                               "through: misattribute, negate, numbers, direction, fabricate, hidden_refs, or all")
    evaluate.add_argument("--claim-judge", default="lexical", metavar="JUDGE",
                          help="what decides whether a citation supports a statement (citation recall/precision): "
                               "lexical (default, offline), nli:MODEL (a cross-encoder NLI model, local path or "
                               "Hugging Face name), ollama:MODEL (e.g. ollama:bespoke-minicheck)")
    evaluate.add_argument("--conversations", nargs="?", const="default", default=None, metavar="FILE",
                          help="instead of single questions, run multi-turn conversations (default: "
                               "evaluation/datasets/conversations.json): off-topic citations and 'not answered'")
    evaluate.add_argument("--unanswerable", nargs="?", const="default", default=None, metavar="FILE",
                          help="instead of answering, check the relevance gate: how often it says 'not answered' to "
                               "questions the corpus cannot answer (default: evaluation/datasets/"
                               "unanswerable_questions.json) and to the answerable --questions (--limit applies)")
    evaluate.add_argument("--crisis", action="store_true",
                          help="the crisis check on the labelled messages (evaluation/datasets/crisis_messages.json): "
                               "misses and false alarms per set; no database")
    evaluate.add_argument("--plain", action="store_true",
                          help="the 211 plain-language questions (evaluation/datasets/plain_language_questions.json) "
                               "through --pipelines' first (default rag): the gold paper first, cited, its finding "
                               "stated, turned away, emergency replies; tuning beside the sealed half")
    evaluate.add_argument("--routes", nargs="?", const="default", default=None, metavar="FILE",
                          help="the question router on labelled questions (default: evaluation/datasets/"
                               "route_questions.json): accuracy per kind, dev and held-aside sets; no database. "
                               "With --pipelines: answers --limit questions of each kind (default 8) with each "
                               "pipeline and reports per kind (papers cited, the named paper, subjects, time)")
    evaluate.add_argument("--router-pipeline", default=None, metavar="YAML",
                          help="with --routes: also measure the router of this pipeline with its model layer "
                               "(rag_routed_llm), and it on the first 100 PubMedQA questions")
    evaluate.add_argument("--kinds", nargs="+", default=None, metavar="KIND",
                          help="with --routes --pipelines: only these kinds of question (single, summarise, compare, "
                               "several, overview, multi_step)")
    evaluate.add_argument("--held-aside", action="store_true",
                          help="with --routes --pipelines: the held-aside questions instead of dev (never tune on "
                               "them)")
    evaluate.add_argument("--out", default=None, metavar="DIR",
                          help="where results.json, chart.png and table.md go (default: .pmc-rag/eval/<time>/)")
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bars")
    evaluate.set_defaults(handler=_eval)

    status = commands.add_parser("status", help="what is indexed, where, and which models are ready")
    status.add_argument("--pipeline", default="indexing", help="indexing pipeline YAML (default: %(default)s)")
    status.add_argument("--answer-pipeline", default=DEFAULT_ANSWER_PIPELINE,
                        help="answering pipeline whose local model server to report (default: %(default)s)")
    status.set_defaults(handler=_status)

    pipeline = commands.add_parser("pipeline", help="show the plain pipeline YAML a file in pipelines/ resolves to")
    pipeline.add_argument("action", choices=["show"])
    pipeline.add_argument("name", help="a pipeline name (rag_rerank) or file")
    pipeline.set_defaults(handler=_pipeline)

    model = commands.add_parser("model", help="the local model server: start, stop or show it; list or install "
                                              "the embedded models")
    model.add_argument("action", choices=["start", "stop", "status", "list", "install"])
    model.add_argument("name", nargs="?", help="install: the model to install (see `pmc-rag model list`)")
    model.add_argument("--pipeline", default=DEFAULT_ANSWER_PIPELINE, help="the answering pipeline that declares it (default: "
                                                          "%(default)s)")
    model.set_defaults(handler=_model)

    bench = commands.add_parser("bench", help="benchmarks that print figures")
    bench_commands = bench.add_subparsers(title="benchmarks", metavar="BENCHMARK")
    bench_ingest = bench_commands.add_parser("ingest", help="ingestion chunks/s against plain Haystack")
    bench_ingest.add_argument("paths", nargs="*", metavar="PATH", help="input (default: the bundled sample corpus)")
    bench_ingest.add_argument("--limit", type=int, default=1500, help="chunks to time (default: %(default)s)")
    bench_ingest.add_argument("--pipeline", default="indexing", help="indexing pipeline YAML (default: %(default)s)")
    bench_ingest.set_defaults(handler=_bench_ingest)
    bench_keyword = bench_commands.add_parser("keyword", help="BM25 retrieval latency and hits, corpus and 100k")
    bench_keyword.add_argument("--chunks", type=int, default=100_000, help="size of the large table (default: "
                               "%(default)s)")
    bench_keyword.set_defaults(handler=_bench_keyword)
    bench_scale = bench_commands.add_parser("scale", help="retrieval latency, exactness and recall at 10k/100k/1M "
                                            "synthetic chunks; table, JSON and PNG")
    bench_scale.add_argument("--sizes", default="10000,100000,1000000",
                             help="comma-separated corpus sizes in chunks (default: %(default)s)")
    bench_scale.add_argument("--questions", type=int, default=500, help="dev questions asked per size (default: "
                             "%(default)s)")
    bench_scale.add_argument("--exact-questions", type=int, default=100, help="questions also ranked by exhaustive "
                             "BM25, to compare (default: %(default)s)")
    bench_scale.add_argument("--recall-questions", type=int, default=100, help="questions whose HNSW results are "
                             "compared with exact search (default: %(default)s)")
    bench_scale.add_argument("--keep", action="store_true", help="keep the synthetic tables for the next run")
    bench_scale.add_argument("--out", type=Path, default=Path("bench-scale"), help="folder for scale.json and "
                             "scale.png (default: %(default)s)")
    bench_scale.set_defaults(handler=_bench_scale)
    bench_llm = bench_commands.add_parser("llm", help="embedded model: tokens/s with repacking on and off, and time "
                                                      "to first token in process and through the model server")
    bench_llm.add_argument("--runs", type=int, default=3, help="timed runs per path (default: %(default)s)")
    bench_llm.add_argument("--question", default=None, help="the question whose prompt is timed (default: the "
                                                            "README's)")
    bench_llm.add_argument("--max-tokens", type=int, default=200, help="tokens each reply may have (default: "
                                                                         "%(default)s)")
    bench_llm.add_argument("--paths", nargs="+", choices=["repack", "no-repack", "server"], default=None,
                           help="time only these paths (default: all three)")
    bench_llm.set_defaults(handler=_bench_llm)
    bench_stream = bench_commands.add_parser("stream", help="streamed answers: the model's first token against the "
                                                            "first checked sentence a reader sees")
    bench_stream.add_argument("--questions", type=int, default=10, help="dev questions asked (default: %(default)s)")
    bench_stream.add_argument("--start", type=int, default=400, help="the first dev question's index (default: "
                                                                      "%(default)s)")
    bench_stream.set_defaults(handler=_bench_stream)
    bench_devices = bench_commands.add_parser("devices", help="embedding chunks/s per device (CPU, GPU), precision "
                                                              "and batch size, with agreement against float32")
    bench_devices.add_argument("--export", type=Path, default=None, metavar="DIR",
                               help="only write the sample chunks' texts and the model to DIR, to run "
                                    "evaluation/bench_embedding_devices.py DIR on another machine")
    bench_devices.add_argument("--runs", type=int, default=3, help="timed passes per row (default: %(default)s)")
    bench_devices.add_argument("--limit", type=int, default=None, help="embed only the first N chunks")
    bench_devices.set_defaults(handler=_bench_devices)
    return parser


def _pipeline(args: argparse.Namespace) -> int:
    """Print the resolved YAML: what `Pipeline.loads` and Hayhooks get, a variant's base and changes applied."""
    import yaml

    from pmc_rag.pipelines import pipeline_spec

    print(yaml.safe_dump(pipeline_spec(args.name)[1], sort_keys=False, width=120), end="")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from pmc_rag.ingestion.runner import ingest
    from pmc_rag.database import ensure_database
    from pmc_rag.pipelines import load_pipeline

    pipeline = load_pipeline(args.pipeline)
    if not args.dry_run:
        print(f"Database: {ensure_database().description}")
    report = ingest(args.paths, pipeline, dry_run=args.dry_run, batch_words=args.batch_words,
                    progress=not args.no_progress, collection=args.collection)
    print(report.summary())
    if report.interrupted:
        return 130
    if report.articles == 0:
        return EXIT_FAILED
    return EXIT_PARTIAL if report.skipped else 0


def _collections(args: argparse.Namespace) -> int:
    from pmc_rag.database import ensure_database
    from pmc_rag.ingestion.collections import delete_collection, list_collections
    from pmc_rag.pipelines import document_store_of, load_pipeline

    ensure_database()
    store = document_store_of(load_pipeline(args.pipeline))
    if args.action == "delete":
        if not args.name:
            print("name the collection to delete: pmc-rag collections delete NAME", file=sys.stderr)
            return EXIT_FAILED
        deleted = delete_collection(store, args.name)
        print(f"Deleted collection {args.name}: {deleted['documents']} document(s), {deleted['chunks']} chunk(s)")
        return 0 if deleted["chunks"] else EXIT_PARTIAL
    rows = list_collections(store)
    if not rows:
        print("No collections (pmc-rag ingest --collection NAME PATH... makes one)")
    for row in rows:
        print(f"{row['collection']}: {row['documents']} document(s), {row['chunks']} chunk(s)")
    return 0


def _ask(args: argparse.Namespace) -> int:
    import json

    from pmc_rag.answer_service import AnswerService, fixed_answer
    from pmc_rag.serving.access import NOT_UPLOADED
    from pmc_rag.database import ensure_database
    from pmc_rag.pipelines import load_declared_pipeline, resolve_pipeline_path
    from pmc_rag.refusals import Refused
    from pmc_rag.serving.config import load_serve_config

    _warnings_to_log_file("ask")
    max_question_chars = load_serve_config().max_question_chars
    resolve_pipeline_path(args.pipeline)  # a mistyped pipeline is named even when the question needs none
    try:
        # Refusals and fixed replies (a person in danger first) come before the pipeline and its models are loaded.
        answer = fixed_answer(args.question, max_question_chars)
        if answer is None:
            # The server's answering service and limits, without conversations, cache or audit.
            service = AnswerService(load_declared_pipeline(args.pipeline), name="cli",
                                    max_question_chars=max_question_chars)
            ensure_database()
            # As the server answers a question that names no collection: the corpus, never an upload.
            answer = service.answer(args.question, access=NOT_UPLOADED)
    except Refused as error:  # a refusal says what was wrong; an unexpected failure is shown as it was
        if error.status_code >= 500 and error.__cause__ is not None:
            raise error.__cause__ from None
        raise ValueError(error.detail) from None
    print(json.dumps(answer.model_dump(mode="json"), indent=2, ensure_ascii=False) if args.json
          else answer.as_text(explain=args.explain))
    return 0


def _warnings_to_log_file(command: str) -> None:
    """Send log records to PMC_RAG_HOME/logs/<command>.log instead of the terminal: what a reader of the answer needs
    (which model answered and why) is in its notes; "Ollama: connection refused" before every answer is not."""
    import logging

    from pmc_rag.paths import home

    folder = home() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(folder / f"{command}.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)


def _serve(args: argparse.Namespace) -> int:
    from pmc_rag.serving.app import serve
    from pmc_rag.serving.config import load_serve_config

    serve(load_serve_config(args.config, host=args.host, port=args.port))
    return 0


def _setup(args: argparse.Namespace) -> int:
    from pmc_rag.ingestion.runner import ingest
    from pmc_rag.database import ensure_database
    from pmc_rag.models import (DEFAULT_LLM, EMBEDDED_LLMS, PACKAGED, ModelError, assemble_llm, reencoded_llm,
                                seed_embedding_model)
    from pmc_rag.paths import SAMPLE_CORPUS_DIR
    from pmc_rag.pipelines import load_declared_pipeline, load_pipeline

    print(f"Embedding model ready: {seed_embedding_model()}")
    declared = load_declared_pipeline(args.answer_pipeline).local_model
    name = declared.model if declared and not declared.model_path else DEFAULT_LLM  # the one the YAML names
    print(f"Embedded LLM ready ({EMBEDDED_LLMS[name].description}): checksum verified, {assemble_llm(name)}")
    if declared and not declared.model_path and declared.weights != PACKAGED:
        try:  # once, here, rather than at the first question
            print(f"Its weights re-encoded as {declared.weights} (`local_model.weights`): "
                  f"{reencoded_llm(name, declared.weights)}")
        except ModelError as problem:
            print(f"warning: {problem}; the packaged weights will answer", file=sys.stderr)
    _check_local_model(args.answer_pipeline)
    print(f"Database: {ensure_database().description}")
    pipeline = load_pipeline(args.pipeline)
    writer = _writer(pipeline)
    if hasattr(writer, "warm_up"):  # set-up time: the writer creates the table and its BM25 index if missing
        writer.warm_up()
    chunks = writer.document_store.count_documents()
    if chunks:
        print(f"Index already holds {chunks} chunks: nothing to ingest.")
    elif args.no_sample:
        print("Index is empty; skipping the sample corpus as asked.")
    else:
        print(f"Index is empty: ingesting the sample corpus from {SAMPLE_CORPUS_DIR}")
        report = ingest([str(SAMPLE_CORPUS_DIR)], pipeline)
        print(report.summary())
        if report.interrupted or report.articles == 0:
            return EXIT_FAILED
    print(f"BM25: {_bm25_scorer_line(writer.document_store)}")
    print(
        "\nReady. Next (with .venv/bin on your PATH):\n"
        "  pmc-rag ask \"QUESTION\"         a cited answer\n"
        "  pmc-rag serve                  REST and OpenAI-compatible chat on http://127.0.0.1:1416\n"
        "  pmc-rag status                 what is indexed\n"
        "  pmc-rag ingest PATH...         add PMC/JATS, PubMed XML, PubMedQA JSONL, PDF or text files\n"
        "  scripts/test.sh                run the test suite"
    )
    if args.serve:
        from pmc_rag.serving.app import serve
        from pmc_rag.serving.config import load_serve_config

        print("\nStarting the server (scripts/setup.sh --no-serve sets up without serving)...", flush=True)
        serve(load_serve_config())
    return 0


def _eval_conversations(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.conversations import conversations_markdown, run_conversations
    from pmc_rag.paths import CONVERSATIONS

    path = CONVERSATIONS if args.conversations == "default" else Path(args.conversations)
    report = run_conversations(args.pipelines or [DEFAULT_ANSWER_PIPELINE], path, progress=not args.no_progress)
    return _write_side_report(args, "conversations", report, conversations_markdown(report))


def _eval_unanswerable(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.questions import load_questions
    from pmc_rag.evaluation.relevance import relevance_markdown, run_relevance
    from pmc_rag.paths import DEV_QUESTIONS, UNANSWERABLE

    path = UNANSWERABLE if args.unanswerable == "default" else Path(args.unanswerable)
    answerable = load_questions(args.questions or DEV_QUESTIONS)[:args.limit]
    report = run_relevance(args.pipelines or [DEFAULT_ANSWER_PIPELINE], path, answerable, progress=not args.no_progress)
    return _write_side_report(args, "unanswerable", report, relevance_markdown(report))


def _write_side_report(args: argparse.Namespace, kind: str, report: dict[str, Any], table: str) -> int:
    """Write table.md and results.json to --out (default .pmc-rag/eval/<kind>-<time>/) and print the table."""
    import json
    import time

    from pmc_rag.paths import home

    out = Path(args.out) if args.out else home() / "eval" / time.strftime(f"{kind}-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(table + "\n", encoding="utf-8")
    (out / "results.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(table)
    print(f"\nRecords: {out / 'results.json'}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    import logging
    import time

    from pmc_rag.evaluation.report import markdown, write_chart, write_json
    from pmc_rag.evaluation.runner import run_evaluation
    from pmc_rag.database import ensure_database
    from pmc_rag.paths import DEV_QUESTIONS, home

    if args.limit is not None and args.limit < 1:
        raise ValueError("--limit must be 1 or more")
    # One warning per question that Ollama is unreachable would bury the progress; each record names the model
    # that answered and those that failed.
    logging.getLogger("pmc_rag.components.remembering_fallback_chat_generator").setLevel(logging.ERROR)
    if args.crisis:
        from pmc_rag.evaluation.crisis import crisis_markdown, run_crisis

        report = run_crisis(progress=not args.no_progress)
        return _write_side_report(args, "crisis", report, crisis_markdown(report))
    if args.plain:
        from pmc_rag.evaluation.plain_questions import run, table

        rows = run(args.pipelines[0] if args.pipelines else "rag")
        return _write_side_report(args, "plain", {"questions": rows}, table(rows))
    if args.routes and args.pipelines:
        from pmc_rag.evaluation.routes import route_answers_markdown, run_route_answers

        print(f"Database: {ensure_database().description}", file=sys.stderr)
        report = run_route_answers(args.pipelines, per_kind=args.limit or 8, progress=not args.no_progress,
                                   path=None if args.routes == "default" else args.routes, offset=args.offset,
                                   kinds=args.kinds, question_set="held_aside" if args.held_aside else "dev")
        return _write_side_report(args, "route-answers", report, route_answers_markdown(report))
    if args.routes:
        from pmc_rag.evaluation.routes import routes_markdown, run_routes

        report = run_routes(progress=not args.no_progress, path=None if args.routes == "default" else args.routes,
                            router_pipeline=args.router_pipeline)
        return _write_side_report(args, "routes", report, routes_markdown(report))
    print(f"Database: {ensure_database().description}", file=sys.stderr)
    judge = None
    if args.judge_model:
        from pmc_rag.evaluation.judge import FaithfulnessJudge

        judge = FaithfulnessJudge(args.judge_model)
    if args.conversations:
        return _eval_conversations(args)
    if args.unanswerable:
        return _eval_unanswerable(args)
    adversaries = args.adversary
    if adversaries:
        from pmc_rag.evaluation.adversaries import ATTACKS

        adversaries = list(ATTACKS) if "all" in adversaries else adversaries
        unknown = sorted(set(adversaries) - set(ATTACKS))
        if unknown:
            raise ValueError(f"--adversary {', '.join(unknown)}: unknown; choose from {', '.join(ATTACKS)} or all")
    from pmc_rag.evaluation.citation_quality import claim_judge

    if args.local_models:
        from pmc_rag.models import EMBEDDED_LLMS, PACKAGED, REENCODINGS, reencoded_llm

        for choice in args.local_models:  # each must be there before an hour-long run starts
            name, _, weights = choice.partition(":")
            if name not in EMBEDDED_LLMS:
                raise ValueError(f"--local-models {choice}: unknown model; the models: {', '.join(EMBEDDED_LLMS)}")
            if weights and weights not in (PACKAGED, *REENCODINGS):
                raise ValueError(f"--local-models {choice}: unknown weights; choose {PACKAGED}, "
                                 f"{', '.join(REENCODINGS)}")
            reencoded_llm(name, weights or PACKAGED)
    if args.offset < 0:
        raise ValueError("--offset must be 0 or more")
    report = run_evaluation(args.pipelines or ([DEFAULT_ANSWER_PIPELINE] if args.local_models else None),
                            args.questions or DEV_QUESTIONS, limit=args.limit, offset=args.offset,
                            retrieval_only=args.retrieval_only, judge=judge, progress=not args.no_progress,
                            adversaries=adversaries, claim_judge=claim_judge(args.claim_judge),
                            local_models=args.local_models)
    out = Path(args.out) if args.out else home() / "eval" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    table = markdown(report)
    (out / "table.md").write_text(table + "\n", encoding="utf-8")
    write_json(report, out / "results.json")
    write_chart(report, out / "chart.png")
    print(table)
    print(f"\nRecords, versions and YAML hashes: {out / 'results.json'}; chart: {out / 'chart.png'}")
    bugs = {name: entry["summary"]["citations"]["invalid"] for name, entry in report["variants"].items()
            if entry.get("summary", {}).get("citations", {}).get("invalid")}
    for name, invalid in bugs.items():
        print(f"BUG: {name} displayed {invalid} citation(s) to papers outside the model's context", file=sys.stderr)
    return EXIT_FAILED if bugs else 0


def _status(args: argparse.Namespace) -> int:
    from pmc_rag.database import ensure_database
    from pmc_rag.models import DEFAULT_LLM, EMBEDDED_LLMS, EMBEDDING_MODEL, cached_embedding_model, is_verified
    from pmc_rag.pipelines import declared_document_store

    missing = "missing: run pmc-rag setup"
    cached = cached_embedding_model()
    print(f"Embedding model {EMBEDDING_MODEL}: {f'in the local cache, {cached}' if cached else missing}")
    llm = EMBEDDED_LLMS[DEFAULT_LLM]
    print(f"Embedded LLM: {f'{llm.path} (checksum verified)' if is_verified(llm) else missing}")
    for line in _local_model_lines(args.answer_pipeline):
        print(line)
    print(f"Database: {ensure_database().description}")
    store = declared_document_store(args.pipeline)
    store.count_documents()  # creates the table if missing, so the query below can run
    print(f"Table: {store.schema_name}.{store.table_name} ({store.embedding_dimension}-d embeddings)")
    rows = store.count_unique_metadata_by_filter(filters={}, metadata_fields=["source_id"])
    print(f"Chunks: {store.count_documents()}  Articles: {rows.get('source_id', 0)}")
    print(f"BM25: {_bm25_scorer_line(store)}")
    return 0


def _bm25_scorer_line(store: Any) -> str:
    from pmc_rag import native
    from pmc_rag.components.bm25_index import BM25Tables, bm25_index_exists, native_scorer_installed
    from pmc_rag.components.store_connection import connect

    with connect(store) as connection:
        tables = BM25Tables.of(store)
        if not bm25_index_exists(connection, tables):
            return "no index yet (the first ingestion builds it)"
        if native_scorer_installed(connection, tables):
            return "native scorer (C, pmc_rag/native/bm25_scan.c) over packed postings"
    why = "the native scorer is turned off by PMC_RAG_BM25_NATIVE" if not native.enabled() else \
        ("the native scorer is not installed; `pmc-rag setup` installs it where it can be built (a C compiler is "
         "needed) and the server can load it, and logs why not")
    return f"SQL search (MaxScore): {why}"


def _check_local_model(pipeline_name: str) -> None:
    """Start the answering pipeline's local model server and have it write a few tokens: a model that crashes on
    this CPU shows here, with the fix, rather than at the first question. Not fatal: answers then quote passages."""
    from pmc_rag.local_llm.supervisor import LocalModelError, local_model_server
    from pmc_rag.pipelines import declared_local_model

    spec = declared_local_model(pipeline_name)
    if spec is None:
        return
    server = local_model_server(spec)
    try:
        server.ensure_running()
        seconds, tokens_per_s = server.smoke_test()
    except LocalModelError as error:
        print(f"WARNING: {error}", file=sys.stderr)
        return
    print(f"Local model server ({spec.model}) at {spec.url}: answered a test prompt in {seconds:.1f} s "
          f"({tokens_per_s:.0f} tokens/s); log {server.log_path}")
    if server.build:  # known when this command started it
        print(f"  llama.cpp build: {server.build}")


def _local_model_lines(pipeline_name: str) -> list[str]:
    """`pmc-rag status`'s lines about the pipeline's local model server."""
    from pmc_rag.local_llm.supervisor import local_model_server
    from pmc_rag.pipelines import declared_local_model

    spec = declared_local_model(pipeline_name)
    if spec is None:
        return [f"Local model server: none declared in {pipeline_name}"]
    report = local_model_server(spec).status()
    lines = [f"Local model server ({spec.model}) at {spec.url}: {report['state']}"
             + (f", pid {report['pid']}" if report.get("pid") else "")]
    if report.get("problem"):
        lines.append(f"  {report['problem']}")
    if report.get("weights"):   # what it serves: a re-encoding that failed falls back to the packaged file
        lines.append(f"  weights: {report['weights']} ({report.get('model_path')}), generating with "
                     f"{report.get('threads')} threads")
    if report.get("llama_cpp"):
        lines.append(f"  llama.cpp: {report['llama_cpp']}")
    if report.get("llama_cpp_build") or report.get("llama_cpp_lib"):
        lines.append(f"  llama.cpp build: {report.get('llama_cpp_build') or report['llama_cpp_lib']}")
    lines.append(f"  log: {report['log']}")
    return lines


def _model(args: argparse.Namespace) -> int:
    from pmc_rag.local_llm.supervisor import local_model_server
    from pmc_rag.models import EMBEDDED_LLMS, install_llm, is_verified
    from pmc_rag.pipelines import declared_local_model, resolve_pipeline_path

    if args.action == "list":
        for name, registered in EMBEDDED_LLMS.items():
            state = "installed" if is_verified(registered) else f"not installed: pmc-rag model install {name}"
            print(f"{name}: {registered.description}; {registered.licence}; {state}")
        return 0
    if args.action == "install":
        if not args.name:
            raise ValueError(f"name the model to install, one of: {', '.join(EMBEDDED_LLMS)}")
        path = install_llm(args.name)
        print(f"Installed {args.name} ({EMBEDDED_LLMS[args.name].description}): checksum verified, {path}. "
              f"To answer with it, set `local_model.model: {args.name}` in the pipeline YAML (pipelines/rag.yml).")
        return 0
    spec = declared_local_model(args.pipeline)
    if spec is None:
        raise ValueError(f"{resolve_pipeline_path(args.pipeline)} declares no `local_model:`")
    server = local_model_server(spec)
    if args.action == "start":
        report = server.ensure_running()
        print(f"Local model server ({spec.model}) running at {spec.url}, pid {report.get('pid')}; it exits after "
              f"{spec.idle_minutes:g} min unused")
    elif args.action == "stop":
        print("Stopped." if server.stop() else f"No local model server was running at {spec.url}.")
    else:
        print("\n".join(_local_model_lines(args.pipeline)))
    return 0


def _bench_ingest(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_ingest import run_benchmark

    return run_benchmark(args.paths, pipeline_name=args.pipeline, limit=args.limit)


def _bench_keyword(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_keyword import run_benchmark

    return run_benchmark(total_chunks=args.chunks)


def _bench_scale(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_scale import run_benchmark

    try:
        sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]
    except ValueError:
        raise SystemExit(f"--sizes takes numbers of chunks separated by commas, e.g. 10000,100000; got {args.sizes!r}")
    if not sizes or min(sizes) < 100:
        raise SystemExit("--sizes needs at least one size of 100 chunks or more")
    return run_benchmark(sizes, args.out, questions=args.questions, recall_questions=args.recall_questions,
                         exact_questions=args.exact_questions, keep=args.keep)


def _bench_llm(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_llm import README_QUESTION, run_benchmark

    return run_benchmark(runs=args.runs, question=args.question or README_QUESTION, max_tokens=args.max_tokens,
                         paths=args.paths)


def _bench_stream(args: argparse.Namespace) -> int:
    from pmc_rag.evaluation.bench_stream import run_benchmark

    return run_benchmark(questions=args.questions, start=args.start)


def _bench_devices(args: argparse.Namespace) -> int:
    import tempfile

    from pmc_rag.evaluation.bench_embedding_devices import run_benchmark, write_export
    from pmc_rag.evaluation.bench_ingest import chunk_files
    from pmc_rag.ingestion.sources import expand_paths
    from pmc_rag.paths import SAMPLE_CORPUS_DIR
    from pmc_rag.pipelines import load_pipeline

    indexing = load_pipeline("indexing")
    embedder = indexing.get_component("embedder")
    files, _ = expand_paths([str(SAMPLE_CORPUS_DIR)])
    chunks = chunk_files(indexing.get_component("chunker"), files)
    # The text the indexing embedder embeds: its meta fields, then the chunk, joined by its separator.
    fields = getattr(embedder, "meta_fields_to_embed", None) or []
    separator = getattr(embedder, "embedding_separator", "\n")
    texts = [separator.join([str(c.meta[f]) for f in fields if c.meta.get(f) is not None] + [c.content or ""])
             for c in chunks]
    if args.export:
        write_export(texts, embedder.model, args.export)
        print(f"Wrote {len(texts)} chunks' texts and {embedder.model} (float16) to {args.export}; there, run "
              f"python evaluation/bench_embedding_devices.py {args.export}")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        write_export(texts, embedder.model, Path(folder))
        run_benchmark(Path(folder), runs=args.runs, limit=args.limit)
    return 0


def _writer(pipeline):
    """The indexing pipeline's writer: the component with a document store."""
    for name in pipeline.graph.nodes:
        component = pipeline.get_component(name)
        if getattr(component, "document_store", None) is not None:
            return component
    raise ValueError("the indexing pipeline has no component with a document_store")


if __name__ == "__main__":
    sys.exit(main())
