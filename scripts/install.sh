#!/usr/bin/env bash
# Create .venv and install pmc-rag into it. Idempotent: a second run with an unchanged pyproject.toml does nothing.
# Used by scripts/setup.sh and scripts/test.sh; not usually run on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
STAMP=$VENV/.pmc-rag-installed

pick_python() {
  for candidate in "${PYTHON:-}" python3.11 python3.12 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 13)))'; then
      echo "$candidate"; return 0
    fi
  done
  echo "pmc-rag needs Python 3.11 or 3.12 (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

REBUILD_LLAMA=0
FAST_LLAMA=0
for arg in "$@"; do
  case "$arg" in
    --rebuild-llama) REBUILD_LLAMA=1 ;;
    --fast-llama) FAST_LLAMA=1 ;;
    *) echo "usage: scripts/install.sh [--rebuild-llama] [--fast-llama]" >&2; exit 2 ;;
  esac
done

# llama.cpp is compiled for a CPU *class*, never for this CPU alone: a build tuned to the machine it was
# compiled on (llama-cpp-python's default) crashed on Xeons with AMX, and would not run at all on an older CPU.
#   x86-64-v3  AVX2, FMA, F16C, BMI2 (Intel since 2013, AMD since 2015); no AVX-512, no AMX kernels
#   baseline   SSE2 only: any x86-64 CPU (slower)
#   native     everything this CPU has (fastest here; the wheel may crash or not load on another machine)
# PMC_RAG_LLAMA_CPU picks one; by default x86-64-v3 where the CPU has AVX2, else baseline.
LLAMA_VERSION=$(sed -n 's/.*"llama-cpp-python==\([0-9.]*\)".*/\1/p' pyproject.toml)
llama_target() {
  local wanted=${PMC_RAG_LLAMA_CPU:-auto}
  if [ "$wanted" = auto ]; then
    if [ "$(uname -m)" != x86_64 ]; then wanted=native
    elif grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
      wanted=x86-64-v3
    else wanted=baseline; fi
  fi
  echo "$wanted"
}
LLAMA_TARGET=$(llama_target)
# With GGML_NATIVE off, ggml compiles only the instruction sets named (AVX-512 and AMX stay off).
case "$LLAMA_TARGET" in
  x86-64-v3) LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" ;;
  baseline)  LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_SSE42=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF" ;;
  native)    LLAMA_CMAKE_ARGS="-DGGML_NATIVE=ON" ;;
  *) echo "PMC_RAG_LLAMA_CPU must be x86-64-v3, baseline or native, not '$LLAMA_TARGET'" >&2; exit 2 ;;
esac
# Without the multimodal library (mtmd, for image input; never loaded by pmc-rag): 40 s less to compile on 2 cores.
NO_MULTIMODAL="-DLLAVA_BUILD=OFF"
LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS $NO_MULTIMODAL ${PMC_RAG_LLAMA_CMAKE_ARGS:-}"   # extra flags of your own, e.g. for a GPU
# Only the libraries the Python bindings load (not llama.cpp's common library): 1 min 56 s to compile on 2 cores
# against 3 min 38 s (AMD EPYC family 25, 2026-11-29). Passed by path, so the wheel folder is named after its text.
BINDINGS_ONLY=$PWD/scripts/llama-bindings-only.cmake
WHEELS=${PMC_RAG_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pmc-rag/wheels}
# wheel_folder NAME CMAKE_ARGS: where a build with these flags is kept.
wheel_folder() {
  echo "$WHEELS/llama-cpp-python-$LLAMA_VERSION-$1-$( (echo "$2"; cat "$BINDINGS_ONLY") | sha256sum | cut -c1-8)"
}
LLAMA_WHEELS=$(wheel_folder "$LLAMA_TARGET" "$LLAMA_CMAKE_ARGS")
LLAMA_STAMP=$VENV/.pmc-rag-llama

# compile_llama FOLDER CMAKE_ARGS WHAT: a llama-cpp-python wheel into FOLDER, unless one is there already.
compile_llama() {
  if ! ls "$1"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "==> Compiling llama-cpp-python $LLAMA_VERSION $3 (once; a few minutes)"
    mkdir -p "$1"
    CMAKE_ARGS="$2 -DCMAKE_PROJECT_INCLUDE=$BINDINGS_ONLY" \
      "${pip[@]}" wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_VERSION" \
      -w "$1.partial" && mv "$1.partial"/*.whl "$1"/
    rm -rf "$1.partial"
  fi
}

# --fast-llama: a second build of llama.cpp with the AVX-512 kernels this CPU reports (VBMI, VNNI, BF16; never AMX),
# unpacked beside the portable one into $VENV/llama-cpp-fast/lib. It is asked for, not built by default: it costs
# another compile of about 2 minutes on 2 cores. The model server uses it only after it has passed a trial in a
# child process on the CPU it runs on (pmc_rag/local_llm/fast_build.py); otherwise the portable build serves.
fast_llama() {
  local flags cmake wheels
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  if [ "$(uname -m)" != x86_64 ] || ! grep -qw avx512f <<<"$flags"; then
    echo "==> No AVX-512 on this CPU: the portable llama.cpp build is the fastest it can run"; return 0
  fi
  cmake="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=ON"
  grep -qw avx512vbmi <<<"$flags" && cmake="$cmake -DGGML_AVX512_VBMI=ON"
  grep -qw avx512_vnni <<<"$flags" && cmake="$cmake -DGGML_AVX512_VNNI=ON"
  grep -qw avx512_bf16 <<<"$flags" && cmake="$cmake -DGGML_AVX512_BF16=ON"
  # No AMX: its kernels run only on weights repacked for it, which the model loader keeps off, and on a KVM Xeon
  # whose kernel does not enable AMX state (cpuinfo lists amx_tile all the same) a build with them died of SIGILL
  # as soon as repacking was on (evaluation/results/2026-11-27-xeon-amx/).
  cmake="$cmake $NO_MULTIMODAL ${PMC_RAG_LLAMA_CMAKE_ARGS:-}"
  wheels=$(wheel_folder avx512 "$cmake")
  compile_llama "$wheels" "$cmake" "with AVX-512 kernels"
  rm -rf "$VENV/llama-cpp-fast" && mkdir -p "$VENV/llama-cpp-fast"
  "$VENV/bin/python" - "$wheels" "$VENV/llama-cpp-fast" "$cmake" <<'PY'
import pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("llama_cpp_python-*.whl"))
target = pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if name.startswith("llama_cpp/lib/"):
            archive.extract(name, target / "unpacked")
(target / "unpacked" / "llama_cpp" / "lib").rename(target / "lib")
(target / "build.txt").write_text(f"{wheel.name}\n{sys.argv[3].strip()}\n")
PY
  rm -rf "$VENV/llama-cpp-fast/unpacked"
  echo "==> Fast llama.cpp build in $VENV/llama-cpp-fast (used after a trial on this CPU; PMC_RAG_LLAMA_BUILD=portable turns it off)"
}

STARTED=$SECONDS
elapsed() { echo "$(( (SECONDS - STARTED) / 60 )) min $(( (SECONDS - STARTED) % 60 )) s"; }
want=$( (cat pyproject.toml; echo "$LLAMA_WHEELS") | sha256sum | cut -d' ' -f1)
pip=("$VENV/bin/python" -m pip --disable-pip-version-check)
if [ "$REBUILD_LLAMA" = 0 ] && [ -x "$VENV/bin/pmc-rag" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  if [ "$FAST_LLAMA" = 1 ]; then fast_llama; fi
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  python=$(pick_python)
  echo "==> Creating $VENV with $python"
  "$python" -m venv "$VENV"
fi

# The CPU build of torch goes in first: left to sentence-transformers, pip would fetch the newest CUDA build
# (several GB). A local wheel that pip already knows about (its find-links) is used if there is one; otherwise
# PyTorch's CPU index (override with TORCH_INDEX_URL).
if ! "$VENV/bin/python" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
  echo "==> Installing torch 2.13.0 (CPU build)"
  if ! "${pip[@]}" install --quiet --no-index --no-deps torch==2.13.0 2>/dev/null; then
    "${pip[@]}" install --quiet torch==2.13.0 --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"
  fi
fi

# llama-cpp-python has no binary wheel on PyPI: it is compiled once per CPU class (about 2 minutes on 2 cores)
# into a wheel folder named after the target and flags, never taken from pip's cache (which keys a build by
# version alone, so it would hand back a build made for another CPU).
# It runs before the other dependencies install, not beside them: on 2 cores the two together took longer
# (set-up 8 min 10 s against 7 min 08 s with empty caches, AMD EPYC family 25, 2026-11-28).
if [ "$REBUILD_LLAMA" = 1 ]; then rm -rf "$LLAMA_WHEELS"; fi
compile_llama "$LLAMA_WHEELS" "$LLAMA_CMAKE_ARGS" "for CPU target $LLAMA_TARGET, started at $(elapsed)"
if [ "$(cat "$LLAMA_STAMP" 2>/dev/null)" != "$LLAMA_WHEELS" ]; then
  echo "==> Installing llama-cpp-python $LLAMA_VERSION ($LLAMA_TARGET)"
  "${pip[@]}" install --quiet --no-deps --force-reinstall "$LLAMA_WHEELS"/llama_cpp_python-*.whl
  echo "$LLAMA_WHEELS" > "$LLAMA_STAMP"
fi

echo "==> Installing pmc-rag and its dependencies (the first time takes several minutes; $(elapsed))"
"${pip[@]}" install --quiet --editable '.[test]'
echo "$want" > "$STAMP"
echo "==> Installed ($(elapsed))"
if [ "$FAST_LLAMA" = 1 ]; then fast_llama; fi
