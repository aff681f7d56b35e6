"""What several commands share: exit codes, the log file for warnings, the indexing pipeline's writer."""

from __future__ import annotations

# Exit codes: 0 all done; 1 nothing could be done (the message says why); 3 done, but some input was skipped.
EXIT_FAILED = 1
EXIT_PARTIAL = 3


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


def _writer(pipeline):
    """The indexing pipeline's writer: the component with a document store."""
    for name in pipeline.graph.nodes:
        component = pipeline.get_component(name)
        if getattr(component, "document_store", None) is not None:
            return component
    raise ValueError("the indexing pipeline has no component with a document_store")
