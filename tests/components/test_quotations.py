"""Which sentence an answer quotes (QuotationChooser through CitedAnswerBuilder), on hand-made cases: findings, never
aims, captions, methods or back matter; the conclusion before a result; for a follow-up, the sentence on what it
asks."""

from __future__ import annotations

import pytest
from haystack import Document

from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder

from citation_helpers import EXCERPTS, verify


def test_quotations_skip_headings_and_figure_labels():
    labelled = [Document(id="f", content="Survival outcome. Kaplan-Meier curves of progression-free survival "
                                         "with erlotinib in the whole cohort.", meta={"source_id": "PMC4816447"})]
    answer = CitedAnswerBuilder().run(question="Does erlotinib improve survival?", documents=labelled,
                                      claims=[], raw_answer="")["answer"].model_dump()
    assert answer["answer"].startswith("Kaplan-Meier curves")


def test_a_follow_up_whose_answer_ignores_what_it_compares_with_is_not_answered():
    topic = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"
    shares = {"compare": 0.04, "gefitinib": 0.002, "erlotinib": 0.003}

    def build(text, documents=EXCERPTS, question="How does it compare with gefitinib?", **kwargs):
        verified = verify(text, documents)
        return CitedAnswerBuilder().run(question=question, follow_up_to=topic, documents=documents,
                                        claims=verified["claims"], raw_answer=text, **kwargs)["answer"].model_dump()

    follow_up = build("Erlotinib prolonged progression-free survival [PMC4816447].", topic_question=topic,
                      word_shares=shares)
    assert follow_up["flags"]["not_answered"] and follow_up["answer"].startswith("The indexed papers do not answer")
    assert follow_up["citations"] == [] and follow_up["references"] == []
    assert "compares it with 'gefitinib'" in follow_up["notes"][0] and "No model was asked" not in \
        follow_up["notes"][0]
    assert [p["source_id"] for p in follow_up["not_answering"]] == ["PMC4816447", "PMID:15703931"]
    # Naming it is not comparing with it (the FIELT paper's background, quoted in a test conversation).
    excerpts = [Document(id="g", content="Gefitinib and erlotinib both outperform chemotherapy as first-line "
                                         "therapy. Erlotinib gave longer progression-free survival than gefitinib.",
                         meta={"source_id": "PMC4816447"})]
    assert build("Gefitinib and erlotinib both outperform chemotherapy [PMC4816447].", excerpts,
                 topic_question=topic, word_shares=shares)["flags"].get("not_answered")
    # Comparing with it answers; so does any answer to a question that is not a follow-up, or names nothing new.
    assert not build("Erlotinib gave longer progression-free survival than gefitinib [PMC4816447].", excerpts,
                     topic_question=topic, word_shares=shares)["flags"].get("not_answered")
    assert not build("Erlotinib prolonged progression-free survival [PMC4816447].",
                     word_shares=shares)["flags"].get("not_answered")
    assert not build("Erlotinib prolonged progression-free survival [PMC4816447].", topic_question=topic,
                     word_shares={"erlotinib": 0.003, "side": 0.2})["flags"].get("not_answered")
    # Other new words are often put otherwise by the papers: only what is compared with must be spoken of.
    assert not build("Erlotinib prolonged progression-free survival [PMC4816447].", topic_question=topic,
                     question="How many patients took part?",
                     word_shares={"took": 0.003, "patients": 1.0})["flags"].get("not_answered")


def test_a_follow_ups_quotation_is_chosen_by_its_own_words_first():
    excerpts = [Document(id="a", content="Characteristics of the 46 patients with lung cancer treated with first-line "
                                         "erlotinib in the study. Skin rash and diarrhoea were the most frequent side "
                                         "effects of erlotinib in these patients.", meta={"source_id": "PMC4816447"})]
    topic = "Is first-line erlotinib effective in lung cancer patients?"
    question = "What about its side effects?"
    quoted = CitedAnswerBuilder().run(question=question, follow_up_to=topic, documents=excerpts, claims=[],
                                      topic_question=topic)
    assert quoted["answer"].answer.startswith("Skin rash and diarrhoea were the most frequent side effects")
    # Without the topic question, the topic's words carried in the query count most, yet a caption is never
    # quoted: it answers nothing.
    caption = CitedAnswerBuilder().run(question=question, follow_up_to=topic, documents=excerpts, claims=[])
    assert caption["answer"].answer.startswith("Skin rash and diarrhoea")


@pytest.mark.parametrize("sentence, section, rank", [
    ("To examine whether erlotinib prolongs survival in lung cancer.", "Abstract: Objective", 0),
    # The model restating the aim in a follow-up's answer (2026-11-27, the nuchal translucency conversation).
    ("The study was planned to evaluate whether NT thickness predicts gestational diabetes.", "Abstract: Results", 0),
    ("Characteristics of the 46 patients treated with erlotinib.", "Table 2", 0),
    ("Patients were randomized to erlotinib or placebo for twelve weeks.", "Abstract: Methods", 0),
    ("Lung cancer is the leading cause of cancer death worldwide.", "Abstract: Background", 0),
    ("Erlotinib prolonged progression-free survival to 11 months.", "Abstract: Results", 2),
    ("First-line erlotinib is a treatment of choice.", "Abstract: Conclusions", 2),
    # Full-text papers asked in plain words (2026-11-28): an aim, others' work, a limitation and a claim to be the
    # first were quoted from results, discussion and conclusion sections as if they were the paper's finding.
    ("This early phase pilot study was undertaken to explore the possibility of RS based diagnosis of asthma.",
     "Results and Discussion", 0),
    ("In this study, we have explored the feasibility of detecting asthma through RS of serum.", "Abstract", 0),
    ("To our knowledge, our study is the first to rigorously evaluate the clinical and economic impact of "
     "acupuncture and counselling.", "Conclusion", 1),
    ("Another case report also suggested that an EGFR exon 20 mutation could be suppressed by osimertinib.",
     "Discussion", 1),
    ("Several studies, also usually small in size, have reported that carriers of the D allele have higher ACE "
     "activity.", "Results", 1),
    ("For this reason HRQL aspects specific for multimorbid patients may not have been captured.", "Discussion", 1),
    ("Acupuncture and counselling both reduced symptoms of depression at three months.", "Discussion", 2),
    # ... but a conclusion that names its limitations is still the paper's own (dev 401-500, 2026-11-28)
    ("Notwithstanding the limitations of such a study, we conclude that people with periodontal disease are at "
     "higher risk of rheumatoid arthritis.", "Abstract: Conclusions", 2),
])
def test_quotations_are_findings_never_aims_captions_methods_or_background(sentence, section, rank):
    from pmc_rag.components.claim_signals import finding_rank as _finding_rank

    assert _finding_rank(sentence, section) == rank


def test_a_quotation_comes_from_the_papers_conclusion_not_its_aim_though_the_aim_shares_more_words():
    paper = {"source_id": "PMID:1"}
    aim = Document(id="o", content="To assess whether statins reduce the risk of dementia in older adults with "
                                   "high blood pressure.", meta={**paper, "section": "Abstract: Objective"})
    conclusion = Document(id="c", content="Statin use was associated with a lower risk of dementia in this "
                                          "cohort.", meta={**paper, "section": "Abstract: Conclusions"})
    answer = CitedAnswerBuilder().run(question="Do statins reduce the risk of dementia in older adults?",
                                      documents=[aim, conclusion], claims=[])["answer"].model_dump()
    assert answer["answer"].startswith("Statin use was associated with a lower risk of dementia")


def test_a_conclusion_that_abbreviates_the_subjects_is_quoted_not_the_background_that_spelled_them_out():
    # PMID 26079501 (dev question 4xx, 2026-11-27): the background sentence "It guides resuscitative measures, and
    # predicts outcomes, complications and mortality" was quoted, since the conclusion says "BD" and "TBI".
    paper = {"source_id": "PMID:26079501"}
    objective = Document(id="o", meta={**paper, "section": "Objective"}, content=(
        "Base Deficit (BD) is a marker of tissue hypoxia in polytrauma patients. It guides resuscitative measures, "
        "and predicts outcomes, complications and mortality. The aim of this study was to examine the presence of "
        "BD in patients with isolated severe traumatic brain injury (TBI)."))
    conclusion = Document(id="c", meta={**paper, "section": "Conclusions"}, content=(
        "Although BD is correlated with GCS at presentation and RTS, it is not a reliable prognostic marker for "
        "outcome and mortality in patients with isolated TBI."))
    answer = CitedAnswerBuilder().run(
        question="Does base deficit predict mortality in patients with severe traumatic brain injury?",
        documents=[objective, conclusion], claims=[])["answer"].model_dump()
    assert answer["answer"].startswith("Although BD is correlated with GCS")


def test_between_sentences_as_close_to_the_question_the_conclusion_is_quoted_not_a_result():
    # Dev question "Advanced epithelial ovarian carcinoma in Thai women: should we continue to offer second-look
    # laparotomy?": spelling out "SLL" made a results sentence as close as the conclusion, and it came first.
    paper = {"source_id": "PMID:1"}
    objective = Document(id="o", meta={**paper, "section": "Abstract: Objective"},
                         content="To evaluate the value of second-look laparotomy (SLL) in ovarian carcinoma.")
    results = Document(id="r", meta={**paper, "section": "Abstract: Results"},
                       content="Sixteen patients underwent SLL, and thirty-four patients refused the procedure.")
    conclusion = Document(id="c", meta={**paper, "section": "Abstract: Conclusions"},
                          content="The second-look laparotomy does not improve survival in these women.")
    answer = CitedAnswerBuilder().run(question="Should we continue to offer second-look laparotomy?",
                                      documents=[objective, results, conclusion], claims=[])["answer"].model_dump()
    assert answer["answer"].startswith("The second-look laparotomy does not improve survival")


def test_a_quotation_is_never_taken_from_back_matter_or_a_caption():
    # PMC3585041, asked "Is Rift Valley fever virus circulating in sheep in Mozambique?" (2026-11-28): its Author
    # Summary's background ("Outbreaks of RVF occur sporadically ...") was quoted, though back matter is not read
    # as evidence anywhere else.
    paper = {"source_id": "PMC3585041"}
    summary = Document(id="s", meta={**paper, "section": "Author Summary"}, content=(
        "Outbreaks of Rift Valley fever in sheep occur sporadically in Mozambique when heavy rains come."))
    caption = Document(id="t", meta={**paper, "section": "Results", "section_kind": "caption"}, content=(
        "Rift Valley fever virus antibodies in sheep by district of Mozambique, 2010."))
    result = Document(id="a", meta={**paper, "section": "Abstract"}, content=(
        "The results indicate that the virus circulates sub-clinically in small ruminants in Zambezia Province."))
    question = "Is Rift Valley fever virus circulating in sheep in Mozambique?"
    answer = CitedAnswerBuilder().run(question=question, documents=[summary, caption, result],
                                      claims=[])["answer"].model_dump()
    assert answer["answer"].startswith("The results indicate that the virus circulates sub-clinically")


def test_a_quotation_names_the_questions_specific_subject_before_sharing_more_of_its_common_words():
    # The FIELT paper (PMC4816447), asked "Does erlotinib improve survival in non-small cell lung cancer?"
    # (2026-11-28): its discussion's sentence on afatinib shares three of the question's words and was quoted.
    paper = {"source_id": "PMC4816447"}
    afatinib = Document(id="d", meta={**paper, "section": "Discussion"}, content=(
        "Afatinib resulted in a major improvement in PFS versus the optimal standard chemotherapy (pemetrexed and "
        "cisplatin) for this type of lung cancer."))
    erlotinib = Document(id="r", meta={**paper, "section": "Results"}, content=(
        "The median overall survival with erlotinib was 23 months in the current study."))
    question = "Does erlotinib improve survival in non-small cell lung cancer?"
    shares = {"erlotinib": 0.004, "improve": 0.057, "survival": 0.043, "non-small": 0.045, "cell": 0.04,
              "lung": 0.013, "cancer": 0.062}

    def quoted(word_shares):
        return CitedAnswerBuilder().run(question=question, documents=[afatinib, erlotinib], claims=[],
                                        word_shares=word_shares)["answer"].model_dump()["answer"]

    assert quoted(shares).startswith("The median overall survival with erlotinib was 23 months")
    # Without the corpus statistics, the most words shared decide, as before.
    assert quoted(None).startswith("Afatinib resulted in a major improvement")
    # Naming the subject helps only a finding: background that names it does not beat a result that does not
    # (the PLoS meta-analysis of MDR-TB regimens, asked "Which drugs improve treatment success in
    # multidrug-resistant tuberculosis?", 2026-11-28).
    tb = {"source_id": "doi:10.1371/journal.pmed.1001300"}
    background = Document(id="i", meta={**tb, "section": "Introduction"}, content=(
        "The increasing incidence of multidrug resistant tuberculosis is a major concern for treatment programs."))
    result = Document(id="r", meta={**tb, "section": "Results"}, content=(
        "Treatment success was more likely with drugs such as later-generation fluoroquinolones and ethionamide."))
    answer = CitedAnswerBuilder().run(
        question="Which drugs improve treatment success in multidrug-resistant tuberculosis?",
        documents=[background, result], claims=[],
        word_shares={"drugs": 0.03, "improve": 0.057, "treatment": 0.2, "success": 0.02,
                     "multidrug-resistant": 0.002, "tuberculosis": 0.008})["answer"].model_dump()
    assert answer["answer"].startswith("Treatment success was more likely with drugs such as later-generation")


@pytest.mark.parametrize("text, defined", [
    ("Base Deficit (BD) is a marker in severe traumatic brain injury (TBI).",
     {"BD": "Base Deficit", "TBI": "traumatic brain injury"}),
    ("the target serum urate (SU) goal with the use of urate-lowering therapy (ULT)",
     {"SU": "serum urate", "ULT": "urate-lowering therapy"}),
    ("carotid intima-media thickness (cIMT) and HbA1c (glycated haemoglobin)",
     {"cIMT": "carotid intima-media thickness"}),
    ("at 95% confidence interval (CI) in group A (n=5) with (p<0.05) in children (aged 5)",
     {"CI": "confidence interval"}),
])
def test_the_abbreviations_a_paper_defines_are_read_with_their_long_forms(text, defined):
    from pmc_rag.components.defined_abbreviations import defined_abbreviations, spelled_out

    assert defined_abbreviations(text) == defined
    assert spelled_out("BD and TBI, not BDX.", {"BD": "base deficit", "TBI": "traumatic brain injury"}) == \
        "BD (base deficit) and TBI (traumatic brain injury), not BDX."


# A PubMedQA abstract as the follow-ups of a conversation get it, one section per excerpt (shortened from PMID
# 20382292, the "parkinson" test conversation).
PARKINSON = [Document(id=f"pd-{i}", content=text, meta={"source_id": "PMID:20382292", "section": f"Abstract: {label}"})
             for i, (label, text) in enumerate([
                 ("Objective", "To evaluate the relationship between knee extensor strength, postural stability and "
                               "functional ambulation in Parkinson's disease (PD)."),
                 ("Participants", "Patients (N=44) with idiopathic PD."),
                 ("Main Outcome Measures", "Participants were evaluated on their isokinetic knee extensor strength. "
                                           "Dynamic postural stability was assessed as the center of pressure-center "
                                           "of mass moment arm during gait initiation."),
                 ("Results", "Knee extensor strength positively correlated with dynamic postural stability and "
                             "negatively correlated with disease severity in patients with PD (P<.05)."),
                 ("Conclusions", "These findings suggest a malleable relationship between knee extensor strength, "
                                 "dynamic stability, and disease severity in PD.")])]


PARKINSON_TOPIC = ("Are knee extensor strength, dynamic stability and functional ambulation related in Parkinson's "
                   "disease?")


def follow_up(question: str, text: str = "", documents=PARKINSON, topic: str = PARKINSON_TOPIC) -> dict:
    verified = verify(text, documents) if text else {"claims": []}
    return CitedAnswerBuilder(extractive_sentences=1).run(
        question=question, follow_up_to=topic, documents=documents, claims=verified["claims"],
        raw_answer=text, topic_question=topic)["answer"].model_dump()


def test_a_follow_up_asking_how_many_or_how_it_was_measured_is_quoted_from_the_methods():
    assert follow_up("How many patients took part in it?")["answer"] == "Patients (N=44) with idiopathic PD [1]."
    measured = follow_up("How was dynamic stability measured?")["answer"]
    assert measured.startswith("Dynamic postural stability was assessed as the center of pressure")
    # A follow-up asking for a finding still never quotes a method or the aim.
    assert follow_up("Was it related to disease severity?")["answer"].startswith("Knee extensor strength positively")


def test_a_follow_up_is_not_answered_with_the_sentence_that_answered_its_topic_unless_nothing_else_speaks_to_it():
    # The conclusion answered the topic question: "What about severity?" gets the result that names it.
    assert follow_up("What about severity?")["answer"].startswith("Knee extensor strength positively correlated")
    # Nothing else speaks to "Is it important?": the conclusion is the best there is, read again.
    assert follow_up("Is it important?")["answer"].startswith("These findings suggest a malleable relationship")


def test_a_models_answer_without_the_number_a_follow_up_asks_for_gives_way_to_the_sentence_with_it():
    answer = follow_up("How many patients took part in it?",
                       "Knee extensor strength positively correlated with dynamic postural stability [PMID:20382292].")
    assert answer["answer"] == "Patients (N=44) with idiopathic PD [1]."
    assert answer["flags"]["extractive_fallback"]
    assert any("asks about a number, which the model's answer does not speak of" in note for note in answer["notes"])
    # The model's answer that gives the number stays.
    kept = follow_up("How many patients took part in it?", "There were 44 patients with idiopathic Parkinson's "
                                                            "disease in the cohort [PMID:20382292].")
    assert kept["answer"] == "There were 44 patients with idiopathic Parkinson's disease in the cohort [1]."
    assert not kept["flags"]["extractive_fallback"] and not kept["notes"]


def test_a_question_about_a_named_paper_is_answered_as_a_follow_up_about_it_with_what_it_asks_for():
    # "How many patients were in the FIELT trial?": the named paper was read for it, and its conclusion is not the
    # count; as a follow-up about the paper, the sentence with the number of patients answers.
    question = "How many patients were in the Parkinson knee study?"

    def answer(text: str = "", named_paper: str | None = "the Parkinson knee study", route: str = "single") -> dict:
        verified = verify(text, PARKINSON) if text else {"claims": []}
        return CitedAnswerBuilder(extractive_sentences=1).run(
            question=question, documents=PARKINSON, claims=verified["claims"], raw_answer=text, route=route,
            named_paper=named_paper)["answer"].model_dump()

    assert answer()["answer"] == "Patients (N=44) with idiopathic PD [1]."
    model_without_number = answer("Knee extensor strength positively correlated with dynamic postural stability "
                                  "[PMID:20382292].")
    assert model_without_number["answer"] == "Patients (N=44) with idiopathic PD [1]."
    assert any(note.startswith("This question asks about a number") for note in model_without_number["notes"])
    # Without a named paper (or on another route) the question is a plain one: the finding, never a method.
    assert answer(named_paper=None)["answer"].startswith("These findings suggest a malleable relationship")
    assert answer(route="multi_step")["answer"].startswith("These findings suggest a malleable relationship")


def test_what_is_asked_of_a_named_paper_may_be_quoted_from_a_passage_the_model_was_not_shown():
    # The reader's budget kept the abstract's findings; the count sits in its participants, left unread.
    read, unread = [PARKINSON[3], PARKINSON[4]], [PARKINSON[1], PARKINSON[2]]
    built = CitedAnswerBuilder(extractive_sentences=1).run(
        question="How many patients were in the Parkinson knee study?", documents=read, claims=[], route="single",
        named_paper="the Parkinson knee study", named_paper_unread=unread)["answer"].model_dump()
    assert built["answer"] == "Patients (N=44) with idiopathic PD [1]."
    assert built["citations"][0]["chunk_id"] == "pd-1"  # cited to the passage it comes from
    # A question that asks for no kind of thing keeps to what was read, as does a question naming no paper.
    finding = CitedAnswerBuilder(extractive_sentences=1).run(
        question="What did the Parkinson knee study find?", documents=read, claims=[], route="single",
        named_paper="the Parkinson knee study", named_paper_unread=unread)["answer"].model_dump()
    assert finding["citations"][0]["chunk_id"] in {"pd-3", "pd-4"}
    unnamed = CitedAnswerBuilder(extractive_sentences=1).run(
        question="How many patients were in the Parkinson knee study?", documents=read, claims=[],
        route="single", named_paper_unread=unread)["answer"].model_dump()
    assert unnamed["citations"][0]["chunk_id"] in {"pd-3", "pd-4"}


def test_side_effects_are_quoted_from_the_sentence_on_toxicity_not_one_on_effectiveness():
    paper = [Document(id=f"e-{i}", content=text, meta={"source_id": "PMC4816447", "section": section})
             for i, (section, text) in enumerate([
                 ("Abstract: Conclusion", "The present study reinforces the use of EGFR tyrosine kinase inhibition "
                                          "as a first line treatment of choice for advanced adenocarcinoma of the "
                                          "lung."),
                 ("Discussion", "The availability of EGFR targeted treatments introduced an effective treatment for a "
                                "previously unmet medical need in this population."),
                 ("Results / Safety", "Treatment with erlotinib was generally well tolerated with manageable toxicity "
                                      "as reported by the participating investigators.")])]
    topic = "Is first-line erlotinib effective in advanced non-small cell lung cancer with EGFR mutations?"
    answer = follow_up("What about its side effects?", documents=paper, topic=topic)["answer"]
    assert answer.startswith("Treatment with erlotinib was generally well tolerated with manageable toxicity")


def test_a_models_result_in_answer_to_how_it_was_measured_gives_way_to_the_method():
    answer = follow_up("How was dynamic stability measured?",
                       "Knee extensor strength positively correlated with dynamic postural stability [PMID:20382292].")
    assert answer["answer"].startswith("Dynamic postural stability was assessed as the center of pressure")
    assert any("asks about how it was measured or done" in note for note in answer["notes"])
    # A model's answer naming how it was measured stays.
    kept = follow_up("How was dynamic stability measured?", "Dynamic postural stability was assessed as the center "
                                                            "of pressure-center of mass moment arm [PMID:20382292].")
    assert not kept["flags"]["extractive_fallback"] and not kept["notes"]


def test_a_models_answer_that_never_names_what_a_follow_up_asks_about_gives_way_to_the_sentence_that_does():
    # The gastric stimulation conversation (PMID 15670262, shortened): the model answered the topic again.
    paper = [Document(id=f"g-{i}", content=text, meta={"source_id": "PMID:15670262", "section": section})
             for i, (section, text) in enumerate([
                 ("Abstract: Results", "Healthcare resource usage significantly improved at 12, 24 and 36 month "
                                       "follow-up for GES patients compared with patients receiving medical therapy."),
                 ("Abstract: Conclusions", "We conclude that GES is more effective in improving long-term GI "
                                           "symptoms than intensive medical therapy in patients with gastroparesis.")])]
    topic = "Is gastric electrical stimulation superior to standard pharmacologic therapy in improving GI symptoms?"
    model = "GES is more effective in improving long-term GI symptoms than intensive medical therapy [PMID:15670262]."
    answer = follow_up("What about its effect on healthcare resources?", model, documents=paper, topic=topic)
    assert answer["answer"].startswith("Healthcare resource usage significantly improved")
    assert any("asks about 'healthcare' or 'resources'" in note for note in answer["notes"])
    # The same model answer stays where it answers the follow-up's own words.
    kept = follow_up("What about GI symptoms in the long term?", model, documents=paper, topic=topic)
    assert kept["answer"].startswith("GES is more effective") and not kept["flags"]["extractive_fallback"]


def test_a_conclusion_close_in_meaning_speaks_of_the_question_though_it_shares_no_word():
    """Issue 61: "Is there evidence of Rift Valley fever in goats and sheep in Mozambique?" quoted a count of IgM
    positive sheep (it shares "sheep") over the paper's conclusion, which says it in its own words."""
    from pmc_rag.components.quotation_chooser import QuotationChooser

    question = "Is there evidence of Rift Valley fever in goats and sheep in Mozambique?"
    result = Document(id="r", content="Twenty samples from sheep were IgM positive, most of them from Chimuara.",
                      meta={"source_id": "PMC3585041", "section": "Results"})
    conclusion = Document(id="c", meta={"source_id": "PMC3585041", "section": "Conclusions"}, content=(
        "The results of the study indicate that RVFV circulates sub-clinically in domestic small ruminants in "
        "Zambézia Province."))
    by_words = QuotationChooser()
    by_meaning = QuotationChooser(meaning_model="sentence-transformers/all-MiniLM-L6-v2", min_conclusion_similarity=0.4)
    by_meaning.warm_up()
    assert by_words.run(question=question, documents=[result, conclusion])["claims"][0]["text"] == result.content
    assert by_meaning.run(question=question, documents=[result, conclusion])["claims"][0]["text"] == conclusion.content
    # a conclusion on something else is not preferred for being a conclusion
    aside = Document(id="a", content="Hospital staff reported higher workloads during the winter months.",
                     meta={"source_id": "PMC3585041", "section": "Conclusions"})
    assert by_meaning.run(question=question, documents=[result, aside])["claims"][0]["text"] == result.content
    assert QuotationChooser.from_dict(by_meaning.to_dict()).to_dict() == by_meaning.to_dict()


def test_a_comparison_opens_with_the_study_s_conclusion_only_when_it_is_closest_to_the_question():
    from pmc_rag.components.quotation_chooser import QuotationChooser

    question = "Which works better for migraine, a bolus or a slow infusion of metoclopramide?"
    parts, subjects = ["bolus metoclopramide migraine", "slow infusion metoclopramide migraine"], ["bolus",
                                                                                                  "slow infusion"]
    result = Document(id="r", content="Migraine relief was similar after a bolus and after a slow infusion of "
                      "metoclopramide, but akathisia was rarer with the infusion.", meta={"source_id": "PMC1",
                                                                                          "section": "Results"})
    aside = Document(id="c", content="Emergency departments should review how antiemetics are given to patients "
                     "with migraine.", meta={"source_id": "PMC1", "section": "Conclusions"})
    # Read by meaning, the result compares the two and the conclusion is a remark aside: the result comes first.
    chooser = QuotationChooser(meaning_model="sentence-transformers/all-MiniLM-L6-v2", min_conclusion_similarity=0.4)
    chooser.warm_up()
    quoted, concluded = chooser.comparison(parts, subjects, [result, aside], question)
    assert quoted[0]["text"].startswith("Migraine relief was similar") and not concluded
    # Without a model to read meaning, the paper's conclusion is taken to speak for it.
    quoted, concluded = QuotationChooser().comparison(parts, subjects, [result, aside], question)
    assert quoted[0]["text"].startswith("Emergency departments") and concluded


def test_papers_compared_by_name_are_each_quoted_by_their_own_conclusion_not_by_the_word_compare():
    from pmc_rag.components.quotation_chooser import QuotationChooser

    def chunk(source_id, text, section):
        return Document(content=text, meta={"source_id": source_id, "section": section})

    documents = [chunk("PMC1", "Erlotinib as first-line treatment gave a median progression-free survival of 11 "
                               "months in EGFR-mutant lung cancer.", "Abstract: Conclusion"),
                 chunk("PMC1", "These results compare favorably with those of randomized trials in Asian "
                               "patients with lung cancer.", "Discussion"),
                 chunk("PMC2", "Osimertinib showed antitumor activity in patients with exon 20 insertions.",
                       "Conclusions")]
    quoted = QuotationChooser().each_paper("Compare PMC1 with PMC2", documents, ["PMC1", "PMC2"])
    assert [c["cited"] for c in quoted] == [["PMC1"], ["PMC2"]]  # one each, in the order named
    assert quoted[0]["text"].startswith("Erlotinib as first-line treatment")
    assert QuotationChooser().each_paper("Compare PMC1 with PMC3", documents, ["PMC1", "PMC3"])[1:] == []
