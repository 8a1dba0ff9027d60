"""Reference resolution on hand-made parse results: pure logic, no parser, no index."""

from __future__ import annotations

import pytest

from codeqa.core.records import Binding, FileParse, Reference, SymbolInfo
from codeqa.parsing.references import MAX_AMBIGUOUS, changed_calls, resolve_references

pytestmark = pytest.mark.unit


def symbol(file_path: str, language: str, kind: str, qualified_name: str, parent: str | None = None) -> SymbolInfo:
    return SymbolInfo(f"{file_path}:{qualified_name}", file_path, language, kind,
                      qualified_name.rsplit(".", 1)[-1], qualified_name, parent)


def use(name: str, kind: str = "call", qualifier: str | None = None, enclosing: str | None = "main",
        line: int = 1) -> Reference:
    return Reference(name, kind, qualifier, line, 1, f"{name}()", enclosing)


def resolved(symbols: list[SymbolInfo], files: list[FileParse]) -> dict[str, set[tuple[str, str, str]]]:
    """definition id -> {(citing file, use kind, resolution)}."""
    return {key: {(u.file_path, u.kind, u.resolution) for u in uses}
            for key, uses in resolve_references(symbols, files).items()}


def test_uses_stay_within_a_language_family() -> None:
    js = symbol("web/format.js", "javascript", "function", "helper")
    rust = symbol("src/lib.rs", "rust", "function", "helper")
    ts_file = FileParse("web/cart.ts", "typescript", references=(use("helper"),))
    found = resolved([js, rust], [ts_file])
    assert found == {js.id: {("web/cart.ts", "call", "unique")}}


def test_factory_calls_instantiate_their_type() -> None:
    struct = symbol("src/shelf.rs", "rust", "struct", "Shelf")
    new = symbol("src/shelf.rs", "rust", "method", "Shelf.new", parent="Shelf")
    main = FileParse("src/main.rs", "rust", references=(use("new", qualifier="Shelf"),))
    found = resolved([struct, new], [main])
    assert found[struct.id] == {("src/main.rs", "new", "unique")}
    assert found[new.id] == {("src/main.rs", "call", "qualified")}


def test_self_calls_resolve_to_the_callers_class() -> None:
    mine = symbol("a.py", "python", "method", "Cart.add", parent="Cart")
    other = symbol("b.py", "python", "method", "Basket.add", parent="Basket")
    caller = symbol("a.py", "python", "method", "Cart.fill", parent="Cart")
    file = FileParse("a.py", "python", references=(use("add", qualifier="self", enclosing="Cart.fill"),))
    found = resolved([mine, other, caller], [file])
    assert found == {mine.id: {("a.py", "call", "self")}}


def test_imports_pick_between_same_named_definitions() -> None:
    csv = symbol("shop/csv_parser.py", "python", "class", "Parser")
    json_ = symbol("shop/json_parser.py", "python", "class", "Parser")
    checkout = FileParse("shop/checkout.py", "python", references=(use("Parser"),), imports=("shop.csv_parser",))
    assert resolved([csv, json_], [checkout]) == {csv.id: {("shop/checkout.py", "new", "import")}}


def test_typescript_module_imports_match_with_their_extension() -> None:
    pricing = symbol("web/pricing.mts", "typescript", "function", "price")
    other = symbol("lib/pricing2.ts", "typescript", "function", "price")
    page = FileParse("web/page.ts", "typescript", references=(use("price"),), imports=("./pricing.mts",))
    assert resolved([pricing, other], [page]) == {pricing.id: {("web/page.ts", "call", "import")}}


def test_too_many_equal_candidates_resolve_to_none() -> None:
    many = [symbol(f"pkg{i}/m.py", "python", "function", "run") for i in range(MAX_AMBIGUOUS + 1)]
    few = many[:MAX_AMBIGUOUS]
    caller = FileParse("app/main.py", "python", references=(use("run"),))
    assert resolved(many, [caller]) == {}
    assert resolved(few, [caller]) == {s.id: {("app/main.py", "call", "name")} for s in few}


def test_macro_invocations_are_calls_of_the_macro() -> None:
    rust_macro = symbol("src/macros/select.rs", "rust", "macro", "select")
    c_macro = symbol("include/money.h", "c", "macro", "TO_CENTS")
    rust_file = FileParse("src/lib.rs", "rust", references=(use("select"), use("select", qualifier="tokio")))
    c_file = FileParse("src/ledger.c", "c", references=(use("TO_CENTS"),))
    found = resolved([rust_macro, c_macro], [rust_file, c_file])
    assert found == {rust_macro.id: {("src/lib.rs", "call", "unique")},
                     c_macro.id: {("src/ledger.c", "call", "unique")}}


def test_values_and_callables_are_never_types() -> None:
    constant = symbol("a.py", "python", "constant", "Config")
    macro = symbol("m.h", "c", "macro", "Entry")
    struct = symbol("e.h", "c", "struct", "Entry")
    files = [FileParse("b.py", "python", references=(use("Config", kind="type"), use("Config", kind="new"))),
             FileParse("x.c", "c", references=(use("Entry", kind="type"),))]
    assert resolved([constant, macro, struct], files) == {struct.id: {("x.c", "type", "unique")}}


def test_an_edit_changes_what_calls_mean_or_more() -> None:
    def store(method: str, body: tuple[Reference, ...], returns: str | None = None, base: bool = False) -> FileParse:
        """A Go file of `Store` methods; `Store` itself is declared in another file."""
        go = "store/methods.go"
        symbols = (symbol(go, "go", "method", f"Store.{method}", parent="Store"),)
        bindings = (Binding("returns", method, returns, f"Store.{method}"),) if returns else ()
        bindings += (Binding("base", "", "Base", "Store"),) if base else ()
        return FileParse(go, "go", symbols=symbols, references=body, bindings=bindings)

    call = (use("Add", qualifier="s", enclosing="Store.Save"),)
    assert changed_calls(store("Save", call), store("Save", call + call)) == frozenset()  # a body edited
    assert changed_calls(store("Save", call), store("Save", call, returns="Result")) == {"Save"}
    assert changed_calls(store("Save", call), store("Save", call, base=True)) is None
    # Renamed, the method no longer tells whose receiver its old sites had.
    assert changed_calls(store("Save", call), store("Persist", ())) is None
