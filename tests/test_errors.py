"""One error base: every user-facing error maps to an exit status, an HTTP status and a message."""

from __future__ import annotations

import pytest

from codeqa import preprocessing
from codeqa.app import close_app, create_app
from codeqa.chat.chat_commands import CommandError
from codeqa.chat.chat_store import ChatStoreUnavailable
from codeqa.core.config import Settings
from codeqa.store.errors import FileNotIndexedError, InvalidPathError, ModelMismatchError, UnknownRepoError
from codeqa.store import lease
from codeqa.indexing.embeddings import EmbeddingError
from codeqa.core.errors import (CodeQAError, ConfigError, InvalidArgument, LLMUnavailable, StorageError, cli_exit,
                                printable, printable_lines, repo_path_prefix, run_cli, user_error)
from codeqa.llm.weights import ModelFileError
from codeqa.indexing.indexer import NothingToIndexError
from codeqa.parsing.repo_files import RepoPathError
from codeqa.search.rerank import RerankUnavailable
from codeqa.search.query import QueryError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("error", "status", "code"), [
    (RepoPathError, 400, "error"), (NothingToIndexError, 400, "error"), (QueryError, 400, "error"),
    (CommandError, 400, "error"), (InvalidPathError, 400, "error"), (UnknownRepoError, 404, "error"),
    (FileNotIndexedError, 404, "error"), (ModelMismatchError, 409, "error"), (ConfigError, 500, "error"),
    (EmbeddingError, 503, "embedding_unavailable"), (ChatStoreUnavailable, 503, "redis_unavailable"),
    (LLMUnavailable, 503, "llm_unavailable"), (ModelFileError, 503, "llm_unavailable"),
    (RerankUnavailable, 503, "rerank_unavailable"), (InvalidArgument, 400, "invalid_argument"),
    (StorageError, 507, "storage"),
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


def test_a_broken_pipe_that_is_not_stdout_is_reported_not_taken_for_a_reader_gone(capsys) -> None:
    def write_to_a_closed_socket() -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert run_cli(write_to_a_closed_socket) == 1  # stdout (captured here) is fine: this is an error
    assert capsys.readouterr().err == "error: [Errno 32] Broken pipe\n"


def test_a_bad_setting_is_one_line_from_the_cli(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("CODEQA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CODEQA_WRITE_BATCH", "many")
    with pytest.raises(ConfigError):
        Settings.from_env()
    assert preprocessing.main(["list"]) == 1
    assert capsys.readouterr().err == "error: CODEQA_WRITE_BATCH must be a whole number of files, at least 1, got 'many'\n"


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


# --- Names from a repository, storage refusals, search filters ------------------------------------

@pytest.mark.parametrize("name, shown", [
    ("fifo\x1b]0;PWNED\x07\x1b[2J.py", "fifo\\x1b]0;PWNED\\x07\\x1b[2J.py"),  # retitles and clears a terminal
    ("a.py\nIndexed evil (/tmp)", "a.py\\x0aIndexed evil (/tmp)"),  # forges a line of output
    ("evil\u202etxt.py", "evil\\u202etxt.py"),  # shows as evilyp.txt
    ("\u2066x\u2069 \u200f\u061c\x7f\x9b", "\\u2066x\\u2069 \\u200f\\u061c\\x7f\\x9b"),
    ("tab\tand ünïcödé 名前.py", "tab\tand ünïcödé 名前.py"),  # what a terminal only shows stays
])
def test_printable_escapes_what_a_terminal_or_page_would_act_on(name: str, shown: str) -> None:
    assert printable(name) == shown
    assert printable_lines([name, "next"]).splitlines() == [shown, "next"]


def test_the_cli_prints_an_error_naming_a_hostile_file_on_one_line(capsys) -> None:
    assert cli_exit(InvalidPathError("x\x1b[2J\ny.py is not an indexed file of sample.")) == 1
    assert capsys.readouterr().err == "error: x\\x1b[2J\\x0ay.py is not an indexed file of sample.\n"


@pytest.mark.parametrize("lance_message, message", [
    ('lance error: LanceError(IO): Read-only file system (os error 30) at path "/d/lancedb/codeqa_locks.lance/'
     'data/.tmpr8HJ65", /root/.cargo/registry/src/lance-io-13.0.0/src/object_store.rs:1006:34',
     "The index storage failed (/d/lancedb/codeqa_locks.lance): the file system is read-only."),
    ("lance error: LanceError(IO): Generic LocalFileSystem error: Unable to copy data to file: No space left on "
     "device (os error 28), /root/.cargo/registry/src/lance-table-13.0.0/src/io/commit.rs:1663:50",
     "The index storage failed: the disk is full."),
])
def test_lancedbs_storage_errors_become_one_line(lance_message: str, message: str) -> None:
    error = user_error(RuntimeError(lance_message))
    assert isinstance(error, StorageError) and error.message == message and error.http_status == 507


def test_other_errors_stay_bugs() -> None:
    assert user_error(RuntimeError("lance error: invalid argument")) is None
    assert user_error(KeyError("x")) is None
    oserror = OSError(28, "No space left on device")
    assert user_error(oserror) is oserror


@pytest.mark.parametrize("prefix", ["../", "..", "src/../../etc", "/etc", "/"])
def test_a_search_path_outside_the_repo_is_refused(prefix: str) -> None:
    with pytest.raises(InvalidArgument, match=r"^path must be a folder or file path inside the repo"):
        repo_path_prefix(prefix)


@pytest.mark.parametrize("prefix", [None, "", "src/", "./src", ".github/", "a..b/", 5])
def test_other_search_paths_pass_to_the_search(prefix) -> None:
    assert repo_path_prefix(prefix) == prefix


@pytest.mark.parametrize(("error", "line", "traceback"), [
    (RuntimeError('lance error: LanceError(IO): No space left on device (os error 28) at path "/d/codeqa_locks.lance/x"'),
     "heartbeat failed: The index storage failed (/d/codeqa_locks.lance): the disk is full.", False),
    (KeyError("owner"), "heartbeat failed", True)])
def test_a_failed_lock_step_logs_the_disks_refusal_in_one_line_and_a_bug_with_its_traceback(
        caplog, error: BaseException, line: str, traceback: bool) -> None:
    with caplog.at_level("WARNING", logger="codeqa.lock"):
        lease._warn("heartbeat failed", error)
    [record] = caplog.records
    assert record.getMessage() == line and bool(record.exc_info) is traceback
