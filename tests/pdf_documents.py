"""PDFs for the tests of the user's own documents, rendered with reportlab from a bundled CC BY article."""

from __future__ import annotations

from pathlib import Path

from conftest import CORPUS

ARTICLE = CORPUS / "pmc_oa" / "PMC4816447.xml"  # CC BY 4.0 (corpus/README.md)


def article_pdf(path: Path, article_xml: Path = ARTICLE, *, password: str | None = None) -> tuple[Path, dict]:
    """The article's title, authors and sections as a multi-page PDF (`pmc_rag.evaluation.article_pdfs`)."""
    from pmc_rag.evaluation.article_pdfs import article_pdf as rendered

    return rendered(path, article_xml, password=password)


def scanned_pdf(path: Path) -> Path:
    """Two pages with a drawing and no text layer, as a scan without OCR."""
    from reportlab.pdfgen import canvas

    page = canvas.Canvas(str(path))
    for _ in range(2):
        page.rect(100, 100, 300, 500, fill=1)
        page.showPage()
    page.save()
    return path


# Hostile PDFs, written object by object: what an attacker would upload to exhaust or subvert the reader.

def _raw_pdf(path: Path, objects: list[bytes], info: bytes = b"") -> Path:
    """A PDF of `objects` (object 1 is the catalog), with an xref table; `info`: a document information dict."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    entries = [*objects, info] if info else objects
    for number, body in enumerate(entries, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(entries) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = b"<< /Size %d /Root 1 0 R" % (len(entries) + 1)
    trailer += b" /Info %d 0 R >>" % len(entries) if info else b" >>"
    out += b"trailer\n" + trailer + b"\nstartxref\n%d\n%%%%EOF\n" % xref
    path.write_bytes(bytes(out))
    return path


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _page(contents: int, parent: int = 2, font: int = 3) -> bytes:
    return (b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (parent, contents, font))


def _stream(data: bytes, compress: bool = False) -> bytes:
    import zlib

    if compress:
        data = zlib.compress(data, 9)
    return (b"<< /Length %d%s >>\nstream\n" % (len(data), b" /Filter /FlateDecode" if compress else b"")
            + data + b"\nendstream")


def inflating_pdf(path: Path, inflated_mb: int) -> Path:
    """One page whose content stream is small compressed and `inflated_mb` MB once inflated (a deflate bomb)."""
    import zlib

    line = b"BT /F1 12 Tf 72 720 Td (Erlotinib was given to every patient in this trial.) Tj ET\n"
    squeezer = zlib.compressobj(9)
    block = line * (1_048_576 // len(line))
    compressed = b"".join(squeezer.compress(block) for _ in range(inflated_mb)) + squeezer.flush()
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(compressed) + compressed + b"\nendstream"
    return _raw_pdf(path, [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
                           _FONT, stream, _page(4)])


def many_pages_pdf(path: Path, pages: int, text_kb: int = 0) -> Path:
    """`pages` pages sharing one content stream (compressed, about `text_kb` KB of text once inflated): a few
    bytes per page, a long read."""
    first_page = 5
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(pages))
    line = b"BT /F1 12 Tf 72 720 Td (Erlotinib page.) Tj ET\n"
    text = _stream(line * max(1, text_kb * 1024 // len(line)), compress=True)
    return _raw_pdf(path, [b"<< /Type /Catalog /Pages 2 0 R >>",
                           b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages, _FONT, text]
                    + [_page(4)] * pages)


def active_pdf(path: Path, marker_url: str,
               text: str = "Erlotinib gave an objective response in 4 of 46 patients.") -> Path:
    """A PDF with JavaScript run on opening, a launch action, a link, and markup in its title, author and text:
    none of it may run or be fetched anywhere pmc-rag shows the document."""
    script = (f"<script>fetch('{marker_url}/title')</script>"
              f"<img src='{marker_url}/title-img' onerror='alert(1)'>").encode()
    text = _stream(b"BT /F1 12 Tf 72 720 Td (" + text.encode() + b" <script>fetch\\('" + marker_url.encode()
                   + b"/text'\\)</script>) Tj ET")
    javascript = b"<< /S /JavaScript /JS (app.launchURL\\('" + marker_url.encode() + b"/js'\\);) >>"
    return _raw_pdf(path, [
        b"<< /Type /Catalog /Pages 2 0 R /OpenAction 6 0 R /Names << /JavaScript << /Names [(x) 6 0 R] >> >> >>",
        b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>", _FONT, text,
        _page(4)[:-2] + b" /Annots [7 0 R] >>",
        javascript,
        b"<< /Type /Annot /Subtype /Link /Rect [0 0 612 792] /A << /S /URI /URI (" + marker_url.encode()
        + b"/link) >> >>"],
        info=b"<< /Title (" + script + b") /Author (<b onmouseover=alert\\(1\\)>Mallory</b>) >>")
