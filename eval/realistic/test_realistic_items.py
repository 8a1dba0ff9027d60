"""The item file's rules and the miner's filters (no git, no model)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from eval.realistic.items import Item, load_items, names_file, split_problems
from eval.realistic.mine import HELD_OUT, MAX_QUERY_CHARS, clip_query, commit_message_problem, densest_window

pytestmark = pytest.mark.unit

MakeItem = Callable[..., Item]


def test_names_file_by_path_or_file_name() -> None:
    assert names_file("see lib/Router.js line 3", ["lib/router.js"])
    assert names_file("error in router.js", ["lib/router.js"])
    assert not names_file("the router breaks", ["lib/router.js"])


def test_split_rules(make_item: MakeItem) -> None:
    good = [make_item("a", "o/r1", "train"), make_item("b", "o/r2", "test")]
    assert split_problems(good) == []
    both = good + [make_item("c", "o/r1", "test")]
    assert "o/r1 is in both splits" in split_problems(both)
    untested = good + [make_item("d", "o/r3", "train", language="go")]
    assert "no test item in go" in split_problems(untested)
    assert "duplicate id a" in split_problems(good + [make_item("a", "o/r4", "test")])


def test_committed_items_keep_the_rules() -> None:
    items = load_items()
    assert len(items) >= 300
    assert split_problems(items) == []
    assert not {i.repo for i in items} & HELD_OUT
    assert all(len(i.query) <= MAX_QUERY_CHARS for i in items)
    assert {i.language for i in items if i.split == "test"} >= {"python", "javascript", "java", "go", "rust"}


def test_densest_window_keeps_items_close_in_time(make_item: MakeItem) -> None:
    items = [make_item("x", date="2015-01-01"), make_item("y", date="2020-01-01"),
             make_item("z", date="2020-02-01"), make_item("w", date="2020-03-01")]
    assert [i.id for i in densest_window(items, 3)] == ["y", "z", "w"]
    assert len(densest_window(items, None)) == 4


@pytest.mark.parametrize(("message", "author", "problem"), [
    ("Fix crash when the config file is empty", "Jane", None),
    ("Merge pull request #12 from x/y", "Jane", "merge/revert/release/chore subject"),
    ("Revert \"Fix crash\"", "Jane", "merge/revert/release/chore subject"),
    ("Bump version to 2.0.1", "Jane", "merge/revert/release/chore subject"),
    ("chore: fix lint", "Jane", "merge/revert/release/chore subject"),
    ("Fix typo in error message", "Jane", "merge/revert/release/chore subject"),
    ("Add a new option for colours", "Jane", "not a fix"),
    ("Fix crash on empty input files", "dependabot[bot]", "bot author"),
    ("Fix bug", "Jane", "message too short"),
])
def test_commit_message_filter(message: str, author: str, problem: str | None) -> None:
    assert commit_message_problem(message, author) == problem


def test_clip_query_cuts_at_a_line_below_the_limit() -> None:
    text, cut = clip_query("title\r\n" + "x" * 100 + "\n" + "y" * MAX_QUERY_CHARS)
    assert cut and len(text) <= MAX_QUERY_CHARS and text.endswith("x") and "\r" not in text
    assert clip_query("  short  ") == ("short", False)


def test_gold_renamed_by_a_later_parser_is_the_row_that_spans_its_lines(make_item: MakeItem) -> None:
    from eval.realistic.run import resolve_gold

    item = make_item("a")  # gold: src/a.py A.run, lines 2-9
    renamed = [{"file_path": "src/a.py", "qualified_name": "mod.A.run", "start_line": 2, "end_line": 9},
               {"file_path": "src/a.py", "qualified_name": "A", "start_line": 1, "end_line": 20}]
    assert resolve_gold(item, renamed) == [("src/a.py", "mod.A.run")]
    same = renamed + [{"file_path": "src/a.py", "qualified_name": "A.run", "start_line": 2, "end_line": 8}]
    assert resolve_gold(item, same) == [("src/a.py", "A.run")]  # its own name wins over the lines
    moved = [{"file_path": "src/a.py", "qualified_name": "B.run", "start_line": 3, "end_line": 9}]
    assert resolve_gold(item, moved) == [("src/a.py", "A.run")]  # no row of its lines: stays, not indexed
