"""Re-indexing under a running app: `--rebuild` and `remove` + index in another process, searches
answered all along, the new tables used afterwards without a restart.

The indexer is a real CLI process, frozen with SIGSTOP at the moment under test so that the
app's answer during a rebuild is checked deterministically, then resumed with SIGCONT.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeqa.store import lease, registry, schema
from codeqa.store.connection import connect
from codeqa.app import close_app, create_app
from conftest import ROOT, settings_for
from codeqa.indexing.indexer import index_repo
from codeqa.search.retrieval import HOLDER_CACHE_SECONDS

pytestmark = pytest.mark.integration

MARKER = "def rebuilt_inventory_marker():\n    \"\"\"Added after the first index.\"\"\"\n    return 42\n"


def cli(data_dir: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "CODEQA_WRITE_BATCH": "2"}
    return subprocess.Popen([sys.executable, str(ROOT / "preprocessing.py"), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def freeze_when(proc: subprocess.Popen, condition, what: str) -> None:
    """SIGSTOP `proc` as soon as `condition()` holds (it must hold before the process ends), then
    let the app's memory of who holds the index lock expire."""
    while not condition():
        assert proc.poll() is None, f"the indexer ended before {what}: {proc.stderr.read()}"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGSTOP)
    time.sleep(HOLDER_CACHE_SECONDS)


def resume(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err


@pytest.fixture
def live(tmp_path, sample_copy):
    settings = settings_for(tmp_path / "data", local_llm=False)
    index_repo(sample_copy, settings, name="shop", progress=False)
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": settings})
    yield app.test_client(), settings, sample_copy
    close_app(app)


def search(client, query: str):
    return client.post("/api/search", json={"repo": "shop", "query": query, "k": 5, "hyde": False})


def names(response) -> set[str]:
    assert response.status_code == 200, response.get_json()
    return {hit["qualified_name"] for hit in response.get_json()["results"]}


def test_rebuild_while_serving_answers_throughout_and_then_uses_the_new_tables(live):
    client, settings, repo = live
    db = connect(settings)
    before = registry.get_repo(db, "shop")
    assert "rebuilt_inventory_marker" not in names(search(client, "rebuilt inventory marker"))
    (repo / "shop" / "marker.py").write_text(MARKER)

    rebuild = cli(settings.data_dir, "index", str(repo), "--name", "shop", "--rebuild", "--no-progress")
    freeze_when(rebuild, lambda: registry.repo_table_names(db, "shop") - {
        registry.table_name(before, kind) for kind in schema.TABLE_KINDS}, "it created new tables")
    try:
        during = search(client, "rebuilt inventory marker")
        assert during.status_code == 200
        assert any("being re-indexed" in notice for notice in during.get_json()["notices"])
        assert "rebuilt_inventory_marker" not in names(during)  # the previous index answers
    finally:
        resume(rebuild)

    after = registry.get_repo(db, "shop")
    assert after.prefix != before.prefix and after.indexed_at > before.indexed_at
    assert registry.repo_table_names(db, "shop") == {registry.table_name(after, kind)
                                                          for kind in schema.TABLE_KINDS}
    response = search(client, "rebuilt inventory marker")  # same app, no restart
    assert "rebuilt_inventory_marker" in names(response)
    assert not response.get_json()["notices"]


def test_remove_and_index_again_while_serving(live):
    client, settings, repo = live
    db = connect(settings)
    removed = cli(settings.data_dir, "remove", "shop")
    assert removed.wait(timeout=600) == 0
    gone = search(client, "cart total")
    assert gone.status_code == 404 and gone.get_json()["error"].startswith("Unknown repo 'shop'.")

    (repo / "shop" / "marker.py").write_text(MARKER)
    again = cli(settings.data_dir, "index", str(repo), "--name", "shop", "--no-progress")
    freeze_when(again, lambda: registry.find_repo(db, "shop") is not None, "it registered the repo")
    try:
        during = search(client, "cart total")
        assert during.status_code == 503
        message = during.get_json()["error"]
        assert message.startswith("shop is being indexed and its first run has not finished (pid ")
        assert str(settings.data_dir) not in message and str(repo) not in message
    finally:
        resume(again)
    assert lease.holder(db, "shop") is None
    assert "rebuilt_inventory_marker" in names(search(client, "rebuilt inventory marker"))


def test_a_first_run_that_was_killed_is_named_as_such(live, tmp_path):
    client, settings, repo = live
    db = connect(settings)
    registry.remove_repo(db, "shop")
    run = cli(settings.data_dir, "index", str(repo), "--name", "shop", "--no-progress")
    freeze_when(run, lambda: registry.find_repo(db, "shop") is not None, "it registered the repo")
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    response = search(client, "cart total")
    assert response.status_code == 503
    assert "index run stopped before it finished" in response.get_json()["error"]
