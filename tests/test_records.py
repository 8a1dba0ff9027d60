"""Stored records: their JSON forms round-trip, and rows written by earlier versions still read."""

from __future__ import annotations

import json

import pytest

from codeqa.core.records import Binding, FileParse, ManifestEntry, Reference, RepoInfo, RepoStats, SymbolInfo

pytestmark = pytest.mark.unit

PARSE = FileParse(
    file_path="shop/models.py",
    language="python",
    symbols=(SymbolInfo("id1", "shop/models.py", "python", "class", "Cart", "Cart", None),
             SymbolInfo("id2", "shop/models.py", "python", "method", "add", "Cart.add", "Cart")),
    references=(Reference("Product", "type", None, 40, 31, "def add(self, product: Product):", "Cart.add"),
                Reference("get", "call", "self.lines", 45, 20, "self.lines.get(p)", None)),
    imports=("shop.util",),
    imported_names=("log_calls",),
)


def test_file_parse_round_trips_through_its_compact_json() -> None:
    text = PARSE.to_json()
    assert FileParse.from_json(text, "shop/models.py", "python") == PARSE
    stored = json.loads(text)
    assert stored["references"][0] == ["Product", "type", None, 40, 31, "def add(self, product: Product):",
                                       "Cart.add"]
    assert stored["symbols"][1] == ["id2", "method", "add", "Cart.add", "Cart"]
    assert "shop/models.py" not in text  # the manifest entry holds the path once


def test_manifests_written_before_typed_records_still_decode() -> None:
    old = ('{"symbols":[["a1","function","helper","helper",null]],'
           '"references":[["helper","call",null,7,5,"helper()","main"]],'
           '"imports":["./util"],"imported_names":["helper"]}')
    parse = FileParse.from_json(old, "web/js/cart.js", "javascript")
    assert parse.symbols == (SymbolInfo("a1", "web/js/cart.js", "javascript", "function", "helper", "helper", None),)
    assert parse.references == (Reference("helper", "call", None, 7, 5, "helper()", "main"),)
    assert parse.imports == ("./util",)


def test_manifest_entry_rows_and_stat_checks() -> None:
    entry = ManifestEntry("a.py", "f" * 64, "python", 120, 1_700_000_000_000_000_000, False, True, PARSE.to_json(),
                          PARSE.bindings_json())
    bound = FileParse("a.py", "python", bindings=(Binding("var", "cart", "Cart", "main"),))
    assert FileParse.from_json(bound.to_json(), "a.py", "python", bound.bindings_json()) == bound
    assert "Cart" not in bound.to_json()  # the bindings are kept apart, read back together
    assert ManifestEntry.from_row(entry.to_row()) == entry
    assert entry.parse.references[1].qualifier == "self.lines"
    assert entry.same_stat(120, 1_700_000_000_000_000_000)
    assert not entry.same_stat(121, 1_700_000_000_000_000_000)
    assert not entry.same_stat(120, 1_700_000_000_000_000_001)
    # A row from before mtimes were recorded: mtime 0, which never matches.
    old = {k: v for k, v in entry.to_row().items() if k != "mtime_ns"}
    assert ManifestEntry.from_row(old).mtime_ns == 0
    assert not ManifestEntry.from_row({**old, "mtime_ns": None}).same_stat(120, 0)


def test_repo_info_round_trips_with_its_pending_flag() -> None:
    stats = RepoStats(files_by_language={"python": 6, "go": 2}, files=8, methods=83, classes=43, docs=6,
                      references=148, skipped={"unsupported": 1}, timings={"total": 1.5})
    info = RepoInfo("sample", "/r", "r_sample_1", "local:m", 384, 1.0, 2.0, stats, references_pending=True,
                    index_version=2)
    row = info.to_row()
    assert set(row) == {"name", "root", "prefix", "embedding_model", "embedding_dim", "created_at",
                        "indexed_at", "stats", "index_version"}
    assert RepoInfo.from_row(row) == info
    assert "references_pending" not in RepoInfo("s", "/r", "p", "m", 1, 0.0, 0.0).to_row()["stats"]


def test_registry_rows_of_earlier_versions_still_read() -> None:
    row = {"name": "old", "root": "/r", "prefix": "r_old", "embedding_model": "local:m", "embedding_dim": 384,
           "created_at": 1.0, "indexed_at": 2.0,
           "stats": json.dumps({"files": 3, "methods": 5, "files_by_language": {"python": 3},
                                "references_pending": True, "retired_field": [1, 2]})}
    info = RepoInfo.from_row(row)
    assert info.references_pending and info.stats.files == 3 and info.stats.methods == 5
    assert info.stats.files_by_language == {"python": 3} and info.stats.docs == 0
    assert RepoInfo.from_row({**row, "stats": None}).stats == RepoStats()
    assert info.index_version == 1  # written before layouts were versioned
