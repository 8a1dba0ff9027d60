"""LiveWalk: a walk kept between a watcher's runs gives what a whole walk gives, on real trees."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path

import pytest

from codeqa.parsing.repo_files import LiveWalk, WalkReport, walk_repo

pytestmark = pytest.mark.unit

MAX_BYTES = 3_000  # small, so that "too large" comes up


def _seen(report: WalkReport) -> tuple[list[tuple], list[tuple[str, str]]]:
    """What a walk found, as comparable values: files with their metadata, skips in walk order."""
    files = [(f.path, f.language, f.size, f.mtime_ns, f.abs_path) for f in report.files]
    return files, list(report.skips)


def _reads(report: WalkReport) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]]]:
    """Every found file read as an index run reads it: its hash or None, then all the skips."""
    read = [(f.path, None if (source := report.read(f)) is None else source.sha256) for f in report.files]
    return read, list(report.skips)


def _age(root: Path, step: int) -> None:
    """Give the files and folders written just now an old mtime, one of their own for each step:
    a LiveWalk trusts only stats older than RACY_NS."""
    old = time.time_ns() - 86_400 * 10**9 + step * 10**9
    for dirpath, _, names in os.walk(root):
        for path in (*(os.path.join(dirpath, name) for name in names), dirpath):
            if os.lstat(path).st_mtime_ns > old + 10**12:
                os.utime(path, ns=(old, old), follow_symlinks=False)


def _count_scans(monkeypatch, root: Path) -> list[str]:
    """The folders (relative to `root`) that `os.scandir` lists from now on, in order."""
    scanned: list[str] = []
    original = os.scandir

    def counting(path):
        scanned.append(os.path.relpath(path, root))
        return original(path)

    monkeypatch.setattr(os, "scandir", counting)
    return scanned


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


FILE_NAMES = ["a.py", "b.txt", "c.min.js", "d.png", "e.h", "run", "big.py", ".env", "keep.txt", "f.rs", "g.dat"]
FOLDER_NAMES = ["src", "lib", "sub", "node_modules", "build", "docs", "venv"]
IGNORE_LINES = ["*.txt", "sub/", "!keep.txt", "build", "*.rs", "lib/*.py", "# nothing"]


def _content(name: str, rng: random.Random) -> str | bytes:
    if name == "big.py":
        return "x = 1\n" * (MAX_BYTES // 6 + rng.randrange(1, 50))
    if name == "d.png":
        return b"\x89PNG\x00\x00" + bytes(rng.randrange(256) for _ in range(20))
    if name == "run":
        return rng.choice(["#!/usr/bin/env python\nprint(1)\n", "#!/bin/sh\necho hi\n", "plain words\n"])
    if name == "g.dat":  # binary or text, as only its content tells
        return rng.choice([b"\x00\x01" * rng.randrange(1, 20), "words\n" * rng.randrange(1, 20)])
    if name == "e.h":
        return rng.choice(["int f(void);\n", "class A { public: int f(); };\n"])
    return f"value = {rng.random()}\n"


class _Tree:
    """A random tree and the edits a developer (or a checkout) makes to it, each returning the
    repo-relative paths a watcher reports."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root, self.rng = root, rng

    def folders(self) -> list[str]:
        found = [""]
        for dirpath, dirnames, _ in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            rel = os.path.relpath(dirpath, self.root)
            if rel != ".":
                found.append(rel.replace(os.sep, "/") + "/")
        return found

    def files(self) -> list[str]:
        return [
            os.path.relpath(os.path.join(d, f), self.root).replace(os.sep, "/")
            for d, dirnames, names in os.walk(self.root)
            for f in names
            if ".git" not in Path(d).relative_to(self.root).parts
        ]

    def edit(self) -> list[str]:
        rng = self.rng
        folder = rng.choice(self.folders())
        kind = rng.choice(
            ["add", "add", "modify", "delete", "folder", "rmfolder", "move", "ignore", "marker", "link", "git"]
        )
        files = self.files()
        if kind == "modify" and files:
            path = rng.choice(files)
            if os.path.islink(self.root / path):
                return []
            _write(self.root / path, _content(Path(path).name, rng))
            return [path]
        if kind == "delete" and files:
            path = rng.choice(files)
            (self.root / path).unlink()
            return [path]
        if kind == "folder":
            new = folder + rng.choice(FOLDER_NAMES) + str(rng.randrange(3)) + "/"
            for name in rng.sample(FILE_NAMES, 3):
                _write(self.root / new / name, _content(name, rng))
            _write(self.root / new / "inner" / "z.py", "z = 1\n")
            return [new.rstrip("/")]
        if kind == "rmfolder" and folder:
            shutil.rmtree(self.root / folder)
            return [folder.rstrip("/")]
        if kind == "move" and folder:
            target = _folder_of(folder) + "moved" + str(rng.randrange(100))
            if os.path.lexists(self.root / target):
                return []
            os.rename(self.root / folder, self.root / target)
            return [folder.rstrip("/"), target]
        if kind == "ignore":
            name = rng.choice([".gitignore", ".codeqaignore"])
            _write(self.root / folder / name, "\n".join(rng.sample(IGNORE_LINES, rng.randrange(0, 4))) + "\n")
            return [folder + name]
        if kind == "git":  # git's own files: only info/exclude holds rules the walk reads
            name = rng.choice(["info/exclude", "index", "objects/ab/cdef"])
            _write(self.root / ".git" / name, "\n".join(rng.sample(IGNORE_LINES, rng.randrange(0, 3))) + "\n")
            return [".git/" + name]
        if kind == "marker" and folder:
            marker = self.root / folder / "pyvenv.cfg"
            if marker.exists():
                marker.unlink()
            else:
                _write(marker, "home = /usr\n")
            return [folder + "pyvenv.cfg"]
        if kind == "link" and files:
            target = self.root / rng.choice(files)
            link = self.root / folder / f"link{rng.randrange(100)}"
            if not os.path.lexists(link):
                os.symlink(target if rng.random() < 0.5 else target.parent, link)
                return [folder + link.name]
            return []
        name = rng.choice(FILE_NAMES)
        _write(self.root / folder / name, _content(name, rng))
        return [folder + name]


def _folder_of(rel_dir: str) -> str:
    return rel_dir[: rel_dir.rstrip("/").rfind("/") + 1]


@pytest.mark.parametrize("seed", range(6))
def test_a_live_walk_after_random_edits_finds_what_a_whole_walk_finds(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    tree = _Tree(tmp_path, rng)
    for _ in range(12):
        tree.edit()
    _age(tmp_path, 0)
    live = LiveWalk(tmp_path, MAX_BYTES)
    first = live.walk()
    assert _seen(first) == _seen(walk_repo(tmp_path, MAX_BYTES))
    _reads(first)
    for step in range(1, 61):
        changed = [path for _ in range(rng.randrange(1, 4)) for path in tree.edit()]
        _age(tmp_path, step)
        report, whole = live.walk(changed), walk_repo(tmp_path, MAX_BYTES)
        assert _seen(report) == _seen(whole), (seed, step, changed)
        assert _reads(report) == _reads(whole), (seed, step, changed)  # what reading ruled out, remembered


@pytest.mark.parametrize("seed", range(6))
def test_a_refresh_after_random_edits_finds_what_a_whole_walk_finds(tmp_path: Path, seed: int) -> None:
    """Not told what changed: stats say (git's untracked cache)."""
    rng = random.Random(100 + seed)
    tree = _Tree(tmp_path, rng)
    for _ in range(12):
        tree.edit()
    _age(tmp_path, 0)
    live = LiveWalk(tmp_path, MAX_BYTES)
    _reads(live.walk())
    for step in range(1, 61):
        for _ in range(rng.randrange(0, 4)):
            tree.edit()
        _age(tmp_path, step)
        report, whole = live.refresh(), walk_repo(tmp_path, MAX_BYTES)
        assert _seen(report) == _seen(whole), (seed, step)
        assert _reads(report) == _reads(whole), (seed, step)


def test_a_refresh_scans_only_folders_whose_stats_changed(tmp_path: Path, monkeypatch) -> None:
    for folder in range(20):
        _write(tmp_path / f"pkg{folder}" / "mod.py", "x = 1\n")
    _write(tmp_path / "pkg3" / "deep" / "leaf.py", "y = 1\n")
    _age(tmp_path, 0)
    live = LiveWalk(tmp_path)
    live.walk()
    scanned = _count_scans(monkeypatch, tmp_path)
    live.refresh()
    assert scanned == []  # nothing changed: stats only
    _write(tmp_path / "pkg3" / "mod.py", "x = 22\n")  # in place: its folder's mtime stays
    _age(tmp_path, 1)
    scanned.clear()  # os.walk's
    assert next(f for f in live.refresh().files if f.path == "pkg3/mod.py").size == len("x = 22\n")
    assert scanned == ["pkg3"]
    _write(tmp_path / "pkg3" / "deep" / "new.py", "z = 1\n")  # a new entry: the folder's mtime
    _age(tmp_path, 2)
    scanned.clear()  # os.walk's
    paths = [f.path for f in live.refresh().files]
    assert "pkg3/deep/new.py" in paths and scanned == ["pkg3", "pkg3/deep"]  # and the folder above
    scanned.clear()
    live.refresh()  # just scanned, but the stats were old: trusted
    assert scanned == []


def test_a_refresh_does_not_trust_stats_too_close_to_their_scan(tmp_path: Path) -> None:
    """A clock too coarse to tell two writes apart gives the second the first one's stats: while
    a stat is within RACY_NS of its scan, the folder is scanned again."""
    script, pkg = tmp_path / "pkg" / "run", tmp_path / "pkg"  # its language is in its content
    _write(script, "#!/usr/bin/env python\nprint(1)\n")
    _age(tmp_path, 0)
    os.utime(script)  # the file's stat is recent, its folder's old
    live = LiveWalk(tmp_path)
    first = live.walk().files
    assert [f.language for f in first] == ["python"]
    _write(script, "#!/bin/sh\necho hi there friend\n")  # the same size and, by a coarse clock, mtime
    os.utime(script, ns=(first[0].mtime_ns, first[0].mtime_ns))
    assert [f.language for f in live.refresh().files] == ["bash"]

    _age(tmp_path, 1)
    os.utime(pkg)  # now the folder's stat is recent, its file's old
    folder_at = os.stat(pkg).st_mtime_ns
    live = LiveWalk(tmp_path)
    live.walk()
    _write(pkg / "b.py", "z = 3\n")  # a new entry, and the folder's mtime as it was
    os.utime(pkg, ns=(folder_at, folder_at))
    assert [f.path for f in live.refresh().files] == ["pkg/b.py", "pkg/run"]


def test_a_live_walk_remembers_what_reading_ruled_out_until_its_stat_changes(tmp_path: Path) -> None:
    """A file whose content rules it out (gettext's .mo: binary under a name that does not say
    so) is read once, not on every run: nothing else remembers it."""
    mo = tmp_path / "locale" / "django.mo"
    _write(mo, b"\xde\x12\x04\x95\x00\x00\x00\x00" * 8)
    old = time.time_ns() - 86_400 * 10**9
    os.utime(mo, ns=(old, old))
    live = LiveWalk(tmp_path)
    report = live.walk()
    assert [report.read(f) for f in report.files] == [None] and report.skipped["binary"] == 1
    # Rewritten with text of the same size and mtime: taken as ruled out still, so not read.
    mo.write_text("x" * 64)
    os.utime(mo, ns=(old, old))
    report = live.walk(["locale/django.mo"])
    assert [report.read(f) for f in report.files] == [None] and report.skipped["binary"] == 1
    os.utime(mo, ns=(old + 10**9, old + 10**9))  # its stat changed: read again
    report = live.walk(["locale/django.mo"])
    assert [source.text for source in map(report.read, report.files) if source] == ["x" * 64]
    # A file changed just now is not trusted by its stat (RACY_NS): read on every run.
    _write(mo, b"\x00" * 64)
    report = live.walk(["locale/django.mo"])
    assert [report.read(f) for f in report.files] == [None]
    binary_at = report.files[0].mtime_ns
    mo.write_text("y" * 64)
    os.utime(mo, ns=(binary_at, binary_at))  # a clock too coarse to tell the two writes apart
    report = live.walk(["locale/django.mo"])
    assert [source.text for source in map(report.read, report.files) if source] == ["y" * 64]


def test_a_live_walk_scans_only_the_folders_a_change_can_affect(tmp_path: Path, monkeypatch) -> None:
    """The point of it: a changed file costs its own folder's scan, not the tree's."""
    for folder in range(20):
        _write(tmp_path / f"pkg{folder}" / "mod.py", "x = 1\n")
    live = LiveWalk(tmp_path)
    live.walk()
    scanned = _count_scans(monkeypatch, tmp_path)
    _write(tmp_path / "pkg3" / "mod.py", "x = 2\n")
    _write(tmp_path / "pkg3" / "new.py", "y = 1\n")
    report = live.walk(["pkg3/mod.py", "pkg3/new.py"])
    assert scanned == ["pkg3"]  # once for both
    assert "pkg3/new.py" in [f.path for f in report.files]
    scanned.clear()
    live.walk(["pkg3/.gitignore"])  # no such file: its folder and what is below it
    assert scanned == ["pkg3"]


def test_a_live_walk_walks_whole_again_when_its_last_whole_walk_is_old(tmp_path: Path) -> None:
    """A change the watcher never reported (in a folder no reported change is in) is found by
    the next whole walk only."""
    _write(tmp_path / "a.py", "x = 1\n")
    _write(tmp_path / "other" / "b.py", "y = 1\n")
    for full_every, found in ((600.0, False), (0.0, True)):
        live = LiveWalk(tmp_path, full_every=full_every)
        live.walk()
        unreported = tmp_path / "other" / f"unreported{full_every}.py"
        _write(unreported, "z = 1\n")
        paths = [f.path for f in live.walk(["a.py"]).files]
        assert (f"other/{unreported.name}" in paths) is found
