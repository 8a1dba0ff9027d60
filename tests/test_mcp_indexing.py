"""The index tools through the SDK's own stdio client, as an agent uses them (a real server
subprocess, real LanceDB, the real embedding model, no LLM): index a fresh repository, follow it
to done with progress notifications, search it, edit a file, refresh and see the edit, remove
it; search_code on a folder that is not indexed yet; a run of another process waited for, not
raced; `--watch`; and an agent's hostile arguments answered in one short line.

Waits poll the tools with a deadline; nothing asserts on how long anything took.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from conftest import SAMPLE_REPO, settings_for
from mcp_client import McpSession, mcp_session
from codeqa.indexing.jobs import JobStatus, _Job
from codeqa.mcp_indexing import agent_folder, hide_server_paths, is_folder
from codeqa.store.connection import connect
from codeqa.store.lease import RepoLock

DEADLINE = 600  # seconds a wait may take on a busy 2-core box before the test fails
NEW_FUNCTION = "\n\ndef apply_coupon_discount(total, coupon):\n    return total * 0.9\n"  # lines 67-68 of models.py


def _project(parent: Path, name: str = "shop") -> Path:
    project = parent / name
    shutil.copytree(SAMPLE_REPO, project)
    return project


def _until(mcp: McpSession, repo: str, done, progress: list | None = None) -> dict:
    """index_status (waiting in the server) until `done(status)`; the last status."""
    deadline = time.monotonic() + DEADLINE

    async def note(value: float, total: float | None, message: str | None) -> None:
        if progress is not None:
            progress.append((value, total, message))

    while True:
        result = mcp.call("index_status", on_progress=note, repo=repo, wait_seconds=5)
        assert not result.is_error, result.content[0].text
        status = result.structured_content
        if done(status):
            return status
        assert status["state"] == "indexing" and time.monotonic() < deadline, result.content[0].text


def _ready(status: dict) -> bool:
    return status["state"] == "ready"


@pytest.mark.integration
def test_an_agent_indexes_a_fresh_repository_follows_it_searches_edits_and_refreshes(tmp_path):
    project = _project(tmp_path)
    with mcp_session(tmp_path / "data", tmp_path) as mcp:
        assert mcp.text("list_repos").startswith("No repo is indexed yet: call index_repository")
        started = mcp.call("index_repository", path=str(project))
        assert started.content[0].text.startswith(f"Job 1: indexing {project} as shop.\nshop: ")
        first = started.structured_content
        assert (first["repo"], first["root"], first["job"]["id"], first["job"]["kind"]) == (
            "shop", str(project), 1, "index")

        progress: list = []
        status = _until(mcp, "shop", _ready, progress)
        assert (status["searchable"], status["embedded_percent"], status["files"], status["skipped"]) == (
            True, 100, 32, {"vcs": 1})
        assert (status["job"]["phase"], status["job"]["added"], status["error"]) == ("done", 32, None)
        assert status["model"].startswith("local:codeqa-static-") and status["last_indexed"] > 0
        percents = [value for value, _, _ in progress]
        assert percents and percents == sorted(set(percents)) and percents[-1] <= 100  # only ever growing
        assert all(total == 100 and message.startswith("shop: ") for _, total, message in progress)

        top = mcp.data("search_code", query="where is make_demo_cart built?", repo="shop", k=3)["results"][0]
        assert (top["qualified_name"], top["location"]) == ("make_demo_cart", "shop/models.py:59-64")

        models = project / "shop" / "models.py"
        models.write_text(models.read_text() + NEW_FUNCTION)
        refreshed = mcp.call("refresh_repository", repo="shop")
        assert refreshed.content[0].text.startswith("Job 2: bringing shop up to date.\nshop: ready")
        run = refreshed.structured_content["job"]
        assert (run["kind"], run["phase"], run["added"], run["changed"], run["deleted"]) == ("refresh", "done", 0, 1, 0)
        hit = mcp.data("search_code", query="apply_coupon_discount", repo="shop", k=1)["results"][0]
        assert (hit["qualified_name"], hit["location"]) == ("apply_coupon_discount", "shop/models.py:67-68")
        by_folder = mcp.data("find_symbol", name="apply_coupon_discount", repo=str(project))["definitions"]
        assert [d["location"] for d in by_folder] == ["shop/models.py:67-68"]
        assert mcp.text("refresh_repository", repo=str(project)).startswith(
            "Up to date: nothing changed since the last run.\nshop: ready")

        assert mcp.data("remove_repository", repo="shop") == {"repo": "shop", "root": str(project),
                                                                "stopped_run": False}
        assert models.read_text().endswith(NEW_FUNCTION)  # the folder is untouched
        assert mcp.data("list_repos")["repos"] == []
        assert mcp.data("index_status", repo=str(project))["state"] == "not_indexed"


@pytest.mark.integration
def test_search_code_on_a_folder_not_indexed_yet_indexes_it_first_and_keeps_it_fresh(tmp_path):
    project = tmp_path / "tiny"
    project.mkdir()
    (project / "calc.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    (project / "README.md").write_text("# Tiny\n\nAdds numbers.\n")
    progress: list = []

    async def note(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with mcp_session(tmp_path / "data", tmp_path) as mcp:
        first = mcp.call("search_code", on_progress=note, query="add_numbers", repo=str(project))
        found = first.structured_content
        assert found["notices"][0].startswith(f"{project} was not indexed: indexed it just now as tiny (2 files).")
        assert found["results"][0]["qualified_name"] == "add_numbers" and found["repo"] == "tiny"
        assert progress and progress == sorted(set(progress))

        with (project / "calc.py").open("a") as calc:
            calc.write("\n\ndef multiply_numbers(a, b):\n    return a * b\n")
        found = mcp.data("search_code", query="multiply_numbers", repo=str(project))
        assert found["notices"][0].startswith("tiny had changed: brought it up to date first.")
        assert (found["results"][0]["qualified_name"], found["results"][0]["location"]) == (
            "multiply_numbers", "calc.py:5-6")
        again = mcp.data("search_code", query="multiply_numbers", repo=str(project))
        assert not [notice for notice in again["notices"] if "indexed it" in notice or "had changed" in notice]

        # The server keeps the folder's walk between searches and finds changes by their stats:
        # a file edited in place, then a new folder.
        with (project / "calc.py").open("a") as calc:
            calc.write("\n\ndef subtract_numbers(a, b):\n    return a - b\n")
        found = mcp.data("search_code", query="subtract_numbers", repo=str(project))
        assert found["notices"][0].startswith("tiny had changed: brought it up to date first.")
        assert found["results"][0]["qualified_name"] == "subtract_numbers"
        (project / "ops").mkdir()
        (project / "ops" / "div.py").write_text("def divide_numbers(a, b):\n    return a / b\n")
        found = mcp.data("search_code", query="divide_numbers", repo=str(project))
        assert found["notices"][0].startswith("tiny had changed: brought it up to date first.")
        assert found["results"][0]["location"] == "ops/div.py:1-2"


@pytest.mark.integration
def test_a_run_of_another_process_is_waited_for_not_raced(tmp_path):
    project = _project(tmp_path)
    data = tmp_path / "data"
    with mcp_session(data, tmp_path) as mcp:
        with RepoLock(connect(settings_for(data)), "shop", "index").held():  # as a CLI run holds it
            mcp.data("index_repository", path=str(project))
            waiting = _until(mcp, "shop", lambda status: status["job"]["phase"] == "waiting")
            assert waiting["state"] == "indexing" and not waiting["searchable"]
            assert waiting["job"]["activity"].startswith("waiting for another process's run of shop to finish (pid ")
            assert mcp.data("list_repos")["repos"] == []  # nothing written while the other run holds the lease
        status = _until(mcp, "shop", _ready)
        assert (status["files"], status["job"]["added"], status["embedded_percent"]) == (32, 32, 100)


@pytest.mark.integration
def test_removing_a_repository_mid_run_stops_the_run_and_the_next_index_is_whole(tmp_path, indexed_sample):
    whole = indexed_sample[1].stats()  # the sample repo indexed in one uninterrupted run
    project = _project(tmp_path)
    with mcp_session(tmp_path / "data", tmp_path) as mcp:
        mcp.data("index_repository", path=str(project))
        removed = mcp.data("remove_repository", repo=str(project))  # while the run is under way
        assert removed == {"repo": "shop", "root": str(project), "stopped_run": True}
        assert mcp.data("list_repos")["repos"] == []
        assert mcp.data("index_status", repo=str(project))["state"] == "not_indexed"
        mcp.data("index_repository", path=str(project))
        status = _until(mcp, "shop", _ready)
    assert (status["files"], status["rows"], status["references"]) == (whole.files, whole.rows, whole.references)


@pytest.mark.integration
def test_watch_keeps_a_repository_indexed_through_the_tools_live(tmp_path):
    project = _project(tmp_path)
    with mcp_session(tmp_path / "data", tmp_path, "--watch") as mcp:
        mcp.data("index_repository", path=str(project))
        _until(mcp, "shop", _ready)
        models = project / "shop" / "models.py"
        models.write_text(models.read_text() + NEW_FUNCTION)
        deadline = time.monotonic() + DEADLINE
        while True:  # no refresh: the server sees the save itself
            found = mcp.data("find_symbol", name="apply_coupon_discount", repo="shop")["definitions"]
            if found:
                break
            assert time.monotonic() < deadline, "the save never reached the index"
            time.sleep(0.5)
        assert found[0]["location"] == "shop/models.py:67-68"
        # Later saves: the watcher's runs walk again only where the tree changed
        (project / "shop" / "promotions").mkdir()
        (project / "shop" / "promotions" / "coupons.py").write_text("def stack_coupons(a, b):\n    return a + b\n")
        while not mcp.data("find_symbol", name="stack_coupons", repo="shop")["definitions"]:
            assert time.monotonic() < deadline, "the second save never reached the index"
            time.sleep(0.5)


# --- Hostile arguments -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A server with nothing indexed, and a folder holding what an agent might pass it."""
    place = tmp_path_factory.mktemp("hostile")
    (place / "a_file.py").write_text("x = 1\n")
    (place / "empty").mkdir()
    (place / "loop").symlink_to(place / "loop")
    (place / "out").symlink_to("/usr")
    with mcp_session(place / "data", place) as mcp:
        yield place, mcp


NOT_A_REPO = "is not a repository: the file-system root, the home folder and system folders are never indexed."


@pytest.mark.integration
@pytest.mark.parametrize("tool, arguments, message", [
    ("index_repository", {"path": "{place}/a_file.py"},
     "{place}/a_file.py is not a folder: give the repository's folder, not a file in it."),
    ("index_repository", {"path": "{place}/missing"}, "{place}/missing does not exist."),
    ("index_repository", {"path": "x" * 100_000}, "path has 100,000 characters; the limit is 4,096."),
    ("index_repository", {"path": "../"}, "../: '..' is not allowed; give the folder's absolute path."),
    ("index_repository", {"path": "{place}/empty/../.."}, "{place}/empty/../..: '..' is not allowed; give the "
                                                          "folder's absolute path."),
    ("index_repository", {"path": "{place}/loop"},
     "{place}/loop is or goes through a symbolic link: give the folder's real path."),
    ("index_repository", {"path": "{place}/out"},
     "{place}/out is or goes through a symbolic link: give the folder's real path."),
    ("index_repository", {"path": "{place}/out/lib"},
     "{place}/out/lib is or goes through a symbolic link: give the folder's real path."),
    ("index_repository", {"path": "/"}, f"/ {NOT_A_REPO}"),
    ("index_repository", {"path": "/proc"}, f"/proc {NOT_A_REPO}"),
    ("index_repository", {"path": "~"}, f"~ {NOT_A_REPO}"),
    ("index_repository", {"path": "a\x00b"}, "path holds characters that no folder name can have."),
    ("index_repository", {"path": "  "}, "path is empty: give the repository's folder (an absolute path)."),
    ("index_repository", {"path": "{place}/empty", "name": "../x"},
     "Invalid repo name '../x': use 1 to 100 letters, digits and . _ + @ -, starting with a letter or digit."),
    ("index_repository", {"path": "{place}/empty", "wait_seconds": 600},
     "wait_seconds must be a whole number from 0 to 60."),
    ("index_repository", {"path": "{place}/empty", "wait_seconds": "5"},
     "wait_seconds must be a whole number from 0 to 60."),
    ("index_status", {"repo": "x" * 5000}, "repo has 5,000 characters; the limit is 4,096."),
    ("index_status", {"repo": "nope"}, "Unknown repo 'nope'. No repo is indexed yet."),
    ("index_status", {"repo": "{place}/loop"},
     "{place}/loop is or goes through a symbolic link: give the folder's real path."),
    ("refresh_repository", {"repo": "{place}/empty"}, "empty is not indexed yet: call index_repository with its "
                                                      "folder."),
    ("remove_repository", {"repo": "nope"}, "Unknown repo 'nope'. No repo is indexed yet."),
    ("remove_repository", {}, "repo is required: the indexed repo's name (see list_repos) or its folder's absolute "
                              "path."),
    ("search_code", {"query": "x", "repo": "{place}/a_file.py"},
     "{place}/a_file.py is not a folder: give the repository's folder, not a file in it."),
    ("find_symbol", {"name": "x", "repo": "{place}/empty"},
     "{place}/empty is not indexed yet: call index_repository with it, or search_code with repo set to it "
     "(which indexes it first)."),
])
def test_hostile_arguments_get_one_short_line(hostile, tool, arguments, message):
    place, mcp = hostile
    sent = {key: value.replace("{place}", str(place)) if isinstance(value, str) else value
            for key, value in arguments.items()}
    error = mcp.error(tool, **sent)
    assert error == message.replace("{place}", str(place))
    assert "\n" not in error and len(error) < 300


@pytest.mark.integration
def test_a_folder_with_nothing_to_index_fails_its_job_in_one_line(hostile):
    place, mcp = hostile
    status = mcp.data("index_repository", path=str(place / "empty"), wait_seconds=60)
    assert (status["state"], status["searchable"], status["job"]["phase"]) == ("failed", False, "failed")
    assert status["error"] == f"Nothing indexable in {place / 'empty'} (no files)."


# --- The parts, without a server -----------------------------------------------------------------


@pytest.mark.unit
def test_a_folder_is_told_from_a_name_and_resolved_from_the_project(tmp_path):
    assert [is_folder(value) for value in ["shop", "my.repo", "/abs", "./x", ".", "~/code", "src/app"]] == [
        False, False, True, True, True, True, True]
    (tmp_path / "project" / "sub").mkdir(parents=True)
    assert agent_folder("sub", tmp_path / "project") == tmp_path / "project" / "sub"
    assert agent_folder(".", tmp_path / "project") == tmp_path / "project"
    assert agent_folder(f"{tmp_path}/project/sub/", Path("/")) == tmp_path / "project" / "sub"


@pytest.mark.unit
def test_errors_keep_the_agents_own_folder_and_hide_the_servers_paths():
    text = ("The index storage failed (/home/srv/.codeqa/lancedb/r_x.lance): the disk is full; "
            "while indexing /work/shop/src/app.py of /work/shop")
    assert hide_server_paths(text, ["/work/shop"]) == (
        "The index storage failed (<path>): the disk is full; while indexing /work/shop/src/app.py of /work/shop")
    assert hide_server_paths(text, []).count("<path>") == 3


def _status(job: _Job, **changes) -> JobStatus:
    job.update(**changes)
    return job.status


@pytest.mark.unit
def test_asking_during_a_run_that_walked_already_asks_for_one_more_run():
    job = _Job(7, "shop", Path("/work/shop"), "index")
    waiting = job.ticket()  # the run has not walked yet: it will see the files as they are now
    assert (waiting.run, waiting.joined, job.status.again) == (1, True, False)
    _status(job, phase="parsing", done=3, total=10)
    later = job.ticket()  # it walked already: files may have changed since, so one more run
    assert (later.run, job.status.again) == (2, True)
    first_done = _status(job, searchable_runs=1, finished_runs=1, run=2, phase="queued", again=False)
    assert waiting.searchable(first_done) and waiting.finished(first_done)
    assert not later.searchable(first_done) and not later.finished(first_done)
    assert later.searchable(_status(job, phase="failed"))  # an ended job is waited for no longer


@pytest.mark.unit
def test_a_runs_percentage_only_grows_through_its_stages():
    job = _Job(1, "shop", Path("/work/shop"), "index")
    steps = [("queued", 0, 0), ("walking", 0, 0), ("parsing", 0, 10), ("parsing", 5, 10), ("parsing", 10, 10),
             ("references", 0, 0), ("searchable", 90, 100), ("embedding", 0, 100), ("embedding", 50, 100),
             ("embedding", 100, 100), ("done", 100, 100)]
    percents = [_status(job, phase=phase, done=done, total=total).percent for phase, done, total in steps]
    assert percents == sorted(percents) and percents[0] == 0 and percents[-1] == 100
    assert percents[3] == 26 and percents[-2] == 99  # halfway through parsing; all rows embedded, not yet done
