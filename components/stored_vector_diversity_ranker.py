"""Orders excerpts by maximal marginal relevance using the vectors they were indexed with, instead of embedding
them again."""

from __future__ import annotations

from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict


@component
class StoredVectorDiversityRanker:
    """
    Haystack's `SentenceTransformersDiversityRanker` with the maximum-margin-relevance strategy (same parameters,
    same order), reading each document's own `embedding` where it has one.

    The chunks the retrievers return already carry the vectors ingestion stored for them, made by the same model
    from the same text (title, section and chunk, joined as `meta_fields_to_embed` joins them). The stock ranker
    embeds all ten again: about 420 ms of every answer on 2 CPU cores, before the model can start. This one
    embeds only the question, and any document without a vector of the model's size (one from another table or
    source), so it orders the documents as the stock ranker would up to the vectors' rounding (the index may hold
    bfloat16-computed vectors, at cosine 0.9999 of float32's).

    The model must be the one the chunks were embedded with (`pipelines/indexing.yml`'s `embedder.model`), as for
    the query embedder.

    Usage:
    ```python
    from haystack import Document
    from pmc_rag.components.stored_vector_diversity_ranker import StoredVectorDiversityRanker

    ranker = StoredVectorDiversityRanker(model="sentence-transformers/all-MiniLM-L6-v2", top_k=5,
                                         lambda_threshold=0.9, meta_fields_to_embed=["title", "section"])
    ranker.warm_up()
    ranker.run(query="Does erlotinib work?", documents=[Document(content="...", embedding=[...])])
    ```
    """

    def __init__(self, *, model: str = "sentence-transformers/all-MiniLM-L6-v2", top_k: int = 10,
                 lambda_threshold: float = 0.5, meta_fields_to_embed: list[str] | None = None,
                 embedding_separator: str = "\n", query_prefix: str = "", query_suffix: str = "",
                 device: str | None = None):
        """
        :param model: The Sentence Transformers model the documents' vectors come from (hub name or folder).
        :param top_k: How many documents to keep.
        :param lambda_threshold: Relevance against diversity, 0 to 1: 1 orders by relevance alone.
        :param meta_fields_to_embed: Meta fields put before the content when a document has to be embedded here.
        :param embedding_separator: What joins those fields and the content.
        :param query_prefix: Text put before the query (some models expect an instruction).
        :param query_suffix: Text put after it.
        :param device: "cpu", "cuda", ...; None: a CUDA GPU if PyTorch sees one, else the CPU.
        """
        if not 0 <= lambda_threshold <= 1:
            raise ValueError(f"lambda_threshold must be between 0 and 1, but got {lambda_threshold}.")
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        self.model = model
        self.top_k = top_k
        self.lambda_threshold = lambda_threshold
        self.meta_fields_to_embed = meta_fields_to_embed or []
        self.embedding_separator = embedding_separator
        self.query_prefix = query_prefix
        self.query_suffix = query_suffix
        self.device = device
        self._encoder: Any = None

    def warm_up(self) -> None:
        if self._encoder is not None:
            return
        # The query embedder's ONNX runtime gives Sentence Transformers' vectors (to 1e-5) and, once its export is
        # recorded, starts without importing Sentence Transformers: about 5 s of every process start on 2 cores.
        from pmc_rag.components.onnx_text_embedder import OnnxEmbedderError, OnnxTextEmbedder

        try:
            embedder = OnnxTextEmbedder(model=self.model, device=self.device)
            embedder.warm_up()
            self._encoder = lambda texts: np.asarray([embedder.run(text=t)["embedding"] for t in texts])
        except OnnxEmbedderError:  # a model ONNX Runtime does not run here (not mean-pooled): as the stock ranker
            from sentence_transformers import SentenceTransformer

            self._encoder = SentenceTransformer(self.model, device=self.device).encode

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model, top_k=self.top_k, lambda_threshold=self.lambda_threshold,
                               meta_fields_to_embed=self.meta_fields_to_embed,
                               embedding_separator=self.embedding_separator, query_prefix=self.query_prefix,
                               query_suffix=self.query_suffix, device=self.device)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoredVectorDiversityRanker:
        return default_from_dict(cls, data)

    def _text_to_embed(self, document: Document) -> str:
        fields = [str(document.meta[key]) for key in self.meta_fields_to_embed if document.meta.get(key)]
        return self.embedding_separator.join([*fields, document.content or ""])

    def _unit_vectors(self, query: str, documents: list[Document]) -> tuple[np.ndarray, np.ndarray]:
        self.warm_up()
        query_vector = self._encoder([self.query_prefix + query + self.query_suffix])[0]
        size = len(query_vector)
        vectors = np.zeros((len(documents), size), dtype=np.float32)
        missing = []
        for i, document in enumerate(documents):
            if document.embedding is None or len(document.embedding) != size:
                missing.append(i)
            else:
                vectors[i] = document.embedding
        if missing:
            vectors[missing] = self._encoder([self._text_to_embed(documents[i]) for i in missing])
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return query_vector / np.linalg.norm(query_vector), vectors

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: int | None = None,
            lambda_threshold: float | None = None) -> dict[str, list[Document]]:
        """
        :param query: The question the documents are ordered for.
        :param documents: The candidates (their `embedding`s are used where present).
        :param top_k: Overrides the `top_k` given at initialization.
        :param lambda_threshold: Overrides the `lambda_threshold` given at initialization.
        :returns: `documents`: at most top_k documents, in maximal-marginal-relevance order.
        """
        if not documents:
            return {"documents": []}
        top_k = self.top_k if top_k is None else top_k
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        weight = self.lambda_threshold if lambda_threshold is None else lambda_threshold
        if not 0 <= weight <= 1:
            raise ValueError(f"lambda_threshold must be between 0 and 1, but got {weight}.")
        query_vector, vectors = self._unit_vectors(query, documents)
        relevance = vectors @ query_vector
        likeness = vectors @ vectors.T
        selected = [int(np.argmax(relevance))]
        while len(selected) < min(top_k, len(documents)):
            # The stock ranker's loop: the first best score wins ties, in the documents' order.
            best, best_score = None, -float("inf")
            for i in range(len(documents)):
                if i in selected:
                    continue
                score = weight * relevance[i] - (1 - weight) * max(likeness[i][j] for j in selected)
                if score > best_score:
                    best, best_score = i, score
            selected.append(best)
        return {"documents": [documents[i] for i in selected]}
