"""Questions about uploaded PDFs: the plain-language questions on the full-text papers, asked of those papers as PDFs.

    python -m pmc_rag.evaluation.pdf_questions [--sets plain_tuning plain_held_aside] [--out DIR]

A reader's own PDF has no sections the reader of JATS relies on: pages of running text (`Page 3`), no abstract or
conclusions heading to tell a finding by, a title from the file's metadata. Here each bundled full-text paper that a
plain-language question is about is rendered as a PDF (`article_pdfs`, reportlab: title, headings and text, as a
journal's PDF reads), and a table of its own (`pmc_pdf_questions`) holds those PDFs beside the 1,000 PubMed abstracts
of the sample, ingested through `pipelines/indexing.yml`; the JATS versions are not in it. The questions' gold paper
becomes its PDF (`doc:<hash>`), and the answers from `rag.yml` over that table are judged as
`plain_questions` judges them. `plain_held_aside` is sealed: its figures only. Needs the test extras (reportlab).
About 3 minutes on 2 cores to fill the table, then about a second a question.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from pmc_rag.paths import PROJECT_ROOT

TABLE = "pmc_pdf_questions"
CORPUS = PROJECT_ROOT / "corpus"
SETS = ("plain_tuning", "plain_held_aside")


def full_text_files() -> dict[str, Path]:
    """Each bundled full-text article file, by its citation id."""
    from pmc_rag.ingestion.jats import parse_jats
    from pmc_rag.ingestion.xml import parse_xml

    files: dict[str, Path] = {}
    for path in sorted([*CORPUS.glob("pmc_oa/*"), *CORPUS.glob("plos/*")]):
        if path.suffix in (".xml", ".nxml"):
            for article in parse_jats(parse_xml(path.read_bytes(), str(path)), str(path)):
                files[article.source_id] = path
    return files


def rendered(folder: Path, papers: set[str]) -> dict[str, str]:
    """The gold papers rendered as PDFs in `folder`: each one's PDF id (`doc:<hash>`), by its citation id."""
    from pmc_rag.evaluation.article_pdfs import article_pdf
    from pmc_rag.ingestion.documents import document_id

    files, ids = full_text_files(), {}
    missing = papers - set(files)
    if missing:
        raise SystemExit(f"no bundled full-text file for {sorted(missing)} in {CORPUS}")
    for paper in sorted(papers):
        path, _ = article_pdf(folder / f"{paper.replace(':', '_').replace('/', '_')}.pdf", files[paper])
        ids[paper] = document_id(path.read_bytes())
    return ids


def pipelines_over(table: str, folder: Path) -> Path:
    """Copies of pipelines/*.yml reading and writing `table`; the folder they are in."""
    for source in (PROJECT_ROOT / "pipelines").glob("*.yml"):
        (folder / source.name).write_text(source.read_text(encoding="utf-8").replace("pmc_chunks", table),
                                          encoding="utf-8")
    return folder


def fill(table: str, pipelines: Path, pdfs: Path) -> None:
    """`table` emptied, then filled with the sample's abstracts and the PDFs."""
    from pmc_rag.ingestion.runner import ingest
    from pmc_rag.pipelines import declared_document_store, load_pipeline

    declared_document_store(pipelines / "indexing.yml").delete_table()  # no model loaded for it
    indexing = load_pipeline(pipelines / "indexing.yml")  # its writer makes the table again
    for paths in ([str(CORPUS / "pubmedqa")], [str(pdfs)]):
        report = ingest(paths, indexing, progress=False)
        print(f"  {report.summary().splitlines()[0]}", flush=True)


def run(sets: tuple[str, ...] = SETS, out: Path | None = None, keep_table: bool = False) -> list[dict[str, Any]]:
    from pmc_rag.database import ensure_database
    from pmc_rag.environment import configure_environment
    from pmc_rag.evaluation import plain_questions

    configure_environment()
    ensure_database()
    questions = [q for q in plain_questions.load() if q["source"] == "full_text" and q["set"] in sets]
    with tempfile.TemporaryDirectory(prefix="pmc-rag-pdf-questions-") as scratch:
        folder = Path(scratch)
        (folder / "pdfs").mkdir()
        (folder / "pipelines").mkdir()
        pdf_ids = rendered(folder / "pdfs", {q["gold_paper"] for q in questions})
        pipelines = pipelines_over(TABLE, folder / "pipelines")
        print(f"Filling {TABLE}: the sample's abstracts and {len(pdf_ids)} papers as PDFs", flush=True)
        fill(TABLE, pipelines, folder / "pdfs")
        dataset = folder / "pdf_questions.json"
        dataset.write_text(json.dumps({"questions": [
            {**q, "gold_paper": pdf_ids[q["gold_paper"]], "set": f"pdf_{q['set']}"} for q in questions]}))
        try:
            rows = plain_questions.run(str(pipelines / "rag.yml"), tuple(f"pdf_{s}" for s in sets), out, dataset)
        finally:
            if not keep_table:
                from pmc_rag.pipelines import declared_document_store

                declared_document_store(pipelines / "indexing.yml").delete_table()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--out", type=Path, default=None, help="folder for judged.json, answers.json, table.md")
    parser.add_argument("--keep-table", action="store_true", help=f"leave {TABLE} in the database afterwards")
    args = parser.parse_args(argv)
    from pmc_rag.evaluation.plain_questions import table

    print(table(run(tuple(args.sets), args.out, args.keep_table)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
