"""Loading pipeline YAML with pmc-rag's own components allowed."""

from __future__ import annotations

from pathlib import Path

from haystack import Pipeline

from pmc_rag.environment import ALLOWED_MODULES
from pmc_rag.paths import PIPELINES_DIR


class PipelineError(RuntimeError):
    """A pipeline file cannot be loaded or used; the message names the file and the problem."""


def resolve_pipeline_path(name_or_path: str | Path) -> Path:
    """A path as given, or a bare name ("indexing") looked up in the project's pipelines/ folder."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    candidate = PIPELINES_DIR / (path.name if path.suffix else f"{path.name}.yml")
    if candidate.is_file():
        return candidate
    raise PipelineError(f"pipeline file {name_or_path} not found (looked in the current folder and {PIPELINES_DIR})")


def load_pipeline(name_or_path: str | Path) -> Pipeline:
    path = resolve_pipeline_path(name_or_path)
    try:
        return Pipeline.loads(path.read_text(encoding="utf-8"), allowed_modules=ALLOWED_MODULES)
    except Exception as error:  # Haystack raises several types for bad YAML, unknown types and bad parameters
        raise PipelineError(f"{path}: cannot load the pipeline: {type(error).__name__}: {error}") from error
