"""Own documents uploaded to the server: cited with their page, deleted, and the uploads built to harm it (a reader
exhausted, hostile names, races, a full disk) refused without losing anything."""

from __future__ import annotations

import os
import re

import psycopg
import pytest
from served_sample import QUESTION, TABLE, chat_body, chunk_count


def test_own_documents_are_uploaded_cited_with_their_page_and_deleted(client, pg_conn_str, tmp_path,
                                                                     answering_model_down):
    from pdf_documents import article_pdf, scanned_pdf

    pdf, _ = article_pdf(tmp_path / "FIELT trial.pdf")
    uploaded = client.post("/collections/own/documents", files=[("files", (pdf.name, pdf.read_bytes(),
                                                                          "application/pdf"))])
    assert uploaded.status_code == 200, uploaded.text
    document = uploaded.json()["documents"][0]
    assert document["source_id"].startswith("doc:") and document["pages"] >= 3
    stored = chunk_count(pg_conn_str)

    bad = [("empty.txt", b"", 422, "empty.txt: the file is empty"),
           ("report.docx", b"PK\x03\x04 a word file", 415, "report.docx: not a type pmc-rag reads"),
           ("locked.pdf", article_pdf(tmp_path / "locked.pdf", password="x")[0].read_bytes(), 422, "encrypted"),
           ("scan.pdf", scanned_pdf(tmp_path / "scan.pdf").read_bytes(), 422, "no text layer (a scan?)"),
           ("cut.pdf", pdf.read_bytes()[:3000], 422, "cut.pdf: the PDF cannot be read"),
           ("huge.txt", b"word " * 100_000, 413, "upload over 400000 bytes (uploads.max_bytes in hayhooks.yml)")]
    for name, data, status, message in bad:
        response = client.post("/collections/own/documents", files=[("files", (name, data))])
        assert response.status_code == status and message in response.json()["detail"], (name, response.text)
    # one bad file among good ones: none of them is stored
    response = client.post("/collections/own/documents", files=[("files", ("note.txt", b"Erlotinib notes.\n\nRash.")),
                                                                ("files", ("empty.txt", b" "))])
    assert response.status_code == 422 and chunk_count(pg_conn_str) == stored
    assert client.post("/collections/Own Docs/documents", files=[("files", ("n.txt", b"x"))]).status_code == 422

    asked = {"question": "How many patients in the FIELT study had an objective response to erlotinib?",
             "filters": {"collections": ["own"]}}
    answer = client.post("/rag/run", json=asked).json()["result"]
    assert answer["references"] and {r["source_id"] for r in answer["references"]} == {document["source_id"]}
    assert all(isinstance(r["page"], int) and r["page"] >= 1 for r in answer["references"])
    chat = client.post("/v1/chat/completions", json=chat_body(asked["question"], filters=asked["filters"])).json()
    text = chat["choices"][0]["message"]["content"]
    assert re.search(rf"\[\d+\] {document['source_id']} · De Grève et al\. \d{{4}}, p\. \d+ · ", text), text

    assert client.get("/collections").json()["collections"] == [
        {"collection": "own", "documents": 1, "chunks": stored - chunk_count_without("own", pg_conn_str)}]
    assert client.delete("/collections/own").json()["documents"] == 1
    assert client.get("/collections").json()["collections"] == []
    assert client.delete("/collections/own").status_code == 404
    with psycopg.connect(pg_conn_str) as connection:  # the BM25 statistics count only what is left
        assert connection.execute(f"SELECT doc_count FROM {TABLE}__bm25_stats").fetchone()[0] == chunk_count(
            pg_conn_str)


def _upload(client, collection: str, *files: tuple[str, bytes]):
    return client.post(f"/collections/{collection}/documents", files=[("files", file) for file in files])


@pytest.mark.integration  # each file is read in a child process under time and memory limits
def test_uploads_built_to_exhaust_the_reader_are_422s_and_the_server_goes_on(client, pg_conn_str, tmp_path):
    from pdf_documents import inflating_pdf, many_pages_pdf

    stored = chunk_count(pg_conn_str)
    laughs = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + b"".join(b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
                         for i in range(1, 10))
              + b"]><PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID><Article><ArticleTitle>"
              b"&lol9;</ArticleTitle></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>")
    cases = [  # (file, status, what the message must say)
        (("bomb.pdf", inflating_pdf(tmp_path / "bomb.pdf", 100).read_bytes()), 422,
         "bomb.pdf: the reader was stopped on it"),  # 350 KB that inflate to 100 MB: 1.4 GB to read in-process
        (("book.pdf", many_pages_pdf(tmp_path / "book.pdf", 2001).read_bytes()), 422,
         "book.pdf: the PDF has 2001 pages; pmc-rag reads at most 2000"),
        (("laughs.xml", laughs), 422, "laughs.xml"),  # entities are never expanded: a billion laughs is 80 bytes
    ]
    for file, status, message in cases:
        response = _upload(client, "attack", file)
        assert response.status_code == status and message in response.json()["detail"], (file[0], response.text)
    many = _upload(client, "attack", *[(f"n{i}.txt", b"Erlotinib note.\n\nA rash.") for i in range(51)])
    assert many.status_code == 413 and "51 files in one upload; send at most 50" in many.json()["detail"]
    assert chunk_count(pg_conn_str) == stored and client.get("/collections").json()["collections"] == []
    answer = client.post("/rag/run", json={"question": QUESTION}).json()["result"]  # the server goes on
    assert answer["references"]


@pytest.mark.integration  # a child process stopped by its time and memory limits
def test_the_contained_reader_is_stopped_by_its_time_and_memory_limits(tmp_path):
    from pdf_documents import inflating_pdf, many_pages_pdf

    from pmc_rag.ingestion.contained import read_contained
    from pmc_rag.ingestion.xml import IngestError

    slow = many_pages_pdf(tmp_path / "slow.pdf", 1500, text_kb=256)  # 40 kB that take seconds to read
    with pytest.raises(IngestError, match=r"slow.pdf: reading it took longer than 0.5 s, so it was stopped"):
        read_contained(slow, "slow.pdf", timeout_s=0.5)
    with pytest.raises(IngestError, match=r"bomb.pdf: the reader was stopped on it .*more than 300 MB"):
        read_contained(inflating_pdf(tmp_path / "bomb.pdf", 50), "bomb.pdf", memory_mb=300)
    items = read_contained(many_pages_pdf(tmp_path / "long.pdf", 1500), "long.pdf")  # a long file within them
    assert len(items) == 1 and len(items[0].sections) == 1500


def test_hostile_file_and_collection_names_are_refused_or_made_harmless(client, pg_conn_str):
    names = ["../../../../tmp/pmc-rag-escaped.txt", "<img src=x onerror=alert(1)>.txt", "a" * 5000 + ".txt",
             "line\r\nX-Injected: 1.txt", "..", "CON.txt"]
    for name in names:
        response = _upload(client, "names", (name, b"Erlotinib notes.\n\nErlotinib caused a rash."))
        assert response.status_code in (200, 400, 415, 422), (name, response.text)  # 400: a header too long
        if response.status_code == 200:
            shown = response.json()["documents"][0]["file"]
            assert len(shown) <= 200 and not re.search(r"[\x00-\x1f]", shown), shown
            assert "x-injected" not in {key.lower() for key in response.headers}
    assert not os.path.exists("/tmp/pmc-rag-escaped.txt")
    for collection in ["..%2F..%2Fetc", "own;DROP TABLE serving_chunks", "<b>x</b>", "x" * 65, "Own", "%00"]:
        response = _upload(client, collection, ("n.txt", b"Erlotinib notes.\n\nA rash."))
        assert response.status_code in (404, 405, 422), (collection, response.text)
        assert response.status_code != 422 or "collection" in response.json()["detail"]
    assert client.delete("/collections/names").json()["documents"] >= 1
    with psycopg.connect(pg_conn_str) as connection:  # the table is still there, and whole
        assert connection.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0] == chunk_count(pg_conn_str) > 0


def test_concurrent_uploads_into_one_collection_each_land_once(client, pg_conn_str):
    from concurrent.futures import ThreadPoolExecutor

    same = ("same.txt", b"Gefitinib notes\n\nGefitinib was given to 12 patients; 5 had a rash.")
    files = [same, same, ("other.txt", b"Afatinib notes\n\nAfatinib caused diarrhoea in 7 of 20 patients."),
             ("third.txt", b"Osimertinib notes\n\nOsimertinib was well tolerated in 30 patients.")]
    with ThreadPoolExecutor(4) as pool:
        responses = list(pool.map(lambda file: _upload(client, "together", file), files))
    assert [r.status_code for r in responses] == [200] * 4, [r.text for r in responses]
    try:
        listed = {c["collection"]: c for c in client.get("/collections").json()["collections"]}["together"]
        assert listed["documents"] == 3  # the file sent twice is stored once: the second replaced the first
        assert listed["chunks"] == sum(r.json()["chunks"] for r in responses[1:])
    finally:
        client.delete("/collections/together")
    with psycopg.connect(pg_conn_str) as connection:
        assert connection.execute(f"SELECT doc_count FROM {TABLE}__bm25_stats").fetchone()[0] == chunk_count(
            pg_conn_str)


def test_a_disk_that_fills_mid_upload_or_mid_ingest_is_a_507_and_loses_nothing(client, pg_conn_str, monkeypatch):
    import errno
    from pathlib import Path

    kept = _upload(client, "kept", ("kept.txt", b"Erlotinib notes\n\nErlotinib caused a rash in 9 patients."))
    assert kept.status_code == 200
    stored = chunk_count(pg_conn_str)
    new_files = [("full1.txt", b"Lapatinib notes\n\nLapatinib was given to 40 patients."),
                 ("full2.txt", b"Neratinib notes\n\nNeratinib caused diarrhoea in most patients.")]
    real_write = Path.write_bytes

    def full_disk(path: Path, data: bytes) -> int:
        if "pmc-rag-upload-" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_write(path, data)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "write_bytes", full_disk)
        response = _upload(client, "kept", *new_files)
    assert response.status_code == 507 and "disk is full while saving the upload" in response.json()["detail"]
    # The database's disk fills while the upload's second chunk is written: PostgreSQL's own disk_full error,
    # raised from a trigger on the real table, inside the real transaction.
    with psycopg.connect(pg_conn_str, autocommit=True) as connection:
        connection.execute("""
            CREATE OR REPLACE FUNCTION pmc_rag_test_disk_full() RETURNS trigger AS $$
            BEGIN
              IF (SELECT count(*) FROM serving_chunks WHERE meta->>'collection' = 'kept') >= 2 THEN
                RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';
              END IF;
              RETURN NEW;
            END $$ LANGUAGE plpgsql""")
        connection.execute(f"CREATE TRIGGER pmc_rag_test_disk_full BEFORE INSERT ON {TABLE} "
                           "FOR EACH ROW EXECUTE FUNCTION pmc_rag_test_disk_full()")
    try:
        response = _upload(client, "kept", *new_files)
        assert response.status_code == 507, response.text
        assert "database's disk is full while storing the upload; nothing of it was stored" in response.json()[
            "detail"]
    finally:
        with psycopg.connect(pg_conn_str, autocommit=True) as connection:
            connection.execute(f"DROP TRIGGER pmc_rag_test_disk_full ON {TABLE}")
            connection.execute("DROP FUNCTION pmc_rag_test_disk_full()")
    assert chunk_count(pg_conn_str) == stored  # nothing of the failed uploads, nothing earlier lost
    listed = {c["collection"]: c for c in client.get("/collections").json()["collections"]}
    assert listed["kept"]["documents"] == 1
    assert _upload(client, "kept", *new_files).status_code == 200  # with space again, the same upload lands
    assert client.delete("/collections/kept").json()["documents"] == 3


def chunk_count_without(collection: str, pg_conn_str: str) -> int:
    with psycopg.connect(pg_conn_str) as connection:
        return connection.execute(f"SELECT count(*) FROM {TABLE} WHERE meta->>'collection' IS DISTINCT FROM %s",
                                  (collection,)).fetchone()[0]
