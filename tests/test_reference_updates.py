"""Patching a definition's stored uses after an edit: pure logic, no index.

(That patched lists equal a clean index's, on real edits of a real repo, is in test_incremental.)
"""

from __future__ import annotations

import pytest

from codeqa.core.records import FileParse, SymbolInfo
from codeqa.indexing import reference_updates
from codeqa.indexing.reference_updates import _moved_definitions, _patched, _stored
from codeqa.parsing.references import NAME_MATCH, Use

pytestmark = pytest.mark.unit

EDITED = frozenset({"f.py"})


def use(file_path: str, line: int, resolution: str = "typed") -> Use:
    return Use(file_path, line, 5, "x.total()", "call", resolution, "main")


@pytest.fixture
def lists_of_two(monkeypatch):
    monkeypatch.setattr(reference_updates, "MAX_STORED_REFERENCES", 2)


def test_a_whole_list_swaps_the_edited_files_uses_and_recounts() -> None:
    row = _stored(3, [use("a.py", 1), use("f.py", 4), use("z.py", 2)])
    patched = _patched(row, EDITED, old=[use("f.py", 4)], new=[use("f.py", 6), use("f.py", 9, NAME_MATCH)])
    assert patched == _stored(3, [use("a.py", 1), use("f.py", 6), use("z.py", 2), use("f.py", 9, NAME_MATCH)])


def test_a_cut_list_takes_new_uses_that_come_before_its_cut(lists_of_two) -> None:
    row = _stored(7, [use("f.py", 1), use("z.py", 1)])  # 5 more beyond the cut, all after z.py:1
    patched = _patched(row, EDITED, old=[use("f.py", 1)], new=[use("f.py", 2), use("f.py", 3)])
    assert patched == _stored(8, [use("f.py", 2), use("f.py", 3)])


def test_a_cut_list_is_not_patched_when_the_cut_hides_what_comes_next(lists_of_two) -> None:
    """The edit took a resolved use out and put a name match in: after the resolved ones left,
    uses beyond the cut (a resolved one in z.py, say) come before that name match."""
    row = _stored(4, [use("a.py", 1), use("f.py", 1)])
    assert _patched(row, EDITED, old=[use("f.py", 1)], new=[use("f.py", 1, NAME_MATCH)]) is None


def test_definitions_an_edit_moved_keep_their_old_ids_in_order() -> None:
    def parse(ids: list[str], names: list[str]) -> FileParse:
        pairs = zip(ids, names, strict=True)
        symbols = (SymbolInfo(i, "f.py", "python", "method", "get", q, q.split(".")[0]) for i, q in pairs)
        return FileParse("f.py", "python", symbols=tuple(symbols))

    before = parse(["a1", "b1", "a2"], ["A.get", "B.get", "A.get"])
    after = parse(["a1'", "b1'", "a2'", "c1"], ["A.get", "B.get", "A.get", "C.get"])
    assert _moved_definitions([before], [after]) == {"a1'": "a1", "b1'": "b1", "a2'": "a2"}
