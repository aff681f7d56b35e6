"""Prompt reading and generation speed of each weights file on this CPU (a trial; not shipped)."""
import sys, time
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
from pmc_rag.local_llm.server import load_llama

prompt_text = open(__import__("pathlib").Path(__file__).resolve().parents[3] / "README.md").read()[:9000]
for path in sys.argv[1:]:
    llama = load_llama(path, n_ctx=4096)
    tokens = llama.tokenize(prompt_text.encode())[:1000]
    rows = []
    for run in range(2):
        llama.reset()
        t = time.perf_counter(); llama.eval(tokens); read = time.perf_counter() - t
        t = time.perf_counter(); n = 0
        for tok in llama.generate([], temp=0.0, reset=False):
            n += 1
            if n == 64: break
        gen = time.perf_counter() - t
        rows.append((len(tokens) / read, n / gen))
    print(path.rsplit("/", 1)[-1], " ".join(f"read {r:.0f} tok/s gen {g:.1f} tok/s" for r, g in rows), flush=True)
    del llama
