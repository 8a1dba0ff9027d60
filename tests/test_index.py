"""The indexer end to end: real tree-sitter, the real local embedding model, real LanceDB."""

from __future__ import annotations

import numpy as np
import pytest

from codeqa.core.records import RepoInfo
from codeqa.store import create_tables, registry, schema
from codeqa.store.connection import connect
from codeqa.store.errors import ModelMismatchError, StaleIndexError
from conftest import SAMPLE_REPO
from codeqa.parsing.languages import file_role
from codeqa.indexing.indexer import index_repo, resolve_repo_name
from codeqa.indexing.static_embedder import DIM as STATIC_DIM
from codeqa.indexing.static_embedder import StaticEmbedder

pytestmark = pytest.mark.integration


def table_rows(settings, repo: str, kind: str) -> list[dict]:
    db = connect(settings)
    info = registry.get_repo(db, repo)
    return registry.open_table(db, info, kind).to_arrow().to_pylist()


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
            "classes": table_rows(settings, "sample", "classes"),
            "modules": table_rows(settings, "sample", "modules"),
            "files": table_rows(settings, "sample", "files")}


def test_report_counts_every_language_and_kind(sample):
    report = sample["report"]
    assert set(report.files_by_language) >= {
        "python", "java", "javascript", "typescript", "rust", "go", "c", "cpp", "markdown", "rst"}
    assert report.added == sum(report.files_by_language.values())
    assert report.methods == len(sample["methods"])
    assert report.classes + report.docs == len(sample["classes"])
    assert report.docs == sum(1 for r in sample["classes"] if r["kind"] == "doc")
    assert report.modules == sum(1 for r in sample["modules"] if r["kind"] == "module") >= 1
    assert report.embedded > 0 and report.references > 0
    # No "embed" stage: the default (static) model embeds in the parse workers.
    assert {"walk", "parse", "write", "references", "optimize", "total"} <= set(report.timings)


def test_rows_carry_the_data_model(sample):
    cart_add = one(sample["methods"], "shop/models.py", "Cart.add")
    assert (cart_add["kind"], cart_add["name"], cart_add["parent"]) == ("method", "add", "Cart")
    assert (cart_add["start_line"], cart_add["end_line"]) == (39, 45)
    assert cart_add["code"].startswith("    @log_calls") or cart_add["code"].startswith("@log_calls")
    assert cart_add["doc"] == "Add quantity of product to the cart."
    assert cart_add["language"] == "python" and cart_add["repo"] == "sample"
    assert len(cart_add["vector"]) == STATIC_DIM
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
    assert ("shop/checkout.py", 13, "call", "typed") in uses(parse)
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
    assert ("go/main.go", 10, "call", "module") in uses(new_store)
    get = one(sample["methods"], "go/inventory/store.go", "Store.Get")
    assert ("go/main.go", 12, "call", "typed") in uses(get)


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
    db = connect(settings)
    assert resolve_repo_name(db, a.resolve(), None) == "proj"


def test_model_mismatch_is_refused(settings, tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "m.py").write_text("def alpha():\n    return 1\n")
    index_repo(root, settings, progress=False)
    db = connect(settings)
    info = registry.get_repo(db, "repo")
    registry.save_repo(db, RepoInfo(**{**info.__dict__, "embedding_model": "openai:other"}))
    with pytest.raises(ModelMismatchError, match="--rebuild"):
        index_repo(root, settings, progress=False)
    report = index_repo(root, settings, progress=False, rebuild=True)
    assert report.added == 1
    assert registry.get_repo(db, "repo").embedding_model == StaticEmbedder().model_id


def test_sample_repo_is_untouched_by_indexing():
    assert not (SAMPLE_REPO / ".codeqa").exists()


def test_large_tables_get_a_vector_index_that_search_uses(settings, sample_copy, monkeypatch):
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    monkeypatch.setattr(create_tables, "ANN_MIN_ROWS", 50)  # the sample's methods table has ~80 rows
    index_repo(sample_copy, settings, name="ann", progress=False)
    db = connect(settings)
    info = registry.get_repo(db, "ann")
    methods = registry.open_table(db, info, "methods")
    assert any(ix.columns == ["vector"] for ix in methods.list_indices())
    result = Retriever(settings).search("ann", "read products from CSV text",
                                        SearchOptions(k=5, hyde=False, mode="vector"))
    assert "shop/csv_parser.py" in [h.file_path for h in result.results]


# --- Whole-file coverage: file rows, module-level code, new kinds, roles ------------------------------


def test_every_indexed_file_has_a_file_row_and_every_source_file_a_row(sample):
    indexed = {r["file_path"] for r in sample["files"]}
    file_rows = [r for r in sample["modules"] if r["kind"] == "file"]
    assert sorted(r["file_path"] for r in file_rows) == sorted(indexed)  # one each, no more
    with_rows = {r["file_path"] for table in ("methods", "classes", "modules") for r in sample[table]}
    assert with_rows == indexed
    # The shapes that used to have no row at all: macro-only, constants-only, one object literal,
    # a package marker with only a docstring.
    assert {"rust/src/macros/restock.rs", "web/js/constants.js", "web/js/locale/de.js",
            "shop/__init__.py"} <= {r["file_path"] for r in file_rows}


def test_file_rows_hold_doc_imports_names_and_the_whole_file_for_bm25(sample):
    de = one(sample["modules"], "web/js/locale/de.js", "web/js/locale/de.js", kind="file")
    lines = (SAMPLE_REPO / "web/js/locale/de.js").read_text().splitlines()
    assert (de["name"], de["start_line"], de["end_line"]) == ("de.js", 1, len(lines))
    assert de["doc"] == "German (de) locale for prices and dates."
    assert de["imports"] == ["../cart"] and de["top_level_names"] == ["locale.ordinal"]
    assert de["code"].startswith("import { registerLocale } from '../cart'")
    assert "dezember" in de["file_text"].split() and "registerlocale" in de["file_text"].split()
    assert len(de["vector"]) == STATIC_DIM and de["role"] == "source"
    chunks = sorted((r for r in sample["modules"] if r["file_path"] == "web/js/locale/de.js"
                     and r["kind"] == "module"), key=lambda r: r["start_line"])
    assert len(chunks) >= 2
    for chunk in chunks:
        assert chunk["code"] == "\n".join(lines[chunk["start_line"] - 1:chunk["end_line"]])
        assert chunk["file_text"] == "" and len(chunk["vector"]) == STATIC_DIM
    readme = one(sample["modules"], "README.md", "README.md", kind="file")
    assert readme["role"] == "docs" and "Sample Shop" in readme["top_level_names"]
    assert "multi" in readme["file_text"].split()


def test_new_kinds_land_in_their_tables_with_their_uses(sample):
    restock = one(sample["methods"], "rust/src/macros/restock.rs", "restock")
    assert restock["kind"] == "macro"
    assert ("rust/src/stock.rs", 46, "call", "module") in uses(restock)
    to_cents = one(sample["methods"], "c/money.h", "TO_CENTS")
    assert ("c/money.c", 6, "call", "unique") in uses(to_cents)
    assert one(sample["methods"], "web/js/plugin/discount.js", "proto.applyCoupon")["kind"] == "method"
    assert one(sample["methods"], "go/inventory/checks.go", "hasPrefix")["kind"] == "function"
    for path, name, kind in [("web/js/constants.js", "SKU_PATTERN", "constant"),
                             ("shop/settings.py", "__all__", "constant"),
                             ("go/inventory/checks.go", "checks", "variable")]:
        assert one(sample["classes"], path, name)["kind"] == kind


def test_every_row_carries_its_files_role(sample):
    rows = sample["methods"] + sample["classes"] + sample["modules"]
    assert all(r["role"] == file_role(r["file_path"]) for r in rows)
    assert {r["role"] for r in rows} >= {"source", "docs"}


def test_generated_files_are_known_by_their_header_and_empty_files_have_no_row(settings, tmp_path):
    root = tmp_path / "gen"
    root.mkdir()
    (root / "api.go").write_text("// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage api\n\nfunc Get() {}\n")
    (root / "main.go").write_text("package main\n\nfunc main() {}\n")
    (root / "empty.go").write_text("\n\n")
    index_repo(root, settings, progress=False)
    roles = {(r["file_path"], r["kind"]): r["role"] for table in ("methods", "modules")
             for r in table_rows(settings, "gen", table)}
    # An empty file is indexed (listed, openable) but has nothing to be found by: no row.
    assert roles == {("api.go", "function"): "generated", ("api.go", "file"): "generated",
                     ("main.go", "function"): "source", ("main.go", "file"): "source"}
    assert "empty.go" in {r["file_path"] for r in table_rows(settings, "gen", "files")}


def test_an_index_of_an_older_layout_is_refused_by_search_and_rebuilt_with_a_notice(settings, tmp_path):
    from codeqa.preprocessing import _format_report
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    root = tmp_path / "old"
    root.mkdir()
    (root / "m.py").write_text("def alpha():\n    return 1\n")
    index_repo(root, settings, progress=False)
    db = connect(settings)
    # The registry as the first layout wrote it: no index_version column at all.
    old_rows = db.open_table(schema.REGISTRY_TABLE).to_arrow().drop_columns(["index_version"])
    db.drop_table(schema.REGISTRY_TABLE)
    db.create_table(schema.REGISTRY_TABLE, data=old_rows)
    assert registry.get_repo(db, "old").index_version == 1
    with pytest.raises(StaleIndexError, match="re-index"):
        Retriever(settings).search("old", "alpha", SearchOptions(k=3, hyde=False))

    report = index_repo(root, settings, progress=False)
    assert report.added == 1 and report.notices == [
        f"old was indexed by another version of CodeQA (index format 1, now {schema.INDEX_VERSION}: new "
        "embedder or layout); "
        "re-indexing it from scratch."]
    assert _format_report(report).startswith("note: old was indexed by another version")
    assert registry.get_repo(db, "old").index_version == schema.INDEX_VERSION
    assert Retriever(settings).search("old", "alpha", SearchOptions(k=3, hyde=False)).results
