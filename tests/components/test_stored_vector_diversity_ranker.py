"""StoredVectorDiversityRanker: the stock MMR ranker's order, from the vectors the documents carry."""

from __future__ import annotations

import numpy as np
import pytest
from haystack import Document
from haystack_integrations.components.rankers.sentence_transformers.sentence_transformers_diversity import (
    SentenceTransformersDiversityRanker,
)

from pmc_rag.components.stored_vector_diversity_ranker import StoredVectorDiversityRanker

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SETTINGS = {"model": MODEL, "meta_fields_to_embed": ["title", "section"], "top_k": 4}
QUESTION = "Is erlotinib effective as first-line treatment in EGFR-mutant lung cancer?"
TEXTS = [
    ("Erlotinib in EGFR-mutant NSCLC", "Results", "Progression-free survival was longer with erlotinib."),
    ("Erlotinib in EGFR-mutant NSCLC", "Results", "Erlotinib prolonged progression-free survival markedly."),
    ("Erlotinib in EGFR-mutant NSCLC", "Abstract", "First-line erlotinib is effective in EGFR-mutant lung cancer."),
    ("Gefitinib in Asian patients", "Conclusions", "Gefitinib improved response rates in EGFR-mutant tumours."),
    ("Asthma in children", "Methods", "We enrolled 200 children with asthma in a randomised trial."),
    ("Chemotherapy toxicity", "Results", "Neutropenia was the most common adverse event of chemotherapy."),
]


@pytest.fixture(scope="session")
def indexed_documents() -> list[Document]:
    """Documents with the vectors ingestion would have stored: the model's, of title, section and text."""
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(MODEL, device="cpu")
    texts = ["\n".join(parts) for parts in TEXTS]
    vectors = encoder.encode(texts, normalize_embeddings=True)
    return [Document(content=text, meta={"title": title, "section": section}, embedding=vector.tolist())
            for (title, section, text), vector in zip(TEXTS, vectors)]


@pytest.mark.parametrize("weight", [0.9, 0.5])
def test_it_orders_as_the_stock_ranker_does(indexed_documents, weight):
    stock = SentenceTransformersDiversityRanker(strategy="maximum_margin_relevance", lambda_threshold=weight,
                                                **SETTINGS)
    stock.warm_up()
    ours = StoredVectorDiversityRanker(lambda_threshold=weight, **SETTINGS)
    expected = [d.content for d in stock.run(query=QUESTION, documents=indexed_documents)["documents"]]
    assert [d.content for d in ours.run(query=QUESTION, documents=indexed_documents)["documents"]] == expected
    assert len(expected) == 4


def test_it_reads_the_documents_vectors_and_embeds_only_those_without_one(indexed_documents):
    ranker = StoredVectorDiversityRanker(lambda_threshold=1.0, **SETTINGS)
    natural = [d.content for d in ranker.run(query=QUESTION, documents=indexed_documents)["documents"]]
    # A stored vector is believed: give the asthma methods chunk the question's own vector and it comes first.
    ranker.warm_up()
    question_vector = ranker._encoder([QUESTION])[0].tolist()
    planted = [Document(content=d.content, meta=d.meta, embedding=question_vector if "asthma" in d.content else
                        d.embedding) for d in indexed_documents]
    assert ranker.run(query=QUESTION, documents=planted)["documents"][0].content.startswith("We enrolled")
    assert natural[0] != planted[4].content
    # Without vectors (or with vectors of another size) the documents are embedded here, to the same order.
    bare = [Document(content=d.content, meta=d.meta, embedding=None if i % 2 else [0.1] * 8)
            for i, d in enumerate(indexed_documents)]
    assert [d.content for d in ranker.run(query=QUESTION, documents=bare)["documents"]] == natural


def test_settings_are_checked_and_round_trip():
    ranker = StoredVectorDiversityRanker(lambda_threshold=0.9, **SETTINGS)
    data = ranker.to_dict()
    assert data["init_parameters"]["lambda_threshold"] == 0.9
    assert StoredVectorDiversityRanker.from_dict(data).to_dict() == data
    assert ranker.run(query=QUESTION, documents=[]) == {"documents": []}
    with pytest.raises(ValueError, match="lambda_threshold must be between 0 and 1"):
        StoredVectorDiversityRanker(lambda_threshold=1.5)
    with pytest.raises(ValueError, match="top_k must be > 0"):
        ranker.run(query=QUESTION, documents=[Document(content="x", embedding=list(np.ones(384)))], top_k=0)
