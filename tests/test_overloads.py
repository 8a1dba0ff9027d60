"""One definition per overload set: `@overload` stubs, TypeScript overload signatures and C/C++
declarations are grouped with their implementation (in the parser within a file, at search
time across files), in search, `@definition` and MCP `find_symbol`; a declaration with no
implementation in the repository stays, marked `declaration`."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, settings_for
from mcp_client import mcp_session
from codeqa.parsing.treesitter import parse_source
from codeqa.search.overloads import Signed, group_declarations

FIXTURE = ROOT / "tests" / "fixtures" / "overloads"


def parsed(path: str, language: str):
    return parse_source((FIXTURE / path).read_text(encoding="utf-8"), language, path)


def named(definitions, qualified_name: str) -> list:
    return [d for d in definitions if d.qualified_name == qualified_name]


# --- the parser: one definition per overload set of a file ---------------------------------------

@pytest.mark.unit
def test_python_overload_stubs_fold_into_the_implementation() -> None:
    definitions = parsed("src/types.py", "python").definitions
    [convert] = named(definitions, "ParamType.convert")
    assert (convert.start_line, convert.declaration, convert.doc) == (17, False, "Convert the value to the correct type.")
    assert convert.signatures == ["def convert(self, value: str, param: None) -> str:",
                                  "def convert(self, value: int, param: None) -> int:",
                                  "def convert(self, value, param):"]
    [area] = named(definitions, "Shape.area")  # abstract: implemented by subclasses, so its own
    assert area.declaration and area.signatures == []
    assert not any(d.declaration for d in definitions if d.qualified_name != "Shape.area")


@pytest.mark.unit
def test_typescript_overload_signatures_fold_into_the_implementation() -> None:
    definitions = parsed("web/pad.ts", "typescript").definitions
    [pad] = named(definitions, "pad")
    assert (pad.start_line, pad.declaration, len(pad.signatures)) == (5, False, 3)
    [cell] = named(definitions, "Table.cell")
    assert (cell.start_line, cell.declaration, len(cell.signatures)) == (16, False, 3)
    [fmt] = named(definitions, "Formatter.format")  # an interface method: a declaration of its own
    assert fmt.declaration


@pytest.mark.unit
def test_c_prototypes_are_declarations_and_local_ones_are_nothing() -> None:
    header = parsed("include/ledger.h", "c").definitions
    assert {d.qualified_name for d in header if d.declaration} == {"ledger_new", "ledger_add", "ledger_balance"}
    assert named(header, "ledger_new")[0].doc == "Makes an empty ledger for `capacity` entries."
    source = parse_source("int helper(void) {\n  int local(int);\n  return local(1);\n}\n"
                          "int twice(int);\nint twice(int x) { return 2 * x; }\n", "c", "a.c").definitions
    assert [(d.qualified_name, d.declaration) for d in source] == [("helper", False), ("twice", False)]
    assert named(source, "twice")[0].signatures == ["int twice(int);", "int twice(int x)"]


@pytest.mark.unit
def test_cpp_in_class_declarations_fold_into_an_out_of_class_definition_in_the_same_file() -> None:
    source = ("class Box {\n public:\n  int size() const;\n  virtual void draw() = 0;\n};\n"
              "int Box::size() const { return 1; }\n")
    definitions = parse_source(source, "cpp", "box.cpp").definitions
    assert [(d.qualified_name, d.start_line, d.declaration) for d in definitions] == [
        ("Box", 1, False), ("Box.draw", 4, True), ("Box.size", 6, False)]
    assert named(definitions, "Box.size")[0].signatures == ["int size() const;", "int Box::size() const"]
    header = parsed("include/widget.hpp", "cpp").definitions
    assert {d.qualified_name for d in header if d.declaration} == {
        "Widget.Widget", "Widget.~Widget", "Widget.resize", "Widget.draw"}


# --- grouping across files -----------------------------------------------------------------------

def signed(language: str, name: str, declaration: bool, signature: str) -> Signed:
    return Signed(language, name, declaration, signature, ())


@pytest.mark.unit
def test_a_declaration_gives_its_place_to_the_implementation_of_its_language_family() -> None:
    rows = [signed("c", "add", True, "int add(int);"), signed("c", "other", False, "void other()"),
            signed("python", "add", False, "def add(x)"), signed("c", "ext", True, "int ext(void);")]
    extra = [signed("cpp", "add", False, "int add(int x)")]  # a .h read as C, its .cpp as C++: one family
    placed = group_declarations(rows, extra)
    assert [(p.index, p.at, p.signatures) for p in placed] == [
        (4, 0, ["int add(int);", "int add(int x)"]), (1, 1, None), (2, 2, None), (3, 3, None)]


@pytest.mark.unit
def test_an_implementation_already_listed_moves_up_to_its_declaration_once() -> None:
    rows = [signed("c", "add", True, "int add(int);"), signed("c", "x", False, "void x()"),
            signed("c", "add", False, "int add(int a)")]
    assert [(p.index, p.at) for p in group_declarations(rows)] == [(2, 0), (1, 1)]


# --- on a real index -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def overloads_index(tmp_path_factory):
    from codeqa.indexing.indexer import index_repo

    settings = settings_for(tmp_path_factory.mktemp("overloads") / "data", local_llm=False)
    index_repo(FIXTURE, settings, name="overloads", progress=False)
    return settings


@pytest.fixture(scope="module")
def retriever(overloads_index):
    from codeqa.search.retrieval import Retriever

    return Retriever(overloads_index)


def search(retriever, query: str, k: int = 10) -> list:
    from codeqa.search.options import SearchOptions

    return retriever.search("overloads", query, SearchOptions(k=k, hyde=False, rerank=False)).results


CASES = [  # (query, qualified name, where the one result is, signatures)
    ("convert", "ParamType.convert", "src/types.py", 3),
    ("pad", "pad", "web/pad.ts", 3),
    ("ledger_new", "ledger_new", "src/ledger.c", 2),
    ("Widget.resize", "Widget.resize", "src/widget.cpp", 2),
]


@pytest.mark.integration
@pytest.mark.parametrize("query, qualified_name, path, signatures", CASES)
def test_search_returns_one_entry_per_overload_set_at_the_implementation(retriever, query, qualified_name, path,
                                                                        signatures):
    hits = search(retriever, query)
    same = [h for h in hits if h.qualified_name == qualified_name]
    assert [(h.file_path, h.declaration, h.exact) for h in same] == [(path, False, True)]
    assert hits[0] is same[0] and len(same[0].signatures) == signatures
    data = same[0].to_json()
    assert data["declaration"] is False and data["signatures"] == same[0].signatures


@pytest.mark.integration
def test_a_question_that_finds_a_prototype_gets_the_implementation(retriever):
    hits = search(retriever, "how is the balance of a ledger computed from its entries")
    balance = [h for h in hits if h.qualified_name == "ledger_balance"]
    assert [h.file_path for h in balance] == ["src/ledger.c"]


@pytest.mark.integration
def test_a_declaration_with_no_implementation_stays_marked(retriever):
    hits = search(retriever, "zstream_deflate_block")
    assert [(h.file_path, h.declaration) for h in hits if h.qualified_name == "zstream_deflate_block"] == [
        ("include/zstream.h", True)]
    assert [h.declaration for h in search(retriever, "Shape.area") if h.qualified_name == "Shape.area"] == [True]


@pytest.mark.integration
def test_definition_command_returns_one_row_per_overload_set(overloads_index):
    from codeqa.chat.resolver import CommandResolver
    from codeqa.store.index import Index
    from codeqa.store import registry
    from codeqa.store.connection import connect

    resolver = CommandResolver(Index.connect(overloads_index))
    repo = resolver.index.repo("overloads")
    for query, qualified_name, path, signatures in CASES:
        rows = resolver.definitions(repo, query)
        assert [(r["qualified_name"], r["file_path"], len(r["signatures"])) for r in rows] == [
            (qualified_name, path, signatures)], query
    [vendor] = resolver.definitions(repo, "zstream_deflate_block")
    assert vendor["declaration"] and vendor["file_path"] == "include/zstream.h"


@pytest.mark.integration
def test_mcp_find_symbol_returns_one_definition_listing_the_signatures(overloads_index, tmp_path):
    with mcp_session(overloads_index.data_dir, tmp_path) as session:
        found = session.data("find_symbol", name="ParamType.convert")
        assert found["total"] == 1
        [convert] = found["definitions"]
        assert (convert["location"], convert["declaration"], len(convert["signatures"])) == (
            "src/types.py:17-19", False, 3)
        text = session.text("find_symbol", name="ledger_new")
        assert text.startswith("1 definition of ledger_new") and "src/ledger.c:4-9" in text
        assert "signature: struct ledger *ledger_new(size_t capacity);" in text
        vendor = session.data("find_symbol", name="zstream_deflate_block")["definitions"]
        assert [(d["file_path"], d["declaration"]) for d in vendor] == [("include/zstream.h", True)]
        assert "a declaration: no implementation in the repository" in session.text(
            "find_symbol", name="zstream_deflate_block")
