"""How often a figure or table caption is the top excerpt, or among the top 5, for the answerable questions of
evaluation/datasets/route_questions.json (over the PMC sample) and the README question, for each pipeline named:

    python evaluation/results/2026-11-26-captions-findings-first/captions_in_top5.py OLD_RAG.yml pipelines/rag.yml

OLD_RAG.yml: rag.yml as it was before captions were filtered (`git show 28894e3~1:pipelines/rag.yml > OLD_RAG.yml`).
Retrieval and ranking only (the generator is cut off, as `pmc-rag eval --retrieval-only` does).
"""

import collections
import json
import sys

from pmc_rag.environment import configure_environment

configure_environment()

from pmc_rag.database import ensure_database  # noqa: E402
from pmc_rag.evaluation.runner import without_generation  # noqa: E402
from pmc_rag.pipelines import load_declared_pipeline  # noqa: E402

README_QUESTION = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"


def main(pipelines: list[str]) -> None:
    ensure_database()
    rows = json.load(open("evaluation/datasets/route_questions.json"))["questions"]
    questions = [r["question"] for r in rows if r.get("answerable", True)] + [README_QUESTION]
    for name in pipelines:
        pipeline = load_declared_pipeline(name, edit=without_generation)
        pipeline.warm_up()
        first, in_top5, first_kinds = 0, 0, collections.Counter()
        for question in questions:
            ranked = pipeline.run(question=question, top_k=5)["ranked"] or []
            kinds = [d.meta.get("section_kind") for d in ranked[:5]]
            if kinds:
                first_kinds[kinds[0]] += 1
                first += kinds[0] == "caption"
            in_top5 += "caption" in kinds
        print(f"{name}: {len(questions)} questions, a caption first for {first}, in the top 5 for {in_top5}; "
              f"first excerpt by kind: {dict(first_kinds)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
