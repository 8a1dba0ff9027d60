"""One error base: every user-facing error maps to an exit status, an HTTP status and a message."""

from __future__ import annotations

import pytest

from codeqa import preprocessing
from codeqa.app import close_app, create_app
from codeqa.chat.chat_commands import CommandError
from codeqa.chat.chat_store import ChatStoreUnavailable
from codeqa.core.config import Settings
from codeqa.indexing.create_tables import FileNotIndexedError, InvalidPathError, ModelMismatchError, UnknownRepoError
from codeqa.indexing.embeddings import EmbeddingError
from codeqa.core.errors import CodeQAError, ConfigError, LLMUnavailable, cli_exit
from codeqa.llm.weights import ModelFileError
from codeqa.indexing.indexer import NothingToIndexError
from codeqa.indexing.repo_files import RepoPathError
from codeqa.search.rerank import RerankUnavailable
from codeqa.search.retrieval import QueryError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("error", "status", "code"), [
    (RepoPathError, 400, "error"), (NothingToIndexError, 400, "error"), (QueryError, 400, "error"),
    (CommandError, 400, "error"), (InvalidPathError, 400, "error"), (UnknownRepoError, 404, "error"),
    (FileNotIndexedError, 404, "error"), (ModelMismatchError, 409, "error"), (ConfigError, 500, "error"),
    (EmbeddingError, 503, "embedding_unavailable"), (ChatStoreUnavailable, 503, "redis_unavailable"),
    (LLMUnavailable, 503, "llm_unavailable"), (ModelFileError, 503, "llm_unavailable"),
    (RerankUnavailable, 503, "rerank_unavailable"),
])
def test_every_user_error_carries_its_mapping(error: type[CodeQAError], status: int, code: str) -> None:
    exc = error("what went wrong, and what to do")
    assert isinstance(exc, CodeQAError)
    assert (exc.exit_code, exc.http_status, exc.code) == (1, status, code)
    assert exc.event() == {"code": code, "message": "what went wrong, and what to do"}


def test_cli_reports_one_line_and_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_exit(QueryError("The query is empty.")) == 1
    assert cli_exit(FileNotFoundError(2, "No such file or directory", "q.jsonl")) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: The query is empty.", "error: [Errno 2] No such file or directory: 'q.jsonl'"]


def test_a_bad_setting_is_one_line_from_the_cli(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("CODEQA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CODEQA_WRITE_BATCH", "many")
    with pytest.raises(ConfigError):
        Settings.from_env()
    assert preprocessing.main(["list"]) == 1
    assert capsys.readouterr().err == "error: CODEQA_WRITE_BATCH must be an integer, got 'many'\n"


def test_the_http_api_maps_errors_through_the_base(tmp_path) -> None:
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": Settings(data_dir=tmp_path / "data")})
    client = app.test_client()
    try:
        assert client.get("/api/repos").get_json() == {"repos": []}
        unknown = client.get("/api/history", query_string={"repo": "nope"})
        assert unknown.status_code == 404 and unknown.get_json() == {"error": "Unknown repo 'nope'. No repo is indexed yet."}
        assert client.post("/api/search", data="x").status_code == 415
        assert client.get("/api/nothing-here").status_code == 404
    finally:
        close_app(app)


@pytest.mark.parametrize("raw", ["-1", "20", "low"])
def test_background_niceness_is_a_nice_increment(monkeypatch, raw: str) -> None:
    monkeypatch.setenv("CODEQA_BACKGROUND_NICENESS", raw)
    with pytest.raises(ConfigError, match="CODEQA_BACKGROUND_NICENESS must be"):
        Settings.from_env()
