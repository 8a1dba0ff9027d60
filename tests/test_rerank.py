"""rerank.py: the shipped cross-encoder on onnxruntime, and how its scores reorder definitions."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codeqa.core.config import Settings
from codeqa.indexing.embeddings import get_embedder
from codeqa.search import rerank
from codeqa.search.rerank import (
    QUERY_TOKENS,
    RERANKER_NAME,
    CrossEncoderReranker,
    RerankUnavailable,
    get_reranker,
    rerank_candidates,
    rerank_definitions,
)
from codeqa.search.results import Definition, FileHit
from codeqa.services import Services

QUERY = "Cart total ignores the discount code when the cart has more than one item"
DOCS = [
    "shop/cart.py\nmethod Cart.total\ndef total(self):\n"
    "def total(self):\n    price = sum(item.price * item.quantity for item in self.items)\n"
    "    if self.discount:\n        price -= self.discount.amount\n    return price\n",
    "shop/log.py\nfunction setup_logging\ndef setup_logging(level):\n"
    "def setup_logging(level):\n    logging.basicConfig(level=level, format='%(message)s')\n",
    "shop/cli.py\nfunction main\ndef main():\ndef main():\n    print('hello')\n",
]


def _own_model(folder: Path) -> str:
    """A copy of the shipped model under a path of its own: its `get_reranker` instance is new."""
    folder.mkdir()
    (folder / "model.onnx").write_bytes(rerank.reranker_model(RERANKER_NAME).path.read_bytes())
    return str(folder)


@pytest.fixture(scope="module")
def reranker() -> CrossEncoderReranker:
    return CrossEncoderReranker(RERANKER_NAME)


@pytest.mark.integration
def test_the_shipped_model_is_available(reranker):
    status = reranker.status()
    assert status.available and status.reason == f"cross-encoder {RERANKER_NAME}"


@pytest.mark.integration
def test_one_finite_deterministic_score_per_document_in_order(reranker):
    scores = reranker.score(QUERY, DOCS)
    assert len(scores) == len(DOCS) and all(isinstance(s, float) and math.isfinite(s) for s in scores)
    assert reranker.score(QUERY, DOCS) == pytest.approx(scores)
    assert reranker.score(QUERY, DOCS[::-1])[::-1] == pytest.approx(scores, abs=1e-4)
    assert reranker.score(QUERY, []) == []


@pytest.mark.integration
def test_the_definition_the_report_is_about_scores_first(reranker):
    scores = reranker.score(QUERY, DOCS)
    assert scores[0] == max(scores)


@pytest.mark.integration
def test_a_long_question_is_read_up_to_its_first_tokens(reranker):
    opening = " ".join(["cart"] * QUERY_TOKENS)
    first = reranker.score(opening + " discount code", DOCS)
    second = reranker.score(opening + " unrelated words" * 200, DOCS)
    assert first == pytest.approx(second, abs=1e-5)
    assert reranker.score("discount code", DOCS) != pytest.approx(first, abs=1e-3)


@pytest.mark.integration
def test_huge_documents_and_questions_score(reranker):
    scores = reranker.score("x " * 50_000, ["x = 1\n" * 100_000, DOCS[0]])
    assert len(scores) == 2 and all(math.isfinite(score) for score in scores)


@pytest.mark.integration
def test_too_many_documents_is_an_error():
    with pytest.raises(ValueError, match="max_documents=2"):
        CrossEncoderReranker(RERANKER_NAME, max_documents=2).score(QUERY, DOCS)


@pytest.mark.integration
def test_concurrent_first_use_agrees():
    fresh = CrossEncoderReranker(RERANKER_NAME)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: fresh.score(QUERY, DOCS), range(4)))
    for scores in results[1:]:
        assert scores == pytest.approx(results[0])


@pytest.mark.integration
def test_a_users_own_model_folder_runs(tmp_path):
    own = CrossEncoderReranker(_own_model(tmp_path / "my-reranker"))
    assert own.status().reason == "cross-encoder my-reranker"
    assert own.score(QUERY, DOCS) == pytest.approx(CrossEncoderReranker(RERANKER_NAME).score(QUERY, DOCS))


@pytest.mark.integration
def test_a_missing_model_is_unavailable_without_naming_its_path(tmp_path):
    missing = CrossEncoderReranker(str(tmp_path / "nowhere"))
    status = missing.status()
    assert not status.available and "CODEQA_RERANK_MODEL" in status.reason and str(tmp_path) not in status.reason
    with pytest.raises(RerankUnavailable):
        missing.score(QUERY, DOCS)


@pytest.mark.integration
def test_a_file_that_is_no_model_is_unavailable(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    reranker = CrossEncoderReranker(str(broken))
    with pytest.raises(RerankUnavailable, match="cannot be loaded"):
        reranker.score(QUERY, DOCS)
    assert not reranker.status().available


@pytest.mark.integration
def test_get_reranker_shares_one_instance_per_model(tmp_path):
    first = get_reranker(Settings(data_dir=tmp_path))
    assert get_reranker(Settings(data_dir=tmp_path)) is first
    assert get_reranker(Settings(data_dir=tmp_path, rerank_model=str(tmp_path))) is not first


@pytest.mark.integration
def test_the_search_services_load_the_reranker_before_the_first_question(tmp_path):
    on = Settings(data_dir=tmp_path, rerank_model=_own_model(tmp_path / "on"))
    off = Settings(data_dir=tmp_path, rerank_model=_own_model(tmp_path / "off"), rerank=False, rerank_chat=False)
    for settings in (on, off):
        with Services(settings) as services:
            assert services.retriever.embedder is get_embedder(settings, threads=1)
    assert get_reranker(on)._session is not None  # loaded with the retriever, beside the index
    assert get_reranker(off)._session is None  # reranking is off: never loaded


@pytest.mark.integration
def test_loading_a_model_that_cannot_load_leaves_it_to_status(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    reranker = CrossEncoderReranker(str(broken))
    reranker.load()
    assert not reranker.status().available and "cannot be loaded" in reranker.status().reason
    missing = CrossEncoderReranker(str(tmp_path / "nowhere"))
    missing.load()
    assert not missing.status().available


@pytest.mark.integration
def test_the_rerank_threads_setting_changes_the_speed_not_the_scores(tmp_path):
    one = get_reranker(Settings(data_dir=tmp_path, rerank_threads=1))
    two = get_reranker(Settings(data_dir=tmp_path, rerank_threads=2))
    assert one is not two and one._threads == 1 and two._threads == 2
    assert two.score(QUERY, DOCS) == pytest.approx(one.score(QUERY, DOCS), abs=1e-4)


@pytest.mark.integration
def test_a_definitions_score_is_its_own_alone_or_beside_others(tmp_path):
    """The int8 model scales a batch's activations together: scored in one padded batch, a
    definition's score moved with its neighbours. Each pair now runs alone."""
    reranker = get_reranker(Settings(data_dir=tmp_path, rerank_threads=2))
    long_neighbour = "shop/report.py\nfunction report\n" + "total = sum(prices) * rate\n" * 80
    beside = reranker.score(QUERY, [*DOCS, long_neighbour])
    assert beside[: len(DOCS)] == [reranker.score(QUERY, [doc])[0] for doc in DOCS]


def _file(path: str, names: list[str], shown: int) -> FileHit:
    definitions = [Definition(_hit(path, name, line), {}, score=-line) for line, name in enumerate(names, 1)]
    return FileHit(path, 1.0, "source", "python", [d.hit for d in definitions[:shown]], definitions=definitions)


def _hit(path: str, name: str, line: int):
    from codeqa.search.results import Hit

    return Hit(f"{path}:{name}", "methods", "function", name, name, path, line, line + 1, "python", "", "", "",
               None, [], 0, 0.0)


@pytest.mark.unit
def test_candidates_are_the_best_definitions_of_the_best_files():
    files = [_file(f"f{n}.py", [f"d{i}" for i in range(12)], 1) for n in range(5)]
    chosen = rerank_candidates(files)
    assert [d.hit.file_path for d in chosen] == [f"f{n}.py" for n in range(rerank.RERANK_FILES)
                                                  for _ in range(rerank.RERANK_PER_FILE)]
    assert [d.hit.name for d in chosen[:rerank.RERANK_PER_FILE]] == [f"d{i}" for i in range(rerank.RERANK_PER_FILE)]


@pytest.mark.unit
def test_reranked_definitions_lead_their_file_and_as_many_are_shown(monkeypatch):
    monkeypatch.setattr(rerank, "RERANK_WEIGHT", 10.0)
    file = _file("f.py", ["first", "second", "third", "unread"], 2)
    rerank_definitions([file], {"f.py:first": 0.0, "f.py:second": 0.5, "f.py:third": 1.0})
    assert [d.hit.name for d in file.definitions] == ["third", "second", "first", "unread"]
    assert [hit.name for hit in file.symbols] == ["third", "second"]


@pytest.mark.unit
def test_a_file_without_scores_keeps_its_order():
    file = _file("g.py", ["a", "b"], 1)
    rerank_definitions([file], {"other.py:x": 5.0})
    assert [d.hit.name for d in file.definitions] == ["a", "b"] and [h.name for h in file.symbols] == ["a"]


@pytest.mark.integration
def test_the_shipped_file_is_pinned():
    model = rerank.reranker_model(RERANKER_NAME)
    assert model.sha256 != "0" * 64 and model.size == Path(model.path).stat().st_size


@pytest.mark.integration
def test_a_question_of_long_tokens_is_cut_too(reranker):
    long_words = " ".join(["https://example.com/" + "a" * 80] * 200)  # a few tokens per 100 characters
    question = reranker.cap_question(long_words)
    assert len(question) <= rerank.QUERY_TOKENS * 10 and long_words.startswith(question)
    assert len(reranker.score(long_words, DOCS)) == len(DOCS)
