"""One file's chunks of module code, or its rows of one name, do not crowd the list
(search/crowding.py; no index)."""

from __future__ import annotations

import pytest

from codeqa.search.crowding import uncrowded
from test_query import hit

pytestmark = pytest.mark.unit


def chunk(path: str, score: float, name: str):
    row = hit(path, score, name)
    row.kind = "module"
    return row


def test_a_files_further_chunks_follow_every_other_row() -> None:
    hits = [chunk("complete/_rg", 0.9, "a"), chunk("complete/_rg", 0.8, "b"), hit("src/args.rs", 0.7, "parse"),
            chunk("complete/_rg", 0.6, "c"), chunk("build.rs", 0.5, "d"), hit("src/args.rs", 0.4, "grep")]
    assert [h.name for h in uncrowded(hits)] == ["a", "parse", "d", "grep", "b", "c"]


def test_definitions_of_one_file_keep_their_places() -> None:
    hits = [hit("src/args.rs", 0.9, "parse"), hit("src/args.rs", 0.8, "grep"), hit("src/args.rs", 0.7, "mmap")]
    assert uncrowded(hits) == hits


def test_a_files_further_rows_of_one_name_follow_every_other_row() -> None:
    # a Rust struct and its impl block, Java overloads, an Elixir function's clauses: one name
    hits = [hit("src/args.rs", 0.9, "Args"), hit("src/args.rs", 0.8, "Args"), hit("src/app.rs", 0.7, "app"),
            hit("src/printer.rs", 0.6, "Args"), hit("src/args.rs", 0.5, "Args.grep"), hit("src/app.rs", 0.4, "app")]
    assert [(h.file_path, h.score) for h in uncrowded(hits)] == [
        ("src/args.rs", 0.9), ("src/app.rs", 0.7), ("src/printer.rs", 0.6), ("src/args.rs", 0.5),
        ("src/args.rs", 0.8), ("src/app.rs", 0.4),
    ]
