"""The MCP server's index jobs in process (real LanceDB, the real embedding model, a real file
watcher): a watched repo's refreshes leave their new rows outside the indexes, and its watcher
folds them in once the tree is quiet.

Waits poll with a deadline; nothing asserts on how long anything took.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable

import pytest

from codeqa.indexing.jobs import DONE, IndexJobs, JobStatus
from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.store.create_tables import RepoTables

DEADLINE = 600  # seconds a wait may take on a busy 2-core box before the test fails


def _until(what: str, done: Callable[[], bool], every: Callable[[], None] = lambda: None) -> None:
    """Poll `done` (calling `every` between polls) until it holds; fail after DEADLINE."""
    deadline = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < deadline, f"never: {what}"
        every()
        time.sleep(0.5)


def _unindexed(db, name: str) -> int:
    """Rows of the repo's tables that some index of theirs does not cover yet."""
    tables = RepoTables(db, registry.get_repo(db, name))
    return sum(t.index_stats(ix.name).num_unindexed_rows for t in tables.row_tables for ix in t.list_indices())


def _ended(jobs: IndexJobs, kind: str) -> Callable[[], bool]:
    def ended() -> bool:
        status: JobStatus | None = jobs.status("shop")
        return status is not None and status.kind == kind and not status.active

    return ended


@pytest.mark.integration
def test_a_watched_repos_refreshes_leave_their_rows_for_the_watcher_to_fold(settings, sample_copy, caplog):
    caplog.set_level(logging.INFO, logger="codeqa.jobs")
    db = connect(settings)
    jobs = IndexJobs(settings, db, watch=True)
    jobs.fold_after_s = math.inf  # held back until the test has looked at the refresh's rows
    try:
        jobs.start(sample_copy, "shop", "index")
        _until("the first run done", _ended(jobs, "index"))
        assert jobs.status("shop").phase == DONE and _unindexed(db, "shop") == 0

        # The watcher starts once the first run is done: save until it has seen a save.
        models = sample_copy / "shop" / "models.py"
        models.write_text(models.read_text() + "\n\ndef apply_coupon(total, coupon):\n    return total * 0.9\n")
        _until("a refresh run", lambda: jobs.status("shop").kind == "refresh", lambda: os.utime(models))
        _until("the refresh done", _ended(jobs, "refresh"))
        refresh = jobs.status("shop")
        assert refresh.phase == DONE and refresh.last_report.changed >= 1
        assert _unindexed(db, "shop") > 0  # the refresh's rows: searched flat beside the indexes

        jobs.fold_after_s = 0.0
        _until("the rows folded in", lambda: _unindexed(db, "shop") == 0)
        _until("the fold logged", lambda: "folded shop's new rows into its indexes" in caplog.text)
    finally:
        jobs.close()
