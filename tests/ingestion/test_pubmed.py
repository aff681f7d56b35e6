"""PubMed/MEDLINE XML, the PubMedQA corpus format, and evidence levels."""

from __future__ import annotations

import json

import pytest

from pmc_rag.ingestion.evidence import classify_evidence
from pmc_rag.ingestion.pubmed import parse_pubmed
from pmc_rag.ingestion.sources import read_articles
from pmc_rag.ingestion.xml import IngestError, parse_xml

from conftest import CORPUS, FIXTURES

MEDLINE = FIXTURES / "medline"

# PMID: (file, PMCID, abstract parts, MeSH headings, start of title, DOI, year) per the data's provenance table
EXPECTED = {
    "12091962": ("biopython/pubmed1.xml", None, 0, 19, "The treatment of AIDS behind the walls of correctional",
                 None, None),
    "9997": ("biopython/pubmed1.xml", None, 1, 13, "Magnetic studies of Chromatium flavocytochrome C552",
             "10.1016/0005-2795(76)90109-4", 1976),
    "11748933": ("biopython/pubmed2.xml", None, 1, 11, "Is cryopreservation a homogeneous process?",
                 "10.1006/cryo.2001.2328", 2001),
    "11700088": ("biopython/pubmed2.xml", None, 1, 0, "Proton MRI of (13)C distribution", "10.1006/jmre.2001.2429",
                 2001),
    "27797938": ("biopython/pubmed4.xml", "PMC5442267", 4, 21, "Leucocyte telomere length, genetic variants",
                 "10.1136/gutjnl-2016-312510", 2017),
    "28775130": ("biopython/pubmed5.xml", "PMC5771820", 4, 0, "Occupational pesticide exposure",
                 "10.1136/oemed-2017-104431", 2018),
    "30108519": ("biopython/pubmed6.xml", "PMC6079548", 1, 0, 'A "Blood Relationship"', "10.3389/fphys.2018.01034",
                 2018),
    "29963580": ("biopython/pubmed7.xml", "PMC6022861", 1, 0, "Development of a pulmonary imaging biomarker",
                 "10.1117/1.JMI.5.2.026002", 2018),
    "29768149": ("pubmed-29768149.xml", None, 4, 23, "Inhaled Combined Budesonide-Formoterol as Needed",
                 "10.1056/NEJMoa1715274", 2018),
}


def parsed_fixtures():
    articles = {}
    for path in sorted(MEDLINE.rglob("*.xml")):
        root = parse_xml(path.read_bytes(), str(path))
        for article in parse_pubmed(root, str(path)):
            articles[article.pmid] = article
    return articles


def test_every_medline_fixture_parses_with_its_metadata():
    articles = parsed_fixtures()
    assert set(articles) == set(EXPECTED)
    for pmid, (file, pmcid, parts, mesh, title, doi, year) in EXPECTED.items():
        article = articles[pmid]
        assert article.source_file.endswith(file)
        assert article.pmcid == pmcid
        assert article.source_id == (pmcid or f"PMID:{pmid}")
        assert len(article.sections) == parts, pmid
        assert len(article.mesh_terms) == mesh, pmid
        assert article.title.startswith(title), article.title
        if doi:
            assert article.doi == doi
        if year:
            assert article.year == year
        assert article.journal and article.publication_types


def test_structured_abstract_keeps_its_labels_and_the_record_its_details():
    article = parsed_fixtures()["29768149"]
    assert [s.title for s in article.sections] == [
        "Abstract: Background", "Abstract: Methods", "Abstract: Results", "Abstract: Conclusions"]
    assert article.journal == "The New England journal of medicine"
    assert article.pub_date == "2018-05-17"
    assert article.authors[:2] == ["O'Byrne PM", "FitzGerald JM"]
    assert "Asthma" in article.mesh_terms
    assert "Randomized Controlled Trial" in article.publication_types
    assert article.metadata()["evidence_level"] == "rct"


def test_reference_list_ids_are_not_taken_for_the_articles_own():
    # pubmed4.xml cites dozens of papers with PMIDs in its <ReferenceList>.
    article = parsed_fixtures()["27797938"]
    assert article.pmid == "27797938" and article.pmcid == "PMC5442267"
    assert article.metadata()["evidence_level"] == "cohort"  # "Observational Study"


def test_a_record_without_abstract_is_reported_not_ingested():
    items = list(read_articles(MEDLINE / "biopython/pubmed1.xml"))
    errors = [i for i in items if isinstance(i, IngestError)]
    assert len(errors) == 1 and "PMID:12091962 has no text" in str(errors[0])
    assert [i.pmid for i in items if not isinstance(i, IngestError)] == ["9997"]


def test_pubmedqa_corpus_parses_whole():
    items = list(read_articles(CORPUS / "pubmedqa/corpus.jsonl"))
    assert len(items) == 1000
    assert not [i for i in items if isinstance(i, IngestError)]
    first = items[0]
    assert first.source_id == "PMID:10135926" and first.year == 1994
    assert [s.title for s in first.sections][-1] == "Abstract: Conclusions"
    assert "Air Ambulances" in first.mesh_terms
    assert sum(len(a.sections) for a in items) == 4358  # the abstract sections the BM25 figure counts


def test_pubmedqa_bad_lines_are_reported_and_the_rest_kept(tmp_path):
    good = json.dumps({"pmid": "1", "year": "2001", "sections": [{"label": "RESULTS", "text": "It worked."}]})
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        good.encode() + b"\n{not json\n" + b'{"pmid": "x1", "sections": []}\n'
        + b'{"pmid": "2", "sections": [{"label": "A", "text": "caf\xe9"}]}\n'
        + good.replace('"1"', '"3"').encode() + b"\n"
    )
    items = list(read_articles(path))
    assert [i.pmid for i in items if not isinstance(i, IngestError)] == ["1", "3"]
    errors = [str(i) for i in items if isinstance(i, IngestError)]
    assert len(errors) == 3
    assert f"{path}:2: not valid JSON" in errors[0]
    assert f"{path}:3: 'pmid' must be digits" in errors[1]
    assert f"{path}:4: bad character encoding" in errors[2]


@pytest.mark.parametrize(
    "kwargs, label, rank",
    [
        ({"publication_types": ["Journal Article", "Meta-Analysis"]}, "systematic_review", 1),
        ({"publication_types": ["Review", "Systematic Review"]}, "systematic_review", 1),
        ({"publication_types": ["Randomized Controlled Trial"]}, "rct", 2),
        ({"mesh_terms": ["Humans", "Retrospective Studies"]}, "cohort", 3),
        ({"article_type": "case-report"}, "case_report", 4),
        ({"article_type": "review-article"}, "review", 5),
        ({"article_type": "research-article", "title": "Effects of X: a randomised controlled trial"}, "rct", 2),
        ({"publication_types": ["Editorial"]}, "other", 6),
        ({}, "other", 6),
    ],
)
def test_evidence_levels(kwargs, label, rank):
    level = classify_evidence(**kwargs)
    assert (level.label, level.rank) == (label, rank)
