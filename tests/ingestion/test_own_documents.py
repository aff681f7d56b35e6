"""The user's own documents: PDF and text read with page numbers and stable ids, ingested into collections,
listed and deleted (the server's upload routes are in tests/serving/test_uploads.py)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from pmc_rag.ingestion.collections import delete_collection, list_collections
from pmc_rag.ingestion.documents import read_document
from pmc_rag.ingestion.runner import ingest
from pmc_rag.ingestion.xml import IngestError

from pdf_documents import article_pdf, scanned_pdf

NOTE = "Lab note on erlotinib dosing\n\nIn our clinic erlotinib at 150 mg daily caused a skin rash in most patients.\n"


def test_a_pdf_is_read_page_by_page_with_its_headings_metadata_and_a_stable_id(tmp_path):
    path, made = article_pdf(tmp_path / "fielt.pdf")
    data = path.read_bytes()
    article = read_document(path, data, collection="lab")
    pages = [section.page for section in article.sections]
    assert len(set(pages)) >= 3 and pages == sorted(pages) and pages[0] == 1
    # the title area has no heading; a heading's section goes on across pages until the next one
    titles = [(section.page, section.title) for section in article.sections]
    assert titles[0] == (1, "Page 1") and (1, "Abstract: Conclusion") in titles and (7, "Conclusion") in titles
    assert (1, "Introduction") in titles and (2, "Introduction") in titles
    conclusion = next(s for s in article.sections if s.title == "Abstract: Conclusion")
    assert conclusion.text.startswith("The present study reinforces the use of EGFR tyrosine kinase inhibition")
    assert article.title == made["title"] and article.authors[:2] == made["authors"][:2]
    assert article.source_id.startswith("doc:") and len(article.source_id) == 20
    assert read_document(tmp_path / "renamed.pdf", data).source_id == article.source_id  # by content, not name
    chunks = article.section_documents()
    assert {c.meta["page"] for c in chunks} == set(pages) and {c.meta["collection"] for c in chunks} == {"lab"}
    assert "first-line" in " ".join(section.text for section in article.sections).lower()


def test_only_a_line_that_is_a_heading_and_nothing_else_starts_a_section():
    from pmc_rag.ingestion.documents import _sections

    pages = ["A trial of X\r\n2. Methods\r\nWe enrolled 40.\r\nResults are shown in Table 2.\r\n",
             "and more methods.\r\nConclusions\r\nX works.\r\nDiscussion: limits of the study\r\nFew."]
    assert [(s.page, s.title, s.text) for s in _sections(pages)] == [
        (1, "Page 1", "A trial of X"), (1, "2. Methods", "We enrolled 40. Results are shown in Table 2."),
        (2, "2. Methods", "and more methods."), (2, "Conclusions", "X works."),
        (2, "Discussion: limits of the study", "Few.")]


def test_captions_numbered_subsections_and_lay_summaries_are_sections_of_their_own():
    from pmc_rag.components.section_kinds import BACK_MATTER
    from pmc_rag.ingestion.documents import _sections

    pages = ["Conclusions\nX works in most.\nFigure 4\nMean spectra of the groups. A. Reference,\nB. Mild.\n"
             "Figure 2 shows the spectra, as\nexpected.\nTable 2: Confusion matrix of the groups.\n"
             "Materials and Methods / 3: Raman spectroscopy / 3.2: Spectral acquisition\nSpectra were taken.\n"
             "Patient Summary: What Did the Researchers Do?\nThey started with 19,993 twins."]
    assert [(s.title, s.kind, s.text) for s in _sections(pages)] == [
        ("Conclusions", "body", "X works in most."),
        ("Figure 4", "caption", "Mean spectra of the groups. A. Reference, B. Mild. Figure 2 shows the spectra, as "
                                "expected."),  # a sentence that starts "Figure 2 shows" is running text
        ("Table 2", "caption", "Confusion matrix of the groups."),
        ("Materials and Methods / 3: Raman spectroscopy / 3.2: Spectral acquisition", "body", "Spectra were taken."),
        ("Patient Summary: What Did the Researchers Do?", "body", "They started with 19,993 twins.")]
    assert BACK_MATTER.match("Patient Summary: What Did the Researchers Do?")  # never quoted as the finding


def test_a_text_file_takes_its_first_line_as_title(tmp_path):
    path = tmp_path / "note.txt"
    path.write_text(NOTE)
    article = read_document(path, path.read_bytes())
    assert article.title == "Lab note on erlotinib dosing" and article.source_format == "text"
    assert article.sections[0].page is None and "150 mg" in article.sections[0].text


@pytest.mark.parametrize("make, message", [
    (lambda p: article_pdf(p, password="secret")[0], r"encrypted \(password-protected\)"),
    (scanned_pdf, r"no text layer \(a scan\?\)"),
    (lambda p: p.write_bytes(article_pdf(p)[0].read_bytes()[:2000]) and p, "cannot be read"),
    (lambda p: p.write_bytes(b"%PDF-1.4 nothing else") and p, "cannot be read"),
], ids=["encrypted", "scan", "cut-short", "garbage"])
def test_bad_pdfs_say_what_is_wrong_and_what_to_do(tmp_path, make, message):
    path = make(tmp_path / "bad.pdf")
    with pytest.raises(IngestError, match=message):
        read_document(path, path.read_bytes())


def test_ingest_into_a_collection_then_delete_it_with_its_bm25_statistics(store, indexing_pipeline, tmp_path,
                                                                         pg_conn_str):
    pdf, _ = article_pdf(tmp_path / "fielt.pdf")
    note = tmp_path / "note.md"
    note.write_text(NOTE)
    with pytest.raises(IngestError, match="collection 'Lab Notes'"):
        ingest([str(note)], indexing_pipeline, collection="Lab Notes", progress=False)
    report = ingest([str(pdf), str(note)], indexing_pipeline, collection="lab", progress=False)
    assert report.articles == 2 and not report.skipped
    again = ingest([str(pdf)], indexing_pipeline, collection="lab", progress=False)  # the same file: replaced
    assert again.chunks_replaced == again.chunks > 0
    assert list_collections(store) == [{"collection": "lab", "documents": 2, "chunks": report.chunks}]
    table = store.table_name
    with psycopg.connect(pg_conn_str) as connection:
        pages = connection.execute(f"SELECT DISTINCT (meta->>'page')::int FROM {table} WHERE meta ? 'page'").fetchall()
        assert len(pages) >= 3
        assert connection.execute(f"SELECT doc_count FROM {table}__bm25_stats").fetchone()[0] == report.chunks
    assert delete_collection(store, "lab") == {"collection": "lab", "documents": 2, "chunks": report.chunks}
    assert list_collections(store) == []
    with psycopg.connect(pg_conn_str) as connection:
        assert connection.execute(f"SELECT doc_count, total_len FROM {table}__bm25_stats").fetchone() == (0, 0)
        assert connection.execute(f"SELECT count(*) FROM {table}__bm25_postings").fetchone()[0] == 0
        assert connection.execute(f"SELECT count(*) FROM {table}__bm25_terms WHERE df > 0").fetchone()[0] == 0


def test_a_folder_walk_takes_pdfs_but_text_files_only_when_named(tmp_path):
    from pmc_rag.ingestion.sources import expand_paths

    pdf, _ = article_pdf(tmp_path / "paper.pdf")
    (tmp_path / "README.md").write_text("# About this folder\n\nNot a document.")
    (tmp_path / "notes.txt").write_text(NOTE)
    files, problems = expand_paths([str(tmp_path), str(tmp_path / "notes.txt")])
    assert files == [pdf, tmp_path / "notes.txt"] and not problems
