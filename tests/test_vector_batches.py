"""Which texts an index run embeds, in what batches, and how far it has got (pure logic)."""

from __future__ import annotations

import pytest

from codeqa.indexing.vectors import embedding_batches
from codeqa.store.rows import embedding_text
from codeqa.core.records import RepoInfo, RepoStats

pytestmark = pytest.mark.unit


def row(row_id: str, code: str, text_hash: str) -> dict:
    return {"id": row_id, "text_hash": text_hash, "kind": "function", "qualified_name": row_id,
            "file_path": "a.py", "signature": "", "doc": "", "code": code}


def test_identical_texts_are_embedded_once_and_batches_go_longest_first() -> None:
    rows = [row("copy1", "y", "h2"), row("short", "", "h3"), row("long", "x" * 300, "h1"), row("copy2", "y", "h2")]
    batches = embedding_batches(rows, size=2)
    assert [b.row_ids for b in batches] == [[["long"], ["copy1", "copy2"]], [["short"]]]
    assert batches[0].texts == [embedding_text(rows[2]), embedding_text(rows[0])]
    assert [b.rows for b in batches] == [3, 1]
    assert embedding_batches([], size=2) == []


@pytest.mark.parametrize(("rows", "pending", "percent"), [
    (0, 0, 100), (200, 0, 100), (200, 200, 0), (200, 1, 99), (200, 50, 75), (3, 2, 33)])
def test_embedded_percent_is_100_only_when_every_row_has_its_vector(rows: int, pending: int, percent: int) -> None:
    assert RepoStats(rows=rows, vectors_pending=pending).embedded_percent == percent


@pytest.mark.parametrize(("indexed_at", "percent"), [(0.0, 0), (1.0, 100)])
def test_a_repo_whose_first_run_still_writes_is_not_shown_embedded(indexed_at: float, percent: int) -> None:
    """No rows and no pending vectors reads as 100% unless the summary knows the run has not ended."""
    info = RepoInfo(name="r", root="/r", prefix="r", embedding_model="m", embedding_dim=3,
                    created_at=1.0, indexed_at=indexed_at)
    assert info.summary()["embedded_percent"] == percent
