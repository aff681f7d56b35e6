"""The user's own documents over HTTP: upload into a collection, list collections, delete one.

    POST   /collections/<name>/documents   multipart, one or more `files` (PDF, .txt/.md, PMC/PubMed XML)
    GET    /collections                    each collection with its documents and chunks
    DELETE /collections/<name>             its chunks go, and their terms leave the BM25 statistics

An upload is all or nothing: every file is read and checked first (type, size, empty, encrypted or damaged PDF,
a scan with no text), and one bad file is a 4xx that names it and its problem, with nothing stored. Then the files
go through the same indexing pipeline as `pmc-rag ingest --collection` (`uploads.pipeline` in hayhooks.yml).
"""

from __future__ import annotations

import re
import tempfile
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI, File, HTTPException, UploadFile
from starlette.concurrency import run_in_threadpool

from pmc_rag.ingestion.collections import delete_collection, list_collections
from pmc_rag.ingestion.documents import PDF_SUFFIXES, TEXT_SUFFIXES, check_collection
from pmc_rag.ingestion.runner import ingest
from pmc_rag.ingestion.sources import read_articles
from pmc_rag.ingestion.xml import IngestError
from pmc_rag.serving.config import ServeConfig

UPLOAD_SUFFIXES = (*PDF_SUFFIXES, *TEXT_SUFFIXES, ".xml", ".nxml")


class Uploads:
    """The indexing pipeline behind the upload routes, loaded at the first upload; one upload at a time."""

    def __init__(self, config: ServeConfig):
        self.config = config
        self._pipeline: Any = None
        self._lock = threading.Lock()

    @property
    def pipeline(self) -> Any:
        if self._pipeline is None:
            from pmc_rag.pipelines import load_pipeline

            self._pipeline = load_pipeline(self.config.upload_pipeline)
            self._pipeline.warm_up()
        return self._pipeline

    @property
    def store(self) -> Any:
        from pmc_rag.pipelines import document_store_of

        return document_store_of(self.pipeline)

    def add(self, collection: str, files: list[tuple[str, bytes]]) -> dict[str, Any]:
        """Check every file, then index them all into `collection`; InputError-style HTTPException otherwise."""
        _collection(collection)
        if not files:
            raise HTTPException(422, "no files: send one or more as multipart form field `files`")
        with tempfile.TemporaryDirectory(prefix="pmc-rag-upload-") as folder:
            paths, documents = [], []
            for index, (name, data) in enumerate(files):
                path = Path(folder) / f"{index}-{_safe_name(name)}"
                _check_type(name, data)
                path.write_bytes(data)
                for item in read_articles(path):
                    if isinstance(item, IngestError):
                        raise HTTPException(422, str(item).replace(str(path), name))
                    documents.append({"file": name, "source_id": item.source_id, "title": item.title,
                                      "pages": len({s.page for s in item.sections if s.page is not None}) or None})
                paths.append(str(path))
            with self._lock:
                report = ingest(paths, self.pipeline, progress=False, collection=collection)
        if report.skipped:  # read_articles passed them all above; this would be a bug, said plainly
            raise HTTPException(500, f"some files were not ingested: {report.skipped}")
        return {"collection": collection, "documents": documents, "chunks": report.chunks,
                "chunks_replaced": report.chunks_replaced}


def add_upload_routes(app: FastAPI, config: ServeConfig) -> None:
    if config.upload_pipeline is None:
        return
    uploads = Uploads(config)

    async def upload(name: str, files: list[UploadFile] = File(..., description="PDF, .txt/.md or PMC/PubMed XML")
                     ) -> dict[str, Any]:
        read = [(file.filename or "upload", await file.read()) for file in files]
        return await run_in_threadpool(uploads.add, name, read)

    async def collections() -> dict[str, Any]:
        return {"collections": await run_in_threadpool(list_collections, uploads.store)}

    async def delete(name: str) -> dict[str, Any]:
        _collection(name)
        deleted = await run_in_threadpool(delete_collection, uploads.store, name)
        if not deleted["chunks"]:
            raise HTTPException(404, f"no collection {name!r}; GET /collections lists them")
        return deleted

    app.add_api_route("/collections/{name}/documents", upload, methods=["POST"], tags=["collections"],
                      summary="Add your own documents (PDF, text, PMC/PubMed XML) to a collection")
    app.add_api_route("/collections", collections, methods=["GET"], tags=["collections"],
                      summary="The collections, with their documents and chunks")
    app.add_api_route("/collections/{name}", delete, methods=["DELETE"], tags=["collections"],
                      summary="Delete a collection: its chunks and their BM25 statistics")


def _collection(name: str) -> None:
    try:
        check_collection(name)
    except IngestError as error:
        raise HTTPException(422, str(error)) from None


def _check_type(name: str, data: bytes) -> None:
    if not name.lower().endswith(UPLOAD_SUFFIXES):
        raise HTTPException(415, f"{name}: not a type pmc-rag reads; send PDF (.pdf), plain text (.txt, .md) or "
                                 "PMC/PubMed XML (.xml, .nxml)")
    if not data.strip():
        raise HTTPException(422, f"{name}: the file is empty")
    if name.lower().endswith(PDF_SUFFIXES) and not data.lstrip().startswith(b"%PDF-"):
        raise HTTPException(415, f"{name}: named .pdf but not a PDF (it does not start with %PDF-)")


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name)[-100:] or "upload"
