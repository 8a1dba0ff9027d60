"""Autocomplete and "did you mean" over names and paths held in memory (pure, fast)."""

from __future__ import annotations

import pytest

from codeqa.chat.symbol_index import SymbolEntry, SymbolIndex

pytestmark = pytest.mark.unit


def entry(qualified: str, path: str, line: int = 1, kind: str = "method", refs: int = 0) -> SymbolEntry:
    return SymbolEntry(qualified.rsplit(".", 1)[-1], qualified, kind, path, line, refs)


INDEX = SymbolIndex(
    [entry("Cart", "shop/models.py", 27, "class", 5), entry("Cart.add", "shop/models.py", 39, refs=3),
     entry("Cart.add", "web/js/cart.js", 26, refs=1), entry("make_demo_cart", "shop/models.py", 59, "function"),
     entry("Catalog", "shop/catalog.py", 3, "class"), entry("cartesian", "util/math.py", 8, "function"),
     entry("Parser.parse", "shop/csv_parser.py", 15, refs=9)],
    ["shop/models.py", "shop/catalog.py", "web/js/cart.js", "util/math.py", "shop/csv_parser.py"])


def values(items: list[dict]) -> list[str]:
    return [i["value"] for i in items]


def test_prefix_matches_come_first_same_case_and_shorter_first():
    assert values(INDEX.complete_symbols("Ca"))[:3] == ["Cart", "Catalog", "cartesian"]
    assert values(INDEX.complete_symbols("car"))[:2] == ["cartesian", "Cart"]


def test_qualified_names_complete_and_show_their_file():
    items = INDEX.complete_symbols("Cart.a")
    assert values(items) == ["Cart.add", "Cart.add"]
    assert {i["detail"] for i in items} == {"method · shop/models.py:39", "method · web/js/cart.js:26"}


def test_a_method_name_finds_its_qualified_name():
    assert values(INDEX.complete_symbols("add")) == ["Cart.add", "Cart.add"]


def test_fuzzy_subsequence_after_prefixes():
    assert values(INDEX.complete_symbols("mkdemo")) == ["make_demo_cart"]
    assert "make_demo_cart" in values(INDEX.complete_symbols("dcart"))


def test_an_empty_prefix_lists_the_most_used_symbols():
    assert values(INDEX.complete_symbols(""))[:2] == ["Parser.parse", "Cart"]


def test_paths_by_prefix_by_file_name_and_fuzzy():
    assert values(INDEX.complete_paths("shop/c")) == ["shop/catalog.py", "shop/csv_parser.py"]
    assert values(INDEX.complete_paths("cart"))[0] == "web/js/cart.js"
    assert values(INDEX.complete_paths("./util/")) == ["util/math.py"]
    assert values(INDEX.complete_paths("wjcart")) == ["web/js/cart.js"]
    assert len(INDEX.complete_paths("")) == 5


def test_did_you_mean():
    assert [s.qualified_name for s in INDEX.similar_symbols("Crat")][0] == "Cart"
    assert "make_demo_cart" in [s.qualified_name for s in INDEX.similar_symbols("shop.make_demo_crt")]
    assert INDEX.similar_symbols("zzzzqqq") == []
    assert INDEX.similar_paths("shop/modls.py")[0] == "shop/models.py"
    assert INDEX.similar_paths("lib/models.py")[0] == "shop/models.py"  # same file name first
    assert INDEX.has_path("util/math.py") and not INDEX.has_path("util/math")
