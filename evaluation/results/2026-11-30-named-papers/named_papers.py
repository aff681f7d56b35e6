"""Questions that name papers: does the answer cite the named papers, and only them? (study script)

    python evaluation/results/2026-11-30-named-papers/named_papers.py OUT.json [QUESTIONS.json --counts-only]
"""
import json
import sys
from pathlib import Path

from pmc_rag.answering.service import AnswerService
from pmc_rag.database import ensure_database
from pmc_rag.environment import configure_environment
from pmc_rag.pipelines import load_declared_pipeline
from pmc_rag.serving.access import NOT_UPLOADED

configure_environment()
ensure_database()
source = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent / "named_paper_questions.json"
questions = json.loads(source.read_text())["questions"]
counts_only = "--counts-only" in sys.argv  # a sealed set: its answers are written, not shown
service = AnswerService(load_declared_pipeline("rag"), name="named-papers")
rows = []
for q in questions:
    answer = service.answer(q["question"], access=NOT_UPLOADED).model_dump(mode="json")
    cited = [r["source_id"] for r in answer["references"]]
    rows.append({"id": q["id"], "question": q["question"], "route": answer.get("route"),
                 "answered": not answer["flags"].get("not_answered"), "cites_named": cited == q["papers"],
                 "cited": cited, "answer": answer["answer"]})
    if not counts_only:
        print(f"{q['id']} answered={rows[-1]['answered']} cites_named={rows[-1]['cites_named']} {cited}", flush=True)
print(f"answered {sum(r['answered'] for r in rows)} of {len(rows)}; cite the named papers and no other: "
      f"{sum(r['cites_named'] for r in rows)} of {len(rows)}")
Path(sys.argv[1]).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
