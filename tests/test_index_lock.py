"""One index run per repo, across processes: the lock in the index, and keys that can't duplicate.

Real LanceDB, real processes and signals: the lock is tested the way two machines sharing one
`CODEQA_LANCEDB_URI` would use it (each process its own connection), never with threads.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest

from codeqa.store import create_tables, lease, registry, schema
from codeqa.store.connection import connect, open_or_create_table
from codeqa.store.rows import prepare_row
from conftest import ROOT, SAMPLE_REPO
from codeqa.store.lease import IndexBusyError, RepoLock
from codeqa.core.records import RepoInfo

pytestmark = pytest.mark.integration

DIM = 4


def run_python(code: str, *args: str) -> subprocess.Popen:
    """A separate Python process running `code` with the project on its path."""
    return subprocess.Popen([sys.executable, "-c", f"import sys\n{code}", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def tiny_repo(db_dir: Path) -> RepoInfo:
    """A registered repo with empty tables of 4-d vectors (no embedding model needed)."""
    db = lancedb.connect(str(db_dir))
    info = RepoInfo(name="tiny", root="/nowhere", prefix=registry.new_generation_prefix("tiny"),
                    embedding_model="test", embedding_dim=DIM, created_at=0.0, indexed_at=1.0)
    registry.save_repo(db, info)
    create_tables.RepoTables(db, info)
    return info


WRITER = """
import json, time, lancedb
from codeqa.store import create_tables, lease, registry, schema
from codeqa.store.connection import connect, open_or_create_table
from codeqa.store.rows import prepare_row
from codeqa.core.records import ManifestEntry, RepoInfo
db_dir, start = sys.argv[1], float(sys.argv[2])
db = lancedb.connect(db_dir)
tables = create_tables.RepoTables(db, registry.get_repo(db, "tiny"))
rows = [prepare_row({
    "id": f"{path}-{i}", "repo": "tiny", "file_path": path, "language": "python", "kind": "function",
    "name": f"f{i}", "qualified_name": f"f{i}", "signature": "", "doc": "", "code": "pass",
    "start_line": i, "end_line": i, "parent": None, "file_hash": "h", "role": "source", "vector": [0.5] * 4})
    for path in ("a.py", "b.py") for i in range(25)]
entries = [ManifestEntry(file_path=p, sha256="h", language="python", size=1, mtime_ns=0,
                         non_utf8=False, has_errors=False, parsed="", bindings="") for p in ("a.py", "b.py")]
while time.time() < start:
    time.sleep(0.001)
tables.replace_files(entries, {"methods": rows})
print("ok")
"""


def test_concurrent_writers_can_never_duplicate_a_row(tmp_path):
    """Even without the lock, four processes writing the same files at once leave one row per id:
    the tables declare their keys, so LanceDB's commit makes the later writers retry."""
    info = tiny_repo(tmp_path / "db")
    start = time.time() + 3  # all four are connected and waiting before the first writes
    writers = [run_python(WRITER, str(tmp_path / "db"), str(start)) for _ in range(4)]
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    db = lancedb.connect(str(tmp_path / "db"))
    for kind, key in (("methods", "id"), ("files", "file_path")):
        keys = registry.open_table(db, info, kind).to_arrow()[key].to_pylist()
        assert len(keys) == len(set(keys)) and len(keys) == {"methods": 50, "files": 2}[kind]


ACQUIRE = """
import lancedb, time
from codeqa.store.lease import IndexBusyError, RepoLock
db_dir, start = sys.argv[1], float(sys.argv[2])
lock = RepoLock(lancedb.connect(db_dir), "shared", "index")
while time.time() < start:
    time.sleep(0.001)
try:
    lock.acquire(wait=0)
except IndexBusyError as exc:
    print("busy:", exc)
    sys.exit(75)
print("held")
sys.stdout.flush()
time.sleep(float(sys.argv[3]))
lock.release()
"""


def test_of_processes_racing_for_a_lock_exactly_one_wins(tmp_path):
    start = time.time() + 3
    racers = [run_python(ACQUIRE, str(tmp_path / "db"), str(start), "600") for _ in range(5)]
    try:
        first_lines = [racer.stdout.readline().strip() for racer in racers]  # the winner holds on
        assert first_lines.count("held") == 1, first_lines
        losers = [(racer, line) for racer, line in zip(racers, first_lines) if line != "held"]
        assert all(racer.wait(timeout=120) == 75 for racer, _ in losers)
        assert all(line.startswith("busy: shared is being indexed by another run (pid ") for _, line in losers), first_lines
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()


def test_a_lock_left_by_a_killed_process_is_taken_over_at_once(tmp_path):
    holder = run_python(ACQUIRE, str(tmp_path / "db"), "0", "600")
    assert holder.stdout.readline().strip() == "held"
    db = lancedb.connect(str(tmp_path / "db"))
    with pytest.raises(IndexBusyError, match=f"pid {holder.pid} on {socket.gethostname()}"):
        RepoLock(db, "shared", "index").acquire(wait=0)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert lease.holder(db, "shared") is None  # the row is still there, but its process is gone
    with RepoLock(db, "shared", "index").held(wait=0):
        assert lease.holder(db, "shared").pid == os.getpid()


def test_tables_a_killed_first_run_left_half_created_are_created_again(tmp_path):
    """`kill -9` while the first run creates the lock or registry table leaves the table's folder
    with no version: listed, but never openable. The next run must not fail on it."""
    for table in (schema.LOCK_TABLE, schema.REGISTRY_TABLE):
        (tmp_path / "db" / f"{table}.lance" / "_versions").mkdir(parents=True)
    db = lancedb.connect(str(tmp_path / "db"))
    with pytest.raises(ValueError, match="was not found"):
        db.open_table(schema.LOCK_TABLE)
    with RepoLock(db, "shared", "index").held(wait=0):
        assert lease.holder(db, "shared").pid == os.getpid()
        tiny_repo(tmp_path / "db")
    assert [repo.name for repo in registry.list_repos(db)] == ["tiny"]


def plant_lock(db, host: str, heartbeat_age: float, purpose: str = "rebuild") -> None:
    """A lock row as a run on another machine would have written it."""
    now = time.time()
    table = open_or_create_table(db, schema.LOCK_TABLE, schema.LOCK_SCHEMA)
    table.add(pa.Table.from_pylist([{
        "name": "shared", "owner": "other-machine", "purpose": purpose, "host": host, "pid": 1,
        "process_started": 0.0, "acquired_at": now - heartbeat_age - 5, "heartbeat_at": now - heartbeat_age,
        "beat": 7}], schema=schema.LOCK_SCHEMA))


def test_another_machines_lock_holds_until_its_lease_runs_out(tmp_path):
    db = lancedb.connect(str(tmp_path / "db"))
    plant_lock(db, "build-2", heartbeat_age=5)
    with pytest.raises(IndexBusyError) as busy:
        RepoLock(db, "shared", "index").acquire(wait=0)
    assert str(busy.value).startswith("shared is being re-indexed by another run (pid 1 on build-2, for 10 s)")
    assert busy.value.exit_code == 75 and busy.value.http_status == 409
    assert lease.holder(db, "shared").host == "build-2"

    open_or_create_table(db, schema.LOCK_TABLE, schema.LOCK_SCHEMA).delete("name = 'shared'")
    plant_lock(db, "build-2", heartbeat_age=lease.LEASE_SECONDS + 1)
    with RepoLock(db, "shared", "index").held(wait=0):
        assert lease.holder(db, "shared").host == socket.gethostname()


def test_a_run_whose_lock_was_taken_over_stops(tmp_path):
    db = lancedb.connect(str(tmp_path / "db"))
    lock = RepoLock(db, "shared", "index", lease=0.4)  # heartbeats every 0.1 s
    lock.acquire()
    lock.check()
    open_or_create_table(db, schema.LOCK_TABLE, schema.LOCK_SCHEMA).update(where="name = 'shared'", values={"owner": "someone-else"})
    assert lock._lost.wait(timeout=30)
    with pytest.raises(lease.LockLostError, match="took over the index lock of 'shared'"):
        lock.check()
    lock.release()
    assert lease._read(open_or_create_table(db, schema.LOCK_TABLE, schema.LOCK_SCHEMA), "shared").owner == "someone-else"  # not ours to delete


# --- Two real index runs at once, through the CLI ------------------------------------------------

def index_cli(data_dir: Path, repo: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "CODEQA_WRITE_BATCH": "3"}
    return subprocess.Popen([sys.executable, str(ROOT / "preprocessing.py"), "index", str(repo), "--name", "shop",
                             "--no-progress", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def stored_ids(data_dir: Path) -> dict[str, Counter]:
    from codeqa.core.config import Settings

    db = connect(Settings(data_dir=data_dir))
    info = registry.get_repo(db, "shop")
    return {kind: Counter(registry.open_table(db, info, kind).to_arrow()[key].to_pylist())
            for kind, key in (("methods", "id"), ("classes", "id"), ("files", "file_path"))}


def test_two_index_runs_started_together_never_duplicate(tmp_path):
    data = tmp_path / "data"
    first, second = index_cli(data, SAMPLE_REPO), index_cli(data, SAMPLE_REPO)
    results = sorted((run.wait(timeout=600), run.stdout.read(), run.stderr.read()) for run in (first, second))
    (ok, out, _), (busy, _, err) = results
    assert (ok, busy) == (0, 75), results
    assert "Indexed shop" in out
    assert err.startswith("error: shop is being indexed by another run (pid ") and "--wait" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    counts = stored_ids(data)
    assert all(max(ids.values()) == 1 for ids in counts.values()), counts

    # With --wait, both finish: the second one after the first, as an incremental run.
    first, second = index_cli(data, SAMPLE_REPO, "--wait", "600"), index_cli(data, SAMPLE_REPO, "--wait", "600")
    for run in (first, second):
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
    assert stored_ids(data) == counts


def test_rebuild_and_remove_respect_the_lock(tmp_path, sample_copy):
    data = tmp_path / "data"
    assert index_cli(data, sample_copy).wait(timeout=600) == 0
    holder = run_python(ACQUIRE.replace('"shared"', '"shop"'), str(data / "lancedb"), "0", "600")
    assert holder.stdout.readline().strip() == "held"
    try:
        rebuild = index_cli(data, sample_copy, "--rebuild")
        assert rebuild.wait(timeout=600) == 75 and "shop is being indexed" in rebuild.stderr.read()
        env = {**os.environ, "CODEQA_DATA_DIR": str(data)}
        removed = subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), "remove", "shop"], env=env,
                                 capture_output=True, text=True, timeout=600)
        assert removed.returncode == 75 and "being indexed" in removed.stderr
    finally:
        holder.kill()
        holder.wait()
    assert json.loads(json.dumps(stored_ids(data)["files"]))  # still indexed and readable


def test_an_index_of_an_earlier_layout_is_rebuilt_into_a_keyed_generation(settings, sample_copy):
    """Tables an earlier version wrote (no declared keys, no layout version in the registry) are
    replaced by a new generation with keys: same rows, old tables dropped."""
    from codeqa.indexing.indexer import index_repo

    index_repo(sample_copy, settings, name="old", progress=False)
    db = connect(settings)
    info = registry.get_repo(db, "old")
    names = [registry.table_name(info, kind) for kind in schema.TABLE_KINDS]
    before = stored_rows(db, info)
    for name in [*names, schema.REGISTRY_TABLE]:  # as an earlier version wrote them: no keys
        data = db.open_table(name).to_arrow()
        if name == schema.REGISTRY_TABLE:
            data = data.drop_columns(["index_version"])
        db.create_table(name, data=data.cast(pa.schema([pa.field(f.name, f.type) for f in data.schema])),
                        mode="overwrite")
    assert registry.get_repo(db, "old").index_version == 1

    report = index_repo(sample_copy, settings, name="old", progress=False)
    rebuilt = registry.get_repo(db, "old")
    assert rebuilt.prefix != info.prefix and rebuilt.index_version == schema.INDEX_VERSION
    assert any("re-indexing it from scratch" in notice for notice in report.notices)
    for kind, key in (("methods", "id"), ("classes", "id"), ("modules", "id"), ("files", "file_path")):
        assert schema.has_primary_key(registry.open_table(db, rebuilt, kind).schema, key)
    assert schema.has_primary_key(db.open_table(schema.REGISTRY_TABLE).schema, "name")
    assert stored_rows(db, rebuilt) == before
    assert registry.repo_table_names(db, "old").isdisjoint(names)


def stored_rows(db, info: RepoInfo) -> dict[str, list]:
    return {kind: sorted(registry.open_table(db, info, kind).to_arrow().drop_columns(["vector"]).to_pylist()
                         if kind != "files" else registry.open_table(db, info, kind).to_arrow()
                         .drop_columns(["mtime_ns"]).to_pylist(),
                         key=lambda row: row.get("id") or row["file_path"])
            for kind in schema.TABLE_KINDS}
