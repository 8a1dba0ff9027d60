"""@-commands resolved against a real index of the sample repo (real LanceDB, real files),
and the context they pack into, with the real embedding model for @codebase."""

from __future__ import annotations


import pytest

from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.chat.chat_commands import parse_message
from conftest import packed_lines
from codeqa.chat.context import ContextBuilder
from codeqa.chat.packing import estimate_tokens, pack
from codeqa.chat.resolver import CommandResolver
from codeqa.store.index import Index
from codeqa.search.retrieval import Retriever
from codeqa.search.options import SearchOptions

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def resolver(indexed_sample):
    settings, _ = indexed_sample
    return CommandResolver(Index.connect(settings))


@pytest.fixture(scope="module")
def builder(indexed_sample, resolver):
    settings, _ = indexed_sample
    return ContextBuilder(Retriever(settings.__class__(data_dir=settings.data_dir, llm_base_url="http://127.0.0.1:9/v1",
                                                       local_llm=False)), resolver)


def resolve(resolver, message: str):
    repo = resolver.index.repo("sample")
    lookup = resolver.lookup(repo)
    return lookup.resolve(parse_message(message).lookups), lookup


def where(sources) -> list[tuple[str, str, int, int]]:
    return [(s["qualified_name"], s["file_path"], s["start_line"], s["end_line"]) for s in sources]


def test_definition_brings_every_definition_with_its_class_header(resolver):
    (found,), lookup = resolve(resolver, "@definition Cart.add")
    assert found.problem == ""
    assert where(found.sources) == [("Cart.add", "shop/models.py", 39, 45), ("Cart.add", "web/js/cart.js", 26, 29)]
    assert {s["source"] for s in found.sources} == {"@definition Cart.add"}
    python = [s for s in found.spans if s.path == "shop/models.py"]
    assert (python[0].start, python[0].end, set(python[0].matched)) == (39, 45, {40})
    assert (python[1].start, python[1].end, set(python[1].matched)) == (27, 27, {27})  # class Cart:


def test_definition_by_plain_name_and_by_qualified_tail(resolver):
    (by_name, by_tail, several), _ = resolve(
        resolver, "@definition make_demo_cart @definition total.line_total @definition Parser.parse")
    assert where(by_name.sources) == [("make_demo_cart", "shop/models.py", 59, 64)]
    assert where(by_tail.sources) == [("Cart.total.line_total", "shop/models.py", 48, 50)]
    assert sorted(s["file_path"] for s in several.sources) == ["shop/csv_parser.py", "shop/json_parser.py"]


def test_references_bring_uses_with_their_callers_most_relevant_first(resolver):
    (found,), lookup = resolve(resolver, "@references Cart.add")
    uses = [(s["file_path"], s["start_line"], s["qualified_name"]) for s in found.sources]
    assert uses == [("shop/checkout.py", 14, "checkout"), ("shop/models.py", 62, "make_demo_cart"),
                    ("web/js/cart.js", 61, "demo"), ("shop/models.py", 63, "make_demo_cart")]
    assert all(s["kind"] == "use" and s["source"] == "@references Cart.add" for s in found.sources)
    assert found.sources[0]["text"] == "cart.add(product)"
    checkout = found.spans[0]
    assert (checkout.path, checkout.start, checkout.end, set(checkout.matched)) == ("shop/checkout.py", 8, 15, {14})
    assert any("Cart.add (method, shop/models.py:39) is used 3 times" in note for note in found.notes)


@pytest.mark.parametrize("argument, lines, matched", [
    ("shop/models.py", (1, 64), set()),
    ("shop/models.py:42", (39, 45), {42}),  # the definition around the line
    ("shop/models.py:10-20", (10, 20), set()),
    ("shop/models.py:58", (38, 64), {58}),  # outside any definition: lines around it
])
def test_file_brings_a_file_a_line_or_a_range(resolver, argument, lines, matched):
    (found,), _ = resolve(resolver, f"@file {argument}")
    assert found.problem == ""
    span = found.spans[0]
    assert (span.start, min(span.end, 64), set(span.matched)) == (*lines, matched)
    assert found.sources[0]["kind"] == "file" and found.sources[0]["file_path"] == "shop/models.py"


def test_symbols_at_resolves_the_names_around_a_line(resolver):
    (found,), _ = resolve(resolver, "@symbols-at shop/checkout.py:14")
    assert where(found.sources) == [("Cart.add", "shop/models.py", 39, 45), ("Parser.parse", "shop/csv_parser.py", 15, 18),
                                    ("Cart.total", "shop/models.py", 47, 52), ("Cart", "shop/models.py", 27, 56)]
    line = found.spans[0]
    assert (line.path, line.start, line.end, set(line.matched)) == ("shop/checkout.py", 8, 15, {14})


@pytest.mark.parametrize("message, fragment, suggestion", [
    ("@definition Crat", "no definition named Crat", "Cart (shop/models.py:27)"),
    ("@references make_demo_crt", "no definition named make_demo_crt", "make_demo_cart (shop/models.py:59)"),
    ("@file shop/modls.py", "shop/modls.py is not an indexed file", "shop/models.py"),
    ("@symbols-at shop/chekout.py:3", "not an indexed file", "shop/checkout.py"),
])
def test_unknown_names_and_paths_get_a_notice_with_the_nearest_matches(resolver, message, fragment, suggestion):
    (found,), _ = resolve(resolver, message)
    assert fragment in found.problem and "Did you mean" in found.problem
    assert suggestion in found.suggestions[0] and found.notes == [found.problem]
    assert found.to_json()["status"] == "not_found" and found.sources == []


@pytest.mark.parametrize("message, fragment", [
    ("@file shop/models.py:99", "shop/models.py has 64 lines"),
    ("@file ../etc/passwd", "not an indexed file"),
    ("@file .gitignore", "not an indexed file"),
])
def test_lines_past_the_end_and_paths_outside_the_index_are_refused(resolver, message, fragment):
    (found,), lookup = resolve(resolver, message)
    assert fragment in found.problem and not found.spans and set(lookup.files) <= {"shop/models.py"}


def test_an_unknown_name_still_gives_the_llm_a_context(builder):
    assembled = builder.build("sample", "@definition Crat what does it hold?", SearchOptions(k=4, hyde=False), 400)
    assert "no definition named Crat" in assembled.text and "Cart (shop/models.py:27)" in assembled.text
    assert assembled.notices and "Did you mean" in assembled.notices[0]


def test_commands_and_codebase_combine_and_sources_are_labelled(builder):
    assembled = builder.build("sample", "@codebase @definition Cart.add @references Cart.add how do they interact?",
                              SearchOptions(k=4, hyde=False), 1800)
    labels = [s["source"] for s in assembled.sources()]
    assert labels[:2] == ["@definition Cart.add"] * 2 and "@references Cart.add" in labels
    assert labels[-4:] == ["@codebase"] * 4
    assert assembled.search.query == "how do they interact?"
    assert assembled.packed.tokens <= 1800
    summary = assembled.summary()
    assert summary["included"] + summary["trimmed"] + summary["omitted"] == len(labels)
    assert summary["included"] >= 6  # both definitions and every use whole, at least
    text = assembled.text
    assert "### shop/models.py (@definition Cart.add, @references Cart.add" in text
    assert "40|    def add(self, product: Product, quantity: int = 1) -> None:" in text
    assert "14|        cart.add(product)" in text
    data = assembled.to_json()
    assert [c["label"] for c in data["commands"]] == ["@definition Cart.add", "@references Cart.add"]
    assert data["context"]["text"] == text and data["search"]["results"]


def test_codebase_without_a_question_searches_for_the_command_arguments(builder):
    assembled = builder.build("sample", "@codebase @definition checkout", SearchOptions(k=2, hyde=False), 600)
    assert assembled.search.query == "checkout"


def test_a_3000_line_file_fits_any_budget_as_a_skeleton_first(big_file_repo):
    db = connect(big_file_repo)
    resolver = CommandResolver(Index(db))
    lookup = resolver.lookup(registry.get_repo(db, "big"))
    (found,) = lookup.resolve(parse_message("@file lib/typing_copy.py summarise this file").lookups)
    text = lookup.files["lib/typing_copy.py"]
    assert len(text.lines) >= 3000
    signatures = {n for d in text.definitions for n in range(d.signature_start, d.signature_end + 1)}
    top_level = {d.signature_start for d in text.definitions if d.start == min(
        (o.start for o in text.definitions if o.start <= d.start and d.end <= o.end), default=d.start)}
    for budget in (300, 1000, 1800, 6000):
        packed = pack(found.spans, lookup.files, budget, found.notes)
        shown = [n for n, _ in packed_lines(packed.text)["lib/typing_copy.py"]]
        assert estimate_tokens(packed.text) <= budget
        assert len(shown) == len(set(shown))
        for number in shown:
            assert f"\n{number}|{text.lines[number - 1]}\n" in packed.text
        if set(shown) - signatures:
            assert signatures <= set(shown), f"budget {budget}: a body line before every signature"
        if budget >= 1800:
            assert top_level <= set(shown), "every top-level definition is in the skeleton"


def test_references_beyond_the_stored_ones_are_resolved_from_the_manifest(tmp_path):
    from conftest import settings_for
    from codeqa.indexing.indexer import index_repo

    root = tmp_path / "many"
    (root / "tests").mkdir(parents=True)
    (root / "lib.py").write_text("def ping_it(x):\n    return x\n")
    (root / "tests" / "test_lib.py").write_text("from lib import ping_it\n\n\ndef test_ping():\n    ping_it(0)\n")
    (root / "calls.py").write_text("from lib import ping_it\n\n" + "".join(
        f"\ndef caller_{n}():\n    return ping_it({n})\n" for n in range(60)))
    settings = settings_for(tmp_path / "data")
    index_repo(root, settings, name="many", progress=False)
    db = connect(settings)
    lookup = CommandResolver(Index(db)).lookup(registry.get_repo(db, "many"))
    (found,) = lookup.resolve(parse_message("@references ping_it").lookups)
    assert "is used 61 times" in found.notes[0]
    assert "the 20 most relevant of 61 uses are shown" in found.notes[1]
    assert len(found.sources) == 20 and all(s["file_path"] == "calls.py" for s in found.sources)
    assert [s["qualified_name"] for s in found.sources[:2]] == ["caller_0", "caller_1"]


def test_context_cli_prints_the_packed_context_or_its_json(indexed_sample):
    import json
    import os
    import subprocess
    import sys

    from conftest import ROOT

    settings, _ = indexed_sample
    env = {**os.environ, "CODEQA_DATA_DIR": str(settings.data_dir), "CODEQA_LOCAL_LLM": "0"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "codeqa", "context", *args], env=env,
                              capture_output=True, text=True, timeout=300)

    text = run("--repo", "sample", "--budget", "300", "@definition Cart.add @file shop/nope.py")
    assert text.returncode == 0, text.stderr
    assert "40|    def add(self, product: Product, quantity: int = 1) -> None:" in text.stdout
    assert "note: @file shop/nope.py: shop/nope.py is not an indexed file" in text.stderr
    data = json.loads(run("--repo", "sample", "--json", "@references Cart.add").stdout)
    assert data["commands"][0]["results"][0]["file_path"] == "shop/checkout.py"
    assert data["context"]["tokens"] <= data["context"]["budget"]
    unknown = run("--repo", "nope", "@definition x")
    assert unknown.returncode == 1 and "Unknown repo" in unknown.stderr and "Traceback" not in unknown.stderr


def test_symbols_at_and_references_reach_module_constants_read_as_values(tmp_path):
    """A line that only reads a module-level value (returns it, compares with it, passes it on)
    uses that value: `@symbols-at` resolves it, `@references` lists the reads, in each language
    whose queries record reads — bare, through a module, and not at an import or a local of
    the same name."""
    from conftest import settings_for
    from codeqa.indexing.indexer import index_repo

    root = tmp_path / "consts"
    for path, text in {
        "shop/config.py": "TAX_RATE = 0.2\nPROVIDERS = ('card', 'invoice')\n",
        "shop/prices.py": ("from shop.config import TAX_RATE\nfrom shop import config\n\n\ndef tax_rate():\n"
                           "    return TAX_RATE\n\n\ndef providers():\n    PROVIDERS = ['cash']\n"
                           "    return list(config.PROVIDERS) + PROVIDERS\n"),
        "web/limits.js": "export const MAX_ITEMS = 99\n",
        "web/cart.js": ("import { MAX_ITEMS } from './limits'\n\nexport function full(cart) {\n"
                        "  return cart.length >= MAX_ITEMS\n}\n"),
        "go/store/errors.go": "package store\n\nimport \"errors\"\n\nvar ErrNotFound = errors.New(\"not found\")\n",
        "go/store/get.go": ("package store\n\nfunc Get(items map[string]int, sku string) (int, error) {\n"
                            "\tif n, ok := items[sku]; ok {\n\t\treturn n, nil\n\t}\n\treturn 0, ErrNotFound\n}\n"),
        "rust/src/lib.rs": "pub const LIMIT: u32 = 8;\n\npub fn over(n: u32) -> bool {\n    n > LIMIT\n}\n",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    settings = settings_for(tmp_path / "data")
    index_repo(root, settings, name="consts", progress=False)
    db = connect(settings)
    lookup = CommandResolver(Index(db)).lookup(registry.get_repo(db, "consts"))

    def found_at(message: str):
        (found,) = lookup.resolve(parse_message(message).lookups)
        return found

    for at, definition in [("shop/prices.py:6", ("TAX_RATE", "shop/config.py", 1, 1)),
                           ("web/cart.js:4", ("MAX_ITEMS", "web/limits.js", 1, 1)),
                           ("go/store/get.go:7", ("ErrNotFound", "go/store/errors.go", 5, 5)),
                           ("rust/src/lib.rs:4", ("LIMIT", "rust/src/lib.rs", 1, 1))]:
        found = found_at(f"@symbols-at {at}")
        assert definition in where(found.sources), (at, found.notes)
        assert not any("no names are used" in note for note in found.notes)
    uses = found_at("@references PROVIDERS").sources
    assert [(s["file_path"], s["qualified_name"]) for s in uses] == [("shop/prices.py", "providers")]  # not the local
    assert [s["qualified_name"] for s in found_at("@references TAX_RATE").sources] == ["tax_rate"]  # not the import
