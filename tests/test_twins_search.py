"""Platform twins on a real index: `src/unix/fs.c` and `src/win/fs.c` are listed together, the
configured platform's first, and neither hides the other (issue 32, item 3)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from conftest import ROOT, index_fixture
from codeqa.search.retrieval import Retriever
from codeqa.search.options import SearchOptions

pytestmark = pytest.mark.integration

FIXTURE = ROOT / "tests" / "fixtures" / "platform_twins"
QUESTION = "how are files opened, read and closed"


@pytest.fixture(scope="module")
def twins_index(tmp_path_factory):
    return index_fixture(tmp_path_factory, FIXTURE, "twins")


def search(settings, platform: str):
    settings = dataclasses.replace(settings, platform=platform)
    return Retriever(settings).search("twins", QUESTION, SearchOptions(k=5, hyde=False, rerank=False))


@pytest.mark.parametrize("platform, first, second", [("linux", "src/unix/fs.c", "src/win/fs.c"),
                                                     ("darwin", "src/unix/fs.c", "src/win/fs.c"),
                                                     ("windows", "src/win/fs.c", "src/unix/fs.c")])
def test_twins_are_listed_together_the_platforms_first(twins_index, platform, first, second):
    result = search(twins_index, platform)
    paths = [file.path for file in result.files]
    assert paths.index(second) == paths.index(first) + 1, paths
    files = {entry["path"]: entry for entry in result.to_json()["files"]}
    assert files[first]["twins"] == [second] and files[second]["twins"] == [first]
    assert all(not entry["twins"] for path, entry in files.items() if path not in (first, second))


def test_the_symbol_list_and_so_the_chat_context_follow_the_twins(twins_index):
    result = search(twins_index, "windows")
    files = list(dict.fromkeys(hit.file_path for hit in result.results))
    assert files.index("src/unix/fs.c") == files.index("src/win/fs.c") + 1, files


def test_the_cli_marks_twins_and_mcp_lists_them(twins_index):
    env = {**os.environ, "CODEQA_DATA_DIR": str(twins_index.data_dir), "CODEQA_LOCAL_LLM": "0",
           "CODEQA_PLATFORM": "windows"}
    done = subprocess.run([sys.executable, "-m", "codeqa", "search", "--repo", "twins", "--no-hyde", "--k", "5",
                           QUESTION], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    files = done.stdout.split("files (ranked as a how-it-works question, file model structure):\n", 1)[1].splitlines()
    win = next(i for i, line in enumerate(files) if "src/win/fs.c" in line)
    assert "[twin of src/unix/fs.c]" in files[win] and "src/unix/fs.c  (source)  [twin of src/win/fs.c]" in files[win + 1]

    from codeqa.mcp_server import FileResult
    result = search(twins_index, "linux")
    assert FileResult(**result.files[0].to_json()).twins == ["src/win/fs.c"]
