import json, sys, random, time, os
from pmc_rag.environment import configure_environment
configure_environment()
from pmc_rag.database import ensure_database
dsn = ensure_database().connection_string
from pmc_rag.local_llm.spec import api_key
api_key()
from pmc_rag.evaluation.runner import without_generation
from pmc_rag.pipelines import load_declared_pipeline
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret
import psycopg
declared = load_declared_pipeline("rag", edit=without_generation)
declared.warm_up()
declared.start_other_local_models()
url = declared.other_local_models[0].url
gen = OpenAIChatGenerator(model="qwen2.5-coder-1.5b-instruct", api_base_url=url,
                          api_key=Secret.from_env_var("PMC_RAG_LLM_API_KEY", strict=False),
                          generation_kwargs={"max_tokens": 90, "temperature": 0.0}, timeout=60)
emb = declared.pipeline.get_component("query_embedder")
SYSTEM = ("Write the conclusion of a medical research abstract that would answer the user's question: two "
          "sentences, in the words a medical paper would use. Write only the conclusion.")
rows = json.load(open('/tmp/objected_tuning.json'))
pick = [r for r in rows if r["not_answered"] and not r["objected"]]
plain = [r for r in pick if r["set"] in ("plain_tuning", "vague_dev", "pubmedqa_dev")]
gen_rows = [r for r in pick if r["set"] in ("generated_tuning", "unanswerable_tuning")]
answered = [r for r in rows if not r["not_answered"] and r["set"] in ("plain_tuning",)]
random.seed(11)
sample = plain + random.sample(gen_rows, int(sys.argv[1])) + random.sample(answered, int(sys.argv[2]))
conn = psycopg.connect(dsn)
def top(vec):
    v = "[" + ",".join(f"{x:.6f}" for x in vec) + "]"
    return conn.execute("select meta->>'source_id', 1 - (embedding <=> %s::vector) from pmc_chunks order by embedding <=> %s::vector limit 1", (v, v)).fetchone()
out = []
t0 = time.time()
for r in sample:
    h = gen.run(messages=[ChatMessage.from_system(SYSTEM), ChatMessage.from_user(r["question"])])["replies"][0].text.strip()
    q_top = top(emb.run(text=r["question"])["embedding"])
    h_top = top(emb.run(text=h)["embedding"])
    out.append({**r, "hyde": h, "q_top": q_top, "h_top": h_top})
    kind = "ANS" if r["gold"] else "UNA"
    print(f"{kind} {r['set'][:8]} q={q_top[1]:.2f} h={h_top[1]:.2f} hit={h_top[0]==r['gold']} | {r['question'][:70]} | {h[:120]}", flush=True)
print("took", round(time.time() - t0), file=sys.stderr)
json.dump(out, open('/tmp/hyde_out.json', 'w'), indent=1, default=str)
