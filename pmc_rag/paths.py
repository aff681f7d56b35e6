"""Where pmc-rag keeps its files.

Everything the system writes lives under one home directory, `PMC_RAG_HOME`, which defaults to `.pmc-rag/`
in the project checkout (delete it to start from scratch):

    .pmc-rag/
        pgdata/    the embedded PostgreSQL cluster (chunks, embeddings, later conversations)
        models/    the embedded LLM assembled from its PyPI parts (checksum-verified)
        hayhooks/  the wrapper folders `pmc-rag serve` writes, one per endpoint
        eval/      one folder per `pmc-rag eval` run: table.md, results.json, chart.png
"""

from __future__ import annotations

from pathlib import Path

from pmc_rag.components.data_home import home, models_dir  # noqa: F401  (defined once, below the components)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PIPELINES_DIR = PROJECT_ROOT / "pipelines"
# What `pmc-rag ask` and hayhooks.yml's `rag` endpoint answer with: rag.yml, whose question router sends a summary
# request, a comparison or two questions in one down their own path (docs, "Questions beyond one paper").
DEFAULT_ANSWER_PIPELINE = "rag"
SAMPLE_CORPUS_DIR = PROJECT_ROOT / "corpus"
DEV_QUESTIONS = PROJECT_ROOT / "evaluation" / "datasets" / "pubmedqa_dev_questions.json"
CONVERSATIONS = PROJECT_ROOT / "evaluation" / "datasets" / "conversations.json"
UNANSWERABLE = PROJECT_ROOT / "evaluation" / "datasets" / "unanswerable_questions.json"


def pgdata_dir() -> Path:
    return home() / "pgdata"
