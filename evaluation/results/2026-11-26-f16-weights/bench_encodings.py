"""Prompt reading and generation speed of GGUF files (the same model in several encodings), each loaded in a
child process as the model server loads it, on the README question's real prompt; two rounds, interleaved.

    python evaluation/results/2026-11-26-f16-weights/bench_encodings.py MESSAGES.json RUNS FILE.gguf [FILE.gguf ...]

MESSAGES.json: the chat messages (`evaluation/bench_llm.py`'s `_prompt(README_QUESTION)`). Each run starts from
an empty context (`reset()`), so the whole prompt is read; the medians of RUNS runs after one warm-up.
"""

import json
import os
import statistics
import subprocess
import sys
import time


def child(path: str, messages_file: str, runs: int) -> None:
    from pmc_rag.local_llm.server import load_llama

    messages = json.load(open(messages_file))
    llama = load_llama(path, 4096)   # threads as the model server picks them
    samples = []
    for run in range(runs + 1):
        llama.reset()
        started, first, tokens = time.perf_counter(), None, 0
        for event in llama.create_chat_completion(messages=messages, stream=True, max_tokens=60, temperature=0.0):
            if event["choices"][0]["delta"].get("content"):
                tokens += 1
                first = first or time.perf_counter()
        ended = time.perf_counter()
        if run:   # the first is a warm-up
            samples.append({"first_token_s": first - started, "generated_per_s": (tokens - 1) / (ended - first),
                            "prompt_tokens": llama.n_tokens - tokens})
    reply = llama.create_chat_completion(messages=messages, max_tokens=120, temperature=0.0)
    print(json.dumps({"samples": samples, "reply": reply["choices"][0]["message"]["content"]}))


def main(messages_file: str, runs: str, files: list[str]) -> None:
    for round_number in range(2):
        for path in files:
            done = subprocess.run([sys.executable, __file__, "child", path, messages_file, runs],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{os.path.basename(path)}: failed ({done.returncode}): {done.stderr[-300:]}")
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            first = statistics.median(s["first_token_s"] for s in result["samples"])
            generated = statistics.median(s["generated_per_s"] for s in result["samples"])
            prompt = result["samples"][0]["prompt_tokens"]
            print(f"round {round_number} {os.path.basename(path):48s} prompt {prompt} first token {first:.2f} s "
                  f"(read {prompt / first:.0f} tok/s) generated {generated:.1f} tok/s")
            if round_number == 0:
                print("   reply:", result["reply"][:200].replace("\n", " "))


if __name__ == "__main__":
    if sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3:])
