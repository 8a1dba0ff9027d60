"""The static code embedder (codeqa/indexing/static_embedder.py) and the model CodeQA ships for it."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from codeqa.core.errors import UnavailableError
from codeqa.indexing import static_embedder
from codeqa.indexing.static_embedder import (
    MODEL_DIR,
    VECTORS_FILE,
    VOCAB_FILE,
    StaticEmbedder,
    StaticFiles,
    StaticModelError,
    Vocabulary,
    shipped_files,
)
from codeqa.parsing.tokens import code_token_list


TEXTS = [
    "src/http/client.py\nfunction parse_http_response\ndef parse_http_response(raw: bytes) -> Response:\n"
    '    """Split the status line, headers and body."""\n    head, _, body = raw.partition(b\'\\r\\n\\r\\n\')',
    "Fix crash when the config file is empty",
    "class LRUCache<K, V> { private final Map<K, Node> index = new HashMap<>(); }",
    'fn main() { println!("{}", compute_checksum(&buffer)); }',
    "why does getUserById return null after a cache eviction?",
    "x",
]


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


@pytest.mark.unit
def test_tokens_split_identifiers_like_the_full_text_columns() -> None:
    assert code_token_list("parseHTTPResponse_v2(x)") == [
        "parsehttpresponsev2",
        "parse",
        "http",
        "response",
        "v",
        "2",
        "x",
    ]
    assert code_token_list("merge_handler MergeHandler") == [
        "mergehandler",
        "merge",
        "handler",
        "mergehandler",
        "merge",
        "handler",
    ]
    assert code_token_list("日本語 !!! ...") == []


@pytest.mark.unit
def test_unknown_tokens_fall_back_to_word_pieces() -> None:
    vocabulary = Vocabulary(["parse", "##r", "##s", "http", "x"])
    assert vocabulary.ids("parse") == (0,)
    assert vocabulary.ids("parsers") == (0, 1, 2)
    assert vocabulary.ids("zzz") == ()  # no piece fits: the token is skipped
    assert vocabulary.encode("parsers http").tolist() == [0, 1, 2, 3]


@pytest.mark.unit
def test_shape_dtype_and_unit_rows(embedder: StaticEmbedder) -> None:
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), embedder.dim)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert embedder.embed([]).shape == (0, embedder.dim)


@pytest.mark.unit
def test_a_text_alone_and_in_a_batch_is_the_same_vector(embedder: StaticEmbedder) -> None:
    batch = embedder.embed(TEXTS)
    for index, text in enumerate(TEXTS):
        assert np.array_equal(embedder.embed([text])[0], batch[index])
    assert np.array_equal(embedder.embed(list(reversed(TEXTS)))[::-1], batch)


@pytest.mark.unit
def test_deterministic_across_instances_and_threads(embedder: StaticEmbedder) -> None:
    expected = embedder.embed(TEXTS)
    assert np.array_equal(StaticEmbedder().embed(TEXTS), expected)
    results: list[np.ndarray] = []
    workers = [threading.Thread(target=lambda: results.append(StaticEmbedder().embed(TEXTS * 20))) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(results) == 4 and all(np.array_equal(r, np.concatenate([expected] * 20)) for r in results)


@pytest.mark.unit
def test_empty_and_tokenless_texts_get_the_zero_vector(embedder: StaticEmbedder) -> None:
    vectors = embedder.embed(["", "   ", "!!! ... ===", "日本語"])
    assert np.array_equal(vectors, np.zeros_like(vectors))


@pytest.mark.unit
def test_similar_code_is_closer_than_unrelated_code(embedder: StaticEmbedder) -> None:
    query, near, far = embedder.embed(
        [
            "parse the http response headers",
            "def parse_http_response(raw):\n    headers = read_headers(raw)",
            "def draw_circle(canvas, radius):\n    canvas.arc(0, 0, radius)",
        ]
    )
    assert query @ near > query @ far


@pytest.mark.unit
def test_the_shipped_files_are_pinned_and_named_by_their_hash(embedder: StaticEmbedder) -> None:
    files = shipped_files()
    assert files.vectors_sha256 and files.vocab_sha256
    assert embedder.model_id == f"local:codeqa-static-{files.digest[:12]}"
    assert (MODEL_DIR / "README.md").is_file()
    size = sum((MODEL_DIR / name).stat().st_size for name in (VECTORS_FILE, VOCAB_FILE, "README.md"))
    assert size <= 40 * 1024 * 1024
    assert embedder.dim == static_embedder.DIM


def copied_model(tmp_path: Path) -> Path:
    target = tmp_path / "codeqa-static"
    shutil.copytree(MODEL_DIR, target)
    return target


def pinned(directory: Path) -> StaticFiles:
    files = shipped_files()
    return StaticFiles(
        directory, files.vectors_sha256, files.vectors_size, files.vocab_sha256, files.vocab_size, files.dim
    )


@pytest.mark.unit
def test_an_unaltered_copy_loads(tmp_path: Path, embedder: StaticEmbedder) -> None:
    copy = StaticEmbedder(pinned(copied_model(tmp_path)))
    assert np.array_equal(copy.embed(TEXTS), embedder.embed(TEXTS))


@pytest.mark.unit
@pytest.mark.parametrize("name", [VECTORS_FILE, VOCAB_FILE])
def test_an_altered_file_is_refused(tmp_path: Path, name: str) -> None:
    directory = copied_model(tmp_path)
    path = directory / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size
    path.write_bytes(bytes(data))
    with pytest.raises(StaticModelError, match="not the pinned file") as raised:
        StaticEmbedder(pinned(directory)).embed(["anything"])
    assert isinstance(raised.value, UnavailableError)
    assert "\n" not in str(raised.value)


@pytest.mark.unit
def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    directory = copied_model(tmp_path)
    (directory / VECTORS_FILE).unlink()
    with pytest.raises(StaticModelError, match="missing"):
        StaticEmbedder(pinned(directory)).embed(["anything"])


SPY_INDEX = """
import json, sys
import onnxruntime

sessions = []


class Spy(onnxruntime.InferenceSession):
    def __init__(self, path, *args, **kwargs):
        sessions.append(str(path).rsplit("/", 1)[-1])
        super().__init__(path, *args, **kwargs)


onnxruntime.InferenceSession = Spy
from codeqa.cli import main

code = main(["index", sys.argv[1], "--name", "sample"])
print(json.dumps({"code": code, "sessions": sessions}))
"""


@pytest.mark.integration
def test_the_default_index_builds_no_transformer_session(tmp_path: Path) -> None:
    """`codeqa index` with the defaults embeds with the static model: no onnxruntime session is
    created (the local transformer would open one), and the rows get the static model's vectors."""
    import json
    import os
    import subprocess
    import sys

    from codeqa.core.config import Settings
    from codeqa.store import registry
    from codeqa.store.connection import connect

    from conftest import SAMPLE_REPO

    env = {key: value for key, value in os.environ.items() if not key.startswith("CODEQA_EMBEDDING")}
    env.update(CODEQA_DATA_DIR=str(tmp_path / "data"), CODEQA_LOCAL_LLM="0")
    done = subprocess.run(
        [sys.executable, "-c", SPY_INDEX, str(SAMPLE_REPO)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"code": 0, "sessions": []}
    info = registry.get_repo(connect(Settings(data_dir=tmp_path / "data")), "sample")
    assert info.embedding_model == StaticEmbedder().model_id and info.embedding_dim == static_embedder.DIM
