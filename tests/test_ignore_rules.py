""".codeqaignore beside .gitignore, and `codeqa index --dry-run`: what a run would index and skip,
by folder and by reason, before any work; checked against what a real run then indexes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, settings_for
from codeqa.indexing.indexer import index_repo
from codeqa.parsing.preview import folder_of, preview_index
from codeqa.parsing.repo_files import ChangeFilter, walk_repo
from codeqa.store.connection import connect
from codeqa.store.create_tables import RepoTables
from codeqa.store.registry import get_repo


def _write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def _tricky_tree(root: Path) -> Path:
    """A tree where every kind of rule decides something: .gitignore and .codeqaignore at two
    levels (one bringing back what the other leaves out), vendored and binary files, a minified
    bundle, and a file too large."""
    _write(root, ".gitignore", "scratch/\n*.log\n")
    _write(root, ".codeqaignore", "fixtures/\n*.snap\n!important.log\n")
    _write(root, "src/app.py", "def main():\n    return 1\n")
    _write(root, "src/app.snap", "snapshot\n")
    _write(root, "src/.codeqaignore", "generated_*.py\n!generated_keep.py\n")
    _write(root, "src/generated_api.py", "API = 1\n")
    _write(root, "src/generated_keep.py", "KEEP = 1\n")
    _write(root, "src/.gitignore", "local.py\n")
    _write(root, "src/local.py")
    _write(root, "fixtures/data.py")
    _write(root, "scratch/out.py")
    _write(root, "debug.log", "noise\n")
    _write(root, "important.log", "keep me\n")
    _write(root, "node_modules/lib/index.js", "module.exports = 1;\n")
    _write(root, "docs/logo.png", b"\x89PNG\r\n")
    _write(root, "docs/guide.md", "# Guide\n\nHow to use it.\n")
    _write(root, "web/bundle.js", "var a=1;" * 2000 + "\n")
    _write(root, "web/big.py", "x = 1\n" * 20_000)
    return root


EXPECTED_FILES = ["docs/guide.md", "important.log", "src/app.py", "src/generated_keep.py"]
EXPECTED_SKIPS = {
    ("vcs", ".codeqaignore"), ("vcs", ".gitignore"), ("vcs", "src/.codeqaignore"), ("vcs", "src/.gitignore"),
    ("ignored", "scratch/"), ("ignored", "debug.log"), ("ignored", "fixtures/"), ("ignored", "src/app.snap"),
    ("ignored", "src/generated_api.py"), ("ignored", "src/local.py"), ("vendored", "node_modules/"),
    ("binary", "docs/logo.png"), ("minified", "web/bundle.js"), ("too_large", "web/big.py"),
}
MAX_BYTES = 100_000


@pytest.mark.unit
def test_codeqaignore_works_like_gitignore_at_every_level_and_wins_in_its_folder(tmp_path):
    root = _tricky_tree(tmp_path)
    preview = preview_index(root, MAX_BYTES)
    assert [path for path, _, _ in preview.files] == EXPECTED_FILES
    assert set(preview.skips) == EXPECTED_SKIPS
    assert preview.ignore_files == [".codeqaignore", ".gitignore", "src/.codeqaignore", "src/.gitignore"]


@pytest.mark.unit
def test_a_codeqaignore_negation_cannot_reach_below_an_excluded_folder(tmp_path):
    """git's rule, kept: once a folder is left out, nothing below it comes back."""
    _write(tmp_path, ".gitignore", "gen/\n")
    _write(tmp_path, ".codeqaignore", "!gen/keep.py\n")
    _write(tmp_path, "gen/keep.py")
    _write(tmp_path, "main.py")
    assert [found.path for found in walk_repo(tmp_path).files] == ["main.py"]


@pytest.mark.unit
def test_the_preview_counts_by_folder_and_reason(tmp_path):
    preview = preview_index(_tricky_tree(tmp_path), MAX_BYTES)
    tallies = {folder: (t.files, dict(t.skipped)) for folder, t in preview.by_folder().items()}
    assert tallies == {
        "./": (1, {"vcs": 2, "ignored": 1}),
        "docs/": (1, {"binary": 1}),
        "fixtures/": (0, {"ignored": 1}),
        "node_modules/": (0, {"vendored": 1}),
        "scratch/": (0, {"ignored": 1}),
        "src/": (2, {"vcs": 2, "ignored": 3}),
        "web/": (0, {"minified": 1, "too_large": 1}),
    }
    assert preview.skipped == {"vcs": 4, "ignored": 6, "vendored": 1, "binary": 1, "minified": 1, "too_large": 1}
    assert [folder_of(p) for p in ["a.py", "src/a.py", "src/x/y.py", "node_modules/", "src/gen/"]] == [
        "./", "src/", "src/", "node_modules/", "src/"]


@pytest.mark.unit
def test_a_change_to_a_codeqaignore_starts_a_run_and_what_it_excludes_does_not(tmp_path):
    _write(tmp_path, ".codeqaignore", "fixtures/\n*.snap\n")
    _write(tmp_path, "fixtures/a.py")
    _write(tmp_path, "src/a.snap")
    _write(tmp_path, "src/a.py")
    rules = ChangeFilter(tmp_path)
    assert {path: rules.matters(path) for path in [".codeqaignore", "src/.codeqaignore", "fixtures/a.py",
                                                   "src/a.snap", "src/a.py"]} == {
        ".codeqaignore": True, "src/.codeqaignore": True, "fixtures/a.py": False, "src/a.snap": False,
        "src/a.py": True}


def _dry_run(path: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    # An embedding endpoint where nothing listens: a dry run that loaded or used a model would fail.
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "CODEQA_EMBEDDING_PROVIDER": "openai",
           "CODEQA_EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1", "CODEQA_EMBEDDING_MODEL": "none",
           "CODEQA_MAX_FILE_BYTES": str(MAX_BYTES)}
    return subprocess.run([sys.executable, "-m", "codeqa", "index", "--dry-run", str(path)], capture_output=True,
                          text=True, env=env, cwd=ROOT)


@pytest.mark.unit
def test_dry_run_prints_the_plan_by_folder_and_reason_and_writes_nothing(tmp_path):
    root = _tricky_tree(tmp_path / "repo")
    data_dir = tmp_path / "data"
    done = _dry_run(root, data_dir)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Dry run of {root}: nothing was indexed or written."
    assert lines[1].startswith("Would index 4 files (") and lines[1].endswith("): python 2, markdown 1, other 1")
    assert lines[2] == ("Would skip 14 paths (a skipped folder counts once): ignored 6, vcs 4, binary 1, minified 1, "
                        "too_large 1, vendored 1")
    assert "  src/                 2        5  (ignored 3, vcs 2)" in lines
    assert "  node_modules/        0        1  (vendored 1)" in lines
    assert ("  ignored 6: debug.log, fixtures/, scratch/, src/app.snap, src/generated_api.py, src/local.py"
            in lines)
    assert lines[-1] == "Ignore files read: .codeqaignore, .gitignore, src/.codeqaignore, src/.gitignore"
    assert not data_dir.exists()  # no index, no registry, not even the folder
    missing = _dry_run(tmp_path / "nope", data_dir)
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", f"error: {tmp_path / 'nope'} does not exist.\n")


@pytest.mark.integration
def test_a_real_run_indexes_exactly_what_the_dry_run_said(tmp_path):
    root = _tricky_tree(tmp_path / "repo")
    settings = settings_for(tmp_path / "data", max_file_bytes=MAX_BYTES)
    preview = preview_index(root, settings.max_file_bytes)
    report = index_repo(root, settings, name="tricky", progress=False)
    db = connect(settings)
    assert sorted(RepoTables(db, get_repo(db, "tricky")).file_states()) == [path for path, _, _ in preview.files]
    assert report.skipped == preview.skipped and report.files_by_language == preview.languages
