"""JATS parsing: every bundled article, then each id, licence and layout variant on small crafted files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmc_rag.ingestion.jats import parse_jats
from pmc_rag.ingestion.sources import read_articles
from pmc_rag.ingestion.xml import IngestError, parse_xml

from conftest import CORPUS

# file, cited as, PMID, DOI, start of title, licence, year (from the provenance table of the source data)
EXPECTED = [
    ("pmc_oa/1471-2180-11-174.nxml", "PMC3166277", "21810267", "10.1186/1471-2180-11-174",
     "Factors influencing lysis time stochasticity in bacteriophage λ", "CC BY 2.0", 2011),
    ("pmc_oa/1472-6831-8-11.nxml", "PMC2329613", "18405359", "10.1186/1472-6831-8-11",
     "The Dutch version of the Oral Health Impact Profile (OHIP-NL)", "CC BY 2.0", 2008),
    ("pmc_oa/PMC4816447.xml", "PMC4816447", "27032107", "10.1371/journal.pone.0147599",
     "Prospective Evaluation of First-Line Erlotinib in Advanced Non-Small Cell Lung Cancer", "CC BY 4.0", 2016),
    ("pmc_oa/PMC5029658.xml", "PMC5029658", "27009859", "10.18632/oncotarget.8173",
     "TKI sensitivity patterns of novel kinase-domain mutations", "CC BY 2.5", 2016),
    ("pmc_oa/PMC6580637.xml", "PMC6580637", "31208370", "10.1186/s12885-019-5820-0",
     "EGFR exon 20 insertion mutations and response to osimertinib", "CC BY 4.0", 2019),
    ("pmc_oa/ehp-116-1694.nxml", "PMC2599765", "19079722", "10.1289/ehp.11570",
     "Dietary Exposure to 2,2′,4,4′-Tetrabromodiphenyl Ether (PBDE-47) Alters Thyroid Status", "Public domain", 2008),
    ("pmc_oa/pntd.0002065.nxml", "PMC3585041", "23469300", "10.1371/journal.pntd.0002065",
     "Serological Evidence of Rift Valley Fever Virus Circulation in Sheep and Goats", "CC BY", 2013),
    ("pmc_oa/pone.0000217.nxml", "PMC1790863", "17299597", "10.1371/journal.pone.0000217",
     "Quantifying Organismal Complexity using a Population Genetic Approach", "CC BY", 2007),
    ("pmc_oa/pone.0046493.nxml", "PMC3460867", "23029536", "10.1371/journal.pone.0046493",
     "MmPPOX Inhibits Mycobacterium tuberculosis Lipolytic Enzymes", "CC BY", 2012),
    ("plos/journal.pmed.0020124.xml", "doi:10.1371/journal.pmed.0020124", None, "10.1371/journal.pmed.0020124",
     "Why Most Published Research Findings Are False", "CC BY", 2005),
    ("plos/journal.pmed.0020171.xml", "doi:10.1371/journal.pmed.0020171", None, "10.1371/journal.pmed.0020171",
     "Intention to Lose Weight, Weight Changes, and 18-y Mortality", "CC BY", 2005),
    ("plos/journal.pmed.0030520.xml", "doi:10.1371/journal.pmed.0030520", None, "10.1371/journal.pmed.0030520",
     "Angiotensin-Converting Enzyme I/D Polymorphism and Preeclampsia Risk", "CC BY", 2006),
    ("plos/journal.pmed.1001300.xml", "doi:10.1371/journal.pmed.1001300", None, "10.1371/journal.pmed.1001300",
     "Multidrug Resistant Pulmonary Tuberculosis Treatment Regimens and Patient Outcomes", "CC BY", 2012),
    ("plos/journal.pmed.1001418.xml", "doi:10.1371/journal.pmed.1001418", None, "10.1371/journal.pmed.1001418",
     "Life Expectancies of South African Adults Starting Antiretroviral Treatment", "CC BY", 2013),
    ("plos/journal.pmed.1001473.xml", "doi:10.1371/journal.pmed.1001473", None, "10.1371/journal.pmed.1001473",
     "Uncovering Treatment Burden as a Key Concept for Stroke Care", "CC BY", 2013),
    ("plos/journal.pmed.1001518.xml", "doi:10.1371/journal.pmed.1001518", None, "10.1371/journal.pmed.1001518",
     "Acupuncture and Counselling for Depression in Primary Care", "CC BY", 2013),
    ("plos/journal.pone.0047391.xml", "doi:10.1371/journal.pone.0047391", None, "10.1371/journal.pone.0047391",
     "Monitoring HIV Viral Load in Resource Limited Settings", "CC BY", 2012),
    ("plos/journal.pone.0058242.xml", "doi:10.1371/journal.pone.0058242", None, "10.1371/journal.pone.0058242",
     "Improved Glomerular Filtration Rate Estimation by an Artificial Neural Network", "CC BY", 2013),
    ("plos/journal.pone.0066742.xml", "doi:10.1371/journal.pone.0066742", None, "10.1371/journal.pone.0066742",
     "Relative Impact of Multimorbid Chronic Conditions on Health-Related Quality of Life", "CC BY", 2013),
    ("plos/journal.pone.0078921.xml", "doi:10.1371/journal.pone.0078921", None, "10.1371/journal.pone.0078921",
     "Serum Based Diagnosis of Asthma Using Raman Spectroscopy", "CC BY", 2013),
    ("plos/journal.pone.0097541.xml", "doi:10.1371/journal.pone.0097541", None, "10.1371/journal.pone.0097541",
     "Correction: Pollen and Phytolith Evidence for Rice Cultivation", "CC BY 4.0", 2014),
    ("plos/journal.pone.0120049.xml", "doi:10.1371/journal.pone.0120049", None, "10.1371/journal.pone.0120049",
     "Effects of Acute Exposure to Increased Plasma Branched-Chain Amino Acid Concentrations", "CC BY 4.0", 2015),
    ("plos/journal.pone.0152459.xml", "doi:10.1371/journal.pone.0152459", None, "10.1371/journal.pone.0152459",
     "Prognostic Value of Overexpressed p16INK4a in Vulvar Cancer: A Meta-Analysis", "CC BY 4.0", 2016),
]


def only_article(path: Path):
    items = list(read_articles(path))
    assert len(items) == 1, items
    assert not isinstance(items[0], IngestError), items[0]
    return items[0]


@pytest.mark.parametrize("file, source_id, pmid, doi, title, license, year", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_every_bundled_article_parses_with_its_metadata(file, source_id, pmid, doi, title, license, year):
    article = only_article(CORPUS / file)
    assert article.source_id == source_id
    assert article.pmid == pmid
    assert article.doi == doi
    assert article.title.startswith(title)
    assert article.license == license
    assert article.year == year
    assert article.journal and article.authors
    assert article.article_type
    kinds = {section.kind for section in article.sections}
    assert "body" in kinds
    if file != "plos/journal.pone.0097541.xml":  # the correction notice has no abstract
        assert "abstract" in kinds
    assert sum(len(section.text.split()) for section in article.sections) > 40


def test_every_bundled_file_is_covered_by_the_expectations():
    files = {str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*") if p.suffix in {".xml", ".nxml"}}
    assert files == {e[0] for e in EXPECTED}


def test_pmc3166277_in_detail():
    article = only_article(CORPUS / "pmc_oa/1471-2180-11-174.nxml")
    assert article.title == "Factors influencing lysis time stochasticity in bacteriophage λ"
    assert article.license_url == "http://creativecommons.org/licenses/by/2.0"
    assert article.journal == "BMC Microbiology"
    assert article.authors == ["Dennehy JJ", "Wang IN"]
    assert article.pub_date == "2011-08-02"
    titles = [section.title for section in article.sections]
    assert titles[0].startswith("Abstract: Background")
    assert any(" / " in title for title in titles), "nested sections carry their path"
    assert any(section.kind == "caption" and section.title.startswith("Figure") for section in article.sections)
    assert any(section.kind == "caption" and section.title.startswith("Table") for section in article.sections)
    body = " ".join(section.text for section in article.sections if section.kind == "body")
    assert "[, ]" not in body and " ." not in body, "removed citation numbers leave no debris"


def test_dtd_named_entities_become_characters_without_loading_the_dtd(tmp_path):
    # Publisher files use entities such as &percnt; that only their (never loaded) DTD defines.
    path = tmp_path / "entities.xml"
    path.write_text(
        '<?xml version="1.0"?><!DOCTYPE article PUBLIC "-//NLM//DTD JATS//EN" "http://example.org/jats.dtd">'
        '<article><front><article-meta><article-id pub-id-type="pmc">8</article-id>'
        "<title-group><article-title>T</article-title></title-group></article-meta></front>"
        "<body><p>Rates fell by 10&percnt; &lsqb;n&thinsp;=&thinsp;5&rsqb; &ndash; see &unknownentity;.</p></body>"
        "</article>"
    )
    article = only_article(path)
    assert article.sections[0].text == "Rates fell by 10% [n = 5] \u2013 see."  # thin spaces fold into spaces


def test_license_stated_only_in_license_p_text():
    article = only_article(CORPUS / "pmc_oa/PMC6580637.xml")
    assert article.license == "CC BY 4.0"


def test_systematic_review_and_rct_are_recognised_from_titles():
    meta_analysis = only_article(CORPUS / "plos/journal.pone.0152459.xml").metadata()
    trial = only_article(CORPUS / "plos/journal.pmed.1001518.xml").metadata()
    assert (meta_analysis["evidence_level"], meta_analysis["evidence_rank"]) == ("systematic_review", 1)
    assert (trial["evidence_level"], trial["evidence_rank"]) == ("rct", 2)


def jats(article_meta: str, body: str = "<body><sec><title>Intro</title><p>Some body text here.</p></sec></body>",
         wrapper: str = "article") -> bytes:
    article = (
        '<article xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:ali="http://www.niso.org/schemas/ali/1.0/" '
        f'article-type="research-article"><front><article-meta>{article_meta}'
        "<title-group><article-title>A title</article-title></title-group></article-meta></front>"
        f"{body}</article>"
    )
    if wrapper == "pmc-articleset":
        article = f"<pmc-articleset>{article}{article.replace('A title', 'Second title')}</pmc-articleset>"
    return article.encode()


@pytest.mark.parametrize(
    "ids, expected",
    [
        ('<article-id pub-id-type="pmc">3166277</article-id>', "PMC3166277"),
        ('<article-id pub-id-type="pmcid">PMC3203921</article-id>', "PMC3203921"),
        ('<article-id pub-id-type="pmcid">pmc3203921</article-id>', "PMC3203921"),
        ('<article-id pub-id-type="pmcaid">3203921</article-id>', "PMC3203921"),
        ('<article-id pub-id-type="pmcid-ver">PMC3203921.1</article-id>'
         '<article-id pub-id-type="pmcid">PMC3203921</article-id>', "PMC3203921"),
        ('<article-id pub-id-type="pmid">123</article-id>', "PMID:123"),
    ],
)
def test_pmc_id_styles_are_normalised(ids, expected):
    [article] = parse_jats(parse_xml(jats(ids), "x.xml"), "x.xml")
    assert article.source_id == expected


@pytest.mark.parametrize(
    "permissions, name, url",
    [
        ('<license xlink:href="https://creativecommons.org/licenses/by-nc/4.0/"><license-p>x</license-p></license>',
         "CC BY-NC 4.0", "https://creativecommons.org/licenses/by-nc/4.0/"),
        ("<license><ali:license_ref>http://creativecommons.org/licenses/by/4.0/</ali:license_ref></license>",
         "CC BY 4.0", "http://creativecommons.org/licenses/by/4.0/"),
        ("<ali:free_to_read/><ali:license_ref>https://creativecommons.org/publicdomain/zero/1.0/</ali:license_ref>",
         "CC0 1.0", "https://creativecommons.org/publicdomain/zero/1.0/"),
        ("<license><license-p>Distributed under the Creative Commons Attribution 3.0 License.</license-p></license>",
         "CC BY 3.0", None),
        ("<copyright-statement>This is an open-access article distributed under the terms of the Creative "
         "Commons Attribution License.</copyright-statement>", "CC BY", None),
        ("<copyright-statement>© 2020 The Authors. All rights reserved.</copyright-statement>", None, None),
    ],
)
def test_license_in_each_of_its_places(permissions, name, url):
    meta = f'<article-id pub-id-type="pmc">1</article-id><permissions>{permissions}</permissions>'
    [article] = parse_jats(parse_xml(jats(meta), "x.xml"), "x.xml")
    assert (article.license, article.license_url) == (name, url)


def test_pmc_articleset_with_several_articles():
    articles = parse_jats(parse_xml(jats('<article-id pub-id-type="pmc">5</article-id>',
                                         wrapper="pmc-articleset"), "x.xml"), "x.xml")
    assert [a.title for a in articles] == ["A title", "Second title"]


def test_nested_sections_structured_abstract_and_captions():
    meta = ('<article-id pub-id-type="pmc">7</article-id><abstract><sec><title>Background</title><p>Why.</p></sec>'
            "<sec><title>Results</title><p>What.</p></sec></abstract>")
    body = ("<body><p>Loose paragraph.</p><sec><title>Methods</title><p>Outer text.</p>"
            "<sec><title>Design</title><p>Inner text.</p><fig id='f1'><label>Figure 1</label>"
            "<caption><p>A caption.</p></caption></fig></sec></sec></body>"
            "<floats-group><table-wrap><label>Table 1</label><caption><title>Doses</title></caption>"
            "</table-wrap></floats-group>")
    [article] = parse_jats(parse_xml(jats(meta, body), "x.xml"), "x.xml")
    assert [(s.title, s.text, s.kind) for s in article.sections] == [
        ("Abstract: Background", "Why.", "abstract"),
        ("Abstract: Results", "What.", "abstract"),
        ("Main text", "Loose paragraph.", "body"),
        ("Methods", "Outer text.", "body"),
        ("Methods / Design", "Inner text.", "body"),
        ("Figure 1", "A caption.", "caption"),
        ("Table 1", "Doses", "caption"),
    ]


def test_external_entities_and_dtds_are_never_loaded(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    xml = (
        f'<?xml version="1.0"?><!DOCTYPE article [<!ENTITY xxe SYSTEM "file://{secret}">]>'
        '<article><front><article-meta><article-id pub-id-type="pmc">9</article-id>'
        "<title-group><article-title>T</article-title></title-group></article-meta></front>"
        "<body><p>before &xxe; after</p></body></article>"
    )
    path = tmp_path / "xxe.xml"
    path.write_text(xml)
    items = list(read_articles(path))
    text = " ".join(s.text for item in items if not isinstance(item, IngestError) for s in item.sections)
    assert "TOP SECRET" not in text
