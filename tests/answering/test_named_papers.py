"""A named paper read in its own order (summaries, long papers, the key findings of unread sections), and
its conclusion fetched when its aim or results were found."""

from __future__ import annotations

import pytest
from haystack import Document

from pmc_rag.components.paper_reader import PaperReader

from conftest import passage, make_store


@pytest.fixture(scope="session")
def sample_store(pmc_sample_table):
    return make_store(pmc_sample_table)


@pytest.mark.parametrize("paper", ["PMC4816447", "PMID:27032107", "doi:10.1371/journal.pone.0147599", "FIELT",
                                   "First-Line Erlotinib in Advanced Non-Small Cell Lung Cancer"])
def test_a_named_paper_is_read_in_its_own_order_within_the_budget(sample_store, paper):
    result = PaperReader(document_store=sample_store, max_tokens=2000, max_excerpts=8).run(paper=paper)
    chunks = result["documents"]
    assert {d.meta["source_id"] for d in chunks} == {"PMC4816447"}
    order = [d.meta["chunk_index"] for d in chunks]
    assert order == sorted(order) and 2 <= len(chunks) <= 8
    assert chunks[0].meta["section"].startswith("Abstract")
    assert not any(d.meta.get("section_kind") == "caption" for d in chunks)  # a caption is not a finding
    assert sum(len(d.content) / 3.0 + 40 for d in chunks) <= 2000
    assert result["excerpts_dropped"] > 10  # a full-text paper does not fit: the rest is counted


def test_a_long_paper_condensed_to_its_findings_sentences_is_read_across_more_sections(sample_store):
    """The map step of a map-reduce summary, without the model: each passage outside the abstract keeps its
    findings sentences, so more of the paper fits; what is read is the paper's own text, and the chunk ids stay
    the real ones, so citations still point at the passage."""
    from pmc_rag.components.section_chunker import split_sentences

    whole = PaperReader(document_store=sample_store, max_tokens=2000, max_excerpts=16).run(paper="PMC4816447")
    condensed = PaperReader(document_store=sample_store, max_tokens=2000, max_excerpts=16,
                            sentences_per_passage=2).run(paper="PMC4816447")
    read = condensed["documents"]
    sections = {d.meta["section"] for d in read}
    assert len(read) > len(whole["documents"]) and condensed["excerpts_dropped"] < whole["excerpts_dropped"]
    # Sections with their subsections ("Results / Efficacy"): which top-level sections fit depends on the packing
    # (the results' further passages come before the discussion's first).
    assert len(sections) > len({d.meta["section"] for d in whole["documents"]})
    originals = {d.id: d for d in sample_store.filter_documents(
        {"field": "meta.source_id", "operator": "==", "value": "PMC4816447"})}
    shortened = [d for d in read if d.meta.get("sentences_read")]
    assert shortened and all(d.meta.get("section_kind") != "abstract" for d in shortened)
    for document in shortened:
        sentences = split_sentences(document.content)
        assert len(sentences) <= 2 and all(s in originals[document.id].content for s in sentences)
    assert [d.meta["chunk_index"] for d in read] == sorted(d.meta["chunk_index"] for d in read)
    with pytest.raises(ValueError, match="sentences_per_passage must be 0"):
        PaperReader(document_store=sample_store, sentences_per_passage=-1)


def test_each_unread_section_of_a_long_paper_gives_its_key_finding_the_paper_s_own_sentence(sample_store):
    """The map step of a long paper's summary: what the model did not read gives one finding per section, a
    conclusion, a result and a discussion first; each is a sentence of its passage, keeping its id and section."""
    from pmc_rag.components.section_key_findings import SectionKeyFindings

    read = PaperReader(document_store=sample_store, max_tokens=2000, max_excerpts=8).run(paper="PMC4816447")
    assert len(read["unread"]) == read["excerpts_dropped"] > 10
    assert not {d.id for d in read["unread"]} & {d.id for d in read["documents"]}
    found = SectionKeyFindings(max_sections=4).run(unread=read["unread"], read=read["documents"])["documents"]
    passages = {d.id: d for d in read["unread"]}
    assert 1 <= len(found) <= 4
    assert [passages[d.id].meta["chunk_index"] for d in found] == sorted(
        passages[d.id].meta["chunk_index"] for d in found)  # the paper's order
    for finding in found:
        assert finding.content in " ".join(passages[finding.id].content.split())
        assert finding.meta["section"] == passages[finding.id].meta["section"]
        assert finding.meta["section"] not in {d.meta["section"] for d in read["documents"]}
    assert {d.meta["section"].split(" / ")[0] for d in found} >= {"Discussion"}  # not results only
    assert SectionKeyFindings(max_sections=0).run(unread=read["unread"])["documents"] == []


def test_a_section_s_key_finding_is_a_result_never_an_aim_a_method_or_an_introduction():
    from pmc_rag.components.section_key_findings import SectionKeyFindings

    unread = [passage("i", "PMC1", "Lung cancer is the leading cause of cancer death in the world today.",
                      "Introduction"),
              passage("m", "PMC1", "Patients were randomised to erlotinib or to chemotherapy in a one to one ratio.",
                      "Methods"),
              passage("r1", "PMC1", "Table 2 shows the baseline characteristics of all enrolled patients. Median "
                                    "progression-free survival was 11 months with erlotinib and 5 months with "
                                    "chemotherapy.", "Results / Efficacy"),
              passage("r2", "PMC1", "Rash was the most common adverse event and was mostly mild in our patients.",
                      "Results / Safety"),
              passage("d", "PMC1", "The aim of this study was to confirm these results in Caucasian patients.",
                      "Discussion")]
    found = SectionKeyFindings(max_sections=1).run(unread=unread)["documents"]
    assert [(d.id, d.content) for d in found] == [
        ("r1", "Median progression-free survival was 11 months with erlotinib and 5 months with chemotherapy.")]
    assert [d.id for d in SectionKeyFindings().run(unread=unread)["documents"]] == ["r1", "r2"]
    # In a discussion: what others found or what is known is not this paper's finding, nor is a sentence whose
    # table reference was cut out; the paper's own result comes first.
    discussion = passage("d2", "PMC1", "Similar results have been reported with afatinib in the LUX-Lung 3 study. "
                                       "Unadjusted mean scores for all 46 patients at each visit are presented in and. "
                                       "Rash occurred in 80% of patients, as in earlier erlotinib trials. "
                                       "In this trial we found that erlotinib doubled progression-free survival.",
                         "Discussion")
    assert SectionKeyFindings().run(unread=[discussion])["documents"][0].content == (
        "In this trial we found that erlotinib doubled progression-free survival.")
    data = SectionKeyFindings(max_sections=2, min_words=6).to_dict()
    assert SectionKeyFindings.from_dict(data).to_dict() == data and data["init_parameters"]["max_sections"] == 2
    with pytest.raises(ValueError, match="max_sections must be 0"):
        SectionKeyFindings(max_sections=-1)


def test_a_summary_quotes_the_key_findings_after_the_model_s_sentences_cited_with_their_own_sections():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    read = [passage("abs", "PMC1", "Erlotinib was given first line to 46 patients with EGFR mutations.", "Abstract")]
    key = [passage("saf", "PMC1", "Rash was the most common adverse event and was mostly mild.", "Results / Safety")]
    claim = {"text": "Erlotinib was given first line to 46 patients with EGFR mutations", "cited": ["PMC1"],
             "support": 1.0, "attached": [], "judgement": "supported"}
    answer = CitedAnswerBuilder().run(question="Summarise PMC1", documents=read, claims=[claim], raw_answer="x [1]",
                                      route="summarise", excerpts_dropped=5, key_findings=key)["answer"].model_dump()
    assert answer["answer"].endswith("Rash was the most common adverse event and was mostly mild. [1]") or \
        answer["answer"].endswith("Rash was the most common adverse event and was mostly mild [1].")
    assert [(c["section"], c["chunk_id"]) for c in answer["citations"]] == [("Abstract", "abs"),
                                                                             ("Results / Safety", "saf")]
    assert any("the key finding of 1 section(s) it did not read is quoted (Results / Safety)" in note
               for note in answer["notes"])
    # Not answered stays not answered: nothing is quoted into it.
    gone = CitedAnswerBuilder().run(question="Summarise PMC1", unanswered=[], key_findings=key)["answer"].model_dump()
    assert gone["flags"]["not_answered"] and not gone["citations"]


def test_a_paper_that_is_not_indexed_is_not_answered_and_says_what_was_looked_for(sample_store):
    reader = PaperReader(document_store=sample_store)
    missing = reader.run(paper="PMC1")
    assert "documents" not in missing and "No indexed paper is 'PMC1'" in missing["why_unanswered"]
    unknown = reader.run(paper="unicorn horn regrowth")
    assert "documents" not in unknown and "title matches 'unicorn horn regrowth'" in unknown["why_unanswered"]


def test_two_named_papers_are_read_each_within_half_the_budget_abstract_first(sample_store):
    reader = PaperReader(document_store=sample_store, max_tokens=2000, max_excerpts=8)
    both = reader.run(paper="FIELT", papers=["FIELT", "PMC6580637"])
    assert both["paper_ids"] == ["PMC4816447", "PMC6580637"] and both["paper_id"] == "PMC4816447"
    read = both["documents"]
    for source_id in both["paper_ids"]:
        own = [d for d in read if d.meta["source_id"] == source_id]
        assert own[0].meta["section"].startswith("Abstract") and len(own) <= 4
        assert sum(len(d.content) / 3.0 + 40 for d in own) <= 1000
    assert [d.meta["source_id"] for d in read] == sorted((d.meta["source_id"] for d in read),
                                                         key=both["paper_ids"].index)  # one paper, then the other
    assert both["unread"] == [] and both["excerpts_dropped"] > 20  # counted, not quoted section by section
    # The same paper named twice is one paper, read as a summary reads it.
    once = reader.run(paper="FIELT", papers=["FIELT", "PMC4816447"])
    assert once["paper_ids"] == ["PMC4816447"] and once["unread"]
    missing = reader.run(paper="FIELT", papers=["FIELT", "PMC1"])
    assert "documents" not in missing and "No indexed paper is 'PMC1'" in missing["why_unanswered"]


def test_a_question_about_a_named_paper_reads_the_abstract_s_findings_then_the_passages_closest_to_it(
        sample_store):
    from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder

    question = "Which skin toxicities were seen in the FIELT trial?"
    embedding = OnnxTextEmbedder(model="sentence-transformers/all-MiniLM-L6-v2", normalize_embeddings=True,
                                 threads=1).run(text=question)["embedding"]
    reader = PaperReader(document_store=sample_store, max_tokens=1200, max_excerpts=4, by_relevance=True)
    read = reader.run(paper="FIELT", query_embedding=embedding)["documents"]
    sections = [d.meta["section"] for d in read]
    assert "Abstract: Results" in sections and "Abstract: Introduction" not in sections  # its findings, not why
    assert any("skin toxicity" in d.content for d in read)  # the passage that reports them
    assert [d.meta["chunk_index"] for d in read] == sorted(d.meta["chunk_index"] for d in read)
    # Without the question (a summary, a reader not by relevance), the abstract comes first, whole.
    plain = PaperReader(document_store=sample_store, max_tokens=1200, max_excerpts=4).run(
        paper="FIELT", query_embedding=embedding)["documents"]
    assert "Abstract: Introduction" in [d.meta["section"] for d in plain]
    assert not any("skin toxicity" in d.content for d in plain)
    assert PaperReader.from_dict(reader.to_dict()).by_relevance


def test_paper_reader_and_follow_up_search_serialization_round_trip(sample_store):
    from pmc_rag.components.bm25_retriever import PgvectorBM25Retriever
    from pmc_rag.components.follow_up_search import FollowUpSearch

    data = PaperReader(document_store=sample_store, max_tokens=1500, sentences_per_passage=2).to_dict()
    assert PaperReader.from_dict(data).to_dict() == data
    data = FollowUpSearch(retriever=PgvectorBM25Retriever(document_store=sample_store, top_k=2),
                          max_searches=3).to_dict()
    assert FollowUpSearch.from_dict(data).to_dict() == data


def test_chunks_by_id_round_trips(sample_store):
    from pmc_rag.components.chunks_by_id import ChunksById

    data = ChunksById(document_store=sample_store, max_chunks=3).to_dict()
    assert ChunksById.from_dict(data).to_dict() == data and data["init_parameters"]["max_chunks"] == 3


def test_a_paper_found_by_its_methods_also_gives_its_conclusion(sample_store):
    from pmc_rag.components.paper_findings import PaperFindings

    chunks = sample_store.filter_documents({"field": "meta.source_id", "operator": "==", "value": "PMC4816447"})
    methods = next(d for d in chunks if "Methods" in str(d.meta.get("section")))
    findings = PaperFindings(document_store=sample_store)
    added = findings.run(documents=[methods])["documents"]
    assert added[0].id == methods.id and len(added) == 2
    assert added[1].meta["source_id"] == "PMC4816447" and "onclu" in added[1].meta["section"]
    # A paper already shown by a finding gets nothing more.
    assert findings.run(documents=[added[1]])["documents"] == [added[1]]
    assert findings.run(documents=[])["documents"] == []
    data = PaperFindings(document_store=sample_store, max_papers=3, missing="conclusion").to_dict()
    assert PaperFindings.from_dict(data).to_dict() == data and data["init_parameters"]["missing"] == "conclusion"


def test_a_paper_found_by_its_results_gets_its_conclusion_when_asked_for(sample_store):
    from pmc_rag.components.paper_findings import PaperFindings

    chunks = sample_store.filter_documents({"field": "meta.source_id", "operator": "==", "value": "PMC4816447"})
    safety = next(d for d in chunks if d.meta.get("section") == "Results / Safety")
    # By default a results chunk is a finding enough; asked for the conclusion, the paper's own summary is added.
    assert PaperFindings(document_store=sample_store).run(documents=[safety])["documents"] == [safety]
    added = PaperFindings(document_store=sample_store, missing="conclusion").run(documents=[safety])["documents"]
    assert [d.id for d in added[:1]] == [safety.id] and len(added) == 2
    assert added[1].meta["section"] == "Abstract: Conclusion" and added[1].meta["source_id"] == "PMC4816447"
    with pytest.raises(ValueError, match="missing must be one of"):
        PaperFindings(document_store=sample_store, missing="results")


def test_a_named_paper_that_is_not_indexed_is_searched_for_instead(sample_store):
    reader = PaperReader(document_store=sample_store, max_tokens=1200, max_excerpts=4)
    question = "Which GLP-1 agonist did the STEP 1 trial test"
    assert reader.run(paper="STEP 1", otherwise_search=question) == {"search_question": question}
    found = reader.run(paper="FIELT", otherwise_search="Which drug did the FIELT trial test")
    assert found["paper_id"] == "PMC4816447" and 0 < len(found["documents"]) <= 4
    assert "search_question" not in found


def test_an_overview_reads_each_paper_s_finding_in_place_of_its_aims(sample_store):
    from pmc_rag.components.paper_findings import PaperFindings

    chunks = sample_store.filter_documents({"field": "meta.source_id", "operator": "==", "value": "PMC4816447"})
    methods = [d for d in chunks if "Methods" in str(d.meta.get("section"))][:2]
    other = Document(id="x", content="Rash was common.", meta={"source_id": "PMID:1", "section": "Results"})
    findings = PaperFindings(document_store=sample_store, routes=["overview"], in_place=True)
    replaced = findings.run(documents=[methods[0], other, methods[1]], route="overview")["documents"]
    # the paper's conclusion where its methods were, once; a paper already giving a finding keeps it
    assert [d.meta["source_id"] for d in replaced] == ["PMC4816447", "PMID:1"]
    assert "onclu" in replaced[0].meta["section"] and replaced[1] is other
    # another kind of question passes as it came
    assert findings.run(documents=[methods[0]], route="single")["documents"] == [methods[0]]
    data = findings.to_dict()
    assert PaperFindings.from_dict(data).to_dict() == data and data["init_parameters"]["routes"] == ["overview"]


def test_a_paper_whose_abstract_has_no_headings_concludes_with_the_end_of_its_abstract(sample_store):
    """The Rift Valley fever paper (PMC3585041) has no conclusions section and an abstract without headings: found
    by its results, it gets the end of its abstract, where it says what it concluded, and that summary's finding is
    quoted before a count from the results (issue 61, a tuning question)."""
    from pmc_rag.components.paper_findings import PaperFindings
    from pmc_rag.components.quotation_chooser import QuotationChooser

    chunks = sample_store.filter_documents({"field": "meta.source_id", "operator": "==", "value": "PMC3585041"})
    assert not any("onclu" in str(d.meta.get("section")) for d in chunks)
    abstract = sorted((d for d in chunks if d.meta.get("section") == "Abstract"), key=lambda d: d.meta["chunk_index"])
    results = next(d for d in chunks if str(d.meta.get("section")).startswith("Results / Cross-sectional"))
    added = PaperFindings(document_store=sample_store, missing="conclusion").run(documents=[results])["documents"]
    assert [d.id for d in added] == [results.id, abstract[-1].id]
    # by default (a results chunk is finding enough) nothing is added
    assert PaperFindings(document_store=sample_store).run(documents=[results])["documents"] == [results]
    # as rag.yml sets it: its conclusion ("RVFV circulates sub-clinically in domestic small ruminants") shares no
    # word with the question, and speaks of its subject by meaning
    chooser = QuotationChooser(meaning_model="sentence-transformers/all-MiniLM-L6-v2", min_conclusion_similarity=0.4)
    chooser.warm_up()
    quoted = chooser.extract("Is there evidence of Rift Valley fever in goats and sheep in Mozambique?", added)
    assert quoted[0]["text"] == ("The results of the study indicate that RVFV circulates sub-clinically in domestic "
                                 "small ruminants in Zambézia Province.")


def test_a_named_paper_is_read_only_where_the_request_may_read_never_another_key_s_upload(store):
    """An upload is read only by a question that names its collection (pmc_rag.serving.access): not when its title
    or id is named, and a forged copy of a corpus paper's title neither replaces the paper nor ties with it."""
    from pmc_rag.serving.access import NOT_UPLOADED

    def chunk(id_, source_id, title, text, **meta):
        return Document(id=id_, content=text, embedding=[0.1] * 384,
                        meta={"source_id": source_id, "title": title, "section": "Abstract: Conclusion",
                              "chunk_index": 0, "section_kind": "abstract", **meta})

    corpus = chunk("c1", "PMC1", "Erlotinib in EGFR-mutant lung cancer: the FIELT study",
                   "Erlotinib prolonged progression-free survival in EGFR-mutant lung cancer in this phase II study.")
    forged = chunk("u1", "doc:0123456789abcdef", "Erlotinib in EGFR-mutant lung cancer: the FIELT study",
                   "Drinking bleach cures lung cancer, the FIELT investigators found in all of their patients.",
                   collection="evil", uploaded_by="alice", claimed_id="PMC1")
    private = chunk("u2", "doc:fedcba9876543210", "Unpublished ward audit of catheter infections",
                    "Catheter infections fell by half after the new dressing was introduced on the ward.",
                    collection="mine", uploaded_by="alice")
    store.write_documents([corpus, forged, private])
    reader = PaperReader(document_store=store, max_tokens=2000, max_excerpts=8)
    fielt = reader.run(paper="FIELT", filters=NOT_UPLOADED)
    assert fielt["paper_id"] == "PMC1" and "bleach" not in " ".join(d.content for d in fielt["documents"])
    for named in ("ward audit of catheter infections", "doc:fedcba9876543210"):
        hidden = reader.run(paper=named, filters=NOT_UPLOADED)
        assert "documents" not in hidden and "Catheter" not in str(hidden), named
    both = reader.run(paper="FIELT", papers=["FIELT", "ward audit of catheter infections"], filters=NOT_UPLOADED)
    assert "documents" not in both
    # Its collection named (the owner asking of it): read.
    mine = {"operator": "OR", "conditions": [NOT_UPLOADED, {"field": "meta.collection", "operator": "in",
                                                            "value": ["mine"]}]}
    assert reader.run(paper="ward audit of catheter infections", filters=mine)["paper_id"] == "doc:fedcba9876543210"
