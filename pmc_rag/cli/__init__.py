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
    pmc-rag bench embedders       MiniLM against nomic-embed-text-v1.5: papers found, the gate's signal, cost
    pmc-rag bench peer            our default pipeline beside a stock Haystack one: time and gold-judged answers
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pmc_rag.cli.answering import _ask, _serve
from pmc_rag.cli.bench import (_bench_devices, _bench_embedders, _bench_ingest, _bench_keyword, _bench_llm, _bench_peer,
                               _bench_scale, _bench_stream)
from pmc_rag.cli.common import EXIT_FAILED
from pmc_rag.cli.data import _collections, _ingest, _pipeline, _setup, _status
from pmc_rag.cli.evaluating import _eval
from pmc_rag.cli.models import _model
from pmc_rag.environment import configure_environment
from pmc_rag.paths import DEFAULT_ANSWER_PIPELINE


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
    from pmc_rag.local_llm.spec import LocalModelError
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
    evaluate.add_argument("--left-out", action="store_true",
                          help="with --crisis: also judge each tuning set by a classifier and exemplars trained "
                               "without it (the tuning figure a new wording would see; about a minute more)")
    evaluate.add_argument("--read-in-english", action="store_true",
                          help="with --crisis: read each message in another language in English too, as the "
                               "answering service does, translated by the pipeline's model (`pmc-rag model start` "
                               "first; translations are kept under PMC_RAG_HOME/eval, so only new ones wait)")
    evaluate.add_argument("--directions", action="store_true",
                          help="whether a quoted finding's direction (supports / does not support) could be shown: "
                               "the negation floor and the classifier on PubMedQA conclusions, tuning beside held "
                               "aside; no database")
    evaluate.add_argument("--directions-model", default=None, metavar="NAME",
                          help="with --directions: also an installed embedded model as the judge, by the log-odds "
                               "of its yes or no (qwen2.5-coder-1.5b-instruct: about 17 minutes on 2 cores)")
    evaluate.add_argument("--plain", action="store_true",
                          help="the 211 plain-language questions (evaluation/datasets/plain_language_questions.json), "
                               "the 24 and 44 of the second and third sealed sets (plain_questions_sealed_2.json, "
                               "_3.json) "
                               "and the 48 in six other languages (multilingual_questions.json) through --pipelines' "
                               "first (default rag): the gold paper first, cited, its finding stated, turned away, "
                               "emergency replies; tuning beside the sealed halves")
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
    bench_embedders = bench_commands.add_parser("embedders", help="MiniLM against nomic-embed-text-v1.5 on the stored "
                                                "chunks: papers found, the gate's signal, embedding cost")
    bench_embedders.add_argument("--limit", type=int, default=None,
                                 help="only the first N stored chunks (default: all; nomic embeds ~8 chunks/s on 2 cores)")
    bench_embedders.set_defaults(handler=_bench_embedders)
    bench_peer = bench_commands.add_parser("peer", help="our default pipeline beside a stock Haystack RAG pipeline: "
                                           "answer time and gold-judged answers, same questions, store and model")
    bench_peer.add_argument("--limit", type=int, default=30, help="dev questions asked of each (default: %(default)s)")
    bench_peer.add_argument("--offset", type=int, default=300, help="skip the first N dev questions (default: "
                            "%(default)s, a held-out slice)")
    bench_peer.set_defaults(handler=_bench_peer)
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

