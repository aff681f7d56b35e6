"""The user's own documents over HTTP: upload into a collection, list collections, delete one.

    POST   /collections/<name>/documents   multipart, one or more `files` (PDF, .txt/.md, PMC/PubMed XML)
    GET    /collections                    each collection this key may read, with its documents and chunks
    DELETE /collections/<name>             its chunks go, and their terms leave the BM25 statistics (owner only)
    PUT    /collections/<name>/readers     {"readers": [key ids, or "*"]}: who else may read it (owner only)
    GET    /whoami                         this key's id, to be named as a reader by others

An upload never replaces what it did not add: each document is stored as its collection's own copy under a
citation id of its own, and the id the file claims (a PMCID, say) is kept, marked unchecked
(`pmc_rag.ingestion.collections`). With API keys, a collection belongs to the key that first uploaded into it.

An upload is all or nothing: every file is read and checked first (type, size, empty, encrypted or damaged PDF,
a scan with no text), each in a child process with a memory and time limit (a file built to exhaust or crash the
reader stops there), and one bad file is a 4xx that names it and its problem, with nothing stored. Then the files
go through the same indexing pipeline as `pmc-rag ingest --collection` (`uploads.pipeline` in hayhooks.yml), in
one transaction: a full disk part way is a 507 with nothing of the upload stored and nothing earlier lost.
"""

from __future__ import annotations

import errno
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI, File, HTTPException, UploadFile
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool

from pmc_rag.ingestion.collections import (CollectionRefused, claim_collection, delete_collection, list_collections,
                                           set_readers, uploaded_copy)
from pmc_rag.ingestion.documents import PDF_SUFFIXES, TEXT_SUFFIXES, check_collection
from pmc_rag.ingestion.contained import read_contained
from pmc_rag.ingestion.runner import ingest_articles
from pmc_rag.ingestion.xml import IngestError
from pmc_rag.answering.caller import current_owner, current_uploader, keys_in_use
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

    def add(self, collection: str, files: list[tuple[str, bytes]], uploader: str) -> dict[str, Any]:
        """Check and read every file, then index them all into `collection` (of `uploader`'s) in one transaction,
        each as the collection's own copy; an HTTPException that names the file and its problem otherwise, with
        nothing stored."""
        _collection(collection)
        if not files:
            raise HTTPException(422, "no files: send one or more as multipart form field `files`")
        if len(files) > self.config.max_upload_files:
            raise HTTPException(413, f"{len(files)} files in one upload; send at most {self.config.max_upload_files} "
                                     "at a time (uploads.max_files in hayhooks.yml)")
        articles, documents, text_chars = [], [], 0
        with tempfile.TemporaryDirectory(prefix="pmc-rag-upload-") as folder:
            for index, (raw_name, data) in enumerate(files):
                name = _shown_name(raw_name)
                _check_type(raw_name, name, data)
                path = Path(folder) / f"{index}-{_safe_name(raw_name)}"  # its end: the type
                try:
                    path.write_bytes(data)
                except OSError as error:
                    raise _storage_problem(error, "while saving the upload to a temporary file") from None
                for item in self._read(path, name):
                    text_chars += sum(len(section.text) for section in item.sections)
                    if text_chars > self.config.max_upload_text_chars:
                        raise HTTPException(413, f"{name}: the upload holds more than "
                                                 f"{self.config.max_upload_text_chars} characters of text; send "
                                                 "fewer or shorter documents (uploads.max_text_chars in hayhooks.yml)")
                    articles.append(uploaded_copy(item, collection, uploader))
                    documents.append({"file": name, "source_id": item.source_id, "claimed_id": item.claimed_id,
                                      "title": item.title,
                                      "pages": len({s.page for s in item.sections if s.page is not None}) or None})
        # One batch: the whole upload is one pipeline run and one transaction, so a failure part way (a full
        # disk, the database going away) stores none of it and leaves what was stored before as it was.
        with self._lock:
            try:
                claim_collection(self.store, collection, uploader)
            except CollectionRefused as refused:
                raise HTTPException(refused.status, str(refused)) from None
            try:
                report = ingest_articles(articles, self.pipeline, collection=collection, batch_words=2**62)
            except Exception as error:
                problem = _storage_problem(error, "while storing the upload; nothing of it was stored")
                if problem.status_code == 507:
                    raise problem from None
                raise
        return {"collection": collection, "documents": documents, "chunks": report.chunks,
                "chunks_replaced": report.chunks_replaced}

    def _read(self, path: Path, name: str) -> list[Any]:
        """The file's articles, read in a child process with the configured limits; a 422 for any problem."""
        try:
            items = read_contained(path, name, timeout_s=self.config.upload_read_timeout_s,
                                   memory_mb=self.config.upload_read_memory_mb)
        except IngestError as error:
            raise HTTPException(422, str(error)) from None
        for item in items:
            if isinstance(item, IngestError):
                raise HTTPException(422, str(item).replace(str(path), name))
        return items


def add_upload_routes(app: FastAPI, config: ServeConfig) -> None:
    if config.upload_pipeline is None:
        return
    uploads = Uploads(config)

    async def upload(name: str, files: list[UploadFile] = File(..., description="PDF, .txt/.md or PMC/PubMed XML")
                     ) -> dict[str, Any]:
        read = [(file.filename or "upload", await file.read()) for file in files]
        return await run_in_threadpool(uploads.add, name, read, current_uploader())

    async def collections() -> dict[str, Any]:
        reader = current_owner.get() if keys_in_use.get() else None
        return {"collections": await run_in_threadpool(list_collections, uploads.store, reader)}

    async def delete(name: str) -> dict[str, Any]:
        _collection(name)
        try:
            deleted = await run_in_threadpool(delete_collection, uploads.store, name, current_uploader())
        except CollectionRefused as refused:
            raise HTTPException(refused.status, str(refused)) from None
        if not deleted["chunks"]:
            raise HTTPException(404, f"no collection {name!r}; GET /collections lists them")
        return deleted

    async def share(name: str, body: Readers) -> dict[str, Any]:
        _collection(name)
        try:
            readers = await run_in_threadpool(set_readers, uploads.store, name, current_uploader(), body.readers)
        except CollectionRefused as refused:
            raise HTTPException(refused.status, str(refused)) from None
        return {"collection": name, "readers": readers}

    async def whoami() -> dict[str, Any]:
        return {"key_id": current_uploader(), "keys": keys_in_use.get()}

    app.add_api_route("/collections/{name}/documents", upload, methods=["POST"], tags=["collections"],
                      summary="Add your own documents (PDF, text, PMC/PubMed XML) to a collection")
    app.add_api_route("/collections", collections, methods=["GET"], tags=["collections"],
                      summary="The collections, with their documents and chunks")
    app.add_api_route("/collections/{name}", delete, methods=["DELETE"], tags=["collections"],
                      summary="Delete a collection of yours: its chunks and their BM25 statistics")
    app.add_api_route("/collections/{name}/readers", share, methods=["PUT"], tags=["collections"],
                      summary="Let other keys read a collection of yours (their ids from GET /whoami; '*': all)")
    app.add_api_route("/whoami", whoami, methods=["GET"], tags=["collections"],
                      summary="This key's id, as owners name readers by it")


class Readers(BaseModel):
    model_config = ConfigDict(extra="forbid")

    readers: list[str] = Field(max_length=100, description="key ids (GET /whoami) or '*' for every key; [] for none")

    @field_validator("readers")
    @classmethod
    def _ids(cls, values: list[str]) -> list[str]:
        bad = [v for v in values if not re.fullmatch(r"[0-9a-f]{32}|\*", v)]
        if bad:
            raise ValueError(f"not key ids: {[v[:40] for v in bad[:3]]}; a key id is the 32 hex digits GET /whoami "
                             "shows, or '*' for every key")
        return values


def _collection(name: str) -> None:
    try:
        check_collection(name)
    except IngestError as error:
        raise HTTPException(422, str(error)) from None


def _check_type(raw_name: str, name: str, data: bytes) -> None:
    """The type by the client's whole file name (`name` is it as messages show it, perhaps shortened)."""
    if not raw_name.lower().rstrip().endswith(UPLOAD_SUFFIXES):
        raise HTTPException(415, f"{name}: not a type pmc-rag reads; send PDF (.pdf), plain text (.txt, .md) or "
                                 "PMC/PubMed XML (.xml, .nxml)")
    if not data.strip():
        raise HTTPException(422, f"{name}: the file is empty")
    if raw_name.lower().rstrip().endswith(PDF_SUFFIXES) and not data.lstrip().startswith(b"%PDF-"):
        raise HTTPException(415, f"{name}: named .pdf but not a PDF (it does not start with %PDF-)")


def _shown_name(name: str) -> str:
    """The client's file name as errors and answers show it: no control characters, at most 200 characters."""
    return re.sub(r"[\x00-\x1f\x7f]", "?", name)[:200] or "upload"


def _storage_problem(error: BaseException, when: str) -> HTTPException:
    """507 when the error (or one it was raised from) is a full disk, in this process or the database's."""
    seen = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return HTTPException(507, f"the server's disk is full {when}; free some space and send it again")
        if getattr(seen, "sqlstate", None) == "53100":  # PostgreSQL's disk_full
            return HTTPException(507, f"the database's disk is full {when}; free some space and send it again")
        seen = seen.__cause__ or seen.__context__
    return HTTPException(500, f"the upload could not be stored ({type(error).__name__})")


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name)[-100:] or "upload"
