"""Which llama.cpp build the model server loads: the fast one (AVX-512 kernels), once it has passed a trial on this
CPU with this model, else the portable one.

`scripts/install.sh --fast-llama` compiles a second llama.cpp for the AVX-512 instructions (never AMX) the CPU
reports and unpacks its libraries into `.venv/llama-cpp-fast/lib`. llama-cpp-python loads its libraries from
`LLAMA_CPP_LIB_PATH` when that is set, so the choice is one environment variable of the model server's process.
A build that crashes on a CPU (as llama.cpp's AMX path did on a Xeon) must cost a trial, not the server: the
first time a (build, model, CPU) meets, a child process loads the model with the fast build and writes a few
tokens; only if it exits cleanly is the build used, and the pass is remembered (`cpu_trial.trial_once_per_cpu`).

    environment, why = llama_build_environment("/path/model.gguf")
    subprocess.Popen([...], env={**os.environ, **environment})   # {} means: the portable build
    log.info("llama.cpp build: %s", why)

`PMC_RAG_LLAMA_BUILD=portable` always uses the portable build; `fast` (or the default `auto`) tries the fast one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from pathlib import Path

from pmc_rag.components.cpu_trial import cpu_flags, cpu_key, trial_once_per_cpu
from pmc_rag.paths import home

log = logging.getLogger(__name__)

LIB_PATH_ENV = "LLAMA_CPP_LIB_PATH"
BUILD_ENV = "PMC_RAG_LLAMA_BUILD"
FAST_BUILD_DIR = Path(sys.prefix) / "llama-cpp-fast"

# Load the model with the fast libraries and have it write a few tokens: the kernels a reply uses, run once.
TRIAL_SCRIPT = """
import os, sys
os.environ["LLAMA_CPP_LIB_PATH"] = sys.argv[1]
from pmc_rag.local_llm.server import load_llama
llama = load_llama(sys.argv[2], n_ctx=256)
reply = llama.create_completion("The human heart has", max_tokens=4, temperature=0.0)
print(reply["choices"][0]["text"])
"""


def llama_build_environment(model_path: str | Path | None) -> tuple[dict[str, str], str]:
    """The environment the model server needs for the build it should load, and a sentence saying which and why."""
    wanted = os.environ.get(BUILD_ENV, "auto")
    library = FAST_BUILD_DIR / "lib"
    if wanted == "portable":
        return {}, f"portable ({BUILD_ENV}=portable)"
    if not (library / "libllama.so").is_file():
        return {}, "portable (no fast build: `scripts/install.sh --fast-llama` makes one on a CPU with AVX-512)"
    if "avx512f" not in cpu_flags():
        return {}, "portable (this CPU has no AVX-512)"
    if model_path is None or not Path(model_path).is_file():
        return {}, "portable (the model file is not ready for the fast build's trial yet)"
    marker = home() / "llm" / "trials" / f"fast-{_build_id(library)}-{Path(model_path).name}.works-on-{cpu_key()}"
    result = trial_once_per_cpu(TRIAL_SCRIPT, [str(library), str(model_path)], marker, timeout=180)
    if not result.passed:
        log.warning("the fast llama.cpp build (%s) failed its trial on this CPU (%s): the portable build serves",
                    library, result.problem)
        return {}, f"portable (the fast build failed its trial on this CPU: {result.problem})"
    return {LIB_PATH_ENV: str(library)}, f"fast ({library}; passed its trial on this CPU)"


def _build_id(library: Path) -> str:
    """Changes when the fast build is rebuilt, so that a new build is tried again."""
    described = "".join(f"{path.name}:{path.stat().st_size}:{path.stat().st_mtime_ns};"
                        for path in sorted(library.glob("lib*.so")))
    return hashlib.sha256(described.encode()).hexdigest()[:10]
