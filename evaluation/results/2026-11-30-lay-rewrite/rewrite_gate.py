"""Lay questions rewritten into the papers' medical English by the 1.5B, blind (no passage shown), and gated again.

    python rewrite_gate.py OUT.json [--part tuning|held_aside]   # the model servers running (pmc-rag model start)

Every question of the part's sets goes through rag.yml up to the gate (gate_learning.gather); each the rules turn
away is rewritten by the translator's model (port 1418) with the prompt below, and the rewrite is gated again.
Writes each question's rows (as asked, rewrite, both decisions) and prints the let-through / turned-away table.
"""
import json
import sys
import time

from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from pmc_rag.evaluation.gate_learning import ANSWERABLE, HELD_ASIDE, TUNING, gather, question_sets
from pmc_rag.local_llm.spec import api_key

INSTRUCTIONS = ("Rewrite the user's health question in the words a medical research paper would use: medical terms "
                "for everyday words, no personal details. Keep every subject of the question and what it asks; add "
                "no subject and drop none. Do not answer it.")
EXAMPLES = (("My dad's ankles swell since he started amlodipine, does that go away?",
             "Does amlodipine-induced ankle edema resolve?"),
            ("Do kids who snore do worse at school?",
             "Is snoring in children associated with poorer school performance?"),
            ("Is it ok to take ibuprofen for a headache when you're pregnant?",
             "Is ibuprofen use for headache during pregnancy safe?"))


def rewriter():
    generator = OpenAIChatGenerator(model="qwen2.5-coder-1.5b-instruct", api_base_url="http://127.0.0.1:1418/v1",
                                    api_key=Secret.from_token(api_key()), timeout=60, max_retries=0,
                                    generation_kwargs={"max_tokens": 80, "temperature": 0.0, "response_format": {
                                        "type": "json_schema", "json_schema": {"name": "rewrite", "schema": {
                                            "type": "object", "required": ["question"],
                                            "properties": {"question": {"type": "string"}}}}}})
    prefix = [ChatMessage.from_system(INSTRUCTIONS)]
    for lay, medical in EXAMPLES:
        prefix += [ChatMessage.from_user(lay), ChatMessage.from_assistant(json.dumps({"question": medical}))]

    def rewrite(question: str) -> str:
        reply = generator.run(messages=[*prefix, ChatMessage.from_user(question)])["replies"][0].text or ""
        try:
            return " ".join(str(json.loads(reply).get("question", "")).split()) or question
        except (json.JSONDecodeError, AttributeError):
            return question
    return rewrite


def main() -> None:
    out = sys.argv[1]
    part = sys.argv[sys.argv.index("--part") + 1] if "--part" in sys.argv else "tuning"
    names = TUNING if part == "tuning" else HELD_ASIDE
    sets = {n: q for n, q in question_sets().items() if n in names}
    first = gather(sets)
    turned = [r for r in first if not r["rules_answer"]]
    print(f"{len(turned)} of {len(first)} turned away; rewriting", flush=True)
    rewrite, started = rewriter(), time.time()
    for i, row in enumerate(turned, 1):
        row["rewrite"] = rewrite(row["question"])
        if i % 25 == 0:
            print(f"  {i}/{len(turned)} rewritten, {(time.time() - started) / i:.1f} s each", flush=True)
    again = gather({"rewrites": [r["rewrite"] for r in turned]})
    for row, second in zip(turned, again):
        row["rewrite_answer"] = bool(second["rules_answer"])
    rows = [{k: r.get(k) for k in ("set", "question", "rules_answer", "rewrite", "rewrite_answer")} for r in first]
    json.dump(rows, open(out, "w"), indent=1)
    print("| set | questions | measure | rules | rules, then the rewrite when turned away |\n|---|---:|---|---:|---:|")
    for name in names:
        part_rows = [r for r in rows if r["set"] == name]
        ok = name in ANSWERABLE
        before = sum(bool(r["rules_answer"]) == ok for r in part_rows)
        after = sum(bool(r["rules_answer"] or r["rewrite_answer"]) == ok for r in part_rows)
        print(f"| {name} | {len(part_rows)} | {'let through' if ok else 'turned away'} | "
              f"{before / len(part_rows):.1%} | {after / len(part_rows):.1%} |")


if __name__ == "__main__":
    main()
