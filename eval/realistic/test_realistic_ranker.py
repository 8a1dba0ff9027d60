"""Training the file ranker: the examples it learns from and how it is scored (synthetic records)."""

from __future__ import annotations

import pytest

from ranking import FEATURES, FileRanker

from realistic.train_ranker import fit, hit_at_5

pytestmark = pytest.mark.unit


def features(**values: float) -> list[float]:
    return [values.get(name, 0.0) for name in FEATURES]


def record(gold: str, files: dict[str, dict[str, float]], repo: str = "o/r") -> dict:
    return {"repo": repo, "gold": {gold}, "files": [(path, features(**f)) for path, f in files.items()]}


def test_the_model_learns_which_evidence_points_at_the_fix_and_ranks_by_it() -> None:
    # Gold files are found by whole-file BM25; lucky rows in the symbol pool are noise.
    records = [record(f"gold{i}.py", {f"gold{i}.py": {"bm25_rr": 1.0}, f"noise{i}.py": {"sym_rr": 1.0},
                                      f"other{i}.py": {"sym_rr": 0.5, "test": 1.0}}) for i in range(30)]
    learned = fit(records)
    assert learned.weights["bm25_rr"] > 0 > learned.weights["test"]
    assert learned.weights["bm25_rr"] > learned.weights["sym_rr"]
    assert hit_at_5(records, learned) == 1.0


def test_hit_at_5_counts_a_gold_file_among_the_top_five_only() -> None:
    ranker = FileRanker({"sym_rr": 1.0})
    files = {f"f{i}.py": {"sym_rr": 1.0 / i} for i in range(1, 8)}
    assert hit_at_5([record("f5.py", files)], ranker) == 1.0
    assert hit_at_5([record("f6.py", files)], ranker) == 0.0
