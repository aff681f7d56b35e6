"""Questions about uploaded PDFs: each gold paper is found as a bundled file, rendered, and named by its PDF's id."""

from __future__ import annotations

import yaml

from pmc_rag.evaluation.pdf_questions import TABLE, full_text_files, pipelines_over, rendered
from pmc_rag.evaluation.plain_questions import load
from pmc_rag.ingestion.documents import read_document


def test_every_full_text_gold_paper_has_a_bundled_file():
    files = full_text_files()
    golds = {q["gold_paper"] for q in load() if q["source"] == "full_text"}
    assert golds <= set(files) and files["PMC4816447"].name == "PMC4816447.xml"


def test_a_gold_paper_becomes_the_pdf_id_ingestion_gives_it(tmp_path):
    ids = rendered(tmp_path, {"PMC4816447"})
    pdf = tmp_path / "PMC4816447.pdf"
    article = read_document(pdf, pdf.read_bytes())
    assert ids == {"PMC4816447": article.source_id} and article.source_id.startswith("doc:")
    assert "Abstract: Conclusion" in {section.title for section in article.sections}


def test_the_pipelines_are_copied_onto_a_table_of_their_own(tmp_path):
    folder = pipelines_over(TABLE, tmp_path)
    rag = (folder / "rag.yml").read_text()
    assert "pmc_chunks" not in rag and TABLE in rag and (folder / "rag_single.yml").exists()
    indexing = yaml.safe_load((folder / "indexing.yml").read_text())
    store = indexing["components"]["writer"]["init_parameters"]["document_store"]["init_parameters"]
    assert store["table_name"] == TABLE
