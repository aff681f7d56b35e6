"""A bundled JATS article rendered as a PDF, as a reader would upload it: for the upload tests and the evaluation of
questions about uploaded PDFs (`pdf_questions`). Needs reportlab (the test extras: `pip install -e '.[test]'`).

Usage:
```python
from pathlib import Path
from pmc_rag.evaluation.article_pdfs import article_pdf

path, made = article_pdf(Path("/tmp/fielt.pdf"), Path("corpus/pmc_oa/PMC4816447.xml"))
made["title"]   # 'Prospective Evaluation of First-Line Erlotinib in Advanced Non-Small Cell Lung Cancer ...'
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def article_pdf(path: Path, article_xml: Path, *, password: str | None = None) -> tuple[Path, dict[str, Any]]:
    """The article's title, authors and sections as a multi-page PDF at `path` (encrypted with `password`), and
    its title and authors."""
    from xml.sax.saxutils import escape

    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer

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
