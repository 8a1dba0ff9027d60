"""`preprocessing.py watch` with real file events (a real subprocess, real LanceDB, the real
embedding model), read by a running MCP server and web app; and the change filter's rules.

Waits poll the watcher's output with a deadline; nothing asserts on how long anything took.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_REPO, settings_for
from mcp_client import NO_LLM, mcp_session
from codeqa.parsing.repo_files import ChangeFilter, walk_repo
from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.store.create_tables import RepoTables

BULK_FILES = 500
DEADLINE = 600  # seconds a wait may take on a busy 2-core box before the test fails
QUIET = 5  # seconds without a new run that show a burst was one run (several debounce windows)


class Watcher:
    """A running `preprocessing.py watch`; a thread collects its output lines."""

    def __init__(self, repo: Path, data_dir: Path, name: str = "live", command: list[str] | None = None,
                 cwd: Path | None = None) -> None:
        env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "CODEQA_LLM_BASE_URL": NO_LLM}
        self.data_dir, self.name = data_dir, name
        self.proc = subprocess.Popen([*(command or [sys.executable, str(ROOT / "preprocessing.py"), "watch"]),
                                      str(repo), "--name", name, "--no-progress"], cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self.errors: list[str] = []
        for stream, sink in ((self.proc.stdout, self.lines), (self.proc.stderr, self.errors)):
            threading.Thread(target=lambda s=stream, k=sink: k.extend(iter(s.readline, "")), daemon=True).start()

    def output(self) -> str:
        return "".join(self.lines) + "".join(self.errors)

    def wait_for(self, condition: Callable[[], object], what: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not condition():
            assert time.monotonic() < deadline, f"no {what} after {DEADLINE} s:\n{self.output()}"
            assert self.proc.poll() is None or condition(), f"watch exited before {what}:\n{self.output()}"
            time.sleep(0.2)

    def starts(self) -> list[str]:
        return [line for line in self.lines if line.rstrip().endswith("re-indexing")]

    def runs(self) -> list[str]:
        return [line for line in self.lines if f" re-indexed {self.name}: " in line]

    def folds(self) -> list[str]:
        return [line for line in self.lines if f" folded {self.name}'s new rows into its indexes; " in line]

    def next_run(self, action: Callable[[], None]) -> tuple[str, str]:
        """Do `action`, wait for the run it starts, then for a quiet spell: (its start, its report).

        A run started earlier is let finish first: a file is searchable before its vectors are
        in, so a test that waited only for search can leave its run embedding, and on a busy box
        that run's report used to land in the next test's count."""
        self.wait_for(lambda: len(self.starts()) == len(self.runs()), "the run before to finish")
        before = len(self.runs())
        action()
        self.wait_for(lambda: len(self.runs()) > before, "re-index")
        time.sleep(QUIET)  # a second run for the same burst would have started by now
        assert len(self.starts()) == len(self.runs()) == before + 1, self.output()
        return self.starts()[-1], self.runs()[-1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main",
                    *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """The sample repo as a git repo on `main`, with a branch `bulk` that adds 500 files."""
    root = tmp_path_factory.mktemp("live") / "repo"
    shutil.copytree(SAMPLE_REPO, root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "sample")
    git(root, "checkout", "-qb", "bulk")
    (root / "bulk").mkdir()
    for i in range(BULK_FILES):
        (root / "bulk" / f"mod_{i}.py").write_text(f"def bulk_helper_{i}():\n    return {i}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "bulk")
    git(root, "checkout", "-q", "main")
    return root


@pytest.fixture(scope="module")
def watcher(repo, tmp_path_factory) -> Iterator[Watcher]:
    running = Watcher(repo, tmp_path_factory.mktemp("live-data"))
    running.wait_for(lambda: any(line.startswith("Watching ") for line in running.lines), "first index")
    yield running
    running.stop()


@pytest.mark.integration
def test_a_saved_file_is_searchable_in_a_running_mcp_server_and_web_app(repo, watcher):
    from codeqa.app import close_app, create_app

    settings = settings_for(watcher.data_dir, llm_base_url=NO_LLM, local_llm=False)
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": settings})
    client = app.test_client()

    def web_finds() -> bool:
        found = client.post("/api/search", json={"repo": "live", "query": "freshly_saved_total", "k": 3}).get_json()
        return found["results"][0]["qualified_name"] == "freshly_saved_total"

    try:
        with mcp_session(watcher.data_dir, repo) as mcp:
            assert mcp.data("find_symbol", name="freshly_saved_total")["definitions"] == []
            assert not web_finds()
            util = repo / "shop" / "util.py"
            lines = len(util.read_text().splitlines())
            with util.open("a") as handle:
                handle.write("\n\ndef freshly_saved_total(values):\n    return sum(values)\n")
            location = f"shop/util.py:{lines + 3}-{lines + 4}"
            watcher.wait_for(lambda: mcp.data("find_symbol", name="freshly_saved_total")["definitions"],
                             "new symbol through MCP")
            found = mcp.data("find_symbol", name="freshly_saved_total")["definitions"]
            assert [d["location"] for d in found] == [location]
            assert mcp.data("search_code", query="freshly_saved_total", k=3)["results"][0]["location"] == location
            assert web_finds()
    finally:
        close_app(app)
    assert "(shop/util.py): re-indexing" in watcher.output()


@pytest.mark.integration
def test_a_branch_switch_is_one_run(repo, watcher):
    # The events of files written before the watch on the new `bulk/` reached them are lost
    # (inotify); the directory's own event starts the run, whose walk finds them all.
    _, report = watcher.next_run(lambda: git(repo, "checkout", "-q", "bulk"))
    # Each file: its function and its file row.
    assert f": {BULK_FILES} added, 0 changed, 0 deleted; {2 * BULK_FILES} texts embedded;" in report
    _, report = watcher.next_run(lambda: git(repo, "checkout", "-q", "main"))
    assert f": 0 added, 0 changed, {BULK_FILES} deleted;" in report


@pytest.mark.integration
def test_changes_the_walk_ignores_start_no_run(repo, watcher):
    def change() -> None:
        (repo / "build").mkdir(exist_ok=True)
        (repo / "build" / "generated.py").write_text("def generated(): pass\n")  # .gitignore: build/
        (repo / "debug.log").write_text("noise\n")  # .gitignore: *.log
        (repo / "logo.png").write_bytes(b"\x89PNG")
        (repo / "shop" / "notes.py").write_text("def note(): pass\n")

    folds = len(watcher.folds())
    start, report = watcher.next_run(change)
    assert "1 changed path (shop/notes.py): re-indexing" in start and ": 1 added, 0 changed" in report
    # Once the tree is quiet, the rows the run left outside the indexes are folded in.
    watcher.wait_for(lambda: len(watcher.folds()) > folds, "the new rows folded into the indexes")
    db = connect(settings_for(watcher.data_dir))
    tables = RepoTables(db, registry.get_repo(db, watcher.name))
    assert all(t.index_stats(ix.name).num_unindexed_rows == 0 for t in tables.row_tables for ix in t.list_indices())
    # The run walked again only where things changed, yet counts what a whole walk counts: the
    # paths that started no run (the png, the log, build/) were looked at too.
    skipped = registry.get_repo(db, watcher.name).stats.skipped
    assert skipped == dict(walk_repo(repo).skipped) and skipped["binary"] >= 1 and skipped["ignored"] >= 1


@pytest.mark.integration
def test_deleting_the_repo_stops_the_watch_with_a_clear_message(tmp_path):
    repo = tmp_path / "tiny"
    repo.mkdir()
    (repo / "main.py").write_text("def main():\n    return 0\n")
    running = Watcher(repo, tmp_path / "data")
    try:
        running.wait_for(lambda: any(line.startswith("Watching ") for line in running.lines), "first index")
        shutil.rmtree(repo)
        running.wait_for(lambda: running.proc.poll() is not None, "exit")
        running.wait_for(lambda: running.errors, "message")
    finally:
        running.stop()
    assert running.proc.returncode == 1
    assert "".join(running.errors) == (
        f"error: {repo} was deleted or moved: stopped watching. The index of live keeps its last version "
        "(`python preprocessing.py remove live` drops it).\n")


@pytest.mark.unit
def test_the_change_filter_follows_the_walks_rules(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    for path in ["src/a.py", "src/secret.py", "src/b.pyc", "src/logo.png", "build/gen.py", "node_modules/x.js",
                 ".git/HEAD", "app.log", "README.md", "env/pyvenv.cfg", "env/lib.py", "newdir/inner/c.go"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    (tmp_path / "src" / ".gitignore").write_text("secret.py\n")
    rules = ChangeFilter(tmp_path)
    matters = {path: rules.matters(path) for path in [
        "src/a.py", "src/secret.py", "src/b.pyc", "src/logo.png", "build/gen.py", "node_modules/x.js",
        ".git/HEAD", "app.log", "README.md", "env/lib.py", "src/.gitignore", "newdir",
        "gone.py", "gone_dir", "gone.swp", "build"]}
    assert matters == {
        "src/a.py": True, "src/secret.py": False, "src/b.pyc": False, "src/logo.png": False, "build/gen.py": False,
        "node_modules/x.js": False, ".git/HEAD": False, "app.log": False, "README.md": True, "env/lib.py": False,
        "src/.gitignore": True, "newdir": True,  # a directory moved in: its files may come as one event
        "gone.py": True, "gone_dir": True,  # deleted: a source file, or what may have been a directory
        "gone.swp": False, "build": False}
