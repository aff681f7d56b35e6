"""Commands that answer: `ask`, and `serve` (the HTTP server)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pmc_rag.cli.common import _warnings_to_log_file
from pmc_rag.paths import PIPELINES_DIR


def _ask(args: argparse.Namespace) -> int:
    if _asked_the_running_server(args):
        return 0
    from pmc_rag.answering.service import AnswerService, fixed_answer
    from pmc_rag.serving.access import NOT_UPLOADED
    from pmc_rag.database import ensure_database
    from pmc_rag.pipelines import load_declared_pipeline, resolve_pipeline_path
    from pmc_rag.answering.refusals import Refused
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


def _asked_the_running_server(args: argparse.Namespace) -> bool:
    """Ask a `pmc-rag serve` of this data folder that answers with the same pipeline, over HTTP, and print its
    answer as an answer made here would be printed. False (nothing printed) when there is none or it cannot be
    asked: then the question is answered in process. Haystack, the models and the database are not loaded here."""
    from pmc_rag.running_server import ServerRefused, ask_server, server_for

    named = Path(args.pipeline)
    pipeline = named if named.is_file() else PIPELINES_DIR / (named.name if named.suffix else f"{named.name}.yml")
    served = server_for(pipeline)
    if served is None:
        return False
    try:
        result = ask_server(*served, question=args.question)
    except ServerRefused as refused:  # the same refusal, said the same way, as in process
        raise ValueError(refused.detail) from None
    if result is None:
        return False
    from pmc_rag.components.answer import Answer

    answer = Answer.model_validate(result)
    print(json.dumps(answer.model_dump(mode="json"), indent=2, ensure_ascii=False) if args.json
          else answer.as_text(explain=args.explain))
    if args.explain and not args.json:
        print(f"\nAsked the running server at {served[0]} (endpoint {served[1]}).")
    return True


def _serve(args: argparse.Namespace) -> int:
    from pmc_rag.serving.app import serve
    from pmc_rag.serving.config import load_serve_config

    serve(load_serve_config(args.config, host=args.host, port=args.port))
    return 0
