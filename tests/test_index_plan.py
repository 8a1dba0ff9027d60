"""The index plan as pure logic: which files are read, added, changed, deleted or left alone."""

from __future__ import annotations

import hashlib

import pytest

from codeqa.indexing.index_plan import plan_index, recorded_mtime
from codeqa.core.records import FileState
from codeqa.parsing.repo_files import RACY_NS, FoundFile, SourceFile

pytestmark = pytest.mark.unit

NOW = 1_800_000_000 * 10**9
OLD = NOW - 3600 * 10**9  # an hour before the walk: old enough to trust


def found(path: str, size: int = 10, mtime_ns: int = OLD) -> FoundFile:
    return FoundFile(path, f"/repo/{path}", "python", size, mtime_ns)


def entry(path: str, content: str, size: int = 10, mtime_ns: int = OLD, non_utf8: bool = False) -> FileState:
    return FileState(path, sha(content), "python", size, mtime_ns, non_utf8, False)


def sha(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


class Disk:
    """The files' contents as `read` sees them; remembers which files were read."""

    def __init__(self, contents: dict[str, str | None], non_utf8: frozenset[str] = frozenset()) -> None:
        self.contents = contents
        self.non_utf8 = non_utf8
        self.read: list[str] = []

    def __call__(self, file: FoundFile) -> SourceFile | None:
        self.read.append(file.path)
        content = self.contents[file.path]
        if content is None:  # e.g. binary: the content rules it out
            return None
        return SourceFile(file.path, file.abs_path, file.language, file.size, file.mtime_ns, sha(content),
                          file.path in self.non_utf8, text=content)


def paths(files) -> list[str]:
    return [f.path for f in files]


def test_first_run_reads_and_adds_everything_in_path_order() -> None:
    disk = Disk({"b.py": "b", "a.py": "a"})
    plan = plan_index([found("b.py"), found("a.py")], {}, set(), disk, NOW)
    assert paths(plan.add) == ["b.py", "a.py"] and paths(plan.to_write) == ["a.py", "b.py"]
    assert (plan.change, plan.delete, plan.unchanged, plan.restat) == ((), (), (), ())
    assert sorted(disk.read) == ["a.py", "b.py"] and plan.writes


def test_matching_size_and_mtime_is_unchanged_without_reading() -> None:
    disk = Disk({"a.py": "edited but same stat"})
    plan = plan_index([found("a.py")], {"a.py": entry("a.py", "a")}, {"a.py"}, disk, NOW)
    assert disk.read == [] and paths(plan.unchanged) == ["a.py"]
    assert not plan.writes and plan.restat == ()


@pytest.mark.parametrize("file", [found("a.py", size=11), found("a.py", mtime_ns=OLD + 1)])
def test_a_different_stat_is_read_and_its_hash_decides(file: FoundFile) -> None:
    changed = Disk({"a.py": "new"})
    plan = plan_index([file], {"a.py": entry("a.py", "old")}, set(), changed, NOW)
    assert changed.read == ["a.py"] and paths(plan.change) == ["a.py"] and plan.add == ()
    same = Disk({"a.py": "old"})
    plan = plan_index([file], {"a.py": entry("a.py", "old")}, set(), same, NOW)
    assert paths(plan.unchanged) == ["a.py"] and not plan.writes
    # The manifest learns the new stat, so the file is not read again next run.
    assert [(e.size, e.mtime_ns) for e in plan.restat] == [(file.size, file.mtime_ns)]


def test_manifest_without_mtime_is_hashed_once_and_restated() -> None:
    disk = Disk({"a.py": "a"})
    plan = plan_index([found("a.py")], {"a.py": entry("a.py", "a", mtime_ns=0)}, set(), disk, NOW)
    assert disk.read == ["a.py"] and paths(plan.unchanged) == ["a.py"]
    assert [e.mtime_ns for e in plan.restat] == [OLD]


def test_racy_files_are_recorded_without_mtime() -> None:
    assert recorded_mtime(OLD, NOW) == OLD
    assert recorded_mtime(NOW - RACY_NS // 2, NOW) == 0
    recent = found("a.py", mtime_ns=NOW - 1)
    plan = plan_index([recent], {"a.py": entry("a.py", "a", mtime_ns=0)}, set(), Disk({"a.py": "a"}), NOW)
    assert plan.restat == ()  # nothing new to record: it stays 0 and is hashed again next run


def test_deletes_cover_vanished_files_unreadable_files_and_leftover_rows() -> None:
    manifest = {"gone.py": entry("gone.py", "g"), "binary.py": entry("binary.py", "b"),
                "kept.py": entry("kept.py", "k")}
    disk = Disk({"binary.py": None, "kept.py": "k"})
    plan = plan_index([found("binary.py", size=99), found("kept.py")], manifest,
                      {"gone.py", "crashed.py"}, disk, NOW)
    assert plan.delete == ("binary.py", "crashed.py", "gone.py")
    assert plan.deleted_from_manifest == 2  # crashed.py left rows but was never in the manifest
    assert paths(plan.current) == ["kept.py"] and disk.read == ["binary.py"]


def test_non_utf8_counts_read_files_and_trusted_manifest_entries() -> None:
    manifest = {"old.py": entry("old.py", "o", non_utf8=True), "new.py": entry("new.py", "n", size=1)}
    disk = Disk({"new.py": "n2", "added.py": "x"}, non_utf8=frozenset({"new.py"}))
    plan = plan_index([found("old.py"), found("new.py"), found("added.py")], manifest, set(), disk, NOW)
    assert plan.non_utf8 == 2
    assert (paths(plan.add), paths(plan.change), paths(plan.unchanged)) == (["added.py"], ["new.py"], ["old.py"])
