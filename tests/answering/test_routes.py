"""Questions beyond one paper (issue 34): excerpts balanced across compared subjects, comparisons,
overviews, questions in two steps, the web fallback, and pipelines/rag.yml's routes end to end with the
embedded model."""

from __future__ import annotations

import pytest
from haystack import Document

from pmc_rag.answering.pipeline_run import answer_question
from pmc_rag.components.answer import Answer
from pmc_rag.components.excerpt_balance import ExcerptBalance
from pmc_rag.components.question_router import QuestionRouter
from pmc_rag.components.relevance_gate import RelevanceGate
from pmc_rag.pipelines import load_declared_pipeline

from conftest import LOCAL_BASE_URL, PROJECT_ROOT, passage, pipeline_file_for


def test_each_compared_subject_gets_its_own_evidence_first_and_a_missing_one_is_named():
    ranked = [passage("a1", "PMC1", "Erlotinib improved survival."), passage("a2", "PMC1", "Erlotinib was tolerated."),
              passage("a3", "PMC1", "Rash occurred with erlotinib.")]
    candidates = [passage("b1", "PMC2", "Osimertinib was active in exon 20 insertions.")]
    result = ExcerptBalance(top_k=3).run(documents=ranked, route="compare", subjects=["erlotinib", "osimertinib",
                                                                                      "afatinib"],
                                         subqueries=["erlotinib x", "osimertinib x", "afatinib x"],
                                         candidates=candidates)
    assert [d.id for d in result["documents"]] == ["a1", "b1", "a2"]
    assert result["covering"] == ["a1", "b1"] and result["uncovered"] == ["afatinib"]
    # An overview: one excerpt per paper, the rest from the wider pool.
    spread = ExcerptBalance(top_k=3).run(documents=ranked, route="overview", pool=candidates)["documents"]
    assert [d.id for d in spread] == ["a1", "b1"]
    # Any other route: the ranked excerpts as they are.
    assert ExcerptBalance(top_k=2).run(documents=ranked, route="single")["documents"] == ranked[:2]


def test_the_subject_fewest_papers_name_chooses_first_so_the_other_can_come_from_another_paper():
    # "men" is named in one paper only; "women" in two. Chosen in the question's order, "women" would take the
    # only passage of PMC1 ranked first and leave "men" a second passage of the same paper.
    ranked = [passage("p1a", "PMC1", "Women and men recovered alike after stroke."),
              passage("p1b", "PMC1", "Men had more recurrent strokes after discharge."),
              passage("p2", "PMC2", "Women had worse functional outcomes after stroke.")]
    result = ExcerptBalance(top_k=3).run(documents=ranked, route="compare", subjects=["women", "men"],
                                         subqueries=["women stroke outcome", "men stroke outcome"])
    assert result["covering"] == ["p2", "p1a"]
    # Both subjects named by one paper only: another paper's finding on one of them is added when there is one.
    # (A finding of the same paper goes before another paper's background, so that is added after them.)
    others = [passage("p3", "PMC3", "Men smoked more often than controls.", section="Background"),
              passage("p4", "PMC4", "Men who had a stroke smoked more often than controls.", section="Background")]
    spread = ExcerptBalance(top_k=3).run(documents=ranked[:2], route="compare", subjects=["women", "men"],
                                         subqueries=["women stroke", "men stroke"], candidates=others)
    assert spread["covering"] == ["p1a", "p1b", "p4"]  # p4: on the question's topic (stroke)


def test_a_subject_s_passage_on_another_topic_gives_way_to_one_on_the_question_s_topic():
    ranked = [passage("homes", "PMC1", "Nurses in nursing homes reported high workload."),
              passage("bp", "PMC2", "Nurses measured blood pressure as accurately as physicians."),
              passage("md", "PMC3", "Physicians overestimated blood pressure in one in five visits.")]
    result = ExcerptBalance(top_k=3).run(documents=ranked, route="compare", subjects=["nurses", "physicians"],
                                         subqueries=["nurses blood pressure", "physicians blood pressure"])
    assert result["covering"][0] == "bp"
    # Captions and back matter are never passed on.
    caption = Document(id="cap", content="Table 2. Nurses and blood pressure.",
                       meta={"source_id": "PMC4", "section": "Results", "section_kind": "caption"})
    passed = ExcerptBalance(top_k=5).run(documents=[caption, *ranked], route="compare",
                                         subjects=["nurses", "physicians"],
                                         subqueries=["nurses blood pressure", "physicians blood pressure"])
    assert "cap" not in [d.id for d in passed["documents"]]


def test_the_gate_keeps_an_excerpt_chosen_for_a_subject_however_far_below_the_best():
    gate = RelevanceGate(min_similarity=0.5, max_gap=0.1)
    excerpts = [passage("a", "PMC1", "x", score=0.8), passage("b", "PMC2", "y", score=0.55)]
    assert [d.id for d in gate.run(documents=excerpts, scored=excerpts)["documents"]] == ["a"]
    assert [d.id for d in gate.run(documents=excerpts, scored=excerpts, covering=["b"])["documents"]] == ["a", "b"]


@pytest.fixture(scope="session")
def routed(tmp_path_factory, pmc_sample_table):
    pipeline = load_declared_pipeline(pipeline_file_for("rag", pmc_sample_table,
                                                        tmp_path_factory.mktemp("routed")))
    pipeline.warm_up()
    return pipeline


def test_a_summary_cites_only_the_named_paper_with_each_citation_s_section(routed):
    answer = answer_question(routed, "Summarise the FIELT trial").model_dump()
    assert answer["route"] == "summarise"
    assert "semantic" not in answer["timings_ms"] and answer["timings_ms"]["paper_reader"] > 0  # no search
    assert answer["references"] and {r["source_id"] for r in answer["references"]} == {"PMC4816447"}
    assert answer["citations"] and all(c["section"] for c in answer["citations"])
    assert "Abstract: " not in answer["answer"]  # the excerpts' labels the model copies are not shown as text
    assert any("passages were left out" in note for note in answer["notes"])
    # The sections the model did not read give their key findings, quoted and cited with those sections.
    assert any("key finding of" in note for note in answer["notes"])
    read_sections = {s["section"] for s in answer["sources"] if s["in_prompt"]}
    assert {c["section"] for c in answer["citations"]} - read_sections
    text = Answer.model_validate(answer).as_text(explain=True)  # the route is in the explanation (issue 61)
    assert "sections cited: " in text and "(route: summarise)" in text
    gone = answer_question(routed, "Summarise PMC1").model_dump()
    assert gone["flags"]["not_answered"] and "No indexed paper is 'PMC1'" in gone["notes"][0]


def test_a_comparison_shows_the_model_evidence_on_both_subjects(routed):
    answer = answer_question(routed,
                             "How does erlotinib compare with osimertinib in EGFR-mutant lung cancer?").model_dump()
    assert answer["route"] == "compare" and answer["timings_ms"]["subject_search"] > 0
    shown = {s["source_id"] for s in answer["sources"] if s["in_prompt"]}
    assert {"PMC4816447", "PMC6580637"} <= shown  # the erlotinib trial and the osimertinib study
    assert {r["source_id"] for r in answer["references"]} <= shown


def test_two_papers_the_question_names_are_each_read_and_each_one_s_conclusion_quoted(routed):
    question = "How do the FIELT trial and the osimertinib exon 20 study differ?"
    answer = answer_question(routed, question).model_dump()
    assert answer["route"] == "compare" and "semantic" not in answer["timings_ms"]  # read, not searched for
    assert [r["source_id"] for r in answer["references"]] == ["PMC4816447", "PMC6580637"]  # in the order named
    assert answer["answer"].startswith("The present study reinforces the use of EGFR tyrosine kinase inhibition")
    assert "antitumor activity of osimertinib" in answer["answer"]
    assert any("what each paper it names found" in note for note in answer["notes"])
    assert not any(note.startswith("No sentence quoted here compares") for note in answer["notes"])
    # A paper no title matches is said so: the other is not compared with nothing.
    gone = answer_question(routed, "Compare the FIELT trial with the XYZZY unicorn study").model_dump()
    assert gone["flags"]["not_answered"] and "title matches 'XYZZY unicorn'" in gone["notes"][0]


def test_a_question_about_one_named_paper_reads_it_and_quotes_the_passage_that_answers(routed):
    answer = answer_question(routed, "Which skin toxicities were seen in the FIELT trial?").model_dump()
    assert answer["route"] == "single" and "semantic" not in answer["timings_ms"]  # read, not searched for
    assert [r["source_id"] for r in answer["references"]] == ["PMC4816447"] and "skin toxicity" in answer["answer"]
    # asked of the paper as a follow-up is of its topic: a count, not "Issues relevant for clinical practice are
    # discussed" (the abstract's last sentence), whatever the model's sentences say
    count = answer_question(routed, "How many patients were in the FIELT trial?").model_dump()
    assert "46 patients were included" in count["answer"] and count["route"] == "single"
    router = QuestionRouter(exemplars="")
    named = router.run(question="What was the median progression-free survival in the FIELT trial?")
    assert (named["step_paper"], "search_question" in named) == ("FIELT", False)
    assert "step_paper" not in router.run(question="Does erlotinib improve survival in lung cancer?")
    # a kind of study, not a paper's name: searched; nor do two apostrophes quote a title
    assert "step_paper" not in router.run(question="Did the Dutch study find the questionnaire reliable?")
    from pmc_rag.components.question_router import named_paper
    assert named_paper("Does Alzheimer's disease progress faster in Parkinson's patients?") is None
    assert named_paper("Summarise 'Why Most Published Research Findings Are False'") == ("Why Most Published "
                                                                                         "Research Findings Are False")
    assert "step_paper" not in router.run(question="What about its side effects?", follow_up_to="the FIELT trial?")


def test_the_router_reads_a_comparison_of_named_papers_as_papers_to_read_not_subjects_to_search():
    router = QuestionRouter(exemplars="")
    for question, papers in (("Compare PMC4816447 with PMC6580637", ["PMC4816447", "PMC6580637"]),
                             ("PMC4816447 vs PMC6580637", ["PMC4816447", "PMC6580637"]),
                             ("Similarities and differences between the FIELT trial and the osimertinib exon 20 "
                              "study?", ["FIELT", "osimertinib exon 20"]),
                             ("What did the FIELT trial and the MmPPOX paper find?", ["FIELT", "MmPPOX"])):
        routed = router.run(question=question)
        assert routed["route"] == "compare" and routed["papers"] == papers and routed["paper"] == papers[0]
        assert "search_question" not in routed and "subqueries" not in routed
    # One paper and a subject: searched as any comparison. Two papers not compared: as before.
    mixed = router.run(question="Compare the FIELT trial with osimertinib")
    assert "papers" not in mixed and mixed["subqueries"]
    assert router.run(question="Summarise PMC4816447")["route"] == "summarise"
    assert "papers" not in router.run(question="Did the FIELT trial use the RECIST criteria in the study?")


def test_a_question_in_two_steps_names_each_search_in_its_notes(routed):
    answer = answer_question(routed, "What mutation did the osimertinib paper study, and which other papers "
                                     "mention that mutation?").model_dump()
    assert answer["route"] == "multi_step" and answer["timings_ms"]["follow_up_search"] > 0
    assert answer["notes"][0].startswith("Step 1: read the paper the question names, PMC6580637")
    assert "Search 2: " in answer["notes"][0]
    shown = {s["source_id"] for s in answer["sources"] if s["in_prompt"]}
    assert {r["source_id"] for r in answer["references"]} <= shown  # nothing cited that was not retrieved


def test_a_question_in_two_steps_that_names_its_paper_reads_it_first(routed):
    answer = answer_question(routed, "Which drug did the FIELT trial test, and what do other papers report about "
                                     "that drug?").model_dump()
    assert answer["route"] == "multi_step" and not answer["flags"].get("not_answered")
    assert "semantic" not in answer["timings_ms"] and answer["timings_ms"]["step_reader"] > 0  # read, not searched
    assert answer["notes"][0].startswith("Step 1: read the paper the question names, PMC4816447")
    assert "'erlotinib'" in answer["notes"][0]  # what the paper names is what was looked up next
    assert "PMC4816447" in {r["source_id"] for r in answer["references"]}
    shown = {s["source_id"] for s in answer["sources"] if s["in_prompt"]}
    assert {r["source_id"] for r in answer["references"]} <= shown


def test_a_single_finding_takes_rag_yml_s_path(routed):
    answer = answer_question(routed,
                             "Is first-line erlotinib effective in advanced NSCLC with EGFR mutations?").model_dump()
    assert answer["route"] == "single" and answer["timings_ms"]["ranker"] > 0
    assert "PMC4816447" in [r["source_id"] for r in answer["references"]]


def test_rest_chat_and_mcp_reach_the_routes(routed, pmc_sample_table, tmp_path):
    """A served routed pipeline: REST returns the route, chat answers a summary request from the named paper, and
    the MCP tool's compact answer carries the route and each reference's sections."""
    import yaml
    from fastapi.testclient import TestClient

    from pmc_rag.serving.app import build_app
    from pmc_rag.serving.config import load_serve_config
    from pmc_rag.serving.mcp_tools import compact_answer

    config = {"server": {"host": "127.0.0.1", "port": 1416}, "cache": {"max_entries": 0},
              "uploads": {"pipeline": str(pipeline_file_for("indexing", pmc_sample_table, tmp_path))},
              "endpoints": [{"name": "routed", "pipeline": str(pipeline_file_for("rag", pmc_sample_table,
                                                                                  tmp_path)),
                             "kind": "answer", "rest": True, "chat": True, "parameters": ["filters", "top_k"]}]}
    path = tmp_path / "hayhooks.yml"
    path.write_text(yaml.safe_dump(config))
    with TestClient(build_app(load_serve_config(path)), base_url=LOCAL_BASE_URL) as client:
        rest = client.post("/routed/run", json={"question": "Summarise PMC4816447"}).json()["result"]
        chat = client.post("/v1/chat/completions", json={
            "model": "routed", "messages": [{"role": "user", "content": "Give me a summary of the FIELT trial"}]})
    assert rest["route"] == "summarise" and {r["source_id"] for r in rest["references"]} == {"PMC4816447"}
    assert chat.status_code == 200 and "PMC4816447" in chat.json()["choices"][0]["message"]["content"]
    compact = compact_answer(Answer.model_validate(rest))
    assert compact["route"] == "summarise" and all(r["sections"] for r in compact["references"])


def test_a_comparison_shows_both_sides_when_its_excerpts_hold_both():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    excerpts = [
        passage("a", "PMC1", "Erlotinib improved progression-free survival to 11 months in EGFR-mutant patients."),
        passage("b", "PMC2", "Osimertinib achieved a response rate of 25% in patients with exon 20 insertions.")]
    routed = {"route": "compare", "subjects": ["erlotinib", "osimertinib"],
              "subqueries": ["erlotinib EGFR-mutant lung cancer", "osimertinib EGFR-mutant lung cancer"]}
    question = "How does erlotinib compare with osimertinib in EGFR-mutant lung cancer?"
    builder = CitedAnswerBuilder()
    # Quoted (no model answer): one finding per subject, where the whole question's words chose one paper only.
    assert len(builder.run(question=question, documents=excerpts, claims=[])["answer"].model_dump()["references"]) == 1
    quoted = builder.run(question=question, documents=excerpts, claims=[], **routed)["answer"].model_dump()
    assert [r["source_id"] for r in quoted["references"]] == ["PMC1", "PMC2"]
    # A model's answer about one side only: the other side's finding is added, and the note says so.
    claim = {"text": "Erlotinib improved progression-free survival to 11 months", "cited": ["PMC1"], "support": 1.0,
             "attached": [], "judgement": "supported"}
    answered = builder.run(question=question, documents=excerpts, claims=[claim], raw_answer="x [PMC1]",
                           **routed)["answer"].model_dump()
    assert [r["source_id"] for r in answered["references"]] == ["PMC1", "PMC2"]
    assert any("says nothing of 'osimertinib'" in note for note in answered["notes"])


def test_a_quoted_comparison_shows_each_paper_s_own_finding_never_the_model_s_sentences():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    excerpts = [
        passage("a", "PMC1", "Women had worse functional outcomes than men three months after stroke."),
        passage("b", "PMC2", "Men had more recurrent strokes than women in the first year."),
        passage("c", "PMC2", "To compare outcomes of men and women after stroke.", section="Introduction")]
    routed = {"route": "compare", "subjects": ["women", "men"],
              "subqueries": ["women outcome after stroke", "men outcome after stroke"]}
    question = "Is the outcome after stroke worse for women than for men?"
    # The model swaps the sides; a lexical check finds every word of it in PMC1 and cannot tell.
    swapped = {"text": "Men had worse functional outcomes than women three months after stroke", "cited": ["PMC1"],
               "support": 1.0, "attached": [], "judgement": "supported"}
    model = CitedAnswerBuilder().run(question=question, documents=excerpts, claims=[swapped],
                                     raw_answer="x [PMC1]", **routed)["answer"].model_dump()
    assert "Men had worse functional outcomes" in model["answer"]  # what `comparisons: model` shows
    quoted = CitedAnswerBuilder(comparisons="quoted").run(question=question, documents=excerpts, claims=[swapped],
                                                          raw_answer="x [PMC1]", **routed)["answer"].model_dump()
    assert "Men had worse functional outcomes" not in quoted["answer"]
    assert "Women had worse functional outcomes than men" in quoted["answer"]
    assert [r["source_id"] for r in quoted["references"]] == ["PMC1", "PMC2"]  # one paper per subject
    assert "To compare outcomes" not in quoted["answer"]  # an aim is not a finding
    assert any("(comparisons: quoted)" in note for note in quoted["notes"])
    # Any other route is answered as before.
    single = CitedAnswerBuilder(comparisons="quoted").run(question=question, documents=excerpts, claims=[swapped],
                                                          raw_answer="x [PMC1]")["answer"].model_dump()
    assert "Men had worse functional outcomes" in single["answer"]


def test_the_comparison_policy_is_checked_and_round_trips():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    with pytest.raises(ValueError, match="comparisons must be one of model, quoted, not 'quote'"):
        CitedAnswerBuilder(comparisons="quote")
    data = CitedAnswerBuilder(comparisons="quoted").to_dict()
    assert data["init_parameters"]["comparisons"] == "quoted"
    assert CitedAnswerBuilder.from_dict(data).comparisons == "quoted"


def test_an_excerpt_s_header_copied_by_the_model_is_not_shown_as_text():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    excerpt = Document(id="a", content="Erlotinib improved progression-free survival to 11 months.",
                       meta={"source_id": "PMC1", "section": "Abstract: Results", "title": "The FIELT trial",
                             "journal": "Lung Cancer", "year": 2015})
    claim = {"text": "The FIELT trial (Lung Cancer, 2015), Abstract: Results: Erlotinib improved progression-free "
                     "survival to 11 months", "cited": ["PMC1"], "support": 1.0, "attached": [],
             "judgement": "supported"}
    answer = CitedAnswerBuilder().run(question="Does erlotinib improve survival?", documents=[excerpt],
                                      claims=[claim], raw_answer="x [PMC1]")["answer"].model_dump()
    assert answer["answer"].startswith("Erlotinib improved progression-free survival")
    for label in ("Summary: ", "TL;DR: ", "Key results of 'The FIELT trial': "):  # the request, echoed
        labelled = {**claim, "text": label + "Erlotinib improved progression-free survival to 11 months"}
        shown = CitedAnswerBuilder().run(question="Summarise the FIELT trial", documents=[excerpt], claims=[labelled],
                                         raw_answer="x [PMC1]", route="summarise")["answer"].model_dump()
        assert shown["answer"].startswith("Erlotinib improved"), label


class FakeTextRetriever:
    """A fake BM25 retriever (the real one is exercised by rag.yml above): it returns the chunks that
    contain the query's first word, outside the filtered-out papers, and the share of chunks holding each word."""

    def __init__(self, chunks: list[Document]):
        self.chunks = chunks
        self.calls: list[str] = []

    def run(self, query: str, filters: dict | None = None, top_k: int | None = None) -> dict:
        self.calls.append(query)
        excluded = set(filters["conditions"][0]["value"]) if filters else set()
        word = query.split()[0].lower()
        found = [c for c in self.chunks if word in c.content.lower() and c.meta["source_id"] not in excluded]
        shares = {w.lower(): sum(w.lower() in c.content.lower() for c in self.chunks) / len(self.chunks)
                  for w in query.split()}
        return {"documents": found[: top_k or 3], "word_shares": shares}


def test_a_question_in_two_steps_searches_again_for_what_the_first_results_name_and_stops():
    from pmc_rag.components.follow_up_search import FollowUpSearch

    first = [passage("f1", "PMC1", "The FIELT trial treated 46 patients with erlotinib; erlotinib was tolerated.")]
    others = [passage("o1", "PMID:2", "Erlotinib caused rash in most patients."),
              passage("o2", "PMID:3", "Gefitinib and erlotinib were compared.")]
    retriever = FakeTextRetriever(first + others)
    question = "Which drug did the FIELT trial test, and what do other papers report about that drug?"
    search = FollowUpSearch(retriever=retriever, max_searches=3, time_budget_s=5)
    result = search.run(documents=first, question=question, follow_up="what do other papers report about that drug?")
    assert [d.id for d in result["documents"]] == ["f1", "o1", "o2"]  # the first excerpts, then what was found
    steps = result["steps"][0]
    assert "Search 2: 'erlotinib'" in steps and "PMID:2, PMID:3" in steps
    assert "Search 3" in steps  # then it looked again from those results, found nothing new, and stopped
    assert len(retriever.calls) == 2  # one look-up of the name's corpus share, one search
    # Not a two-step question: nothing is searched. No time left: no second search, and the notes say why.
    assert result["looked_up"] == ["erlotinib"]
    assert search.run(documents=first, question="Is erlotinib safe?") == {"documents": first, "steps": [],
                                                                         "looked_up": []}
    hurried = FollowUpSearch(retriever=retriever, max_searches=2, time_budget_s=-1).run(
        documents=first, question=question, follow_up="what do other papers report about that drug?")
    assert hurried["documents"] == first and "time budget" in hurried["steps"][0]


def test_a_two_step_answer_citing_one_paper_gets_another_paper_s_finding_on_what_was_looked_up():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    excerpts = [passage("f1", "PMC1", "The FIELT trial treated 46 patients with erlotinib and met its endpoint."),
                passage("o1", "PMID:2", "Erlotinib caused rash in 80% of patients in this cohort.")]
    claim = {"text": "The FIELT trial treated 46 patients with erlotinib and met its endpoint", "cited": ["PMC1"],
             "support": 1.0, "attached": [], "judgement": "supported"}
    question = "Which drug did the FIELT trial test, and what do other papers report about that drug?"
    builder = CitedAnswerBuilder()
    answer = builder.run(question=question, documents=excerpts, claims=[claim], raw_answer="x [PMC1]",
                         route="multi_step", looked_up=["erlotinib"])["answer"].model_dump()
    assert [r["source_id"] for r in answer["references"]] == ["PMC1", "PMID:2"]
    assert "Erlotinib caused rash in 80% of patients" in answer["answer"]
    assert any("'erlotinib' (the second search) is quoted" in note for note in answer["notes"])
    # Without a second search, the answer is the model's alone.
    alone = builder.run(question=question, documents=excerpts, claims=[claim], raw_answer="x [PMC1]",
                        route="multi_step")["answer"].model_dump()
    assert [r["source_id"] for r in alone["references"]] == ["PMC1"]


def test_a_two_step_question_names_its_paper_to_read_or_is_searched_for_its_first_part():
    router = QuestionRouter(exemplars="")
    named = router.run(question="Which drug did the FIELT trial test, and what do other papers report about that "
                                "drug?")
    assert (named["step_paper"], named["step_question"]) == ("FIELT", "Which drug did the FIELT trial test")
    assert "search_question" not in named and named["follow_up"] == "what do other papers report about that drug?"
    unnamed = router.run(question="Which enzyme family does MmPPOX inhibit, and what other studies report on that "
                                  "family?")
    assert unnamed["search_question"] == "Which enzyme family does MmPPOX inhibit" and "step_paper" not in unnamed


def test_a_follow_up_tries_the_next_name_when_no_other_paper_has_one_and_keeps_to_the_kind_asked():
    from pmc_rag.components.follow_up_search import FollowUpSearch

    read = [passage("f1", "PMC1", "EGFRex20ins mutations were found in 12 patients. EGFRex20ins mutations responded "
                                  "to osimertinib, as did common EGFR mutations.")]
    caption = passage("c1", "PMID:4", "Distribution of EGFR mutations by year.", section="Fig. 2")
    caption.meta["section_kind"] = "caption"
    others = [passage("o1", "PMID:2", "EGFR mutations were found in serum samples of 11 patients."), caption]
    search = FollowUpSearch(retriever=FakeTextRetriever(read + others), max_searches=3)
    question = "What mutation did the osimertinib paper study, and which other papers mention that mutation?"
    result = search.run(documents=read, question=question, follow_up="which other papers mention that mutation?",
                        read_paper="PMC1")
    steps = result["steps"][0]
    assert steps.startswith("Step 1: read the paper the question names, PMC1 (1 passage(s)")
    # the name the paper puts before "mutations" first; no other paper has it, so the next name is tried
    assert "Search 2: 'EGFRex20ins' (named by the first results) in other papers: found no other paper" in steps
    assert "Search 3: 'EGFR' (named by the first results) in other papers: found 1 excerpt(s) from PMID:2" in steps
    assert [d.id for d in result["documents"]] == ["f1", "o1"]  # a figure caption is not what a paper reports
    assert result["looked_up"] == ["EGFRex20ins", "EGFR"]
    # "that drug": a gene is no answer, so after the drug nothing else is looked up
    trial = [passage("t1", "PMC1", "The FIELT trial treated 46 patients with erlotinib; all had EGFR mutations.")]
    drug = FollowUpSearch(retriever=FakeTextRetriever(trial + others), max_searches=3).run(
        documents=trial, question="Which drug did the FIELT trial test, and what do other papers report about that "
        "drug?", follow_up="what do other papers report about that drug?", read_paper="PMC1")
    assert drug["looked_up"] == ["erlotinib"] and "'EGFR'" not in drug["steps"][0]
    assert "Search 3 was not made: the results name nothing new to look up." in drug["steps"][0]


def test_a_two_step_answer_never_credits_other_papers_with_what_only_the_first_paper_says():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    excerpts = [passage("f1", "PMC1", "This phase II study treated 46 patients with erlotinib. The response rate was "
                                      "60% at three months.")]
    claim = {"text": "Other papers report that erlotinib is effective in lung cancer", "cited": ["PMC1"],
             "support": 1.0, "attached": [], "judgement": "supported"}
    question = "Which drug did the FIELT trial test, and what do other papers report about that drug?"
    answer = CitedAnswerBuilder().run(question=question, documents=excerpts, claims=[claim], raw_answer="x [PMC1]",
                                      route="multi_step", looked_up=["erlotinib"])["answer"].model_dump()
    assert "Other papers report" not in answer["answer"]
    assert any("says what other papers report, but cites only PMC1" in note for note in answer["notes"])
    # What the first part asks (the drug) is answered by the sentence naming it, though that is a method.
    assert answer["answer"] == "This phase II study treated 46 patients with erlotinib [1]."


def test_an_overview_drawn_from_one_paper_gets_the_other_papers_findings_on_its_topic():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    excerpts = [passage("a", "PMC1", "Gestational diabetes was more common after increased nuchal translucency."),
                passage("b", "PMID:2", "To examine gestational diabetes screening in Danish women."),  # an aim only
                passage("c", "PMID:3", "Women with gestational diabetes had larger babies than women without it."),
                passage("d", "PMID:4", "Type 2 diabetes was treated with metformin in most patients.")]  # another topic
    claim = {"text": "Gestational diabetes was more common after increased nuchal translucency", "cited": ["PMC1"],
             "support": 1.0, "attached": [], "judgement": "supported"}
    builder = CitedAnswerBuilder()
    answer = builder.run(question="Summarise the evidence on gestational diabetes", documents=excerpts,
                         claims=[claim], raw_answer="x [PMC1]", route="overview")["answer"].model_dump()
    assert [r["source_id"] for r in answer["references"]] == ["PMC1", "PMID:3"]
    assert "Women with gestational diabetes had larger babies" in answer["answer"]
    assert any("1 more paper(s) found on 'gestational diabetes' is quoted" in note for note in answer["notes"])
    # Another route, or an overview already drawn from two papers, is left as the model wrote it.
    single = builder.run(question="Summarise the evidence on gestational diabetes", documents=excerpts,
                         claims=[claim], raw_answer="x [PMC1]", route="single")["answer"].model_dump()
    assert [r["source_id"] for r in single["references"]] == ["PMC1"]


def test_a_comparison_whose_subjects_no_excerpt_names_is_answered_as_any_question_never_empty():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    excerpts = [passage("a", "PMID:1", "AutoCPAP pressures correlated only moderately with OSA severity in obese "
                                       "subjects, and obesity did not predict the pressure reached.", "Conclusions")]
    routed = {"route": "compare", "subjects": ["Does either obesity", "OSA severity influence the"],
              "subqueries": ["Does either obesity autoCPAP", "OSA severity influence the autoCPAP"]}
    builder = CitedAnswerBuilder(comparisons="quoted")
    question = "Does either obesity or OSA severity influence the response of autoCPAP machines?"
    answer = builder.run(question=question, documents=excerpts, claims=[],
                         raw_answer="No, the excerpts do not compare them.", **routed)["answer"].model_dump()
    assert answer["answer"].startswith("AutoCPAP pressures correlated only moderately") and \
        [r["source_id"] for r in answer["references"]] == ["PMID:1"]
    # No excerpt left to quote: "not answered", never an empty answer.
    empty = builder.run(question=question, documents=[], claims=[], raw_answer="No.", **routed)["answer"].model_dump()
    assert empty["flags"]["not_answered"] and empty["answer"] == "The indexed papers do not answer this question."


def test_a_quoted_comparison_says_when_no_sentence_quoted_compares_the_subjects():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    routed = {"route": "compare", "subjects": ["gefitinib", "erlotinib"],
              "subqueries": ["gefitinib lung cancer", "erlotinib lung cancer"]}
    apart = [passage("g", "PMID:1", "Gefitinib prolonged progression-free survival in EGFR-mutant lung cancer.",
                     "Conclusions"),
             passage("e", "PMID:2", "Erlotinib was well tolerated and active as first-line therapy in lung cancer.",
                     "Conclusions")]
    builder = CitedAnswerBuilder(comparisons="quoted")
    answer = builder.run(question="How does gefitinib compare with erlotinib?", documents=apart, claims=[],
                         raw_answer="Gefitinib is better.", **routed)["answer"].model_dump()
    assert {r["source_id"] for r in answer["references"]} == {"PMID:1", "PMID:2"}
    assert any(n.startswith("No sentence quoted here compares 'gefitinib' with 'erlotinib'") for n in answer["notes"])
    compared = [passage("c", "PMID:3", "Erlotinib gave longer progression-free survival than gefitinib in EGFR-mutant "
                                       "lung cancer.", "Conclusions")]
    answer = builder.run(question="How does gefitinib compare with erlotinib?", documents=compared, claims=[],
                         raw_answer="Gefitinib is better.", **routed)["answer"].model_dump()
    assert answer["answer"].startswith("Erlotinib gave longer progression-free survival than gefitinib")
    assert not any(n.startswith("No sentence quoted here compares") for n in answer["notes"])


def test_a_comparison_one_study_makes_is_answered_by_its_conclusion_first():
    from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

    # A question routed as a comparison ("better than") that one study answers: a sentence of that study naming one
    # side (a definition) says nothing of how the two compare, its conclusion does.
    routed = {"route": "compare", "subjects": ["estimate kidney function", "the usual equations"],
              "subqueries": ["neural network estimate kidney function", "the usual equations"]}
    question = "Can a neural network estimate kidney function better than the usual equations?"
    study = [passage("d", "PMC1", "The glomerular filtration rate is the usual way to estimate kidney function and "
                                  "is defined by plasma cleared per minute.", "Discussion"),
             passage("c", "PMC1", "The neural network estimated the glomerular filtration rate more accurately than "
                                  "the traditional equations in patients with chronic kidney disease.", "Conclusions")]
    builder = CitedAnswerBuilder(comparisons="quoted")
    answer = builder.run(question=question, documents=study, claims=[], raw_answer="", **routed)["answer"]
    assert answer.answer.startswith("The neural network estimated the glomerular filtration rate more accurately")
    assert "is defined by plasma" not in answer.answer and [r.source_id for r in answer.references] == ["PMC1"]
    assert any("the best-matching paper's own conclusion" in note for note in answer.notes)
    assert not any(n.startswith("No sentence quoted here compares") for n in answer.notes)
    # Another paper's finding on one side still follows the study's conclusion.
    other = passage("o", "PMC2", "The usual equations underestimated kidney function in older adults with normal "
                                 "creatinine.", "Conclusions")
    answer = builder.run(question=question, documents=[*study, other], claims=[], raw_answer="", **routed)["answer"]
    assert [r.source_id for r in answer.references] == ["PMC1", "PMC2"]
    assert answer.answer.startswith("The neural network estimated")


@pytest.mark.parametrize("name", ["rag", "rag_gate_learned", "rag_reworded", "rag_routed_llm", "rag_scoped"])
def test_every_named_paper_reading_of_a_shipped_pipeline_keeps_to_the_request_s_filters(name):
    # With the filters comes what the caller may read (pmc_rag.serving.access): a reader without them would read
    # another key's upload by its title or id.
    from pmc_rag.pipeline_files import resolve_pipeline_spec

    spec = resolve_pipeline_spec(PROJECT_ROOT / "pipelines" / f"{name}.yml")
    readers = [n for n, c in spec["components"].items() if str(c.get("type", "")).endswith(".PaperReader")]
    assert readers and all(f"{r}.filters" in spec["inputs"]["filters"] for r in readers)


def test_the_request_s_filters_hold_for_the_subject_and_follow_up_searches():
    from pmc_rag.components.follow_up_search import FollowUpSearch

    old, new = (Document(id=i, content=f"Erlotinib {i}", meta={"source_id": i, "year": y})
                for i, y in (("PMC1", 2005), ("PMC2", 2019)))
    after_2015 = {"field": "meta.year", "operator": ">=", "value": 2015}
    balanced = ExcerptBalance(top_k=3).run(documents=[], route="compare", subjects=["erlotinib", "gefitinib"],
                                           subqueries=["erlotinib", "gefitinib"], candidates=[old, new],
                                           filters=after_2015)
    assert [d.id for d in balanced["documents"]] == ["PMC2"]

    class FilteredRetriever(FakeTextRetriever):
        """Records the filters of each search, and keeps to a year filter among them."""

        def run(self, query: str, filters: dict | None = None, top_k: int | None = None) -> dict:
            self.filters = getattr(self, "filters", []) + [filters]
            found = super().run(query, filters, top_k)
            years = [c["value"] for c in (filters or {}).get("conditions", [])[1:]]
            return {**found, "documents": [d for d in found["documents"] if all(d.meta["year"] >= y for y in years)]}

    first = [Document(id="f1", content="The FIELT trial treated 46 patients with erlotinib.",
                      meta={"source_id": "PMC9", "year": 2016})]
    retriever = FilteredRetriever([*first, old, new])
    follow_up = "which other papers mention that drug?"
    result = FollowUpSearch(retriever=retriever, max_searches=2).run(
        documents=first, question="Which drug did the FIELT trial test", follow_up=follow_up, filters=after_2015)
    assert [d.id for d in result["documents"]] == ["f1", "PMC2"]
    assert retriever.filters[-1]["conditions"][1] == after_2015


def test_a_method_is_looked_up_only_when_the_question_asks_for_one():
    """"What pathogen ... and how is it transmitted?": the assay the paper used ("ELISA") is how it measured, not
    what it is about; "Which questionnaire ... where else has it been used?" asks for the instrument itself."""
    from pmc_rag.components.follow_up_search import FollowUpSearch

    first = [passage("f1", "PMC1", "Sera were tested by ELISA for RVFV antibodies; ELISA found RVFV in 10% of goats "
                                   "and ELISA was repeated.")]
    others = [passage("o1", "PMID:2", "RVFV is transmitted by mosquitoes."),
              passage("o2", "PMID:3", "ELISA kits were compared.")]
    question = "What pathogen did the Mozambique study look for, and how is it transmitted according to other papers?"
    found = FollowUpSearch(retriever=FakeTextRetriever(first + others), max_searches=2).run(
        documents=first, question=question, follow_up="how is it transmitted according to other papers?")
    assert found["looked_up"] == ["RVFV"]
    scale = [passage("s1", "PMC1", "Depression was measured with the PHQ-9 at baseline; PHQ-9 scores fell by half.")]
    instrument = FollowUpSearch(retriever=FakeTextRetriever(scale + [passage("o3", "PMID:4", "The PHQ-9 is valid.")]),
                                max_searches=2).run(
        documents=scale, question="Which questionnaire did the trial use, and where else has it been used?",
        follow_up="where else has it been used?")
    assert instrument["looked_up"] == ["PHQ-9"]
