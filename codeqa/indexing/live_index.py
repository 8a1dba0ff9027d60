"""A live index: index a repo, then watch its tree and re-index after each burst of changes.

    python preprocessing.py watch PATH [--name NAME]        # or: codeqa watch PATH

File events come from `watchfiles` (inotify, FSEvents, ...). A burst of them is one run: events
are grouped until the tree has been quiet for `QUIET_MS` (at most `MAX_BATCH_MS`), so a
`git checkout` rewriting 500 files re-indexes once, and events during a run start the next one.
Changes the walk would skip anyway (`.git/`, ignored and vendored trees, unsupported files:
`repo_files.ChangeFilter`) start no run. Each run is the ordinary incremental `index_repo`,
which re-reads only what changed; readers (the web app, the MCP server) open the tables'
newest version on every query, so they see it as soon as it is written, without a restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import watchfiles
from watchfiles import Change

from codeqa.core.config import Settings
from codeqa.indexing.indexer import IndexReport, index_repo
from codeqa.parsing.repo_files import ChangeFilter, RepoPathError

if TYPE_CHECKING:
    import lancedb

QUIET_MS = 800  # a burst ends after this long without events
LOCK_WAIT_S = 3600.0  # a run of another process holding the repo's lock is waited for, not fatal
MAX_BATCH_MS = 15_000  # ... or after this long, for a tree that never stops changing
CHECK_MS = 2_000  # with no events, how often to check that the repo is still there


def changed_paths(root: Path, changes: Iterable[tuple[Change, str]]) -> list[str]:
    """The repo-relative paths among `changes` that can change the index, sorted."""
    rules = ChangeFilter(root)
    paths = set()
    for _, path in changes:
        relative = Path(path).relative_to(root).as_posix() if Path(path) != root else ""
        if relative and rules.matters(relative):
            paths.add(relative)
    return sorted(paths)


def _gone(root: Path, name: str) -> RepoPathError:
    return RepoPathError(
        f"{root} was deleted or moved: stopped watching. The index of {name} keeps its "
        f"last version (`python preprocessing.py remove {name}` drops it)."
    )


def _ignore(*_: object) -> None:
    """The default listener: nobody is listening."""


def change_bursts(root: Path, name: str, stop: threading.Event | None = None) -> Iterator[list[str]]:
    """The repo-relative paths of each burst of relevant changes under `root`, until `stop` is
    set or Ctrl-C. Raises RepoPathError when the folder goes away (`name` is for the message)."""
    for changes in watchfiles.watch(
        root,
        debounce=MAX_BATCH_MS,
        step=QUIET_MS,
        rust_timeout=CHECK_MS,
        yield_on_timeout=True,
        raise_interrupt=False,
        stop_event=stop,
    ):
        if not root.is_dir():
            raise _gone(root, name)
        paths = changed_paths(root, changes)
        if paths:
            yield paths


def watch_repo(
    root: str | Path,
    settings: Settings,
    db: lancedb.DBConnection,
    name: str | None = None,
    on_changes: Callable[[list[str]], None] = _ignore,
    on_run: Callable[[IndexReport], None] = _ignore,
    progress: bool | None = None,
) -> None:
    """Index `root`, then re-index after every burst of relevant changes until interrupted.

    `on_changes(paths)` hears about a burst before its run, `on_run(report)` after every run
    (the first one included). Raises RepoPathError when the repo's folder goes away; returns
    on Ctrl-C between runs."""
    report = index_repo(root, settings, name=name, progress=progress, db=db, wait=LOCK_WAIT_S)
    root_path, name = Path(report.root), report.name
    on_run(report)
    for paths in change_bursts(root_path, name):
        on_changes(paths)
        try:
            report = index_repo(root_path, settings, name=name, progress=False, db=db, wait=LOCK_WAIT_S)
        except RepoPathError as exc:
            raise _gone(root_path, name) from exc
        on_run(report)


def format_changes(paths: list[str]) -> str:
    """One line when a burst of changes starts a run."""
    example = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
    plural = "s" if len(paths) != 1 else ""
    return f"{time.strftime('%H:%M:%S')} {len(paths)} changed path{plural} ({example}): re-indexing"


def format_run(report: IndexReport) -> str:
    """One line when a re-index is done."""
    return (
        f"{time.strftime('%H:%M:%S')} re-indexed {report.name}: {report.added} added, {report.changed} changed, "
        f"{report.deleted} deleted; {report.embedded} texts embedded; {report.timings.get('total', 0.0):.1f}s"
    )
