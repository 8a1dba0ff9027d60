"""The indexer end to end: real tree-sitter, the real local embedding model, real LanceDB."""

from __future__ import annotations

import numpy as np
import pytest

import create_tables
from conftest import SAMPLE_REPO
from preprocessing import index_repo, resolve_repo_name

pytestmark = pytest.mark.integration


def table_rows(settings, repo: str, kind: str) -> list[dict]:
    db = create_tables.connect(settings)
    info = create_tables.get_repo(db, repo)
    return create_tables.open_table(db, info, kind).to_arrow().to_pylist()


def by_symbol(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        out.setdefault((row["file_path"], row["qualified_name"]), []).append(row)
    return out


def one(rows: list[dict], file_path: str, qualified_name: str, kind: str | None = None) -> dict:
    found = [r for r in by_symbol(rows).get((file_path, qualified_name), [])
             if kind is None or r["kind"] == kind]
    assert len(found) == 1, f"{file_path}:{qualified_name} -> {found}"
    return found[0]


def uses(row: dict) -> set[tuple[str, int, str, str]]:
    return {(u["file_path"], u["line"], u["kind"], u["resolution"]) for u in row["references"]}


@pytest.fixture(scope="module")
def sample(indexed_sample):
    settings, report = indexed_sample
    return {"settings": settings, "report": report,
            "methods": table_rows(settings, "sample", "methods"),
            "classes": table_rows(settings, "sample", "classes")}


def test_report_counts_every_language_and_kind(sample):
    report = sample["report"]
    assert set(report.files_by_language) >= {
        "python", "java", "javascript", "typescript", "rust", "go", "c", "cpp", "markdown", "rst"}
    assert report.added == sum(report.files_by_language.values())
    assert report.methods == len(sample["methods"])
    assert report.classes + report.docs == len(sample["classes"])
    assert report.docs == sum(1 for r in sample["classes"] if r["kind"] == "doc")
    assert report.embedded > 0 and report.references > 0
    assert {"walk", "parse", "embed", "write", "references", "optimize", "total"} <= set(report.timings)


def test_rows_carry_the_data_model(sample):
    cart_add = one(sample["methods"], "shop/models.py", "Cart.add")
    assert (cart_add["kind"], cart_add["name"], cart_add["parent"]) == ("method", "add", "Cart")
    assert (cart_add["start_line"], cart_add["end_line"]) == (39, 45)
    assert cart_add["code"].startswith("    @log_calls") or cart_add["code"].startswith("@log_calls")
    assert cart_add["doc"] == "Add quantity of product to the cart."
    assert cart_add["language"] == "python" and cart_add["repo"] == "sample"
    assert len(cart_add["vector"]) == 384
    assert np.isclose(np.linalg.norm(cart_add["vector"]), 1.0, atol=1e-3)

    cart = one(sample["classes"], "shop/models.py", "Cart")
    assert cart["kind"] == "class" and (cart["start_line"], cart["end_line"]) == (27, 56)
    assert cart["doc"].startswith("A shopping cart holding products and quantities.")
    assert [s.split("(")[0] for s in cart["method_signatures"]] == [
        "def __init__", "def add", "def total", "def cheapest"]


def test_same_named_symbols_are_all_kept(sample):
    rows = by_symbol(sample["methods"])
    assert len(rows[("shop/util.py", "log_calls.wrapper")]) == 1
    assert len(rows[("shop/util.py", "timed.wrapper")]) == 1
    parsers = [r for r in sample["classes"] if r["name"] == "Parser"]
    assert sorted(r["file_path"] for r in parsers) == ["shop/csv_parser.py", "shop/json_parser.py"]
    overloads = rows[("java/com/shop/Inventory.java", "Inventory.add")]
    assert sorted(r["start_line"] for r in overloads) == [30, 38]
    assert len({r["id"] for r in sample["methods"] + sample["classes"]}) == \
        len(sample["methods"]) + len(sample["classes"])


def test_docs_become_sections(sample):
    docs = [r for r in sample["classes"] if r["kind"] == "doc"]
    assert {r["file_path"] for r in docs} >= {"README.md", "docs/guide.rst"}
    for row in docs:
        assert row["start_line"] <= row["end_line"]
        assert len(row["code"]) <= 2000 + 200


def test_python_instantiation_through_import_resolves_to_the_imported_class(sample):
    csv_parser = one(sample["classes"], "shop/csv_parser.py", "Parser")
    json_parser = one(sample["classes"], "shop/json_parser.py", "Parser")
    assert ("shop/checkout.py", 11, "new", "import") in uses(csv_parser)
    assert not any(u["file_path"] == "shop/checkout.py" for u in json_parser["references"])


def test_python_calls_types_and_qualified_calls(sample):
    cart = one(sample["classes"], "shop/models.py", "Cart")
    assert ("shop/checkout.py", 12, "new", "unique") in uses(cart)
    assert ("shop/models.py", 61, "new", "unique") in uses(cart)
    assert ("shop/models.py", 59, "type", "unique") in uses(cart)
    from_row = one(sample["methods"], "shop/models.py", "Product.from_row")
    assert ("shop/models.py", 63, "call", "qualified") in uses(from_row)
    assert ("shop/csv_parser.py", 18, "call", "qualified") in uses(from_row)
    parse = one(sample["methods"], "shop/csv_parser.py", "Parser.parse")
    assert ("shop/checkout.py", 13, "call", "import") in uses(parse)
    json_parse = one(sample["methods"], "shop/json_parser.py", "Parser.parse")
    assert not any(u["file_path"] == "shop/checkout.py" for u in json_parse["references"])


def test_method_rows_have_references_with_line_text(sample):
    total = one(sample["methods"], "shop/models.py", "Cart.total")
    assert total["reference_count"] == len(total["references"]) >= 1
    use = next(u for u in total["references"] if u["file_path"] == "shop/checkout.py")
    assert use["text"] == "return cart.total()" and use["column"] > 1 and use["caller"] == "checkout"


def test_java_new_and_type_uses(sample):
    report = one(sample["classes"], "java/com/shop/Product.java", "Report")
    assert ("java/com/shop/Inventory.java", 48, "new", "unique") in uses(report)
    assert ("java/com/shop/Inventory.java", 47, "type", "unique") in uses(report)
    base = one(sample["classes"], "java/com/shop/Product.java", "BaseStore")
    assert ("java/com/shop/Inventory.java", 13, "type", "unique") in uses(base)


def test_javascript_helper_never_resolves_to_rust_helper(sample):
    js_helper = one(sample["methods"], "web/js/cart.js", "helper")
    assert {(u["file_path"], u["line"]) for u in js_helper["references"]} >= {
        ("web/js/cart.js", 32), ("web/js/cart.js", 62)}
    rust_helper = one(sample["methods"], "rust/src/lib.rs", "helper")
    assert all(u["file_path"].startswith("rust/") for u in rust_helper["references"])
    js_cart = one(sample["classes"], "web/js/cart.js", "Cart")
    assert ("web/js/cart.js", 60, "new", "unique") in uses(js_cart)


def test_rust_and_go_instantiations_and_member_calls(sample):
    warehouse = one(sample["classes"], "rust/src/lib.rs", "Warehouse", kind="struct")
    assert any(u["kind"] == "new" and u["line"] == 35 for u in warehouse["references"])
    go_item = one(sample["classes"], "go/inventory/store.go", "Item")
    assert ("go/main.go", 11, "new", "unique") in uses(go_item)
    new_store = one(sample["methods"], "go/inventory/store.go", "NewStore")
    assert ("go/main.go", 10, "call", "unique") in uses(new_store)
    get = one(sample["methods"], "go/inventory/store.go", "Store.Get")
    assert ("go/main.go", 12, "call", "unique") in uses(get)


def test_two_repos_with_the_same_folder_name_do_not_clash(settings, tmp_path):
    a = tmp_path / "a" / "proj"
    b = tmp_path / "b" / "proj"
    for root, body in ((a, "def alpha():\n    return 1\n"), (b, "def beta():\n    return 2\n")):
        root.mkdir(parents=True)
        (root / "m.py").write_text(body)
    first = index_repo(a, settings, progress=False)
    second = index_repo(b, settings, progress=False)
    assert first.name == "proj" and second.name.startswith("proj-")
    assert [r["name"] for r in table_rows(settings, first.name, "methods")] == ["alpha"]
    assert [r["name"] for r in table_rows(settings, second.name, "methods")] == ["beta"]
    db = create_tables.connect(settings)
    assert resolve_repo_name(db, a.resolve(), None) == "proj"


def test_model_mismatch_is_refused(settings, tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "m.py").write_text("def alpha():\n    return 1\n")
    index_repo(root, settings, progress=False)
    db = create_tables.connect(settings)
    info = create_tables.get_repo(db, "repo")
    create_tables.save_repo(db, create_tables.RepoInfo(**{**info.__dict__, "embedding_model": "openai:other"}))
    with pytest.raises(create_tables.ModelMismatchError, match="--rebuild"):
        index_repo(root, settings, progress=False)
    report = index_repo(root, settings, progress=False, rebuild=True)
    assert report.added == 1 and create_tables.get_repo(db, "repo").embedding_model == "local:all-MiniLM-L6-v2"


def test_sample_repo_is_untouched_by_indexing():
    assert not (SAMPLE_REPO / ".codeqa").exists()


def test_large_tables_get_a_vector_index_that_search_uses(settings, sample_copy, monkeypatch):
    from retrieval import Retriever, SearchOptions

    monkeypatch.setattr(create_tables, "ANN_MIN_ROWS", 50)  # the sample's methods table has ~80 rows
    index_repo(sample_copy, settings, name="ann", progress=False)
    db = create_tables.connect(settings)
    info = create_tables.get_repo(db, "ann")
    methods = create_tables.open_table(db, info, "methods")
    assert any(ix.columns == ["vector"] for ix in methods.list_indices())
    result = Retriever(settings).search("ann", "read products from CSV text",
                                        SearchOptions(k=5, hyde=False, mode="vector"))
    assert ("shop/csv_parser.py", "Parser.parse") in [(h.file_path, h.qualified_name) for h in result.results]
