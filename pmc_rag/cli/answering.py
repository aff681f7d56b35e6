"""Commands that answer: `ask`, and `serve` (the HTTP server)."""

from __future__ import annotations

import argparse

from pmc_rag.cli.common import _warnings_to_log_file


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


def _serve(args: argparse.Namespace) -> int:
    from pmc_rag.serving.app import serve
    from pmc_rag.serving.config import load_serve_config

    serve(load_serve_config(args.config, host=args.host, port=args.port))
    return 0
