"""What a follow-up asks for: the kind of sentence that answers "How many?", "How was it measured?", "Side
effects?"."""

from __future__ import annotations

import pytest

from pmc_rag.components.follow_up_asks import asked_for, missing_detail


@pytest.mark.parametrize("question, kind", [
    ("How many patients took part in it?", "count"),
    ("How large was the study?", "count"),
    ("How long were the patients followed?", "duration"),
    ("What was its success rate?", "rate"),
    ("How common was it in those patients?", "rate"),
    ("How was dynamic stability measured?", "method"),
    ("Which equations did they test?", "method"),
    ("What about its side effects?", "harms"),
    ("Were there any complications?", "harms"),
    ("Were the results statistically significant?", "significance"),
    ("What did they conclude?", None),
    ("Does it prolong overall survival?", None),
])
def test_the_kind_of_thing_a_follow_up_asks_for(question, kind):
    ask = asked_for(question)
    assert (ask.kind if ask else None) == kind


def test_a_count_is_a_number_beside_who_was_counted_not_any_number_in_the_sentence():
    count = asked_for("How many patients took part?")
    assert count.fits("Patients (N=44) with idiopathic PD.", "Abstract: Participants")
    assert count.fits("Seven individuals who have undergone hemispherectomy were recruited.", "Abstract: Methods")
    assert count.fits("A retrospective analysis of 136 breasts of 134 patients.", None)
    # Found on the held-aside conversations ("How many patients knew their goal?"): a share is a count too.
    assert count.fits("Only 14% of patients knew their SU goal.", None)
    assert not count.fits("Participants underwent a 6-minute walk test.", "Abstract: Main Outcome Measures")
    assert not count.fits("Patients with PD had lower strength.", "Abstract: Results")
    # What else a question counts is named by the question itself: a number within four words before it.
    animals = asked_for("How many sheep and goats were sampled in 2007?")
    assert animals.says("277 sheep and 377 goats were sampled in 2007.")
    assert not animals.says("The herds were sampled twice.")
    drugs = asked_for("how many drugs does he need to take?")
    assert drugs.says("Success was associated with use of four or more likely effective drugs.")
    assert not drugs.says("Data were provided for 9,153 patients.")  # a count, but of patients, not drugs
    assert not drugs.says("A six-variable model of the drugs taken.")  # a word made with a number is not a count
    duration = asked_for("How long were the delays?")
    assert duration.fits("Median TPT was 18 days.", None) and not duration.fits("TPT was delayed in 69.1%.", None)


def test_how_a_study_was_done_may_come_from_its_methods_never_from_its_aim_or_background():
    method = asked_for("How was stability measured?")
    assert method.may_quote("Stability was measured by radiostereometric analysis.", "Abstract: Methods")
    assert not method.may_quote("To measure stability after cup-cage reconstruction.", "Abstract: Methods")
    assert not method.may_quote("Stability is hard to achieve in frail patients.", "Abstract: Background")
    assert method.words >= {"assess", "measur"}  # papers say "assessed" for "measured"
    # A finding's follow-up may not quote methods: the quotation step keeps to conclusions and results.
    assert not asked_for("What about its side effects?").may_quote("Toxicity was graded.", "Abstract: Methods")
    # "Which costs": the thing named is what the answer must name.
    assert asked_for("Which costs did they compare?").words == {"cost"}


def test_side_effects_are_looked_for_as_papers_write_them_and_never_as_effectiveness():
    harms = asked_for("What about its side effects?")
    assert {"toxic", "toler", "advers"} <= harms.words and "effect" in harms.misleading and "effect" not in harms.words
    assert harms.fits("Erlotinib was generally well tolerated with manageable toxicity.", "Results / Safety")
    assert not harms.fits("Erlotinib is an effective first-line treatment.", "Conclusion")


def test_a_follow_up_searches_with_the_words_papers_use_for_what_it_asks():
    from pmc_rag.components.follow_up_asks import searched_for

    topic = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"
    carried = f" (follow-up to: {topic})"
    assert searched_for("What about its side effects?", topic) == (
        "What about its side effects? toxicity tolerated adverse events safety complications" + carried)
    # A follow-up asking for a finding searches with its topic; a question that is not a follow-up, as it is.
    assert searched_for("Does it prolong overall survival?", topic) == "Does it prolong overall survival?" + carried
    assert searched_for("What are the side effects of erlotinib?") == "What are the side effects of erlotinib?"


def test_a_follow_up_is_searched_with_the_question_it_follows_up_and_any_other_question_as_it_is():
    from pmc_rag.components.follow_up_query import FollowUpQuery

    search_text = FollowUpQuery()
    assert search_text.run(question="What about its side effects?", follow_up_to="Is erlotinib effective?") == {
        "query": "What about its side effects? (follow-up to: Is erlotinib effective?)"}
    assert search_text.run(question="Is erlotinib effective?") == {"query": "Is erlotinib effective?"}
    assert search_text.run(question="Is erlotinib effective?", follow_up_to="") == {"query": "Is erlotinib effective?"}


def test_a_quotation_candidate_knows_a_finding_a_conclusion_and_what_it_fits():
    from pmc_rag.components.quotation_candidate import QuotationCandidate

    count = asked_for("How many patients took part?")
    result = QuotationCandidate.of("46 patients were included in the phase II study.", "Abstract: Results", count)
    assert (result.rank, result.conclusion, result.fit) == (2, False, 2)  # a finding; a count fits a count, twice
    conclusion = QuotationCandidate.of("Erlotinib prolonged progression-free survival in these patients.",
                                       "Abstract: Conclusions", None)
    assert (conclusion.rank, conclusion.conclusion, conclusion.fit) == (2, True, 0)
    aim = QuotationCandidate.of("The aim of this study was to assess erlotinib in lung cancer.", "Abstract", count)
    assert aim.rank == 0 and not aim.conclusion and not aim.fit  # an aim is never a finding, nor a count
    # a method answers "how was it measured?" though the quotation step skips methods otherwise
    method = QuotationCandidate.of("Stability was assessed as the centre of pressure moment arm.", "Methods",
                                   asked_for("How was stability measured?"))
    assert method.method_ok and method.fit == 1


def test_an_answer_without_the_number_asked_for_says_so():
    question = "how long does erlotinib keep lung cancer from growing?"
    assert "gives a duration" in missing_detail(question, ["Erlotinib is a first-line treatment of choice [1]."])
    assert missing_detail(question, ["Median progression-free survival was 11 months [1]."]) is None
    # a citation mark is not the number; a yes-or-no question about follow-up asks for none
    assert missing_detail("How many patients took part?", ["Findings held for two years [1]."]) is not None
    assert missing_detail("Do the programs require follow-up?", ["They do not [1]."]) is None
    assert missing_detail("Is it safe?", ["It was effective [1]."]) is None  # harms: words cannot tell for sure
