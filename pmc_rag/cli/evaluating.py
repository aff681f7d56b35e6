"""`pmc-rag eval`: pipeline variants side by side, and its side reports (conversations, unanswerable)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pmc_rag.cli.common import EXIT_FAILED
from pmc_rag.paths import DEFAULT_ANSWER_PIPELINE


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
    if (args.left_out or args.read_in_english) and not args.crisis:
        raise ValueError("--left-out and --read-in-english judge the crisis check: give them with --crisis")
    # One warning per question that Ollama is unreachable would bury the progress; each record names the model
    # that answered and those that failed.
    logging.getLogger("pmc_rag.components.remembering_fallback_chat_generator").setLevel(logging.ERROR)
    if args.crisis:
        from pmc_rag.evaluation.crisis import crisis_report

        report, table = crisis_report(left_out=args.left_out, read_in_english=args.read_in_english,
                                      progress=not args.no_progress)
        return _write_side_report(args, "crisis", report, table)
    if args.directions:
        from pmc_rag.evaluation import directions

        report = directions.run(args.directions_model)
        return _write_side_report(args, "directions", report, directions.markdown(report))
    if args.plain:
        from pmc_rag.evaluation.plain_questions import run_files, table

        rows = run_files(args.pipelines[0] if args.pipelines else "rag")
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
