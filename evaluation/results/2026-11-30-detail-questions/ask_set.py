"""Each question of the given sets through rag.yml as `pmc-rag ask` asks it (no uploads): OUT.json."""
import json, sys
from pmc_rag.answering.service import AnswerService
from pmc_rag.pipelines import load_declared_pipeline
from pmc_rag.serving.access import NOT_UPLOADED
from pmc_rag.environment import configure_environment
from pmc_rag.database import ensure_database
configure_environment(); ensure_database()
s = AnswerService(load_declared_pipeline("rag"), name="probe")
out = []
for f in sys.argv[2:]:
    for q in json.load(open(f))["questions"]:
        a = s.answer(q["question"], access=NOT_UPLOADED).model_dump(mode="json")
        out.append({"id": q["id"], "question": q["question"], "answer": a["answer"], "notes": a["notes"],
                    "refs": [r["source_id"] for r in a["references"]], "route": a.get("route")})
json.dump(out, open(sys.argv[1], "w"), indent=1)
