"""One file's chunks of module code do not crowd the list (search/crowding.py; no index)."""

from __future__ import annotations

import pytest

from codeqa.search.crowding import one_chunk_per_file
from test_query import hit

pytestmark = pytest.mark.unit


def chunk(path: str, score: float, name: str):
    row = hit(path, score, name)
    row.kind = "module"
    return row


def test_a_files_further_chunks_follow_every_other_row() -> None:
    hits = [chunk("complete/_rg", 0.9, "a"), chunk("complete/_rg", 0.8, "b"), hit("src/args.rs", 0.7, "parse"),
            chunk("complete/_rg", 0.6, "c"), chunk("build.rs", 0.5, "d"), hit("src/args.rs", 0.4, "grep")]
    assert [h.name for h in one_chunk_per_file(hits)] == ["a", "parse", "d", "grep", "b", "c"]


def test_definitions_of_one_file_keep_their_places() -> None:
    hits = [hit("src/args.rs", 0.9, "parse"), hit("src/args.rs", 0.8, "grep"), hit("src/args.rs", 0.7, "mmap")]
    assert one_chunk_per_file(hits) == hits
