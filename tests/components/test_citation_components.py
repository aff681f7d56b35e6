"""CitationVerifier, CitedAnswerBuilder, ExcerptBudget and the generator wrappers, on hand-made cases."""

from __future__ import annotations

import random
import re

import pytest
from haystack import Document, Pipeline, component
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citation_verifier import CitationVerifier
from pmc_rag.components.citations import strip_reference_list
from pmc_rag.components.answer import Reference
from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder
from pmc_rag.components.empty_reply_generator import EmptyReplyGenerator
from pmc_rag.components.excerpt_budget import ExcerptBudget
from pmc_rag.components.excerpt_balance import ExcerptBalance
from pmc_rag.components.follow_up_query import FollowUpQuery
from pmc_rag.components.question_router import QuestionRouter
from pmc_rag.components.question_sentences import QuestionSentences
from pmc_rag.components.remembering_fallback_chat_generator import RememberingFallbackChatGenerator
from pmc_rag.components.section_chunker import SectionChunker

from citation_helpers import build, verify


def test_valid_citations_in_the_many_ways_small_models_write_them():
    result = verify("Erlotinib prolonged progression-free survival (PMC4816447). "
                    "Metformin lowered HbA1c [PMID: 15703931, pmc 4816447]. "
                    "Rash was common 【PMC4816447】. Survival improved PMC4816447.")
    assert [c["cited"] for c in result["claims"]] == [
        ["PMC4816447"], ["PMID:15703931", "PMC4816447"], ["PMC4816447"], ["PMC4816447"]]
    assert result["invalid_citations"] == []


def test_citations_to_papers_not_shown_are_removed_and_reported():
    # The 270M base model copies the prompt's example id; others invent plausible ones.
    result = verify("Erlotinib works [PMC1234567]. Metformin helps [PMID:99999999, PMID:15703931]. "
                    "Rash occurs [doi:10.1000/fake].")
    assert result["invalid_citations"] == ["PMC1234567", "PMID:99999999", "doi:10.1000/fake"]
    assert [c["cited"] for c in result["claims"]][1] == ["PMID:15703931"]
    assert all("PMC1234567" not in c["cited"] for c in result["claims"])


def test_a_bare_bracketed_number_is_never_displayed_as_a_citation():
    """A model that writes "[2]" or "See [7]" names no paper; left in, it would pass for our numbered citation."""
    answer = build("Erlotinib prolonged progression-free survival [PMC4816447]. Aspirin cures every cancer [2]. "
                   "See [7] and [3, 4].")
    assert answer["invalid_citations"] == ["[2]", "[7]", "[3,4]"] and answer["flags"]["invalid_citations_removed"]
    numbers = re.findall(r"\[[^\]]*\]", answer["answer"])
    assert numbers and set(numbers) == {"[1]"} and answer["references"][0]["source_id"] == "PMC4816447"
    # no excerpt supports the claim, so it carries no citation: it is left out, and the notes say so without
    # repeating it (a sentence left out may be a claim injected into the question); the raw answer keeps it
    notes = " ".join(answer["notes"])
    assert "Aspirin" not in answer["answer"] and "Aspirin" not in notes and "Left out 2 sentence(s)" in notes
    assert "Aspirin cures every cancer" in answer["raw_answer"]


def test_every_citation_invalid_leaves_nothing_shown_as_a_source():
    answer = build("Aspirin cures everything [PMC1234567]. Vaccines cause nothing [PMC7654321].")
    assert answer["invalid_citations"] == ["PMC1234567", "PMC7654321"]
    assert answer["flags"]["invalid_citations_removed"] and answer["flags"]["extractive_fallback"]
    shown = {ref["source_id"] for ref in answer["references"]}
    assert shown <= {"PMC4816447", "PMID:15703931"}
    assert "PMC1234567" not in answer["answer"] and "[PMC" not in answer["answer"]


def test_uncited_sentences_get_a_citation_only_when_an_excerpt_clearly_supports_them():
    result = verify("Erlotinib prolonged progression-free survival in EGFR-mutant lung adenocarcinoma. "
                    "Green tea prevents all cancers in elderly smokers.")
    supported, unsupported = result["claims"]
    assert supported["cited"] == ["PMC4816447"] and supported["attached"] == ["PMC4816447"]
    assert unsupported["cited"] == [] and unsupported["attached"] == []
    assert verify("Erlotinib prolonged progression-free survival.", threshold=None)["claims"][0]["attached"] == []


def test_duplicate_citations_count_once_and_numbers_follow_first_appearance():
    answer = build("Metformin lowered HbA1c in type 2 diabetes [PMID:15703931][PMID:15703931]. "
                   "Erlotinib prolonged progression-free survival [PMC4816447]. "
                   "Metformin lowered HbA1c against placebo [PMID:15703931].")
    assert [ref["source_id"] for ref in answer["references"]] == ["PMID:15703931", "PMC4816447"]
    assert answer["answer"].startswith("Metformin lowered HbA1c in type 2 diabetes [1].")
    assert "[2]" in answer["answer"] and answer["answer"].count("[1]") == 2


def test_citations_only_in_an_appended_reference_list_do_not_count():
    text = ("Erlotinib helps some patients with lung cancer.\n\nReferences:\n[PMC4816447] First-line erlotinib\n"
            "[PMC1234567] Made up")
    answer_text, appended = strip_reference_list(text)
    assert answer_text == "Erlotinib helps some patients with lung cancer." and "PMC1234567" in appended
    result = verify(text, threshold=None)
    assert result["invalid_citations"] == [] and [c["cited"] for c in result["claims"]] == [[]]
    # A trailing run of id lines with no heading is a reference list too.
    assert strip_reference_list("It works [PMC1].\n[PMC1] Title\n- PMID: 5 Other")[0] == "It works [PMC1]."


def test_malformed_brackets_and_unicode():
    result = verify("Erlotinib prolonged survival [PMC4816447. Rash ［PMC4816447］ was common. "
                    "Métformine réduit l'HbA1c (PMID:15703931 .")
    assert [c["cited"] for c in result["claims"]] == [["PMC4816447"], ["PMC4816447"], ["PMID:15703931"]]
    assert all("[" not in c["text"] and "(" not in c["text"] for c in result["claims"])


def test_no_answer_and_no_citations():
    empty = build("")
    assert empty["flags"]["extractive_fallback"] and empty["references"]
    assert "No model answer" in empty["notes"][0]
    assert verify("")["claims"] == []


def test_references_carry_what_is_needed_to_check_them():
    answer = build("Erlotinib prolonged progression-free survival in EGFR-mutant patients [PMC4816447].")
    reference = answer["references"][0]
    assert reference == {
        "number": 1, "source_id": "PMC4816447", "title": "First-line erlotinib in EGFR-mutant NSCLC",
        "journal": "PLoS ONE", "year": 2016, "pmcid": "PMC4816447", "pmid": "27032107",
        "doi": "10.1371/journal.pone.0147599", "url": "https://pmc.ncbi.nlm.nih.gov/articles/PMC4816447/",
        "section": "Abstract: Results", "chunk_id": "c1",
        "evidence": "Erlotinib prolonged progression-free survival in patients with EGFR-mutant lung adenocarcinoma.",
        "authors": [], "page": None, "collection": None,  # a paper without pages, in no collection
        "uploaded_by": None, "claimed_id": None, "origin": "corpus",  # ingested on the server, not uploaded
        "evidence_level": None,
    }
    assert answer["flags"] == {"invalid_citations_removed": False, "weak_support": False,
                               "extractive_fallback": False, "context_truncated": False,
                               "citations_attached": False, "citations_corrected": False,
                               "claims_removed": False, "fallback_generator": False}


def test_a_reference_points_at_the_chunk_and_section_holding_its_evidence_and_says_its_evidence_level():
    """The paper's first-ranked chunk is a table; the cited sentence is in the abstract's conclusion."""
    paper = {"source_id": "PMC4816447", "pmcid": "PMC4816447", "year": 2016, "evidence_level": "rct"}
    table = Document(id="t2", content="Characteristics of the 46 patients treated with erlotinib.",
                     meta={**paper, "section": "Table 2"})
    conclusion = Document(id="a1", content="First-line erlotinib prolonged progression-free survival in patients "
                                           "with EGFR-mutant lung adenocarcinoma.",
                          meta={**paper, "section": "Abstract: Conclusions"})
    answer = build("Erlotinib prolonged progression-free survival in EGFR-mutant lung adenocarcinoma [PMC4816447].",
                   documents=[table, conclusion])
    reference = Reference.model_validate(answer["references"][0])
    assert (reference.chunk_id, reference.section) == ("a1", "Abstract: Conclusions")
    assert reference.evidence_level == "rct" and "randomised trial" in reference.line()


def test_support_matches_word_forms_and_hyphenation_but_not_yes_or_no():
    from pmc_rag.components.citations import content_words, support

    assert content_words("Yes, EGFR-mutant tumours improved") == content_words("egfr mutant tumour improvement")
    evidence = "Erlotinib improved progression free survival in EGFR mutant lung cancer."
    assert support("Yes, erlotinib improves progression-free survival in EGFR-mutant lung cancer.", evidence) == 1.0
    assert support("Aspirin lowers blood pressure in elderly women.", evidence) == 0.0


def test_british_and_american_spellings_support_each_other_and_nothing_else():
    from pmc_rag.components.citations import content_words, support

    for british, american in [("randomised", "randomized"), ("normalisation", "normalization"),
                              ("tumours", "tumors"), ("haemorrhage", "hemorrhage"), ("anaemia", "anemia"),
                              ("oesophageal", "esophageal"), ("paediatric", "pediatric"), ("diarrhoea", "diarrhea"),
                              ("multicentre", "multicenter"), ("analysed", "analyzed"), ("analogue", "analog"),
                              ("foetal", "fetal"), ("aetiology", "etiology"), ("ageing", "aging")]:
        assert content_words(british) == content_words(american), (british, american)
    for word, other in [("four", "for"), ("hour", "hor"), ("aerobic", "erobic"), ("algae", "alge")]:
        assert content_words(word) != content_words(other), word
    assert support("Paediatric oesophageal tumours were randomised.",
                   "Pediatric esophageal tumors were randomized in the trial.") == 1.0


def test_weak_support_is_flagged_and_no_support_falls_back_to_quotations():
    weak = build("Erlotinib prolonged survival [PMC4816447]. Zebra migration patterns changed dramatically "
                 "across savannah regions [PMID:15703931].")
    assert weak["flags"]["weak_support"] and not weak["flags"]["extractive_fallback"]
    none = build("Zebra migration patterns changed across savannah regions [PMC4816447].")
    assert none["flags"]["extractive_fallback"]
    assert none["answer"].startswith("Erlotinib prolonged progression-free survival")  # quoted, with its citation
    assert "[1]" in none["answer"] and "quotes the most relevant passages" in none["notes"][0]


def test_a_repeated_sentence_is_shown_once_and_an_unfinished_last_one_not_at_all():
    # The embedded model, looping until its token limit, on a follow-up about gefitinib (shortened).
    text = ("Erlotinib prolonged progression-free survival [PMC4816447]. Skin rash was the most common adverse "
            "event [PMC4816447]. Erlotinib prolonged progression-free survival [PMC4816447]. Skin rash was the")
    cut = build(text, replies=[ChatMessage.from_assistant(text, meta={"finish_reason": "length"})])
    assert cut["answer"] == ("Erlotinib prolonged progression-free survival [1]. Skin rash was the most common "
                             "adverse event [1].")
    assert "cut off at its length limit" in cut["notes"][0] and "Skin rash was the" not in cut["notes"][0]
    # A reply that ended by itself keeps its last sentence, punctuation or not.
    whole = build("Erlotinib prolonged progression-free survival [PMC4816447]. Skin rash was common [PMC4816447]",
                  replies=[ChatMessage.from_assistant("...", meta={"done_reason": "stop"})])
    assert whole["answer"].endswith("Skin rash was common [1]") and not whole["notes"]


def test_context_truncation_is_reported():
    answer = build("Erlotinib prolonged progression-free survival [PMC4816447].", excerpts_dropped=2)
    assert answer["flags"]["context_truncated"] and "2 lower-ranked excerpt(s)" in answer["notes"][-1]


def test_displayed_citations_are_valid_whatever_the_model_writes():
    """Random answers mixing real and invented ids in every format: every shown citation names a given excerpt."""
    rng = random.Random(7)
    forms = ["[{}]", "({})", " {} ", "【{}】", "[{}, {}]", "[{}; {}]", "({} and {})"]
    ids = ["PMC4816447", "PMID:15703931", "PMC1234567", "PMID:1", "doi:10.1/x", "pmc 4816447", "PMID 15703931",
           "2", "7"]  # bare numbers too: "[2]" must never survive as a citation
    words = "erlotinib metformin survival rash hba1c placebo lung diabetes improved lowered".split()
    for _ in range(300):
        sentences = []
        for _ in range(rng.randint(1, 4)):
            form = rng.choice(forms)
            marks = form.format(*(rng.choice(ids) for _ in range(form.count("{}"))))
            sentences.append(" ".join(rng.choices(words, k=rng.randint(3, 9))) + marks + rng.choice([".", "!", ""]))
        if rng.random() < 0.3:
            sentences.append("\nReferences:\n[PMC1234567] Invented")
        answer = build(" ".join(sentences))
        given = {"PMC4816447", "PMID:15703931"}
        assert {ref["source_id"] for ref in answer["references"]} <= given
        numbers = {int(n) for n in re.findall(r"\[(\d+)\]", answer["answer"])}
        assert numbers == {ref["number"] for ref in answer["references"]}


def test_excerpt_budget_keeps_the_best_ranked_that_fit():
    documents = [Document(content="x" * 300, meta={"rank": i}) for i in range(6)]  # 100 + 40 tokens each
    result = ExcerptBudget(max_tokens=450, max_excerpts=5).run(documents=documents)
    assert [d.meta["rank"] for d in result["documents"]] == [0, 1, 2] and result["dropped"] == 2


def test_rag_yml_prompts_fit_the_embedded_context_even_with_the_densest_excerpts():
    """rag.yml's budget, filled with the corpus's most token-dense chunks and a long question, rendered with its
    own template and counted with Qwen's tokenizer, leaves room for the answer within n_ctx."""
    from llama_cpp import Llama

    from pmc_rag.ingestion.sources import read_articles
    from pmc_rag.models import assemble_llm
    from pmc_rag.pipelines import load_declared_pipeline

    from conftest import CORPUS, PROJECT_ROOT

    declared = load_declared_pipeline(PROJECT_ROOT / "pipelines/rag.yml")
    rag = declared.pipeline
    budget, prompt_builder = rag.get_component("budget"), rag.get_component("prompt_builder")
    embedded = rag.get_component("generator").chat_generators[1]
    assert embedded.api_base_url == declared.local_model.url  # the generator that talks to the local model
    tokenizer = Llama(model_path=str(assemble_llm()), vocab_only=True, verbose=False)

    def tokens(text: str) -> int:
        return len(tokenizer.tokenize(text.encode(), add_bos=False))

    sections = [d for path in sorted(CORPUS.glob("*/*.*ml")) for a in read_articles(path)
                for d in a.section_documents()]
    chunks = SectionChunker().run(documents=sections)["documents"]
    densest = sorted(chunks, key=lambda c: len(c.content) / max(1, tokens(c.content)))[:40]
    kept = budget.run(documents=densest)["documents"]
    question = "Does " + " and ".join(["erlotinib prolong progression-free survival"] * 12) + "?"
    messages = prompt_builder.run(question=question, documents=kept)["prompt"]
    prompt_tokens = sum(tokens(m.text) + 8 for m in messages)  # 8: the chat template's markers per message
    answer_tokens = embedded.generation_kwargs["max_tokens"]
    assert prompt_tokens + answer_tokens <= declared.local_model.n_ctx, (prompt_tokens, answer_tokens)


def test_empty_reply_generator():
    assert EmptyReplyGenerator().run(messages=[])["replies"][0].text == ""


@component
class _ScriptedGenerator:
    """A stand-in chat generator for the fallback tests: raises `error` if given, else replies with `text`."""

    def __init__(self, text: str = "", error: Exception | None = None):
        self.text, self.error, self.calls = text, error, 0

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs=None, tools=None, streaming_callback=None):
        self.calls += 1
        if self.error:
            raise self.error
        return {"replies": [ChatMessage.from_assistant(self.text)]}


def test_a_generator_that_timed_out_is_skipped_for_a_while_and_tried_again_after():
    import httpx

    from pmc_rag.components.remembering_fallback_chat_generator import RememberingFallbackChatGenerator

    hung = _ScriptedGenerator(error=httpx.ReadTimeout("timed out"))
    refused = _ScriptedGenerator(error=ConnectionRefusedError("refused"))
    local = _ScriptedGenerator(text="Yes.")
    generator = RememberingFallbackChatGenerator(chat_generators=[hung, refused, local], skip_after_timeout_s=60)
    for _ in range(3):
        result = generator.run(messages=[ChatMessage.from_user("Q?")])
        assert result["replies"][0].text == "Yes." and result["meta"]["successful_chat_generator_index"] == 2
    assert hung.calls == 1 and refused.calls == 3 and local.calls == 3  # one timeout paid; quick failures retried
    assert result["meta"]["skipped_chat_generators"] == ["_ScriptedGenerator"]
    assert result["meta"]["failed_chat_generators"] == ["_ScriptedGenerator", "_ScriptedGenerator"]

    generator.skip_after_timeout_s = 0  # the time is up: it is tried again
    generator.run(messages=[ChatMessage.from_user("Q?")])
    assert hung.calls == 2
    hung.error = None  # tried again, it answers: no longer remembered, so not skipped however long the window
    assert generator.run(messages="Q?")["meta"]["successful_chat_generator_index"] == 0
    generator.skip_after_timeout_s = 60
    assert generator.run(messages="Q?")["meta"]["successful_chat_generator_index"] == 0 and hung.calls == 4


def test_question_sentences_keep_what_the_question_asks_about_in_order_and_leave_short_excerpts_whole():
    results = ("Erlotinib was given to 46 patients. The weather was mild that year. Median progression-free survival "
               "with erlotinib was 11 months. Follow-up lasted two years. Rash was the most common adverse event.")
    long = Document(id="c1", content=results, meta={"source_id": "PMC1", "section": "Results"})
    short = Document(id="c2", content="Erlotinib improved survival.", meta={"source_id": "PMC2"})
    kept = QuestionSentences(min_words=10, max_sentences=2).run(
        documents=[long, short], question="Does erlotinib improve progression-free survival?")["documents"]
    assert [d.id for d in kept] == ["c1", "c2"] and kept[0].meta == long.meta  # same excerpts, same labels
    assert kept[0].content == ("Erlotinib was given to 46 patients. Median progression-free survival with erlotinib "
                               "was 11 months.")
    assert kept[1].content == "Erlotinib improved survival."
    nothing_shared = QuestionSentences(min_words=10, max_sentences=2).run(
        documents=[long], question="Is aspirin safe in pregnancy?")["documents"]
    assert nothing_shared[0].content == "Erlotinib was given to 46 patients."  # its first sentence, not nothing
    with pytest.raises(ValueError, match="max_sentences at least 1"):
        QuestionSentences(max_sentences=0)


@pytest.mark.parametrize("component", [
    CitationVerifier(attribution_threshold=0.4, source_id_field="sid"),
    CitedAnswerBuilder(min_support=0.2, extractive_sentences=2, specific_word_max_share=0.05),
    ExcerptBudget(max_tokens=900, max_excerpts=3, chars_per_token=2.5, tokens_per_excerpt_label=30),
    EmptyReplyGenerator(),
    RememberingFallbackChatGenerator(chat_generators=[EmptyReplyGenerator()], skip_after_timeout_s=5),
    QuestionSentences(min_words=40, max_sentences=2),
    QuestionRouter(routes=["compare"], exemplars="", k=3, min_share=0.8),
    ExcerptBalance(top_k=4, max_per_paper=2),
    FollowUpQuery(),
], ids=lambda c: type(c).__name__)
def test_serialization_round_trip(component):
    data = component.to_dict()
    assert type(component).from_dict(data).to_dict() == data
    pipeline = Pipeline()
    pipeline.add_component("c", component)
    assert Pipeline.loads(pipeline.dumps(), allowed_modules=["components.*"]).get_component("c").to_dict() == data


def test_abbreviations_expand_unless_ambiguous_without_a_pinned_or_contextual_sense():
    from pmc_rag.components.abbreviation_expander import AbbreviationExpander

    expander = AbbreviationExpander(preferred_senses={"MI": "myocardial infarction"})
    result = expander.run(query="Does SGLT2 inhibition lower HbA1c and the risk of MI?")
    assert result["query"] == ("Does SGLT2 (sodium-glucose cotransporter 2) inhibition lower HbA1c (glycated "
                               "haemoglobin) and the risk of MI (myocardial infarction)?")
    assert expander.run(query="Is DM common in elderly patients?")["expansions"] == {}  # ambiguous, no clue
    assert expander.run(query="Does DM raise insulin resistance in diabetes clinics?")["expansions"] == {
        "DM": "diabetes mellitus"}  # the question's own words pick the sense
    assert expander.run(query="Is it true that this works?")["expansions"] == {}  # ordinary words stay
    data = AbbreviationExpander(lists=["diabetes_abbreviations.tsv"], preferred_senses={"DM": "x"}).to_dict()
    assert AbbreviationExpander.from_dict(data).to_dict() == data
    with pytest.raises(FileNotFoundError, match="abbreviation list nope.tsv not found"):
        AbbreviationExpander(lists=["nope.tsv"]).warm_up()


def test_a_paper_id_that_opens_a_sentence_as_its_subject_becomes_this_paper_and_still_cites_it():
    from pmc_rag.components.citations import split_cited_sentences

    first, second = split_cited_sentences("PMC2329613 is a study of the OHIP-NL. [PMC2329613] The OHIP-NL was "
                                          "reliable.")
    assert (first.text, first.cited) == ("This paper is a study of the OHIP-NL.", ["PMC2329613"])
    assert (second.text, second.cited) == ("The OHIP-NL was reliable.", ["PMC2329613"])  # a mark, not a subject


def test_the_first_note_is_about_the_answer_and_the_account_of_the_checks_comes_after():
    # "What are the side effects of erlotinib?" (2026-11-28): the caveat under the answer said which of the model's
    # sentences were left out; the reader needs first that the answer quotes the papers instead (issue 61, item 5).
    quoted = build("Zebra migration patterns changed across savannah regions. Lions rest in the shade [PMC4816447].")
    assert quoted["flags"]["extractive_fallback"]
    assert "quotes" in quoted["notes"][0]
    assert any(note.startswith("Left out 1 sentence(s)") for note in quoted["notes"][1:])
    from pmc_rag.components.answer import Answer

    assert "quotes" in Answer.model_validate(quoted).caveat()
