"""An index on storage that fails, for real: a read-only file system, a full one (a tmpfs in a
private mount namespace, `namespaces.py`). The CLI says one line naming the cause, never a
traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_REPO
from namespaces import in_namespace, needs_namespaces, read_only, small_disk

pytestmark = pytest.mark.integration


def codeqa(setup: str, data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(in_namespace(setup, [sys.executable, "-m", "codeqa", *args]), capture_output=True,
                          text=True, timeout=600, env={**os.environ, "CODEQA_DATA_DIR": str(data_dir)})


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The error line of a failed CLI run, which says all: no traceback, at most a warning before it."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    *before, last = result.stderr.strip().splitlines()
    assert last.startswith("error: ") and all(line.startswith("WARNING ") for line in before), result.stderr
    return last


@needs_namespaces
def test_index_and_remove_on_a_read_only_index_say_so_in_one_line(indexed_sample, tmp_path):
    settings, _ = indexed_sample
    data_dir = tmp_path / "data"
    shutil.copytree(settings.data_dir, data_dir)
    for args in (["remove", "sample"], ["index", str(SAMPLE_REPO), "--name", "sample"]):
        line = one_error_line(codeqa(read_only(data_dir), data_dir, *args))
        assert line.startswith("error: The index storage failed (") and line.endswith(
            "): the file system is read-only."), line
    listed = codeqa("true", data_dir, "list")
    assert listed.returncode == 0 and listed.stdout.startswith("sample\t")  # nothing was lost


@needs_namespaces
def test_a_full_disk_while_indexing_says_so_in_one_line(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    line = one_error_line(codeqa(small_disk(data_dir, "1m"), data_dir, "index", str(SAMPLE_REPO), "--no-progress"))
    assert line.startswith("error: The index storage failed") and line.endswith(": the disk is full."), line
