"""A live index: index a repo, then watch its tree and re-index after each burst of changes.

    python preprocessing.py watch PATH [--name NAME]        # or: codeqa watch PATH

File events come from `watchfiles` (inotify, FSEvents, ...). A burst of them is one run: events
are grouped until the tree has been quiet for `QUIET_MS` (at most `MAX_BATCH_MS`), so a
`git checkout` rewriting 500 files re-indexes once, and events during a run start the next one.
Changes the walk would skip anyway (`.git/`, ignored and vendored trees, unsupported files:
`repo_files.ChangeFilter`) start no run. Each run is the ordinary incremental `index_repo`,
which re-reads only what changed, and walks again only the folders where something changed
(`repo_files.LiveWalk`: every path that changed since the last run, relevant or not, is looked
at; the whole tree every `FULL_WALK_SECONDS`, in case the OS dropped events). Its new rows are
left outside the tables' indexes, searched flat beside them, and folded in once the tree has
been quiet for `FOLD_AFTER_S` (on a large repo, folding is half of a one-file run). Readers
(the web app, the MCP server) open the tables' newest version on every query, so they see it as
soon as it is written, without a restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import watchfiles
from watchfiles import Change

from codeqa.core.config import Settings
from codeqa.indexing.indexer import IndexReport, fold_indexes, index_repo
from codeqa.parsing.repo_files import ChangeFilter, LiveWalk, RepoPathError, WalkReport, repo_root

if TYPE_CHECKING:
    import lancedb

QUIET_MS = 800  # a burst ends after this long without events
LOCK_WAIT_S = 3600.0  # a run of another process holding the repo's lock is waited for, not fatal
MAX_BATCH_MS = 15_000  # ... or after this long, for a tree that never stops changing
CHECK_MS = 2_000  # with no events, how often to check that the repo is still there
FOLD_AFTER_S = 5.0  # quiet this long after a run, the rows runs left outside the indexes are folded in


def repo_paths(root: Path, changes: Iterable[tuple[Change, str]]) -> list[str]:
    """The repo-relative, `/`-separated paths of `changes` (the root itself left out), sorted."""
    return sorted(
        {Path(path).relative_to(root).as_posix() for _, path in changes if Path(path) != root},
    )


def changed_paths(root: Path, paths: Iterable[str]) -> list[str]:
    """Those of the repo-relative `paths` that can change the index."""
    rules = ChangeFilter(root)
    return [path for path in paths if rules.matters(path)]


@dataclass(frozen=True)
class Burst:
    """One burst of changes: the paths that can change the index (a run starts only for
    those), and every path that changed (what a `LiveWalk` must look at again)."""

    relevant: list[str]
    every: list[str]


class PendingWalk:
    """A watched tree's `LiveWalk` and the paths changed since its last walk, which the next
    run's walk looks at (taken when the run walks, under the repo's lock: a run that waits
    for the lock, or never gets it, loses none). The walk also answers a check by stats
    (`refresh`) in between: an MCP server's before `search_code` on the folder."""

    def __init__(self, root: Path, max_file_bytes: int) -> None:
        self._tree = LiveWalk(root, max_file_bytes)
        self._paths: set[str] = set()
        self._lock = threading.Lock()
        self._walking = threading.Lock()  # a LiveWalk is not shared between threads

    def add(self, paths: Iterable[str]) -> None:
        with self._lock:
            self._paths.update(paths)

    def walk(self) -> WalkReport:
        """The tree after the changes added since the last walk (whole, the first time)."""
        with self._lock:
            paths, self._paths = sorted(self._paths), set()
        with self._walking:
            return self._tree.walk(paths)

    def walk_whole(self) -> WalkReport:
        with self._lock:
            self._paths = set()
        with self._walking:
            return self._tree.walk(None)

    def refresh(self) -> WalkReport:
        """The tree now, found by stats; the paths added stay for the next run's walk."""
        with self._walking:
            return self._tree.refresh()


def _gone(root: Path, name: str) -> RepoPathError:
    return RepoPathError(
        f"{root} was deleted or moved: stopped watching. The index of {name} keeps its "
        f"last version (`python preprocessing.py remove {name}` drops it)."
    )


def _ignore(*_: object) -> None:
    """The default listener: nobody is listening."""


def change_bursts(root: Path, name: str, stop: threading.Event | None = None) -> Iterator[Burst]:
    """Each burst of changes under `root`, and an empty one every `CHECK_MS` without changes,
    until `stop` is set or Ctrl-C. Raises RepoPathError when the folder goes away (`name` is
    for the message)."""
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
        every = repo_paths(root, changes)
        yield Burst(changed_paths(root, every) if every else [], every)


def watch_repo(
    root: str | Path,
    settings: Settings,
    db: lancedb.DBConnection,
    name: str | None = None,
    on_changes: Callable[[list[str]], None] = _ignore,
    on_run: Callable[[IndexReport], None] = _ignore,
    progress: bool | None = None,
    on_fold: Callable[[str, float], None] = _ignore,
) -> None:
    """Index `root`, then re-index after every burst of relevant changes until interrupted.

    The runs after the first leave their new rows outside the tables' indexes (searched flat
    beside them: a run takes half the time on a large repo), and once the tree has been quiet
    for `FOLD_AFTER_S` they are folded in (`indexer.fold_indexes`).
    `on_changes(paths)` hears about a burst before its run, `on_run(report)` after every run
    (the first one included), `on_fold(name, seconds)` after each fold. Raises RepoPathError when
    the repo's folder goes away; returns on Ctrl-C between runs."""
    tree = PendingWalk(repo_root(root), settings.max_file_bytes)
    report = index_repo(root, settings, name=name, progress=progress, db=db, wait=LOCK_WAIT_S, walk=tree.walk_whole)
    root_path, name = Path(report.root), report.name
    on_run(report)
    unfolded_since: float | None = None  # when the last run ended, while its rows wait to be folded
    for burst in change_bursts(root_path, name):
        tree.add(burst.every)
        if burst.relevant:
            on_changes(burst.relevant)
            try:
                report = index_repo(
                    root_path, settings, name=name, progress=False, db=db, wait=LOCK_WAIT_S, walk=tree.walk, fold=False
                )
            except RepoPathError as exc:
                raise _gone(root_path, name) from exc
            unfolded_since = time.monotonic()
            on_run(report)
        elif unfolded_since is not None and time.monotonic() - unfolded_since >= FOLD_AFTER_S:
            on_fold(name, fold_indexes(settings, name, db, wait=LOCK_WAIT_S))
            unfolded_since = None


def format_changes(paths: list[str]) -> str:
    """One line when a burst of changes starts a run."""
    example = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
    plural = "s" if len(paths) != 1 else ""
    return f"{time.strftime('%H:%M:%S')} {len(paths)} changed path{plural} ({example}): re-indexing"


def format_fold(name: str, seconds: float) -> str:
    """One line when a quiet tree's new rows have been folded into the indexes."""
    return f"{time.strftime('%H:%M:%S')} folded {name}'s new rows into its indexes; {seconds:.1f}s"


def format_run(report: IndexReport) -> str:
    """One line when a re-index is done."""
    return (
        f"{time.strftime('%H:%M:%S')} re-indexed {report.name}: {report.added} added, {report.changed} changed, "
        f"{report.deleted} deleted; {report.embedded} texts embedded; {report.timings.get('total', 0.0):.1f}s"
    )
