"""Metrics, tables and item selection of the harness (no git, no model)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import pytest

from eval.realistic.items import Item
from eval.realistic.metrics import markdown_table, score_item, standard_groups, summarize
from eval.realistic.run import commits_in_order, result_files, select

MakeItem = Callable[..., Item]

pytestmark = pytest.mark.unit


def test_score_item_file_and_function_metrics() -> None:
    files = ["x.py", "a.py", "y.py", "z.py", "w.py", "v.py", "b.py"]
    symbols = [("x.py", "f"), ("a.py", "A.run"), ("b.py", "B.go")]
    scores = score_item(["a.py", "b.py"], [("a.py", "A.run"), ("b.py", "B.stop")], files, symbols)
    assert scores["file_hit@5"] == 1.0
    assert scores["file_recall@5"] == 0.5
    assert scores["file_recall@10"] == 1.0
    assert scores["file_mrr@10"] == 0.5
    assert scores["func_recall@10"] == 0.5
    assert scores["func_hit@10"] == 1.0
    assert scores["gold_file_ranks"] == {"a.py": 2, "b.py": 7}
    assert scores["gold_symbol_ranks"] == {"a.py::A.run": 2, "b.py::B.stop": None}


def test_a_symbol_must_be_in_the_gold_file() -> None:
    scores = score_item(["a.py"], [("a.py", "run")], ["b.py"], [("b.py", "run")])
    assert (scores["file_hit@5"], scores["file_mrr@10"], scores["func_hit@10"]) == (0.0, 0.0, 0.0)


def test_gold_below_rank_ten_scores_nothing() -> None:
    files = [f"f{i}.py" for i in range(11)] + ["a.py"]
    scores = score_item(["a.py"], [], files, [])
    assert (scores["file_recall@10"], scores["file_mrr@10"]) == (0.0, 0.0)
    assert scores["func_recall@10"] is None and scores["func_hit@10"] is None


def test_summary_averages_function_metrics_over_items_with_gold_symbols() -> None:
    rows = [{"file_hit@5": 1.0, "file_recall@5": 1.0, "file_recall@10": 1.0, "file_mrr@10": 1.0,
             "func_recall@10": 0.5, "func_hit@10": 1.0},
            {"file_hit@5": 0.0, "file_recall@5": 0.0, "file_recall@10": 0.0, "file_mrr@10": 0.0,
             "func_recall@10": None, "func_hit@10": None}]
    summary = summarize(rows)
    assert (summary["n"], summary["file_hit@5"], summary["n_func"], summary["func_recall@10"]) == (2, 0.5, 1, 0.5)


def test_table_has_a_row_per_group_and_config() -> None:
    row = {"split": "test", "language": "go", "query_type": "issue", "names_gold_file": False,
           "file_hit@5": 1.0, "file_recall@5": 1.0, "file_recall@10": 1.0, "file_mrr@10": 1.0,
           "func_recall@10": None, "func_hit@10": None}
    table = markdown_table({"codeqa": [row], "bm25-files": [row]}, standard_groups([row]))
    assert "| test · go | codeqa | 1 | 1.000 |" in table
    assert "| **test** | bm25-files | 1 |" in table
    assert "names a gold file" not in table  # empty groups are left out


def test_select_limits_per_repository_by_time(make_item: MakeItem) -> None:
    items = [make_item("late", "o/a", date="2021-01-01"), make_item("early", "o/a", date="2020-01-01"),
             make_item("other", "o/b", split="train"), make_item("third", "o/a", date="2022-01-01")]
    assert [i.id for i in select(items, "test", None, 2)] == ["late", "early"]
    assert [i.id for i in select(items, "train", None, None)] == ["other"]
    assert [i.id for i in select(items, "all", ["o/b"], None)] == ["other"]


def test_commits_are_indexed_in_time_order_once_each(make_item: MakeItem) -> None:
    items = [make_item("b", date="2021-01-01", commit="c2"), make_item("a", date="2020-01-01", commit="c1"),
             make_item("c", date="2021-01-01", commit="c2")]
    assert commits_in_order(items) == {"o/r": ["c1", "c2"]}


def test_result_files_reads_the_search_file_list() -> None:
    listed = SimpleNamespace(files=[SimpleNamespace(path="a.py", score=2.0), SimpleNamespace(path="b.py", score=1.0)],
                             results=[])
    assert result_files(listed) == ["a.py", "b.py"]
