"""One writer per repo at a time, across processes and machines: a lease kept in the index itself.

A lock file on one machine cannot stop a second machine that indexes into the same
`CODEQA_LANCEDB_URI` (object storage, a shared volume). So the lock lives where the index
lives: one row per repo in the `codeqa_locks` table of the same LanceDB database, written
only with LanceDB's atomic commits:

- acquire: a merge-insert that inserts the row only if the repo has none. The table declares
  `name` its primary key, so two processes inserting at once conflict at commit; the later
  one retries against the winner's row and inserts nothing (`num_inserted_rows == 0`).
- heartbeat: every `lease / 4` seconds the holder rewrites its row, on the condition that it
  still holds it (`target.owner = me`); 0 rows updated means another run took the lock over.
- takeover of a stale lock: a conditional update that matches the exact row seen stale
  (owner and heartbeat counter), so of several runs taking over at once exactly one wins.
  A lock is stale when its holder ran on this host and that process is gone (a `kill -9`:
  taken over at once), or when its last heartbeat is older than the lease (another host;
  this needs clocks that agree to within the lease, which NTP gives).
- release: delete the row if it is still ours.

This works wherever LanceDB's commits are atomic (a local disk, NFS, S3 with conditional
writes, GCS, Azure). Readers never take the lock: the web app reads `holder()` only to say
that a repo is being (re-)indexed.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psutil
import pyarrow as pa

from codeqa.core.errors import CodeQAError, user_error
from codeqa.store import filters
from codeqa.store.connection import SETTLE_SECONDS, SETTLE_TRIES, open_or_create_table, table_names
from codeqa.store.schema import LOCK_SCHEMA, LOCK_TABLE

if TYPE_CHECKING:
    import lancedb

log = logging.getLogger("codeqa.lock")

LEASE_SECONDS = 60.0
POLL_SECONDS = 1.0


class IndexBusyError(CodeQAError):
    """Another run holds the repo's lock (it is being indexed, re-indexed or removed)."""

    exit_code = 75  # EX_TEMPFAIL: try again later
    http_status = 409
    code = "index_busy"


class LockLostError(CodeQAError):
    """This run's lock was taken over while it was stalled; it stops rather than write on."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds a repo's lock, as its row says."""

    name: str
    owner: str
    purpose: str
    host: str
    pid: int
    process_started: float
    acquired_at: float
    heartbeat_at: float
    beat: int

    def is_stale(self, now: float, lease: float) -> bool:
        """Its holder is gone: a dead process on this host, or no heartbeat within the lease."""
        if self.host == socket.gethostname() and not _process_alive(self.pid, self.process_started):
            return True
        return now - self.heartbeat_at > lease

    @property
    def activity(self) -> str:
        """What the holder is doing, for messages: `being re-indexed`."""
        return {"index": "being indexed", "rebuild": "being re-indexed", "remove": "being removed"}.get(
            self.purpose, "locked"
        )

    def describe(self, now: float) -> str:
        """For messages: `pid 4242 on build-1, for 12 s`."""
        return f"pid {self.pid} on {self.host}, for {max(0.0, now - self.acquired_at):.0f} s"


def _process_alive(pid: int, started: float) -> bool:
    try:
        return abs(psutil.Process(pid).create_time() - started) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def _read(table, name: str) -> LockHolder | None:
    table.checkout_latest()
    rows = table.search().where(filters.equals("name", name)).limit(None).to_list()
    return LockHolder(**{field: rows[0][field] for field in LOCK_SCHEMA.names}) if rows else None


def holder(db: lancedb.DBConnection, name: str) -> LockHolder | None:
    """The live holder of a repo's lock, if any (a stale lock counts as none)."""
    if LOCK_TABLE not in table_names(db):
        return None
    found = _read(db.open_table(LOCK_TABLE), name)
    return found if found is not None and not found.is_stale(time.time(), LEASE_SECONDS) else None


def _is_commit_conflict(exc: Exception) -> bool:
    """LanceDB gave up resolving a concurrent commit: another writer won this round."""
    text = str(exc).lower()
    return "conflict" in text or "concurrent" in text


class RepoLock:
    """The lock of one repo for one run: `with RepoLock(db, name, "index").held(wait=30): ...`.

    While held, a daemon thread renews the lease; the run calls `check()` between steps, which
    raises `LockLostError` if another run took the lock over (possible only after this process
    stalled for longer than the lease)."""

    def __init__(self, db: lancedb.DBConnection, name: str, purpose: str, lease: float = LEASE_SECONDS) -> None:
        self.db = db
        self.name = name
        self.purpose = purpose
        self.lease = lease
        self.owner = uuid.uuid4().hex
        self._beat = 0
        self._acquired_at = 0.0
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread: threading.Thread | None = None
        self._table: Any = None  # the lock table, opened by acquire()

    @contextmanager
    def held(self, wait: float = 0.0) -> Iterator[RepoLock]:
        self.acquire(wait)
        try:
            yield self
        finally:
            self.release()

    def acquire(self, wait: float = 0.0) -> None:
        """Take the lock, waiting up to `wait` seconds for another run to finish; else
        `IndexBusyError` naming the holder."""
        self._table = open_or_create_table(self.db, LOCK_TABLE, LOCK_SCHEMA)
        deadline = time.monotonic() + max(0.0, wait)
        settle = 0
        while True:
            current = _read(self._table, self.name)
            if self._try_take(current):
                break
            winner = _read(self._table, self.name)
            if winner is None and settle < SETTLE_TRIES:
                # Lost a race yet no holder is visible (it released, or its commit is not in
                # view yet): the lock may be free, so try again rather than report it busy.
                settle += 1
                time.sleep(SETTLE_SECONDS)
                continue
            if time.monotonic() >= deadline:
                raise self._busy(winner)
            time.sleep(POLL_SECONDS)
        self._thread = threading.Thread(target=self._heartbeat, name=f"codeqa-lock-{self.name}", daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Raise `LockLostError` if the lock was taken over (the run must stop writing)."""
        if self._lost.is_set():
            raise LockLostError(
                f"Another run took over the index lock of {self.name!r} while this one was stalled "
                f"(no heartbeat for over {self.lease:g} s), so this run stopped; the index is "
                "consistent: rerun to finish."
            )

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._table is not None and not self._lost.is_set():
            try:
                self._table.delete(
                    filters.all_of(filters.equals("name", self.name), filters.equals("owner", self.owner))
                )
            except Exception as exc:  # noqa: BLE001 - a lock left behind goes stale; never mask the run's own error
                _warn(f"could not release the index lock of {self.name}", exc)

    # --- steps ------------------------------------------------------------------------------

    def _row(self, now: float) -> pa.Table:
        me = psutil.Process()
        return pa.Table.from_pylist(
            [
                {
                    "name": self.name,
                    "owner": self.owner,
                    "purpose": self.purpose,
                    "host": socket.gethostname(),
                    "pid": os.getpid(),
                    "process_started": me.create_time(),
                    "acquired_at": self._acquired_at or now,
                    "heartbeat_at": now,
                    "beat": self._beat,
                }
            ],
            schema=LOCK_SCHEMA,
        )

    def _try_take(self, current: LockHolder | None) -> bool:
        """One attempt: insert if free, take over if stale; False if someone else holds it."""
        now = time.time()
        try:
            if current is None:
                result = self._table.merge_insert("name").when_not_matched_insert_all().execute(self._row(now))
                taken = result.num_inserted_rows == 1
            elif current.is_stale(now, self.lease):
                self._beat = current.beat + 1
                result = (
                    self._table.merge_insert("name")
                    .when_matched_update_all(
                        where=filters.all_of(
                            filters.equals("target.owner", current.owner), filters.equals("target.beat", current.beat)
                        )
                    )
                    .execute(self._row(now))
                )
                taken = result.num_updated_rows == 1
                if taken:
                    log.warning(
                        "took over the stale index lock of %s from %s (last heartbeat %.0f s ago)",
                        self.name,
                        current.describe(now),
                        now - current.heartbeat_at,
                    )
            else:
                return False
        except (RuntimeError, OSError, ValueError) as exc:
            if not _is_commit_conflict(exc):
                raise
            return False
        if taken:
            self._acquired_at = now
        return taken

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lease / 4):
            now = time.time()
            self._beat += 1
            try:
                result = (
                    self._table.merge_insert("name")
                    .when_matched_update_all(where=filters.equals("target.owner", self.owner))
                    .execute(self._row(now))
                )
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried; the lease allows several
                _warn(f"index lock heartbeat of {self.name} failed", exc)
                continue
            if result.num_updated_rows == 0:
                self._lost.set()
                return

    def _busy(self, current: LockHolder | None) -> IndexBusyError:
        if current is None:  # it was released between our attempt and this message
            return IndexBusyError(f"{self.name} was locked by another run a moment ago; try again.")
        return IndexBusyError(
            f"{self.name} is {current.activity} by another run ({current.describe(time.time())}); "
            "wait for it to finish, or pass --wait SECONDS."
        )


def _warn(what: str, exc: BaseException) -> None:
    """Log a lock step that failed: in one line when the disk refused (full, read-only), which
    the user can act on; with the traceback otherwise, which is a bug."""
    reason = user_error(exc)
    if reason is not None:
        log.warning("%s: %s", what, reason)
    else:
        log.warning("%s", what, exc_info=exc)
