"""Parts of speech read in context (Brill's tagger), and the words the relevance gate may leave unchecked."""

from __future__ import annotations

from pmc_rag.components.part_of_speech import predicate_words, tagged


def test_a_word_is_tagged_by_its_context_not_only_by_its_usual_kind():
    tags = dict(tagged("Can we plan the next step?"))
    assert tags["plan"].startswith("VB") and tags["step"] == "NN"
    assert dict(tagged("The plan failed."))["plan"] == "NN"  # the lexicon's own reading
    assert dict(tagged("if diabetes runs in your family"))["runs"] == "VBZ"
    assert [t for _, t in tagged("Are patients getting sicker?")][-2:] == ["JJR", "."]


def test_an_unknown_word_is_tagged_by_its_letters():
    tags = dict(tagged("Does ponesimod lower relapses in 1990 cohorts?"))
    assert tags["1990"] == "CD" and tags["cohorts"] == "NNS"
    assert tags["ponesimod"] in {"NN", "NNP", "VBN", "JJ"}  # a guess, never a reason to leave it unchecked


def test_verbs_adverbs_comparatives_and_clause_ending_adjectives_are_predicates_nouns_are_not():
    assert {"runs", "protect"} <= predicate_words(
        "if you're fit does that protect your small blood vessels when diabetes runs in your family?")
    assert "sicker" in predicate_words("Are Medicare patients getting sicker over time?")
    assert "steady" in predicate_words("does colloid keep the blood pressure steady?")
    # nouns, their modifiers and words the tagger can only guess are subjects to look for
    for question, subject in [("Is trouble updating emotional information in memory specific to depression?",
                               "depression"),  # the contextual rules read it as a verb after "to"
                              ("Does cardiopulmonary bypass affect international normalized ratio?", "international"),
                              ("Does music affect pre-eclampsia?", "pre-eclampsia"),
                              ("Is tamoxifen associated with tidal volume?", "tidal"),
                              ("Is gambling associated with premature birth?", "gambling")]:
        assert subject not in predicate_words(question), (question, subject)
