"""Parser tests: exact expectations against tests/fixtures/sample_repo, plus edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest
from tree_sitter import Language, Query

from codeqa.parsing.languages import LANGUAGES, code_language
from codeqa.parsing.treesitter import Definition, ParsedFile, parse_source, query_source

pytestmark = pytest.mark.unit

REPO = Path(__file__).parent / "fixtures" / "sample_repo"


def parse(relpath: str) -> ParsedFile:
    language = code_language(relpath)
    assert language is not None, relpath
    return parse_source((REPO / relpath).read_text(encoding="utf-8"), language, relpath)


def table(parsed: ParsedFile) -> set[tuple[str, str, int, int]]:
    return {(d.kind, d.qualified_name, d.start_line, d.end_line) for d in parsed.definitions}


def by_name(parsed: ParsedFile, qualified_name: str) -> Definition:
    (found,) = [d for d in parsed.definitions if d.qualified_name == qualified_name]
    return found


def refs(parsed: ParsedFile) -> set[tuple[str, str, str | None, int]]:
    return {(r.name, r.kind, r.qualifier, r.line) for r in parsed.references}


# --- queries and language table ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "variant"),
    [(name, "") for name in LANGUAGES]
    + [(name, ext) for name, spec in LANGUAGES.items() for ext in spec.variants],
)
def test_every_query_compiles_against_its_grammar(language: str, variant: str) -> None:
    spec = LANGUAGES[language]
    grammar = spec.variants[variant].grammar if variant else spec.grammar
    query = Query(Language(grammar()), query_source(language, variant))
    assert query.pattern_count > 0
    parsed = parse_source("", language, f"x{variant}")
    assert parsed.definitions == [] and parsed.references == [] and parsed.imports == []
    assert parsed.has_errors is False


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"), ("A.java", "java"), ("x.js", "javascript"),
        ("x.jsx", "javascript"), ("x.mjs", "javascript"), ("x.cjs", "javascript"),
        ("x.ts", "typescript"), ("x.tsx", "typescript"), ("x.mts", "typescript"),
        ("x.cts", "typescript"), ("x.rs", "rust"), ("x.go", "go"), ("x.c", "c"), ("x.h", "c"),
        ("x.cc", "cpp"), ("x.cpp", "cpp"), ("x.cxx", "cpp"), ("x.hpp", "cpp"), ("x.hh", "cpp"),
        ("x.hxx", "cpp"), ("README.md", None), ("Makefile", None), ("x.pyc", None),
    ],
)
def test_code_language(path: str, language: str | None) -> None:
    assert code_language(path) == language


def test_unknown_language_is_rejected() -> None:
    with pytest.raises(ValueError):
        parse_source("x", "cobol")


# --- Python --------------------------------------------------------------------------------------


def test_python_models_definitions() -> None:
    parsed = parse("shop/models.py")
    assert table(parsed) == {
        ("class", "Product", 9, 24),
        ("method", "Product.price", 17, 20),
        ("method", "Product.from_row", 22, 24),
        ("class", "Cart", 27, 56),
        ("constructor", "Cart.__init__", 33, 37),
        ("method", "Cart.add", 39, 45),
        ("method", "Cart.total", 47, 52),
        ("function", "Cart.total.line_total", 48, 50),
        ("method", "Cart.cheapest", 54, 56),
        ("function", "make_demo_cart", 59, 64),
    }
    assert [d.start_line for d in parsed.definitions] == sorted(
        d.start_line for d in parsed.definitions
    )
    assert parsed.has_errors is False


def test_python_decorators_are_part_of_code_but_not_signature() -> None:
    parsed = parse("shop/models.py")
    add = by_name(parsed, "Cart.add")
    assert add.code.startswith("@log_calls\n    def add(")
    assert add.signature == "def add(self, product: Product, quantity: int = 1) -> None:"
    price = by_name(parsed, "Product.price")
    assert price.code.startswith("@property")
    assert price.signature == "def price(self) -> float:"
    assert by_name(parsed, "Product").code.startswith("@dataclass\nclass Product:")


def test_python_docs_are_own_docstrings_only() -> None:
    parsed = parse("shop/models.py")
    assert by_name(parsed, "Cart").doc == (
        "A shopping cart holding products and quantities.\n\nQuantities are always positive."
    )
    assert by_name(parsed, "Cart.__init__").doc == "Create an empty cart for owner."
    assert by_name(parsed, "Cart.total").doc == ""
    assert by_name(parsed, "Cart.total.line_total").doc == "Total of one cart line."
    assert by_name(parsed, "Product.from_row").doc == ""


def test_python_parents_and_method_signatures() -> None:
    parsed = parse("shop/models.py")
    assert by_name(parsed, "Cart.add").parent == "Cart"
    assert by_name(parsed, "Cart.total.line_total").parent == "Cart"
    assert by_name(parsed, "make_demo_cart").parent is None
    assert by_name(parsed, "Cart").parent is None
    assert by_name(parsed, "Cart").method_signatures == [
        "def __init__(self, owner: str):",
        "def add(self, product: Product, quantity: int = 1) -> None:",
        "def total(self) -> int:",
        "def cheapest(self) -> Optional[Product]:",
    ]
    assert by_name(parsed, "make_demo_cart").method_signatures == []


def test_python_references() -> None:
    parsed = parse("shop/models.py")
    assert {
        ("Cart", "call", None, 61),
        ("Product", "call", None, 62),
        ("add", "call", "cart", 62),
        ("from_row", "call", "Product", 63),
        ("get", "call", "self.lines", 45),
        ("line_total", "call", None, 52),
        ("log_calls", "call", None, 39),
        ("Product", "type", None, 40),
        ("Product", "type", None, 23),  # string annotation "Product"
        ("Optional", "type", None, 54),
        ("Cart", "type", None, 59),
    } <= refs(parsed)
    line_total_call = next(r for r in parsed.references if r.name == "line_total")
    assert line_total_call.enclosing == "Cart.total"
    assert line_total_call.column == 20
    assert line_total_call.text == "return sum(line_total(sku) for sku in self.lines)"
    assert next(r for r in parsed.references if r.name == "dataclass").enclosing is None


def test_python_references_have_no_duplicates() -> None:
    parsed = parse("shop/models.py")
    keys = [(r.name, r.kind, r.line, r.column) for r in parsed.references]
    assert len(keys) == len(set(keys))
    assert keys == sorted(keys, key=lambda k: (k[2], k[3]))


def test_python_imports() -> None:
    parsed = parse("shop/checkout.py")
    assert parsed.imports == ["shop.csv_parser", "shop.models", "shop.util"]
    assert parsed.imported_names == ["Parser", "Cart", "timed"]
    assert {("Parser", "call", None, 11), ("parse", "call", "parser", 13),
            ("timed", "call", None, 8)} <= refs(parsed)
    assert by_name(parsed, "checkout").start_line == 8


def test_python_two_parsers_in_two_files() -> None:
    csv_parser, json_parser = parse("shop/csv_parser.py"), parse("shop/json_parser.py")
    assert table(csv_parser) == {
        ("class", "Parser", 9, 18),
        ("constructor", "Parser.__init__", 12, 13),
        ("method", "Parser.parse", 15, 18),
    }
    assert table(json_parser) == {("class", "Parser", 8, 12), ("method", "Parser.parse", 11, 12)}
    assert by_name(json_parser, "Parser.parse").doc == ""
    assert by_name(csv_parser, "Parser.parse").doc == "Return one Product per data row."


def test_python_same_named_nested_functions_are_all_kept() -> None:
    parsed = parse("shop/util.py")
    assert table(parsed) == {
        ("function", "log_calls", 10, 18),
        ("function", "log_calls.wrapper", 13, 16),
        ("function", "timed", 21, 30),
        ("function", "timed.wrapper", 22, 28),
    }
    assert all(d.parent is None for d in parsed.definitions)
    assert by_name(parsed, "log_calls").doc == "Log every call of func at debug level."
    assert by_name(parsed, "timed").doc == ""
    assert ("func", "call", None, 16) in refs(parsed)


def test_python_empty_package_init() -> None:
    parsed = parse("shop/__init__.py")
    assert parsed.definitions == [] and parsed.imports == []


# --- Java ----------------------------------------------------------------------------------------


def test_java_inventory_definitions_and_overloads() -> None:
    parsed = parse("java/com/shop/Inventory.java")
    assert table(parsed) == {
        ("class", "Inventory", 13, 65),
        ("constructor", "Inventory.Inventory", 18, 20),
        ("constructor", "Inventory.Inventory", 23, 28),
        ("method", "Inventory.add", 30, 33),
        ("method", "Inventory.add", 38, 41),
        ("method", "Inventory.count", 43, 45),
        ("method", "Inventory.report", 47, 50),
        ("method", "Inventory.countAll", 52, 54),
        ("class", "Inventory.Outer", 57, 64),
        ("class", "Inventory.Outer.Inner", 59, 63),
        ("method", "Inventory.Outer.Inner.method", 60, 62),
    }
    adds = [d for d in parsed.definitions if d.qualified_name == "Inventory.add"]
    assert adds[0].code.startswith("@Override\n    public void add(")
    assert [d.signature for d in adds] == [
        "public void add(Product product)",
        "public void add(Product product, int quantity)",
    ]
    assert [d.doc for d in adds] == ["", "Adds quantity units of product."]


def test_java_docs_parents_and_signatures() -> None:
    parsed = parse("java/com/shop/Inventory.java")
    inventory = by_name(parsed, "Inventory")
    assert inventory.doc == "Keeps stock levels for products.\n\nNot thread-safe."
    assert inventory.signature == (
        "public class Inventory extends BaseStore implements Repository<Product>"
    )
    assert inventory.method_signatures[:2] == [
        "public Inventory()", "public Inventory(List<Product> initial)"
    ]
    assert by_name(parsed, "Inventory.Outer.Inner.method").parent == "Inventory.Outer.Inner"
    assert by_name(parsed, "Inventory.Outer.Inner").parent == "Inventory.Outer"
    assert by_name(parsed, "Inventory.Outer.Inner").doc == "A padded cell of an inventory report."
    assert by_name(parsed, "Inventory.count").doc == ""


def test_java_references_and_imports() -> None:
    parsed = parse("java/com/shop/Inventory.java")
    assert {
        ("BaseStore", "type", None, 13),
        ("Repository", "type", None, 13),
        ("HashMap", "new", None, 14),
        ("Report", "new", None, 48),
        ("Report", "type", None, 47),
        ("add", "call", None, 32),
        ("add", "call", "products", 39),
        ("countAll", "call", "this", 49),
        ("format", "call", "String", 61),
        ("sum", "call", "Integer", 40),
    } <= refs(parsed)
    assert ("Report", "type", None, 48) in refs(parsed)  # the declared local type
    assert parsed.imports == [
        "java.util.ArrayList", "java.util.HashMap", "java.util.List", "java.util.Map"
    ]
    assert parsed.imported_names == ["ArrayList", "HashMap", "List", "Map"]


def test_java_record_interface_enum() -> None:
    parsed = parse("java/com/shop/Product.java")
    assert table(parsed) == {
        ("record", "Product", 6, 12),
        ("constructor", "Product.Product", 7, 11),
        ("interface", "Repository", 15, 21),
        ("method", "Repository.add", 16, 16),
        ("method", "Repository.find", 18, 20),
        ("enum", "Category", 24, 31),
        ("method", "Category.label", 28, 30),
        ("class", "BaseStore", 33, 39),
        ("constructor", "BaseStore.BaseStore", 36, 38),
        ("class", "Report", 41, 53),
        ("constructor", "Report.Report", 45, 47),
        ("method", "Report.withLines", 49, 52),
    }
    assert by_name(parsed, "Repository").doc == "Storage of items by key."
    assert by_name(parsed, "Repository.add").signature == "void add(T item);"
    assert ("IllegalArgumentException", "new", None, 9) in refs(parsed)


# --- JavaScript ----------------------------------------------------------------------------------


def test_javascript_cart_definitions() -> None:
    parsed = parse("web/js/cart.js")
    assert table(parsed) == {
        ("function", "helper", 9, 11),
        ("class", "Cart", 16, 44),
        ("constructor", "Cart.constructor", 20, 23),
        ("method", "Cart.add", 26, 29),
        ("method", "Cart.total", 31, 33),
        ("method", "Cart.onClear", 35, 37),
        ("method", "Cart.entries", 39, 43),
        ("function", "describe", 47, 47),
        ("function", "legacyTotal", 49, 51),
        ("function", "skus", 53, 57),
        ("function", "demo", 59, 63),
    }
    assert by_name(parsed, "helper").doc == (
        "Returns its argument unchanged; a trivial helper.\n@param {number} x"
    )
    assert by_name(parsed, "Cart").doc == "A client-side shopping cart."
    assert by_name(parsed, "Cart.constructor").doc == "@param {string} owner who owns the cart"
    assert by_name(parsed, "Cart.total").doc == ""
    assert by_name(parsed, "describe").doc == "Formats the cart total for display."
    assert by_name(parsed, "legacyTotal").signature == "const legacyTotal = function (cart)"
    assert by_name(parsed, "Cart.onClear").parent == "Cart"


def test_javascript_references_and_require() -> None:
    parsed = parse("web/js/cart.js")
    assert {
        ("helper", "call", None, 32),
        ("helper", "call", None, 62),
        ("Cart", "new", None, 60),
        ("add", "call", "cart", 61),
        ("push", "call", "this.items", 27),
        ("formatPrice", "call", None, 47),
    } <= refs(parsed)
    assert next(r for r in parsed.references if r.line == 32 and r.name == "helper").enclosing == (
        "Cart.total"
    )
    assert parsed.imports == ["./format"]


def test_jsx_component_file() -> None:
    parsed = parse("web/js/CartView.jsx")
    assert parsed.has_errors is False
    assert table(parsed) == {("function", "CartView", 7, 15), ("function", "CartLine", 18, 18)}
    cart_view = by_name(parsed, "CartView")
    assert cart_view.code.startswith("export function CartView")
    assert cart_view.doc == "Shows the cart owner and total."
    assert {("Cart", "new", None, 8), ("describe", "call", None, 11),
            ("onClear", "call", "cart", 12)} <= refs(parsed)
    assert parsed.imports == ["react", "./cart"]
    assert parsed.imported_names == ["React", "useState", "Cart", "describe"]


def test_jsx_component_use_is_a_call() -> None:
    source = "function App() {\n  return <Panel><CartView owner='a' /><div /></Panel>;\n}\n"
    parsed = parse_source(source, "javascript", "App.jsx")
    assert {(r.name, r.kind, r.enclosing) for r in parsed.references} == {
        ("Panel", "call", "App"), ("CartView", "call", "App"),
    }


# --- TypeScript ----------------------------------------------------------------------------------


def test_typescript_pricing_definitions() -> None:
    parsed = parse("web/ts/pricing.ts")
    assert table(parsed) == {
        ("interface", "Price", 2, 5),
        ("enum", "Currency", 8, 11),
        ("type", "Rule", 14, 14),
        ("interface", "Pricer", 16, 18),
        ("method", "Pricer.apply", 17, 17),
        ("class", "DiscountPricer", 23, 37),
        ("constructor", "DiscountPricer.constructor", 26, 26),
        ("method", "DiscountPricer.addRule", 28, 31),
        ("method", "DiscountPricer.apply", 33, 36),
        ("class", "Store", 39, 45),
        ("method", "Store.find", 40, 40),
        ("method", "Store.first", 42, 44),
        ("function", "clamp", 48, 51),
        ("function", "percentOff", 53, 55),
        ("function", "demoPricer", 57, 59),
    }
    assert by_name(parsed, "DiscountPricer").doc == "Applies discount rules in order."
    assert by_name(parsed, "DiscountPricer").signature == (
        "export class DiscountPricer implements Pricer"
    )
    assert by_name(parsed, "Store").signature == "export abstract class Store<T>"
    assert by_name(parsed, "Rule").doc == "A function that adjusts a price."
    assert by_name(parsed, "percentOff").doc == ""
    assert by_name(parsed, "DiscountPricer").code.startswith("export class DiscountPricer")


def test_typescript_references() -> None:
    parsed = parse("web/ts/pricing.ts")
    assert {
        ("Pricer", "type", None, 23),
        ("Rule", "type", None, 24),
        ("Price", "type", None, 33),
        ("DiscountPricer", "new", None, 58),
        ("addRule", "call", "DiscountPricer()", 58),  # on `new DiscountPricer(0)`: what it makes
        ("percentOff", "call", None, 58),
        ("clamp", "call", None, 35),
        ("max", "call", "Math", 50),
    } <= refs(parsed)
    definition_names = {(r.name, r.line) for r in parsed.references}
    assert ("Price", 2) not in definition_names and ("DiscountPricer", 23) not in definition_names


def test_tsx_file_uses_tsx_grammar() -> None:
    parsed = parse("web/ts/PriceTag.tsx")
    assert parsed.has_errors is False
    assert table(parsed) == {
        ("interface", "PriceTagProps", 4, 7),
        ("function", "PriceTag", 10, 17),
        ("function", "formatAmount", 19, 20),
    }
    assert {("PriceTagProps", "type", None, 10), ("Element", "type", "JSX", 10),
            ("apply", "call", "demoPricer()", 11), ("formatAmount", "call", None, 14)} <= refs(parsed)
    assert parsed.imports == ["react", "./pricing"]
    assert parsed.imported_names == ["React", "Currency", "Price", "demoPricer"]
    as_plain_ts = parse_source((REPO / "web/ts/PriceTag.tsx").read_text(), "typescript", "x.ts")
    assert as_plain_ts.has_errors is True


# --- Rust ----------------------------------------------------------------------------------------


def test_rust_lib_definitions() -> None:
    parsed = parse("rust/src/lib.rs")
    assert table(parsed) == {
        ("trait", "Priced", 9, 17),
        ("method", "Priced.price_cents", 11, 11),
        ("method", "Priced.label", 14, 16),
        ("enum", "Location", 20, 24),
        ("struct", "Warehouse", 27, 30),
        ("impl", "Warehouse", 32, 48),
        ("method", "Warehouse.new", 34, 39),
        ("method", "Warehouse.add", 41, 43),
        ("method", "Warehouse.shelf", 45, 47),
        ("impl", "Item", 50, 54),
        ("method", "Item.price_cents", 51, 53),
        ("function", "helper", 57, 59),
        ("function", "demo", 61, 66),
    }
    assert by_name(parsed, "Location").doc == "Where an item is stored."
    assert by_name(parsed, "Location").code.startswith("#[derive(Debug, Clone, PartialEq)]")
    assert by_name(parsed, "Priced.label").doc == "Price formatted for humans."
    assert by_name(parsed, "Priced.label").parent == "Priced"
    assert by_name(parsed, "Item.price_cents").parent == "Item"
    assert by_name(parsed, "Item").signature == "impl Priced for Item"
    assert by_name(parsed, "Warehouse.new").doc == "Creates an empty warehouse."
    assert by_name(parsed, "Warehouse.add").doc == ""
    assert by_name(parsed, "helper").doc == "Returns its argument unchanged."
    assert by_name(parsed, "Priced").doc == "Something that can be priced."


def test_rust_references_and_imports() -> None:
    parsed = parse("rust/src/lib.rs")
    assert {
        ("new", "call", "Warehouse", 62),
        ("new", "call", "Shelf", 46),
        ("new", "call", "HashMap", 36),
        ("Item", "new", None, 63),
        ("Warehouse", "new", None, 35),
        ("add", "call", "w", 64),
        ("helper", "call", None, 65),
        ("insert", "call", "self.items", 42),
        ("Priced", "type", None, 50),
        ("Shelf", "type", None, 45),
    } <= refs(parsed)
    assert parsed.imports == ["stock", "crate::stock", "std::collections::HashMap"]
    assert parsed.imported_names == ["Item", "Shelf", "HashMap"]


def test_rust_generic_impl_and_union() -> None:
    parsed = parse("rust/src/stock.rs")
    assert table(parsed) == {
        ("struct", "Item", 4, 8),
        ("struct", "Shelf", 11, 13),
        ("impl", "Shelf", 15, 24),
        ("method", "Shelf.new", 16, 18),
        ("method", "Shelf.capacity", 21, 23),
        ("struct", "Bin", 27, 29),
        ("impl", "Bin", 31, 35),
        ("method", "Bin.put", 32, 34),
        ("union", "Slot", 38, 42),
        ("function", "refill_front", 45, 47),
    }
    assert ("restock", "call", "crate", 46) in refs(parsed)  # a macro invocation is a call
    assert by_name(parsed, "Bin.put").parent == "Bin"
    assert by_name(parsed, "Shelf.new").doc == ""
    assert by_name(parsed, "Shelf.capacity").doc == "Number of slots on the shelf."


# --- Go ------------------------------------------------------------------------------------------


def test_go_store_definitions() -> None:
    parsed = parse("go/inventory/store.go")
    assert table(parsed) == {
        ("variable", "ErrNotFound", 10, 10),
        ("struct", "Item", 13, 16),
        ("struct", "Store", 19, 21),
        ("interface", "Lister", 24, 26),
        ("type", "SKU", 29, 29),
        ("function", "NewStore", 32, 34),
        ("method", "Store.Add", 37, 39),
        ("method", "Store.Get", 42, 48),
        ("method", "Store.List", 50, 56),
    }
    assert by_name(parsed, "Store.Add").parent == "Store"
    assert by_name(parsed, "Store.Add").signature == "func (s *Store) Add(item Item)"
    assert by_name(parsed, "Store.Add").doc == (
        "Add stores an item, replacing any item with the same SKU."
    )
    assert by_name(parsed, "Store.List").doc == ""
    assert by_name(parsed, "Item").signature == "type Item struct"
    assert by_name(parsed, "Lister").signature == "type Lister interface"
    assert by_name(parsed, "Store").method_signatures == [
        "func (s *Store) Add(item Item)",
        "func (s *Store) Get(sku string) (Item, error)",
        "func (s Store) List() []Item",
    ]
    assert {("Store", "new", None, 33), ("Item", "new", None, 45),
            ("Errorf", "call", "fmt", 45)} <= refs(parsed)
    assert ("Store", "type", None, 37) not in refs(parsed)  # the receiver is the owner, not a use
    assert parsed.imports == ["errors", "fmt"]


def test_go_main_package_calls() -> None:
    parsed = parse("go/main.go")
    assert table(parsed) == {("function", "main", 9, 18), ("function", "describe", 21, 23)}
    assert {
        ("NewStore", "call", "inventory", 10),
        ("Item", "new", "inventory", 11),
        ("Add", "call", "store", 11),
        ("describe", "call", None, 17),
        ("Item", "type", "inventory", 21),
    } <= refs(parsed)
    assert parsed.imports == ["fmt", "example.com/shop/inventory"]
    assert by_name(parsed, "describe").doc == "describe formats an item for the console."


# --- C and C++ -----------------------------------------------------------------------------------


def test_c_source_and_header() -> None:
    source, header = parse("c/ledger.c"), parse("c/ledger.h")
    assert table(source) == {
        ("function", "ledger_new", 5, 15),
        ("function", "entry_value", 18, 22),
        ("function", "ledger_add", 28, 35),
        ("function", "ledger_balance", 37, 44),
        ("function", "ledger_free", 46, 50),
    }
    assert table(header) == {
        ("enum", "entry_kind", 7, 10),
        ("union", "amount", 13, 16),
        ("struct", "entry", 19, 22),
        ("struct", "ledger", 24, 28),
        ("function", "ledger_new", 30, 30),  # prototypes: declarations, grouped with ledger.c's at search
        ("function", "ledger_add", 31, 31),
        ("function", "ledger_balance", 32, 32),
        ("function", "ledger_free", 33, 33),
    }
    assert all(d.declaration == (d.kind == "function") for d in header.definitions)
    assert not any(d.declaration for d in source.definitions)
    assert by_name(source, "ledger_new").signature == "struct ledger *ledger_new(size_t capacity)"
    assert by_name(source, "ledger_add").doc == (
        "Appends an entry.\nReturns 0 on success, -1 when the ledger is full."
    )
    assert by_name(source, "entry_value").doc == "Signed value of one entry in cents."
    assert by_name(source, "ledger_balance").doc == ""
    assert by_name(header, "amount").doc == "Amount stored either as cents or as whole units."
    assert {("entry_value", "call", None, 41), ("malloc", "call", None, 7),
            ("entry", "type", None, 18)} <= refs(source)
    assert source.imports == ["stdlib.h", "ledger.h"]
    assert header.imports == ["stddef.h"]


def test_cpp_out_of_class_methods() -> None:
    parsed = parse("cpp/warehouse.cpp")
    assert table(parsed) == {
        ("constructor", "Warehouse.Warehouse", 7, 7),
        ("method", "Warehouse.~Warehouse", 9, 13),
        ("method", "Warehouse.store", 16, 19),
        ("method", "Warehouse.totalWeight", 21, 27),
        ("union", "Tag", 29, 32),
        ("function", "main", 36, 41),
    }
    store = by_name(parsed, "Warehouse.store")
    assert store.parent == "Warehouse"
    assert store.signature == "int Warehouse::store(const Box& box)"
    assert store.doc == "Copies the box onto the heap and keeps it."
    assert {
        ("Box", "new", None, 17),
        ("Box", "new", "shop", 38),
        ("push_back", "call", "boxes_", 17),
        ("store", "call", "warehouse", 38),
        ("totalWeight", "call", "warehouse", 39),
    } <= refs(parsed)
    assert parsed.imports == ["warehouse.hpp", "iostream"]


def test_cpp_header_classes() -> None:
    parsed = parse("cpp/warehouse.hpp")
    assert table(parsed) == {
        ("struct", "Box", 9, 12),
        ("enum", "Zone", 15, 15),
        ("class", "Warehouse", 18, 34),
        ("constructor", "Warehouse.Warehouse", 20, 20),  # in-class declarations: warehouse.cpp defines them
        ("method", "Warehouse.~Warehouse", 21, 21),
        ("method", "Warehouse.store", 24, 24),
        ("method", "Warehouse.totalWeight", 26, 26),
        ("method", "Warehouse.size", 29, 29),
    }
    assert {d.qualified_name for d in parsed.definitions if d.declaration} == {
        "Warehouse.Warehouse", "Warehouse.~Warehouse", "Warehouse.store", "Warehouse.totalWeight"}
    assert by_name(parsed, "Warehouse").doc == "A warehouse of boxes."
    assert by_name(parsed, "Warehouse").method_signatures == [
        "explicit Warehouse(Zone zone);", "~Warehouse();", "int store(const Box& box);", "int totalWeight() const;",
        "std::size_t size() const"]
    assert by_name(parsed, "Warehouse.size").doc == "Number of boxes stored."


def test_cpp_in_class_constructor_and_nested_scope() -> None:
    source = "class A {\n  A() {}\n  void f() {}\n};\nvoid N::B::g() {}\n"
    parsed = parse_source(source, "cpp")
    assert table(parsed) == {
        ("class", "A", 1, 4),
        ("constructor", "A.A", 2, 2),
        ("method", "A.f", 3, 3),
        ("method", "N.B.g", 5, 5),
    }
    assert by_name(parsed, "N.B.g").parent == "N.B"


def test_cpp_a_scope_the_parser_invented_after_a_macro_is_no_scope() -> None:
    """fmt's color.h: after the `FMT_CONSTEXPR` macro the grammar recovers by reading the return
    type and the name as `ansi_color_escape<Char>::make_foreground_color`, with a missing `::`."""
    source = ("template <typename Char>\nFMT_CONSTEXPR ansi_color_escape<Char>\n"
              "make_foreground_color(rgb color) FMT_NOEXCEPT {\n"
              "  return ansi_color_escape<Char>(color, internal::data::FOREGROUND_COLOR);\n}\n")
    parsed = parse_source(source, "cpp")
    assert table(parsed) == {("function", "make_foreground_color", 1, 5)}


# --- edge cases ----------------------------------------------------------------------------------


def test_syntax_errors_still_yield_valid_definitions() -> None:
    source = (
        "def good(a):\n    return a\n\ndef broken(:\n    pass\n\n"
        "class Fine:\n    def m(self):\n        return good(1)\n"
    )
    parsed = parse_source(source, "python")
    assert parsed.has_errors is True
    names = {d.qualified_name for d in parsed.definitions}
    assert {"good", "Fine", "Fine.m"} <= names
    assert ("good", "call", None, 9) in refs(parsed)


def test_typescript_decorators_stay_out_of_signatures() -> None:
    source = (
        "@Component({ selector: 'x' })\nclass Widget {\n  @Input() name: string;\n"
        "  @HostListener('click')\n  onClick(): void {}\n}\n"
    )
    parsed = parse_source(source, "typescript", "widget.ts")
    assert by_name(parsed, "Widget").signature == "class Widget"
    assert by_name(parsed, "Widget").start_line == 1
    assert by_name(parsed, "Widget.onClick").signature == "onClick(): void"
    assert by_name(parsed, "Widget.onClick").code.startswith("@HostListener('click')")


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_a_private_method_call_is_a_reference_to_the_private_method(language) -> None:
    source = "class Ky {\n  #delay() { return 1; }\n  retry() {\n    return this.#delay();\n  }\n}\n"
    parsed = parse_source(source, language, "ky." + language[:2].replace("ja", "js"))
    assert by_name(parsed, "Ky.#delay").name == "#delay"
    assert ("#delay", "call", "this", 4) in refs(parsed)


def test_syntax_errors_in_java() -> None:
    source = "class A {\n  void ok() { b(); }\n  void bad( { \n}\nclass B { void m() {} }\n"
    parsed = parse_source(source, "java")
    assert parsed.has_errors is True
    assert "A.ok" in {d.qualified_name for d in parsed.definitions}


def test_empty_and_blank_sources() -> None:
    for language in LANGUAGES:
        for source in ("", "\n\n   \n"):
            parsed = parse_source(source, language)
            assert parsed.language == language
            assert (parsed.definitions, parsed.references, parsed.imports,
                    parsed.imported_names) == ([], [], [], [])


def test_trailing_comment_is_not_a_doc() -> None:
    source = (
        "int x = 1; // x is one\nint f(void) { return x; }\n\n"
        "// unrelated\n\nint g(void) { return 0; }\n"
    )
    parsed = parse_source(source, "c")
    assert by_name(parsed, "f").doc == ""
    assert by_name(parsed, "g").doc == ""


def test_columns_count_characters_not_bytes() -> None:
    parsed = parse_source("x = 'héllo' + f()\n", "python")
    (call,) = parsed.references
    assert (call.name, call.line, call.column) == ("f", 1, 15)


def test_rust_inner_doc_is_not_an_item_doc() -> None:
    parsed = parse_source("//! Crate docs.\nfn f() {}\n", "rust")
    assert by_name(parsed, "f").doc == ""


# --- Code outside functions and classes: macros, constants, member-assigned functions -------------


def test_rust_macro_rules_and_constants() -> None:
    parsed = parse("rust/src/macros/restock.rs")
    assert table(parsed) == {("macro", "restock", 4, 11), ("constant", "MAX_RESTOCK", 14, 14)}
    restock = by_name(parsed, "restock")
    assert restock.signature == "macro_rules! restock"
    assert restock.doc.startswith("Restocks several shelves at once")
    assert restock.code.startswith("#[macro_export]")
    assert by_name(parsed, "MAX_RESTOCK").doc == "How many units a single restock may add."
    assert parsed.module_doc == "Macros for filling shelves in bulk."
    assert parsed.top_level_names == ["restock", "MAX_RESTOCK"]


def test_rust_constants_of_impls_but_not_of_function_bodies_and_macro_calls() -> None:
    source = ("const TOP: u8 = 1;\nstatic NAME: &str = \"n\";\nimpl Shelf {\n    const CAP: usize = 8;\n"
              "    fn f() { const LOCAL: u8 = 2; restock!(w, 1); crate::restock!(w, 2); println!(\"x\"); }\n}\n")
    parsed = parse_source(source, "rust")
    assert table(parsed) == {("constant", "TOP", 1, 1), ("constant", "NAME", 2, 2), ("impl", "Shelf", 3, 6),
                             ("constant", "Shelf.CAP", 4, 4), ("method", "Shelf.f", 5, 5)}
    assert by_name(parsed, "Shelf.CAP").parent == "Shelf"
    assert {(r.name, r.kind, r.qualifier) for r in parsed.references} == {
        ("restock", "call", None), ("restock", "call", "crate")}  # std's println! is left out


@pytest.mark.parametrize("language, source, reads", [
    ("python", "from .config import TAX, RATE\nimport config\nMAX = 3\nclass C:\n    LIMIT = 1\n"
               "def f(x, KEY=1):\n    RATE = 2\n    g(KEY=TAX)\n    return x > MAX or config.MIN or RATE\n",
     {("TAX", None, 8), ("MAX", None, 9), ("MIN", "config", 9)}),
    ("javascript", "import { MAX } from './limits'\nconst TOP = 1\nfunction f(n) {\n  const LOCAL = 2\n"
                   "  return n > MAX ? limits.MIN : LOCAL + TOP\n}\n",
     {("MAX", None, 5), ("MIN", "limits", 5), ("TOP", None, 5)}),
    ("go", "package p\n\nconst Max = 3\n\nfunc F(n int) bool {\n\tLocal := 2\n"
           "\treturn n > Max && n > other.Min && n > Local\n}\n",
     {("Max", None, 7), ("Min", "other", 7)}),
    ("rust", "use crate::limits::MAX;\nconst TOP: u8 = 1;\nfn f(n: u8) -> bool {\n    let LOCAL = 2;\n"
             "    n > MAX || n > limits::MIN || n > TOP || n > LOCAL\n}\n",
     {("MAX", None, 5), ("MIN", "limits", 5), ("TOP", None, 5)}),
])
def test_reads_of_values_are_references_but_not_imports_writes_or_shadowing_locals(language, source, reads) -> None:
    parsed = parse_source(source, language)
    assert {(r.name, r.qualifier, r.line) for r in parsed.references if r.kind == "read"} == reads


def test_js_constants_file() -> None:
    parsed = parse("web/js/constants.js")
    assert table(parsed) == {
        ("constant", "FREE_SHIPPING_THRESHOLD_CENTS", 3, 3),
        ("constant", "MAX_ITEMS_PER_CART", 4, 4),
        ("constant", "CURRENCY_SYMBOL", 5, 5),
        ("constant", "SKU_PATTERN", 6, 6),
        ("constant", "INVALID_SKU_MESSAGE", 7, 7),
        ("constant", "defaultLocale", 8, 8),  # exported: a constant whatever its case
    }
    assert by_name(parsed, "SKU_PATTERN").signature == r"export const SKU_PATTERN = /^[A-Z]{3}-\d{4}$/"
    assert parsed.module_doc == "Shop-wide constants shared by the cart and the checkout views."
    assert parsed.module_code == []


def test_js_constants_need_upper_case_or_export_and_functions_stay_functions() -> None:
    source = ("const LIMIT = 3\nconst helper = {}\nlet counter = 0\nvar OLD_STYLE = 1\n"
              "export const run = () => 1\nfunction f() { const INNER = 2 }\n")
    parsed = parse_source(source, "javascript")
    assert table(parsed) == {("constant", "LIMIT", 1, 1), ("constant", "OLD_STYLE", 4, 4),
                             ("function", "run", 5, 5), ("function", "f", 6, 6)}


def test_js_plugin_methods_assigned_to_a_prototype() -> None:
    parsed = parse("web/js/plugin/discount.js")
    assert table(parsed) == {("method", "proto.applyCoupon", 7, 12), ("method", "proto.couponCodes", 14, 14)}
    apply = by_name(parsed, "proto.applyCoupon")
    assert (apply.name, apply.parent) == ("applyCoupon", "proto")
    assert apply.signature == "proto.applyCoupon = function (code)"
    assert apply.doc == "Applies a coupon code and returns the discounted total in cents."
    assert [(c.start_line, c.end_line) for c in parsed.module_code] == [(2, 4)]
    assert parsed.module_code[0].code.startswith("export default (option, CartClass) => {")


def test_js_functions_assigned_to_exports_and_object_literals() -> None:
    parsed = parse("web/js/sku.js")
    assert table(parsed) == {
        ("function", "parseSku", 4, 7),  # exports.parseSku = (text) => ...
        ("function", "skuPrefix", 9, 11),  # module.exports.skuPrefix = function ...
        ("method", "validators.isSku", 14, 16),  # const validators = { isSku() {} }
        ("method", "validators.isPrefix", 17, 17),  # ... isPrefix: (text) => ...
    }
    assert by_name(parsed, "parseSku").doc == 'Splits "ABC-1234" into its prefix and number.'
    source = ("Cart.prototype.empty = function () {}\nwindow.shop.boot = () => {}\n"
              "module.exports = { load() {}, save: function () {} }\nfunction Cart() { this.add = function () {} }\n")
    assert table(parse_source(source, "javascript")) == {
        ("method", "Cart.empty", 1, 1), ("method", "window.shop.boot", 2, 2),
        ("method", "load", 3, 3), ("function", "save", 3, 3), ("function", "Cart", 4, 4)}


def test_typescript_shares_the_module_level_patterns() -> None:
    source = ("export const MAX_RETRIES: number = 3\nexport const client = { get(url: string) { return url } }\n"
              "proto.render = function (this: View): string { return '' }\n")
    assert table(parse_source(source, "typescript")) == {
        ("constant", "MAX_RETRIES", 1, 1), ("constant", "client", 2, 2), ("method", "client.get", 2, 2),
        ("method", "proto.render", 3, 3)}


def test_c_macros_with_parameters() -> None:
    parsed = parse("c/money.h")
    assert table(parsed) == {("macro", "TO_CENTS", 8, 8), ("macro", "CLAMP_CENTS", 10, 11)}
    # `#define CENTS_PER_UNIT 100` is module-level code, with the include guard.
    assert [(c.start_line, c.end_line) for c in parsed.module_code] == [(2, 5)]
    assert by_name(parsed, "TO_CENTS").doc == "Converts whole units to cents, rounding nothing."
    assert by_name(parsed, "CLAMP_CENTS").signature == "#define CLAMP_CENTS(value, low, high) \\"
    assert parsed.module_doc == "Money helpers for the ledger: conversions between cents and whole units."
    cpp = parse_source("#define SQUARE(x) ((x) * (x))\nint f() { return SQUARE(2); }\n", "cpp")
    assert table(cpp) == {("macro", "SQUARE", 1, 1), ("function", "f", 2, 2)}
    assert ("SQUARE", "call", None, 2) in refs(cpp)


def test_go_package_level_vars_and_consts() -> None:
    parsed = parse("go/inventory/checks.go")
    assert table(parsed) == {
        ("function", "hasPrefix", 8, 10),  # var ( hasPrefix = func(...) {...} )
        ("function", "isUpper", 11, 11),
        ("variable", "checks", 12, 12),
        ("constant", "MaxSKULength", 16, 16),
    }
    assert by_name(parsed, "hasPrefix").doc == "hasPrefix reports whether a SKU starts with a three-letter prefix."
    assert by_name(parsed, "hasPrefix").signature == "hasPrefix = func(sku string) bool"
    assert by_name(parsed, "MaxSKULength").signature == "const MaxSKULength = 16"  # the `const` keyword kept
    assert by_name(parsed, "MaxSKULength").doc == "MaxSKULength is the longest SKU the store accepts."
    local = parse_source("package x\nfunc f() {\n\tconst n = 1\n\tvar g = func() {}\n}\n", "go")
    assert table(local) == {("function", "f", 2, 5)}


def test_python_module_constants_and_all() -> None:
    parsed = parse("shop/settings.py")
    assert table(parsed) == {("constant", "__all__", 5, 5), ("constant", "DEFAULT_CURRENCY", 7, 7),
                             ("constant", "PAYMENT_PROVIDERS", 8, 8)}
    assert by_name(parsed, "DEFAULT_CURRENCY").signature == 'DEFAULT_CURRENCY = os.environ.get("SHOP_CURRENCY", "EUR")'
    assert parsed.module_doc == "Shop settings, read once from the environment at import time."
    assert [(c.start_line, c.end_line) for c in parsed.module_code] == [(3, 3), (10, 20)]
    nested = parse_source("class A:\n    LIMIT = 1\nif True:\n    FLAG = 2\nlower = 3\nT: int = 4\n", "python")
    assert table(nested) == {("class", "A", 1, 2), ("constant", "T", 6, 6)}


def test_module_doc_skips_licenses_and_item_docs() -> None:
    licensed = parse_source("// Copyright 2024 Shop Inc. Licensed under MIT.\n\n// Package cart holds carts.\n"
                            "package cart\n", "go")
    assert licensed.module_doc == "Package cart holds carts."
    item_doc = parse_source("/** Formats a price. */\nfunction format() {}\n", "javascript")
    assert item_doc.module_doc == ""
    python = parse_source("# coding: utf-8\n'''The shop.\n\nMore.'''\nimport os\n", "python")
    assert python.module_doc == "The shop.\n\nMore."
    assert [(c.start_line, c.end_line, c.code) for c in python.module_code] == [(5, 5, "import os")]
