"""Files a hostile (or just Windows-using) repo holds: names that are not UTF-8, UTF-16 sources,
deeply nested code. Each is indexed or skipped with a counted reason; none stops a run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from codeqa.store import registry
from codeqa.store.connection import connect
from conftest import ROOT
from codeqa.parsing.repo_files import FoundFile, read_source, walk_repo

SOURCE = 'def greet(name):\n    """Say hello."""\n    return "héllo " + name\n\n\ndef part():\n    return 2\n'


@pytest.mark.unit
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_files_with_a_utf16_or_utf32_byte_order_mark_are_decoded(tmp_path, encoding):
    path = tmp_path / "win.py"
    path.write_bytes("\ufeff".encode(encoding) + SOURCE.encode(encoding))
    found = FoundFile("win.py", str(path), "python", path.stat().st_size, path.stat().st_mtime_ns)
    source = read_source(found, 1_000_000)
    assert not isinstance(source, str), source  # was "binary"
    assert source.text == SOURCE and source.encoding == encoding[:6]
    assert not source.decoded_with_replacement


@pytest.mark.unit
def test_nul_bytes_without_a_byte_order_mark_are_still_binary(tmp_path):
    path = tmp_path / "blob.py"
    path.write_bytes(b"def a():\x00\x00 pass\n")
    found = FoundFile("blob.py", str(path), "python", path.stat().st_size, path.stat().st_mtime_ns)
    assert read_source(found, 1_000_000) == "binary"


@pytest.mark.unit
def test_names_that_are_not_utf8_are_skipped_and_counted(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "good.py").write_text("def good():\n    return 1\n")
    os.mkdir(os.path.join(os.fsencode(root), b"d\xff"))
    with open(os.path.join(os.fsencode(root), b"d\xff", b"inner.py"), "w") as handle:
        handle.write("def inner():\n    return 2\n")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.py"), "w") as handle:
        handle.write("def cafe():\n    return 3\n")
    report = walk_repo(root)
    assert [f.path for f in report.files] == ["good.py"]
    assert report.skipped["non_utf8_name"] == 2
    assert sorted(report.skipped_examples["non_utf8_name"]) == ["caf\\xe9.py", "d\\xff"]


@pytest.mark.integration
def test_a_run_over_hostile_files_indexes_what_it_can_and_says_what_it_did(tmp_path):
    repo = tmp_path / "hostile"
    repo.mkdir()
    (repo / "good.py").write_text("def good():\n    return 1\n")
    (repo / "win.py").write_bytes(b"\xff\xfe" + SOURCE.encode("utf-16-le"))
    with open(os.path.join(os.fsencode(repo), b"caf\xe9.py"), "w") as handle:
        handle.write("def cafe():\n    return 3\n")
    (repo / "deep.js").write_text("".join(f"function f{i}() {{\n" for i in range(2000)) + "}\n" * 2000)

    data = tmp_path / "data"
    result = subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), "index", str(repo), "--no-progress"],
                            env={**os.environ, "CODEQA_DATA_DIR": str(data)}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert "skipped 1 non_utf8_name (e.g. caf\\xe9.py)" in result.stdout
    assert "1 files were UTF-16 (by their byte-order mark) and were decoded as such" in result.stdout
    assert "1991 definitions nested more than 8 deep are part of their enclosing definition's row, e.g. in deep.js" \
        in result.stdout

    from codeqa.core.config import Settings

    db = connect(Settings(data_dir=data))
    rows = registry.open_table(db, registry.get_repo(db, "hostile"), "methods").to_arrow().to_pylist()
    greet = next(r for r in rows if r["name"] == "greet")
    assert (greet["file_path"], greet["start_line"], greet["end_line"], greet["doc"]) == ("win.py", 1, 3, "Say hello.")
    deep = [r for r in rows if r["file_path"] == "deep.js"]
    assert len(deep) == 9 and sum(len(r["code"]) for r in deep) <= 9 * (repo / "deep.js").stat().st_size
