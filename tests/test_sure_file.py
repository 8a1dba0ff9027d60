"""A report's best file shows more of its definitions only when the file model is sure of it (search/sure_file.py; no index)."""

from __future__ import annotations

import pytest

from codeqa.search.results import Definition, FileHit
from codeqa.search.sure_file import SURE_DEFINITIONS, SURE_MARGIN, deepen_sure_file
from test_query import hit

pytestmark = pytest.mark.unit


def listed(path: str, score: float, definitions: int, shown: int) -> FileHit:
    ranked = [Definition(hit(path, 1.0 - i / 100, f"f{i}"), {}, score=-i) for i in range(definitions)]
    return FileHit(path, score, "source", "python", [d.hit for d in ranked[:shown]], definitions=ranked)


def test_a_sure_best_file_shows_its_next_definitions() -> None:
    files = [listed("a.py", 5.0, 10, 2), listed("b.py", 5.0 - SURE_MARGIN - 0.1, 10, 3)]
    new = deepen_sure_file(files, "report")
    assert [h.name for h in files[0].symbols] == [f"f{i}" for i in range(SURE_DEFINITIONS)]
    assert [h.name for h in new] == [f"f{i}" for i in range(2, SURE_DEFINITIONS)]
    assert len(files[1].symbols) == 3


def test_an_unsure_best_file_keeps_its_rows_and_a_lone_one_shows_what_it_has() -> None:
    files = [listed("a.py", 5.0, 10, 2), listed("b.py", 5.0 - SURE_MARGIN, 10, 3)]
    assert deepen_sure_file(files, "report") == [] and len(files[0].symbols) == 2
    alone = [listed("a.py", 1.0, 3, 1)]
    assert [h.name for h in deepen_sure_file(alone, "report")] == ["f1", "f2"]
    many = [listed("a.py", 9.0, 10, SURE_DEFINITIONS + 1), listed("b.py", 0.0, 1, 1)]
    assert deepen_sure_file(many, "report") == [] and len(many[0].symbols) == SURE_DEFINITIONS + 1


def test_a_how_question_keeps_its_breadth() -> None:
    files = [listed("a.py", 9.0, 10, 2), listed("b.py", 0.0, 10, 3)]
    assert deepen_sure_file(files, "how") == [] and len(files[0].symbols) == 2
