"""PMC / publisher JATS XML: both `<article>` files and `<pmc-articleset>` (efetch) files.

Handles the id styles PMC has used (`pub-id-type="pmc"` with digits, `pmcid` with the prefix, `pmcaid`),
the four places a licence can sit (`license/@xlink:href`, `ali:license_ref`, the `license-p` text,
`copyright-statement`), structured abstracts, nested body sections, and figure and table captions.
"""

from __future__ import annotations

import re

from lxml import etree

from pmc_rag.ingestion.article import Article, Section, iso_date, normalise_space, year_from
from pmc_rag.ingestion.xml import SKIPPED_INLINE, IngestError, element_text, first_text, local_name

XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
NS = {"ali": "http://www.niso.org/schemas/ali/1.0/", "xlink": "http://www.w3.org/1999/xlink"}

# Abstract kinds that are not the paper's abstract proper.
_SKIPPED_ABSTRACT_TYPES = {"toc", "teaser", "graphical", "web-summary"}
# Children of <sec> that are not its running text.
_NOT_SECTION_TEXT = {"sec", "title", "label", "fig", "table-wrap", "boxed-text", "fig-group", "table-wrap-group"}


def is_jats(root: etree._Element) -> bool:
    return local_name(root) in {"article", "pmc-articleset"}


def parse_jats(root: etree._Element, source_file: str) -> list[Article]:
    """All articles in a JATS document (one for `<article>`, any number for `<pmc-articleset>`)."""
    if local_name(root) == "article":
        articles = [root]
    elif local_name(root) == "pmc-articleset":
        articles = [child for child in root if local_name(child) == "article"]
        if not articles:
            raise IngestError(f"{source_file}: <pmc-articleset> holds no <article>")
    else:
        raise IngestError(f"{source_file}: root element <{local_name(root)}> is not JATS")
    return [_parse_article(article, source_file) for article in articles]


def _parse_article(article: etree._Element, source_file: str) -> Article:
    meta = _first(article, "front/article-meta")
    if meta is None:
        raise IngestError(f"{source_file}: <article> has no <front>/<article-meta>")
    journal_meta = _first(article, "front/journal-meta")

    pub_date = _pub_date(meta)
    license_name, license_url = _license(meta)
    parsed = Article(
        source_format="jats",
        pmcid=_pmcid(meta),
        pmid=first_text(meta, "article-id[@pub-id-type='pmid']/text()"),
        doi=first_text(meta, "article-id[@pub-id-type='doi']/text()"),
        title=element_text(_first(meta, "title-group/article-title"), skip={"xref", "fn"}) or None,
        authors=_authors(meta),
        journal=_journal(journal_meta),
        pub_date=pub_date,
        year=year_from(pub_date),
        article_type=article.get("article-type"),
        publication_types=[
            normalise_space(s) for s in meta.xpath(
                "article-categories/subj-group[@subj-group-type='heading']/subject/text()")
        ],
        mesh_terms=[],
        license=license_name,
        license_url=license_url,
        source_file=source_file,
    )
    parsed.sections = [*_abstract_sections(meta), *_body_sections(article), *_caption_sections(article)]
    return parsed


def _first(element: etree._Element | None, xpath: str) -> etree._Element | None:
    if element is None:
        return None
    found = element.xpath(xpath)
    return found[0] if found else None


def _pmcid(meta: etree._Element) -> str | None:
    """Normalise any of PMC's id styles to `PMC<digits>`; `pmcid` wins, then `pmc`, then `pmcaid`."""
    for id_type in ("pmcid", "pmc", "pmcaid"):
        value = first_text(meta, f"article-id[@pub-id-type='{id_type}']/text()")
        if value:
            match = re.fullmatch(r"(?:PMC)?(\d+)(?:\.\d+)?", value.strip(), flags=re.I)
            if match:
                return f"PMC{match.group(1)}"
    return None


def _journal(journal_meta: etree._Element | None) -> str | None:
    if journal_meta is None:
        return None
    return (
        first_text(journal_meta, "journal-title-group/journal-title")
        or first_text(journal_meta, "journal-title")
        or first_text(journal_meta, "journal-id[@journal-id-type='nlm-ta']/text()")
    )


def _authors(meta: etree._Element) -> list[str]:
    """Authors as "Surname Initials" (the PubMed style), or a group name for collaborations."""
    authors = []
    for contrib in meta.xpath("contrib-group/contrib[@contrib-type='author']"):
        name = _first(contrib, "name|name-alternatives/name")
        if name is not None:
            surname = first_text(name, "surname") or ""
            given = first_text(name, "given-names") or ""
            initials = "".join(part[0] for part in re.split(r"[\s.\-]+", given) if part)
            authors.append(normalise_space(f"{surname} {initials}"))
        else:
            collab = first_text(contrib, "collab")
            if collab:
                authors.append(collab)
    return [author for author in authors if author]


def _pub_date(meta: etree._Element) -> str | None:
    """The electronic publication date if given, else print, else the first date there is."""
    dates = meta.xpath("pub-date")

    def kind(date: etree._Element) -> str:
        return date.get("pub-type") or date.get("date-type") or ""

    preference = ["epub", "pub", "ppub", "epub-ppub", "collection"]
    dates = sorted(dates, key=lambda d: preference.index(kind(d)) if kind(d) in preference else len(preference))
    for date in dates:
        value = iso_date(first_text(date, "year"), first_text(date, "month"), first_text(date, "day"))
        if value:
            return value
    return None


# Creative Commons and public-domain URLs to short names: ".../licenses/by-nc/4.0" -> "CC BY-NC 4.0".
_CC_URL = re.compile(r"creativecommons\.org/(licenses|publicdomain)/([a-z\-]+)(?:/(\d\.\d))?", re.I)


def _license(meta: etree._Element) -> tuple[str | None, str | None]:
    """(short name, URL) from wherever the licence is stated, most explicit source first."""
    # Older NLM DTDs put <copyright-statement> and <license> directly in <article-meta>.
    permissions = _first(meta, "permissions")
    if permissions is None:
        permissions = meta
    urls = [
        *permissions.xpath("license/@xlink:href", namespaces=NS),
        *[normalise_space(t) for t in permissions.xpath("license/ali:license_ref/text()|ali:license_ref/text()",
                                                         namespaces=NS)],
        *permissions.xpath("license//ext-link/@xlink:href|license//uri/@xlink:href", namespaces=NS),
    ]
    for url in urls:
        name = license_name_from_url(url)
        if name:
            return name, url.strip()
    texts = [element_text(p) for p in permissions.xpath("license//license-p|license")]
    texts += [element_text(s) for s in permissions.xpath("copyright-statement")]
    for text in texts:
        name = license_name_from_text(text)
        if name:
            return name, None
    if urls:
        return None, urls[0].strip()
    return None, None


def license_name_from_url(url: str) -> str | None:
    match = _CC_URL.search(url or "")
    if not match:
        return None
    family, kind, version = match.group(1).lower(), match.group(2).lower(), match.group(3)
    if family == "publicdomain":
        return "CC0 1.0" if kind == "zero" else "Public domain"
    return " ".join(part for part in ("CC", kind.upper(), version) if part)


_TEXT_LICENSES = [
    (re.compile(r"Creative Commons Attribution[- ]Non-?Commercial[- ]No-?Deriv", re.I), "CC BY-NC-ND"),
    (re.compile(r"Creative Commons Attribution[- ]Non-?Commercial", re.I), "CC BY-NC"),
    (re.compile(r"Creative Commons Attribution", re.I), "CC BY"),
    (re.compile(r"Creative Commons (Zero|CC0)|\bCC0\b", re.I), "CC0 1.0"),
    (re.compile(r"public domain", re.I), "Public domain"),
]


def license_name_from_text(text: str) -> str | None:
    """A short licence name from prose ("...under the terms of the Creative Commons Attribution 4.0 ...")."""
    for pattern, name in _TEXT_LICENSES:
        match = pattern.search(text or "")
        if match:
            version = re.match(r"[^.;]{0,40}?(\d\.\d)", text[match.end():])
            return f"{name} {version.group(1)}" if version and name.startswith("CC BY") else name
    return None


def _abstract_sections(meta: etree._Element) -> list[Section]:
    sections = []
    for abstract in meta.xpath("abstract|trans-abstract[@xml:lang='en']"):
        if abstract.get("abstract-type") in _SKIPPED_ABSTRACT_TYPES:
            continue
        kind = abstract.get("abstract-type")  # e.g. "summary" for PLOS's author summary
        heading = first_text(abstract, "title") or (kind.replace("-", " ").capitalize() if kind else "Abstract")
        parts = abstract.xpath("sec")
        if parts:  # structured abstract: one section per labelled part
            for part in parts:
                label = first_text(part, "title") or "Abstract"
                sections.append(Section(f"{heading}: {label}", _running_text(part), kind="abstract"))
        else:
            sections.append(Section(heading, _running_text(abstract), kind="abstract"))
    return sections


def _body_sections(article: etree._Element) -> list[Section]:
    body = _first(article, "body")
    if body is None:
        return []
    sections = []
    loose_text = _running_text(body)  # paragraphs directly under <body>, outside any <sec>
    if loose_text:
        sections.append(Section("Main text", loose_text))
    for sec in body.xpath("sec"):
        _walk_section(sec, [], sections)
    for box in body.xpath(".//boxed-text"):
        title = first_text(box, "caption/title|title|label") or "Box"
        text = _running_text(box) or element_text(box, skip={"title", "label", "caption"} | SKIPPED_INLINE)
        sections.append(Section(title, text))
    return sections


def _walk_section(sec: etree._Element, path: list[str], out: list[Section]) -> None:
    """Depth-first: a section's own paragraphs, then each nested section, titled by its path."""
    title = first_text(sec, "title") or first_text(sec, "label") or "Untitled section"
    path = [*path, title]
    text = _running_text(sec)
    if text:
        out.append(Section(" / ".join(path), text))
    for child in sec.xpath("sec"):
        _walk_section(child, path, out)


def _running_text(container: etree._Element) -> str:
    """The prose directly inside a container, paragraph by paragraph, without nested sections or floats."""
    paragraphs = [
        element_text(child, skip=SKIPPED_INLINE)
        for child in container
        if isinstance(child.tag, str) and local_name(child) not in _NOT_SECTION_TEXT
    ]
    return "\n\n".join(p for p in paragraphs if p)


def _caption_sections(article: etree._Element) -> list[Section]:
    """Figure and table captions, each its own section ("Figure 2", "Table 1"), in document order."""
    sections = []
    for float_ in article.xpath("body//fig|body//table-wrap|floats-group/fig|floats-group/table-wrap"):
        default = "Figure" if local_name(float_) == "fig" else "Table"
        label = first_text(float_, "label") or default
        caption = element_text(_first(float_, "caption"), skip={"xref"})
        if caption:
            sections.append(Section(label, caption, kind="caption"))
    return sections
