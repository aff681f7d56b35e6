"""PDFs for the tests of the user's own documents, rendered with reportlab from a bundled CC BY article."""

from __future__ import annotations

from pathlib import Path

from conftest import CORPUS

ARTICLE = CORPUS / "pmc_oa" / "PMC4816447.xml"  # CC BY 4.0 (corpus/README.md)


def article_pdf(path: Path, article_xml: Path = ARTICLE, *, password: str | None = None) -> tuple[Path, dict]:
    """The article's title, authors and sections as a multi-page PDF; also where its sections' first words are:
    {section title: page}."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer
    from xml.sax.saxutils import escape

    from pmc_rag.ingestion.jats import parse_jats
    from pmc_rag.ingestion.xml import parse_xml

    article = parse_jats(parse_xml(article_xml.read_bytes(), str(article_xml)), str(article_xml))[0]
    styles = getSampleStyleSheet()
    story = [Paragraph(escape(article.title), styles["Title"]), Spacer(1, 12)]
    for section in article.sections:
        story += [Paragraph(escape(section.title), styles["Heading2"]),
                  Paragraph(escape(section.text), styles["BodyText"]), Spacer(1, 6)]
    options = {"encrypt": password} if password else {}
    document = SimpleDocTemplate(str(path), pagesize=A4, title=article.title, author="; ".join(article.authors),
                                 creator="pmc-rag tests", **options)
    document.build(story)
    return path, {"title": article.title, "authors": article.authors}


def scanned_pdf(path: Path) -> Path:
    """Two pages with a drawing and no text layer, as a scan without OCR."""
    from reportlab.pdfgen import canvas

    page = canvas.Canvas(str(path))
    for _ in range(2):
        page.rect(100, 100, 300, 500, fill=1)
        page.showPage()
    page.save()
    return path
