"""Prints, for each question, every sentence of the excerpts the answer drew on with its finding rank (r0-r2) and
the number of the question's content words it shares (o), the two things the quotation choice weighs:

    .venv/bin/python candidates.py "Does acupuncture help depression in primary care?"
"""
import sys
from pmc_rag.environment import configure_environment
configure_environment()
from pmc_rag.database import ensure_database
ensure_database()
from pmc_rag.pipelines import load_declared_pipeline
from pmc_rag.answer_service import AnswerService
from pmc_rag.components.citations import content_words
from pmc_rag.components.claim_signals import finding_rank
from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.components.section_kinds import is_readable_evidence
svc = AnswerService(load_declared_pipeline("rag"), name="trial")
for q in sys.argv[1:]:
    answer, outputs = svc.answer_for_evaluation(q)
    qw = content_words(q)
    print("Q:", q, "->", answer["answer"][:150])
    for d in outputs["excerpts"]:
        print("  ##", d.meta.get("source_id"), d.meta.get("section"), "readable" if is_readable_evidence(d) else "NOT readable")
        for s in split_sentences(" ".join((d.content or "").split())):
            print(f"    r{finding_rank(s, d.meta.get('section'))} o{len(qw & content_words(s))} {s[:160]}")
