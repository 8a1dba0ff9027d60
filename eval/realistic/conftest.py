"""Fixtures of the realistic eval's tests."""

import os
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from eval.realistic.items import GoldFile, GoldSymbol, Item


@pytest.fixture
def make_item() -> Callable[..., Item]:
    """An item with one gold file and one gold symbol; arguments set the fields tests vary."""

    def make(item_id: str, repo: str = "o/r", split: str = "test", language: str = "python",
             date: str = "2020-01-01", commit: str = "c1", query: str = "it breaks") -> Item:
        gold = [GoldFile("src/a.py", "python", [[3, 4]], [], [GoldSymbol("A.run", "method", 2, 9)])]
        return Item(item_id, repo, language, split, "issue", "test", commit, date + "T00:00:00+00:00", "fix",
                    query, False, gold)

    return make
