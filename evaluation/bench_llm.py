"""Embedded-model benchmark: what the portable settings cost, and the answer path before and after the move to a
model server of its own.

    pmc-rag bench llm [--runs 3] [--question "..."]

Builds the real answering prompt for the question (rag.yml's retrieval and prompt, the README question by
default), then times the same generation three ways, each in a fresh child process so that a crash in
llama.cpp ends one row, not the benchmark:

- `in process, repacking on`: llama.cpp's default, and how the embedded model ran before (in the server's
  own process, with weights repacked for the CPU's widest matrix unit: the path that crashed on AMX);
- `in process, repacking off`: the portable loading option alone (`use_extra_bufts = False`);
- `model server (HTTP)`: pmc-rag's local model server, through rag.yml's stock `OpenAIChatGenerator`, streamed:
  the path answers take now.

Each row gives time to first token, total time, generated tokens per second and prompt tokens per second
(medians over the runs, after one warm-up). The llama.cpp build line says what the installed wheel was compiled
for, so figures from two builds can be set side by side.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from pmc_rag.components.cpu_trial import cpu_flags

README_QUESTION = "Is first-line erlotinib effective in EGFR-mutant lung cancer?"


def _prompt(question: str) -> list[dict[str, str]]:
    """The messages rag.yml would send to the model for this question."""
    from pmc_rag.evaluation.runner import without_generation
    from pmc_rag.database import ensure_database
    from pmc_rag.pipelines import PipelineError, load_declared_pipeline

    ensure_database()
    pipeline = load_declared_pipeline("rag", edit=without_generation)
    if "prompt" not in pipeline.outputs:
        raise PipelineError(f"{pipeline.path}: declare `prompt:` in `outputs:` (the prompt builder's messages)")
    pipeline.warm_up()
    return [{"role": m.role.value, "content": m.text or ""} for m in pipeline.run(question=question)["prompt"]]


def _time_in_process(messages: list[dict[str, str]], repack: bool, runs: int, max_tokens: int) -> dict[str, Any]:
    """Run in a child process: load the model in this process and time streamed generations."""
    from pmc_rag.local_llm.server import load_llama
    from pmc_rag.models import assemble_llm

    started = time.perf_counter()
    if repack:
        from llama_cpp import Llama

        llama = Llama(model_path=str(assemble_llm()), n_ctx=4096, verbose=False)
    else:
        llama = load_llama(str(assemble_llm()), 4096)
    load_s = time.perf_counter() - started
    samples = []
    for _ in range(runs + 1):
        llama.reset()  # no prompt cache between runs: each pays for its prompt, as a new question does
        started = time.perf_counter()
        first = None
        tokens = 0
        for event in llama.create_chat_completion(messages=messages, stream=True, max_tokens=max_tokens,
                                                  temperature=0.0):
            if event["choices"][0]["delta"].get("content"):
                tokens += 1
                first = first or time.perf_counter()
        total = time.perf_counter() - started
        prompt_tokens = llama.n_tokens - tokens
        samples.append(_sample(started, first, total, tokens, prompt_tokens))
    return {"load_s": load_s, "samples": samples[1:]}


def _time_model_server(messages: list[dict[str, str]], runs: int, max_tokens: int) -> dict[str, Any]:
    """Time rag.yml's OpenAIChatGenerator against the local model server, streamed (the answer path now)."""
    from haystack.components.generators.chat.openai import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.utils import Secret

    from pmc_rag.local_llm.spec import LocalModelSpec

    from pmc_rag.local_llm.supervisor import local_model_server

    spec = LocalModelSpec(model="qwen2.5-0.5b-instruct", url="http://127.0.0.1:1499/v1", idle_minutes=5)
    server = local_model_server(spec)
    server.stop()
    started = time.perf_counter()
    server.ensure_running()
    load_s = time.perf_counter() - started
    generator = OpenAIChatGenerator(model=spec.model, api_base_url=spec.url, max_retries=0, timeout=120,
                                    api_key=Secret.from_env_var("PMC_RAG_LLM_API_KEY"),
                                    generation_kwargs={"max_tokens": max_tokens, "temperature": 0.0})
    chat = [ChatMessage.from_system(m["content"]) if m["role"] == "system" else ChatMessage.from_user(m["content"])
            for m in messages]
    samples = []
    try:
        for _ in range(runs + 1):
            server.stop()  # a fresh context each run, like the in-process rows (no prompt cache)
            server.ensure_running()
            first: list[float] = []

            def on_token(chunk: Any, first: list[float] = first) -> None:
                if chunk.content and not first:
                    first.append(time.perf_counter())

            started = time.perf_counter()
            reply = generator.run(messages=chat, streaming_callback=on_token)["replies"][0]
            total = time.perf_counter() - started
            usage = reply.meta.get("usage") or {}
            samples.append(_sample(started, first[0] if first else None, total, usage.get("completion_tokens", 0),
                                   usage.get("prompt_tokens", 0)))
    finally:
        server.stop()
    return {"load_s": load_s, "samples": samples[1:]}


def _sample(started: float, first: float | None, total: float, tokens: int, prompt_tokens: int) -> dict[str, float]:
    ttft = (first - started) if first else total
    generating = max(total - ttft, 1e-9)
    return {"ttft_s": ttft, "total_s": total, "tokens": tokens, "prompt_tokens": prompt_tokens,
            "gen_tok_s": max(tokens - 1, 0) / generating, "prompt_tok_s": prompt_tokens / ttft if ttft else 0.0}


_MODES = {"repack": "in process, repacking on (before)", "no-repack": "in process, repacking off",
          "server": "model server (HTTP, streamed; now)"}


def _child(mode: str, messages_file: str, runs: int, max_tokens: int) -> int:
    with open(messages_file, encoding="utf-8") as handle:
        messages = json.load(handle)
    if mode == "server":
        result = _time_model_server(messages, runs, max_tokens)
    else:
        result = _time_in_process(messages, mode == "repack", runs, max_tokens)
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def run_benchmark(runs: int = 3, question: str = README_QUESTION, max_tokens: int = 200,
                  paths: list[str] | None = None) -> int:
    import tempfile

    import llama_cpp

    from pmc_rag.local_llm.supervisor import describe_exit

    cpu = _cpu_name()
    print(f"CPU: {cpu}")
    print(f"llama-cpp-python {llama_cpp.__version__}, compiled for: "
          f"{llama_cpp.llama_print_system_info().decode(errors='replace').strip()}")
    print(f"Question: {question}")
    messages = _prompt(question)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as handle:
        json.dump(messages, handle)
    rows = []
    try:
        for mode, label in _MODES.items():
            if paths and mode not in paths:
                continue
            print(f"  timing: {label} ({runs} runs after a warm-up)...", flush=True)
            child = subprocess.run([sys.executable, "-m", "pmc_rag.evaluation.bench_llm", "--child", mode, handle.name,
                                    str(runs), str(max_tokens)], capture_output=True, text=True)
            lines = [line for line in child.stdout.splitlines() if line.startswith("RESULT ")]
            if child.returncode != 0 or not lines:
                rows.append((label, None, f"failed: {describe_exit(child.returncode)}; "
                                          f"{(child.stderr.strip().splitlines() or [''])[-1][:200]}"))
                continue
            rows.append((label, json.loads(lines[-1][7:]), ""))
    finally:
        os.unlink(handle.name)
    print()
    print("| path | load s | TTFT ms | total s | generated tok/s | prompt tok/s | tokens (prompt/generated) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    baseline = None
    for label, result, problem in rows:
        if result is None:
            print(f"| {label} | {problem} | | | | | |")
            continue
        samples = result["samples"]

        def median(key: str, samples: list = samples) -> float:
            return statistics.median(s[key] for s in samples)

        baseline = baseline or median("gen_tok_s")
        print(f"| {label} | {result['load_s']:.2f} | {median('ttft_s') * 1000:.0f} | {median('total_s'):.2f} | "
              f"{median('gen_tok_s'):.1f} ({median('gen_tok_s') / baseline:.2f}x) | {median('prompt_tok_s'):.0f} | "
              f"{median('prompt_tokens'):.0f}/{median('tokens'):.0f} |")
    return 0 if all(result is not None for _, result, _ in rows) else 1


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            text = info.read()
    except OSError:
        return "unknown"
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
    flags = cpu_flags()
    wide = [f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile", "amx_int8") if f in flags]
    return f"{name} ({os.cpu_count()} cores; {', '.join(wide) or 'no AVX2'})"


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        from pmc_rag.environment import configure_environment

        configure_environment()
        sys.exit(_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
    sys.exit(run_benchmark())
