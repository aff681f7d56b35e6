"""What the BM25 tests share: the dev questions, chunks that need no embedding, and an exhaustive twin of a retriever
(every posting scored) to compare its pruned search with."""

from __future__ import annotations

import json
import os

from haystack import Document

from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever

from conftest import PROJECT_ROOT

DEV_QUESTIONS = json.loads((PROJECT_ROOT / "evaluation/datasets/pubmedqa_dev_questions.json").read_text())
# `scripts/test.sh --quick` sets PMC_RAG_TEST_QUICK=1: the exactness tests then compare every fourth question (the
# same kinds of search, a quarter of the repeats); the whole suite, which CI runs, compares them all.
QUICK = os.environ.get("PMC_RAG_TEST_QUICK") == "1"


def dev_questions(first: int | None = None) -> list[str]:
    """The first `first` dev questions (all by default), every fourth of them in a quick run."""
    questions = [q["QUESTION"] for q in DEV_QUESTIONS.values()][:first]
    return questions[::4] if QUICK else questions
UNIT = [0.0] * 383 + [1.0]  # BM25 needs no embeddings; the table still wants one per chunk


def chunk(source_id: str, text: str, index: int = 0) -> Document:
    return Document(id=f"{source_id}-{index}", content=text, embedding=UNIT,
                    meta={"source_id": source_id, "year": 2000 + index})


def papers(documents: list[Document]) -> list[str]:
    return list(dict.fromkeys(d.meta["source_id"] for d in documents))


def exhaustive_twin(retriever: PgvectorBM25Retriever) -> PgvectorBM25Retriever:
    """The same retriever scoring every posting: the reference the pruned search must equal."""
    twin = PgvectorBM25Retriever.from_dict({**retriever.to_dict(), "init_parameters": {
        **retriever.to_dict()["init_parameters"], "exhaustive": True}})
    assert twin.exhaustive and not retriever.exhaustive
    return twin


def ranked(retriever: PgvectorBM25Retriever, question: str, **kwargs) -> list[tuple[str, float]]:
    return [(d.id, round(d.score, 6)) for d in retriever.run(query=question, **kwargs)["documents"]]
