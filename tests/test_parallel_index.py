"""Parsing on every core (indexing/workers.py) writes exactly what parsing in one process writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import settings_for

from codeqa.indexing.indexer import index_repo
from codeqa.indexing.workers import POOL_MIN_FILES
from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.store.schema import ROW_TABLES

pytestmark = pytest.mark.integration

COLUMNS = ["id", "file_path", "kind", "qualified_name", "start_line", "text_hash", "reference_count"]


def many_files(root: Path, count: int) -> Path:
    """`count` small modules that call each other, so references cross the workers' chunks."""
    for i in range(count):
        package = root / f"pkg{i % 7}"
        package.mkdir(parents=True, exist_ok=True)
        callee = f"helper_{(i + 1) % count}"
        (package / f"mod_{i}.py").write_text(
            f'"""Module {i}."""\n\nLIMIT_{i} = {i}\n\n\ndef helper_{i}(value):\n    """Scale a value."""\n'
            f"    return {callee}(value) * LIMIT_{i}\n\n\nclass Shape{i}:\n    def area(self):\n"
            f"        return helper_{i}(2)\n"
        )
    return root


def rows_of(settings, name: str) -> dict[str, list[tuple]]:
    db = connect(settings)
    info = registry.get_repo(db, name)
    return {
        kind: sorted(tuple(row[c] for c in COLUMNS) for row in
                     registry.open_table(db, info, kind).search().select(COLUMNS).limit(None).to_list())
        for kind in ROW_TABLES
    }


def test_a_pool_of_parsers_writes_the_rows_one_process_writes(tmp_path):
    repo = many_files(tmp_path / "repo", POOL_MIN_FILES + 16)
    alone = settings_for(tmp_path / "alone", local_llm=False, index_processes=1)
    pooled = settings_for(tmp_path / "pooled", local_llm=False, index_processes=2, write_batch=32)
    first = index_repo(repo, alone, name="many", progress=False)
    second = index_repo(repo, pooled, name="many", progress=False)
    assert first.added == second.added == POOL_MIN_FILES + 16
    assert (first.methods, first.classes, first.references) == (second.methods, second.classes, second.references)
    assert first.references > 0
    ours, theirs = rows_of(alone, "many"), rows_of(pooled, "many")
    assert ours == theirs and sum(map(len, ours.values())) > 3 * POOL_MIN_FILES
