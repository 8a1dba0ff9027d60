"""The realistic eval's tests import the product's modules from the repository root."""

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from realistic.items import GoldFile, GoldSymbol, Item  # noqa: E402


@pytest.fixture
def make_item() -> Callable[..., Item]:
    """An item with one gold file and one gold symbol; arguments set the fields tests vary."""

    def make(item_id: str, repo: str = "o/r", split: str = "test", language: str = "python",
             date: str = "2020-01-01", commit: str = "c1", query: str = "it breaks") -> Item:
        gold = [GoldFile("src/a.py", "python", [[3, 4]], [], [GoldSymbol("A.run", "method", 2, 9)])]
        return Item(item_id, repo, language, split, "issue", "test", commit, date + "T00:00:00+00:00", "fix",
                    query, False, gold)

    return make
