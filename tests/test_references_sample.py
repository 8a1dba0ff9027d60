"""The reference checker (eval/references/check.py) on its committed subset: real files from
flask, gson, gin, ripgrep and express, parsed and resolved by the indexer's own code, scored
against labels read off each call site. A rule that starts attributing calls wrongly, or stops
finding them, drops a number below the floor recorded here (the full sample's numbers are in
docs/references.md)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.integration

# Per language: (precision, recall) on the subset when it was committed.
FLOORS = {"python": (1.0, 1.0), "java": (1.0, 1.0), "javascript": (1.0, 1.0), "go": (1.0, 0.8), "rust": (0.8, 0.8)}


def load_checker():
    spec = importlib.util.spec_from_file_location("references_check", ROOT / "eval" / "references" / "check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_resolution_keeps_its_precision_and_recall_on_the_labelled_subset(tmp_path: Path) -> None:
    check = load_checker()
    labels = [json.loads(line) for line in (ROOT / "eval" / "references" / "subset.jsonl").read_text().splitlines()]
    rows = check.score(labels, tmp_path, tmp_path, ROOT / "tests" / "fixtures" / "references_subset")
    assert set(rows) == set(FLOORS)
    for language, (precision, recall) in FLOORS.items():
        assert rows[language]["sites"] == 8
        assert rows[language]["precision"] >= precision, language
        assert rows[language]["recall"] >= recall, language
