"""Index runs as background jobs of a long-lived process (the MCP server): start one and get its
id at once, read how far it is, wait for it, cancel it; and, on request, keep repos live.

A job is the ordinary `indexer.index_repo` run in a thread of this process, so everything the
CLI guarantees holds here too: one run per repo at a time across processes (the lease in the
index: a run of the CLI, or of another server, is waited for and shown as such), crash-safe
writes, incremental plans. On top of that:

- One job per repo in this process. Asking again while one runs does not start a second: if
  its run has already walked the tree it runs once more when done (files changed since), else
  the run still to come sees them anyway. `Ticket`s say which run an asker must wait for.
- One run at a time in this process (`_slot`): on a laptop's few cores two embedding runs
  would each go at half speed, and a search waits behind both.
- A job's thread works at a lower CPU priority (`CODEQA_BACKGROUND_NICENESS`), so the same
  process's searches go first.
- Cancelling (a remove, the server shutting down) stops a run at its next file or batch, as
  if it had been killed there: the next run repairs and finishes it.
- A watched repo's refresh runs leave their new rows outside the tables' indexes (searched flat
  beside them, so the run is searchable sooner: on a large repo folding is half a one-file
  run), and its watcher folds them in, in the run slot, once the tree has been quiet for
  `FOLD_AFTER_S` and no run of the repo is under way.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from codeqa.core.config import Settings
from codeqa.core.errors import user_error
from codeqa.core.servers import yield_thread_cpu
from codeqa.indexing.indexer import (
    EMBEDDING,
    PARSING,
    REFERENCES,
    SEARCHABLE,
    WALKING,
    IndexReport,
    fold_indexes,
    index_repo,
)
from codeqa.indexing.live_index import FOLD_AFTER_S, PendingWalk, change_bursts
from codeqa.store import lease
from codeqa.store.lease import IndexBusyError

if TYPE_CHECKING:
    import lancedb

log = logging.getLogger("codeqa.jobs")

LOCK_POLL_S = 2.0  # how often a job waiting for another process's run tries the lock again
QUEUED, WAITING, DONE, FAILED, CANCELLED = "queued", "waiting", "done", "failed", "cancelled"
ENDED = (DONE, FAILED, CANCELLED)
# How far a run is, in percent, when each stage starts; parsing and embedding move on by their
# counts to the next stage's mark. Progress only grows, as MCP's progress notifications must.
STAGE_PERCENT = {QUEUED: 0, WAITING: 0, WALKING: 1, PARSING: 2, REFERENCES: 50, SEARCHABLE: 55, EMBEDDING: 55}


class JobCancelled(Exception):
    """Raised inside a cancelled job's run, at its next step, to stop it."""


@dataclass(frozen=True)
class JobStatus:
    """A snapshot of one job: what it is doing now and what its runs did."""

    id: int
    name: str
    root: str
    kind: str  # "index" (asked to index) or "refresh" (asked to bring up to date)
    phase: str  # queued, waiting, walking, parsing, references, searchable, embedding, done, failed, cancelled
    run: int  # the run under way (or the last one), from 1
    done: int  # of the current stage's total (files parsed, rows embedded)
    total: int
    searchable_runs: int  # runs that reached the point where search sees their changes
    finished_runs: int
    again: bool  # another run is due when this one ends (changes came in after its walk)
    started_at: float
    finished_at: float | None
    waiting_for: str | None  # the run this one waits for (queued or waiting), in words
    error: str | None
    last_report: IndexReport | None

    @property
    def active(self) -> bool:
        return self.phase not in ENDED

    @property
    def percent(self) -> int:
        """How far the current run is, 0–100 (100 once the job is done)."""
        if self.phase == DONE:
            return 100
        start = STAGE_PERCENT.get(self.phase, 0)
        if self.phase in (PARSING, EMBEDDING) and self.total:
            end = STAGE_PERCENT[REFERENCES] if self.phase == PARSING else 100
            return min(99, start + (end - start) * self.done // self.total)
        return start

    def describe(self) -> str:
        """The current phase in a few words: `parsing 120/300 files`."""
        if self.phase == QUEUED:
            return f"queued behind {self.waiting_for}" if self.waiting_for else "starting"
        if self.phase == WAITING:
            holder = f" ({self.waiting_for})" if self.waiting_for else ""
            return f"waiting for another process's run of {self.name} to finish{holder}"
        if self.phase == PARSING:
            return f"parsing {self.done:,}/{self.total:,} changed files"
        if self.phase == EMBEDDING:
            return f"embedding {self.done:,}/{self.total:,} rows (searchable by text meanwhile)"
        if self.phase == REFERENCES:
            return "resolving references"
        if self.phase in (FAILED, CANCELLED) and self.error:
            return f"{self.phase}: {self.error}"
        return self.phase


@dataclass(frozen=True)
class Ticket:
    """Which run of a job will see the files as they are now: wait for that run."""

    job: int
    run: int
    joined: bool  # the job was under way already

    def searchable(self, status: JobStatus) -> bool:
        """Search sees the files as they were when the ticket was taken (or the job ended)."""
        return status.id != self.job or status.searchable_runs >= self.run or not status.active

    def finished(self, status: JobStatus) -> bool:
        return status.id != self.job or status.finished_runs >= self.run or not status.active


class _Job:
    """One job's state, shared by its thread (which writes) and askers (who read snapshots)."""

    def __init__(self, id: int, name: str, root: Path, kind: str) -> None:
        self.changed = threading.Condition()
        self.cancelled = threading.Event()
        self.status = JobStatus(
            id=id,
            name=name,
            root=str(root),
            kind=kind,
            phase=QUEUED,
            run=1,
            done=0,
            total=0,
            searchable_runs=0,
            finished_runs=0,
            again=False,
            started_at=time.time(),
            finished_at=None,
            waiting_for=None,
            error=None,
            last_report=None,
        )
        self.thread: threading.Thread | None = None

    def update(self, **changes: object) -> None:
        with self.changed:
            self.status = replace(self.status, **changes)  # type: ignore[arg-type]
            self.changed.notify_all()

    def on_progress(self, stage: str, done: int, total: int) -> None:
        """The run's listener: record the stage; stop the run here if the job was cancelled."""
        if self.cancelled.is_set():
            raise JobCancelled
        if stage == SEARCHABLE:
            self.update(phase=stage, done=done, total=total, searchable_runs=self.status.run)
        else:
            self.update(phase=stage, done=done, total=total, waiting_for=None)

    def ticket(self) -> Ticket:
        """Join this job: the run that will see the files as they are now (asking for one more
        run if the current one has walked the tree already)."""
        with self.changed:
            status = self.status
            walked = status.phase not in (QUEUED, WAITING)
            if walked and not status.again:
                self.update(again=True)
            return Ticket(status.id, status.run + 1 if walked else status.run, joined=True)


class IndexJobs:
    """The index jobs of one process, one per repo (see the module docstring)."""

    fold_after_s = FOLD_AFTER_S

    def __init__(self, settings: Settings, db: lancedb.DBConnection, watch: bool = False) -> None:
        self.settings = settings
        self.db = db
        self.watching = watch
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}  # the latest job of each repo, by name
        self._ids = itertools.count(1)
        self._slot = threading.Semaphore(1)
        self._slot_user = ""  # what holds the slot, in words, for those queued behind it
        self._watchers: dict[str, threading.Event] = {}  # repo name → its watcher's stop event
        self._trees: dict[str, PendingWalk] = {}  # repo name → what its watcher saw change
        self._unfolded: dict[str, float] = {}  # repo name → when its last run that left rows unfolded ended
        self._closed = threading.Event()

    # --- asking ---------------------------------------------------------------------------------

    def start(self, root: Path, name: str, kind: str) -> tuple[JobStatus, Ticket]:
        """Index `root` as `name` in the background (or join the job already doing it): the job's
        status now, and the ticket of the run that will see the files as they are now."""
        with self._lock:
            job = self._jobs.get(name)
            if job is not None and job.status.active:
                return job.status, job.ticket()
            job = _Job(next(self._ids), name, root, kind)
            self._jobs[name] = job
            job.thread = threading.Thread(target=self._work, args=(job,), name=f"codeqa-index-{name}", daemon=True)
            job.thread.start()
            return job.status, Ticket(job.status.id, 1, joined=False)

    def status(self, name: str) -> JobStatus | None:
        """The latest job of a repo in this process, if it had one."""
        job = self._jobs.get(name)
        return job.status if job is not None else None

    def tree(self, name: str) -> PendingWalk | None:
        """The walk a watcher of the repo keeps, while one watches it."""
        return self._trees.get(name)

    def name_of(self, root: Path) -> str | None:
        """The name a job of this process indexes `root` under (it may not be registered yet)."""
        with self._lock:
            return next((name for name, job in self._jobs.items() if job.status.root == str(root)), None)

    def wait(
        self, name: str, ready: Callable[[JobStatus], bool], timeout: float, on_change: Callable[[JobStatus], None]
    ) -> JobStatus | None:
        """Wait up to `timeout` seconds until the repo's job is `ready` (or has ended), calling
        `on_change` with each new status meanwhile; the last status seen."""
        job = self._jobs.get(name)
        if job is None:
            return None
        deadline = time.monotonic() + timeout
        with job.changed:
            seen = job.status
        while not ready(seen) and seen.active:
            if not self._next_status(job, seen, deadline - time.monotonic()):
                break  # the time is up
            seen = job.status
            on_change(seen)
        return seen

    @staticmethod
    def _next_status(job: _Job, seen: JobStatus, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the job's status to move on from `seen`."""
        with job.changed:
            return job.changed.wait_for(lambda: job.status is not seen, max(0.0, timeout))

    def cancel(self, name: str, timeout: float) -> bool:
        """Stop the repo's job, if one runs, and wait up to `timeout` seconds for its thread to
        let go of the repo: False if it has not yet."""
        job = self._jobs.get(name)
        if job is None or job.thread is None:
            return True
        job.cancelled.set()
        job.thread.join(timeout)
        return not job.thread.is_alive()

    def forget(self, name: str) -> None:
        """Drop a removed repo: its last job and its watcher."""
        with self._lock:
            self._jobs.pop(name, None)
            stop = self._watchers.pop(name, None)
            self._trees.pop(name, None)
            self._unfolded.pop(name, None)
        if stop is not None:
            stop.set()

    def close(self, timeout: float = 10.0) -> None:
        """Stop every job and watcher (the process is going away); runs stop at their next step."""
        self._closed.set()
        with self._lock:
            jobs = list(self._jobs.values())
            for stop in self._watchers.values():
                stop.set()
        for job in jobs:
            job.cancelled.set()
        deadline = time.monotonic() + timeout
        for job in jobs:
            if job.thread is not None:
                job.thread.join(max(0.0, deadline - time.monotonic()))

    # --- the job's thread -----------------------------------------------------------------------

    def _work(self, job: _Job) -> None:
        """Run the job's runs (one, plus one more each time changes came in after a walk)."""
        yield_thread_cpu(self.settings.background_niceness)
        try:
            while True:
                fold = self._folds_in_run(job)
                report = self._run_once(job, fold)
                with self._lock:
                    if fold:
                        self._unfolded.pop(job.status.name, None)
                    else:
                        self._unfolded[job.status.name] = time.monotonic()
                with job.changed:
                    again = job.status.again
                    job.update(
                        finished_runs=job.status.run,
                        last_report=report,
                        again=False,
                        run=job.status.run + int(again),
                        phase=QUEUED if again else DONE,
                        finished_at=None if again else time.time(),
                    )
                if not again:
                    break
        except JobCancelled:
            job.update(phase=CANCELLED, error="stopped before it finished", finished_at=time.time())
            return
        except Exception as exc:
            problem = user_error(exc)
            if problem is None:
                log.exception("index job %s of %s failed", job.status.id, job.status.name)
            message = str(problem) if problem is not None else "internal error: the server log has the details"
            job.update(phase=FAILED, error=message, finished_at=time.time())
            return
        if self.watching:
            self.watch(job.status.name, Path(job.status.root))

    def _folds_in_run(self, job: _Job) -> bool:
        """Whether the job's run folds its new rows into the indexes: all but a watched repo's
        refreshes, whose watcher folds once the tree is quiet."""
        return job.status.kind != "refresh" or job.status.name not in self._trees

    def _run_once(self, job: _Job, fold: bool) -> IndexReport:
        """One index run, once this process's slot and the repo's lock are free. A watched
        repo's refresh walks again only where its watcher saw changes; any other run, whole."""
        tree = self._trees.get(job.status.name)
        walk = None if tree is None else tree.walk if job.status.kind == "refresh" else tree.walk_whole
        while True:
            with self._running(job):
                try:
                    return index_repo(
                        job.status.root,
                        self.settings,
                        name=job.status.name,
                        progress=False,
                        db=self.db,
                        on_progress=job.on_progress,
                        walk=walk,
                        fold=fold,
                    )
                except IndexBusyError:  # another process's run: wait for it outside the slot
                    holder = lease.holder(self.db, job.status.name)
            job.update(phase=WAITING, waiting_for=holder.describe(time.time()) if holder else None)
            if job.cancelled.wait(LOCK_POLL_S):
                raise JobCancelled

    @contextmanager
    def _running(self, job: _Job) -> Iterator[None]:
        """Hold this process's one run slot (stopping if the job is cancelled meanwhile)."""
        if not self._slot.acquire(blocking=False):
            job.update(phase=QUEUED, waiting_for=self._slot_user)
            while not self._slot.acquire(timeout=LOCK_POLL_S):
                if job.cancelled.is_set():
                    raise JobCancelled
        self._slot_user = f"this server's run of {job.status.name}"
        try:
            if job.cancelled.is_set():
                raise JobCancelled
            yield
        finally:
            self._slot.release()

    # --- live repos -----------------------------------------------------------------------------

    def watch(self, name: str, root: Path) -> None:
        """Refresh the repo after every burst of changes under `root` (once per repo)."""
        with self._lock:
            if name in self._watchers or self._closed.is_set():
                return
            stop = self._watchers[name] = threading.Event()
            tree = self._trees[name] = PendingWalk(root, self.settings.max_file_bytes)
        threading.Thread(
            target=self._watch, args=(name, root, stop, tree), name=f"codeqa-watch-{name}", daemon=True
        ).start()

    def _watch(self, name: str, root: Path, stop: threading.Event, tree: PendingWalk) -> None:
        yield_thread_cpu(self.settings.background_niceness)  # its folds are background work too
        try:
            for burst in change_bursts(root, name, stop):
                tree.add(burst.every)
                if burst.relevant:
                    self.start(root, name, "refresh")
                elif self._fold_due(name):
                    self._fold(name)
        except Exception as exc:  # the folder went away, too many folders to watch, ...: log it, serve on
            problem = user_error(exc)
            if problem is None:
                log.exception("watching %s failed", name)
            else:
                log.warning("stopped watching %s: %s", name, problem)
        finally:
            with self._lock:
                if self._watchers.get(name) is stop:
                    del self._watchers[name]
                    self._trees.pop(name, None)

    def _fold_due(self, name: str) -> bool:
        """Whether the repo's runs left rows outside its indexes, and the tree has been quiet
        for `fold_after_s` since, with no run of it under way."""
        ended = self._unfolded.get(name)
        job = self._jobs.get(name)
        quiet = ended is not None and time.monotonic() - ended >= self.fold_after_s
        return quiet and (job is None or not job.status.active)

    def _fold(self, name: str) -> None:
        """Fold the repo's new rows into its indexes, in this process's run slot; if the slot or
        the repo's lock is taken (a run, here or in another process), at a later quiet tick."""
        if not self._slot.acquire(blocking=False):
            return
        self._slot_user = f"this server's folding of {name}'s new rows into its indexes"
        try:
            job = self._jobs.get(name)
            if job is not None and job.status.active:  # a run started meanwhile: it goes first
                return
            seconds = fold_indexes(self.settings, name, self.db)
        except IndexBusyError:
            return
        finally:
            self._slot.release()
        with self._lock:
            self._unfolded.pop(name, None)  # no run of it ended meanwhile: this thread held the slot
        log.info("folded %s's new rows into its indexes in %.1fs", name, seconds)
