"""The hand-made excerpts the claim-checking tests check claims against, and the steps they run: a claim as the
verifier gives it, the checker, and the whole answer built from a reply."""

from __future__ import annotations

from haystack import Document
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citation_verifier import CitationVerifier
from pmc_rag.components.cited_answer_builder import CitedAnswerBuilder
from pmc_rag.components.claim import Claim
from pmc_rag.components.claim_checker import ClaimChecker

ERLOTINIB = ("Erlotinib prolonged progression-free survival compared with chemotherapy in patients with "
             "EGFR-mutant lung adenocarcinoma. The response rate was 83% with erlotinib and 36% with chemotherapy. "
             "Skin rash was the most common adverse event.")
METFORMIN = ("Metformin lowered HbA1c by 1.1 percentage points compared with placebo over 24 weeks in adults "
             "with type 2 diabetes. Weight did not change significantly in either group.")
EXCERPTS = [
    Document(id="c1", content=ERLOTINIB, meta={"source_id": "PMC4816447", "title": "First-line erlotinib"}),
    Document(id="c2", content=METFORMIN, meta={"source_id": "PMID:15703931", "title": "Metformin in diabetes"}),
]


def claim(text: str, *cited: str) -> Claim:
    return {"text": text, "cited": list(cited), "attached": [], "invalid": [], "support": 1.0}


def check(*claims, **kwargs):
    return ClaimChecker(**kwargs).run(claims=list(claims), documents=EXCERPTS)


def built(reply: str, question: str, **settings) -> dict:
    verified = CitationVerifier().run(replies=[ChatMessage.from_assistant(reply)], documents=EXCERPTS)
    checked = ClaimChecker().run(claims=verified["claims"], documents=EXCERPTS)
    return CitedAnswerBuilder(**settings).run(question=question, documents=EXCERPTS, claims=checked["claims"],
                                              removed_claims=checked["removed_claims"],
                                              raw_answer=verified["raw_answer"])["answer"].model_dump()
