"""PubMed / MEDLINE XML (`<PubmedArticleSet>`, as returned by efetch or found in the baseline files)."""

from __future__ import annotations

import re

from lxml import etree

from pmc_rag.ingestion.article import Article, Section, iso_date, normalise_space, year_from
from pmc_rag.ingestion.xml import IngestError, element_text, first_text, local_name


def is_pubmed(root: etree._Element) -> bool:
    return local_name(root) == "PubmedArticleSet"


def parse_pubmed(root: etree._Element, source_file: str) -> list[Article]:
    records = root.xpath("PubmedArticle")
    if not records:
        raise IngestError(f"{source_file}: <PubmedArticleSet> holds no <PubmedArticle>")
    return [_parse_record(record, source_file) for record in records]


def _parse_record(record: etree._Element, source_file: str) -> Article:
    citation = record.find("MedlineCitation")
    if citation is None:
        raise IngestError(f"{source_file}: a <PubmedArticle> has no <MedlineCitation>")
    article = citation.find("Article")
    pmid = first_text(citation, "PMID/text()")
    if article is None or not pmid:
        raise IngestError(f"{source_file}: a <PubmedArticle> has no PMID or no <Article>")

    # Only the article's own ids: <ReferenceList> further down lists the cited papers' ids too.
    ids = {
        item.get("IdType"): normalise_space(item.text)
        for item in record.xpath("PubmedData/ArticleIdList/ArticleId")
        if item.text
    }
    doi = ids.get("doi") or first_text(article, "ELocationID[@EIdType='doi']/text()")
    pmcid = ids.get("pmc")
    if pmcid:
        match = re.fullmatch(r"(?:PMC)?(\d+)", pmcid, flags=re.I)
        pmcid = f"PMC{match.group(1)}" if match else None

    pub_date = _pub_date(article, citation)
    publication_types = [normalise_space(t) for t in article.xpath("PublicationTypeList/PublicationType/text()")]
    return Article(
        source_format="pubmed",
        pmcid=pmcid,
        pmid=pmid,
        doi=doi,
        title=element_text(article.find("ArticleTitle")) or element_text(article.find("VernacularTitle")) or None,
        authors=_authors(article),
        journal=first_text(article, "Journal/Title") or first_text(article, "Journal/ISOAbbreviation"),
        pub_date=pub_date,
        year=year_from(pub_date),
        article_type=publication_types[0] if publication_types else None,
        publication_types=publication_types,
        mesh_terms=[normalise_space(t) for t in citation.xpath("MeshHeadingList/MeshHeading/DescriptorName/text()")],
        sections=_abstract_sections(article),
        source_file=source_file,
    )


def _pub_date(article: etree._Element, citation: etree._Element) -> str | None:
    """The journal issue date, else the electronic article date, else the date MEDLINE completed it."""
    date = article.find("Journal/JournalIssue/PubDate")
    if date is not None:
        value = iso_date(first_text(date, "Year"), first_text(date, "Month"), first_text(date, "Day"))
        if value:
            return value
        medline_date = first_text(date, "MedlineDate")  # free text such as "1998 Dec-1999 Jan"
        match = re.match(r"(\d{4})", medline_date or "")
        if match:
            return match.group(1)
    for date in (article.find("ArticleDate"), citation.find("DateCompleted")):
        if date is not None:
            value = iso_date(first_text(date, "Year"), first_text(date, "Month"), first_text(date, "Day"))
            if value:
                return value
    return None


def _authors(article: etree._Element) -> list[str]:
    authors = []
    for author in article.xpath("AuthorList/Author"):
        last = first_text(author, "LastName")
        if last:
            authors.append(normalise_space(f"{last} {first_text(author, 'Initials') or ''}"))
        else:
            collective = first_text(author, "CollectiveName")
            if collective:
                authors.append(collective)
    return authors


def _abstract_sections(article: etree._Element) -> list[Section]:
    """One section per labelled part of a structured abstract; an unlabelled abstract is one section."""
    sections = []
    for part in article.xpath("Abstract/AbstractText"):
        text = element_text(part)
        if not text:
            continue
        label = part.get("Label") or part.get("NlmCategory")
        sections.append(Section(f"Abstract: {label.title()}" if label else "Abstract", text, kind="abstract"))
    return sections
