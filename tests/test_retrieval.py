"""The retrieval pipeline on a real index of the sample repo, the real embedder and the real LLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from codeqa.store import registry, schema
from codeqa.store.errors import UnknownRepoError
from codeqa.llm import client as llm
from codeqa.search import ranking
from codeqa.search import retrieval
from conftest import ROOT, http_server
from codeqa.search.query import MAX_QUERY_CHARS, QueryError, parse_query
from codeqa.search.retrieval import Retriever
from codeqa.search.fusion import RRF_K, fuse_hybrid
from codeqa.store.reader import EVERYWHERE
from codeqa.search.options import SearchOptions, check_options
from codeqa.core.errors import InvalidArgument

pytestmark = pytest.mark.integration

RESULT_KEYS = {"kind", "name", "qualified_name", "file_path", "start_line", "end_line", "language",
               "score", "references"}


@pytest.fixture(scope="module")
def retriever(indexed_sample, embedded_settings, embedded_server):
    settings, _ = indexed_sample
    return Retriever(settings, llm=llm.LLMClient(embedded_settings, server=embedded_server))


def no_llm_retriever(settings, base_url: str, timeout: float = 5.0) -> Retriever:
    client = llm.LLMClient(settings.__class__(data_dir=settings.data_dir, llm_base_url=base_url,
                                              chat_model="m", llm_timeout=timeout), retries=0)
    return Retriever(settings, llm=client)


def names(result) -> list[tuple[str, str]]:
    return [(h.file_path, h.qualified_name) for h in result.results]


def test_plain_search_finds_the_code_and_reports_its_stages(retriever):
    result = retriever.search("sample", "how is an order CSV turned into products?",
                              SearchOptions(k=10, hyde=False, rerank=False))
    # The caller that reads the order CSV (checkout.py) ranks first since the static first
    # stage; the parser it calls follows in the list (docs/retrieval.md, the static first stage).
    top = names(result)
    assert ("shop/csv_parser.py", "Parser.parse") in top and ("shop/checkout.py", "checkout") in top[:3]
    assert {"embed", "search", "total"} <= set(result.timings_ms)
    assert result.hyde == {"used": False, "reason": "switched off"}
    assert result.rerank == {"used": False, "reason": "switched off"}
    # Symbols come file by file, in the order of the file ranking.
    listed = [f.path for f in result.files]
    firsts = list(dict.fromkeys(h.file_path for h in result.results if h.file_path in listed))
    assert firsts == [path for path in listed if path in firsts]
    assert {"methods", "classes"} <= {h.table for h in result.results} <= {"methods", "classes", "modules"}


def test_json_shape(retriever):
    data = retriever.search("sample", "shopping cart total", SearchOptions(k=4, hyde=False),
                            query_id="q1").to_json()
    assert {"id", "query", "expanded_query", "timings_ms", "rerank", "results"} <= set(data)
    assert data["id"] == "q1" and set(data["rerank"]) == {"used", "reason"}
    assert len(data["results"]) == 4
    for item in data["results"]:
        assert RESULT_KEYS <= set(item)
        for ref in item["references"]:
            assert set(ref) == {"file_path", "line", "column", "text"}
    json.dumps(data)


def test_references_come_with_methods_and_classes(retriever):
    result = retriever.search("sample", "Parser parse CSV", SearchOptions(k=10, hyde=False))
    by_name = {(h.file_path, h.qualified_name): h for h in result.results}
    parse = by_name[("shop/csv_parser.py", "Parser.parse")]
    parser = by_name[("shop/csv_parser.py", "Parser")]
    assert ("shop/checkout.py", 13) in {(r["file_path"], r["line"]) for r in parse.references}
    assert ("shop/checkout.py", 11) in {(r["file_path"], r["line"]) for r in parser.references}
    assert parse.reference_count >= 1 and parser.reference_count >= 1


@pytest.mark.parametrize("query, expected", [
    ("what does make_demo_cart build?", ("shop/models.py", "make_demo_cart")),
    ("is `Cart.cheapest` safe on an empty cart", ("shop/models.py", "Cart.cheapest")),
    ("explain store.go please", ("go/inventory/store.go", None)),
    ('Traceback (most recent call last):\n  File "shop/checkout.py", line 11, in checkout\n'
     "ValueError: quantity must be positive", ("shop/checkout.py", "checkout")),
])
def test_exact_mentions_come_out_on_top(retriever, query, expected):
    result = retriever.search("sample", query, SearchOptions(k=5, hyde=False))
    first = result.results[0]
    assert first.exact and first.file_path == expected[0]
    if expected[1]:
        assert first.qualified_name == expected[1]


@pytest.fixture(scope="module")
def searcher(indexed_sample):
    """Search without an LLM (no HyDE): what these tests look at doesn't need one."""
    settings, _ = indexed_sample
    return Retriever(settings)


@pytest.mark.parametrize("query, path", [
    ("macro that restocks several shelves in bulk", "rust/src/macros/restock.rs"),
    ("what is the free shipping threshold?", "web/js/constants.js"),
    ("German weekday and month names Januar Februar", "web/js/locale/de.js"),
    ("relative time texts like vor %s and in %s", "web/js/locale/de.js"),
    ("applying a coupon code gives a discounted cart total", "web/js/plugin/discount.js"),
    ("split a SKU text into its prefix and number", "web/js/sku.js"),
    ("convert whole units to cents and clamp the value", "c/money.h"),
    ("check that a SKU has a three-letter prefix", "go/inventory/checks.go"),
    ("payment provider settings read from SHOP_ environment variables", "shop/settings.py"),
])
def test_code_outside_functions_and_classes_is_found(searcher, query, path):
    # k = 5: these read as how questions, so the structure model ranks their files, and for the
    # coupon it lists the cart the plugin changes (the hub of its part) first, with three rows.
    result = searcher.search("sample", query, SearchOptions(k=5, hyde=False))
    assert path in [h.file_path for h in result.results], names(result)


def test_files_and_module_code_come_back_as_hits(searcher):
    result = searcher.search("sample", "German locale texts Warenkorb Gesamtsumme Versand",
                             SearchOptions(k=5, hyde=False))
    hit = next(h for h in result.results if h.table == "modules")
    assert hit.file_path == "web/js/locale/de.js" and hit.kind in {"file", "module"} and hit.role == "source"
    data = hit.to_json()
    assert data["kind"] == hit.kind and data["qualified_name"] == "web/js/locale/de.js" and data["role"] == "source"
    named = searcher.search("sample", "what does web/js/locale/de.js export?", SearchOptions(k=5, hyde=False))
    first = named.results[0]
    assert first.exact and (first.kind, first.file_path, first.start_line) == ("file", "web/js/locale/de.js", 1)


def test_files_are_results_with_the_symbols_that_ranked_them(searcher):
    result = searcher.search("sample", "how is an order CSV turned into products?", SearchOptions(k=5, hyde=False))
    assert 1 <= len(result.files) <= 5 and len({f.path for f in result.files}) == len(result.files)
    parser = next(f for f in result.files[:4] if f.path == "shop/csv_parser.py")
    assert parser.role == "source" and parser.features["bm25_rr"] > 0 and parser.features["sym_rr"] > 0
    assert {h.file_path for h in parser.symbols} == {"shop/csv_parser.py"}
    assert "file" not in {h.kind for h in parser.symbols}
    scores = [f.score for f in result.files]
    assert scores == sorted(scores, reverse=True)
    data = result.to_json()["files"][0]
    assert set(data) == {"path", "score", "role", "language", "twins", "symbols"}
    assert set(data["symbols"][0]) == {"id", "kind", "qualified_name", "start_line", "end_line"}


def test_a_file_found_by_its_whole_text_is_listed(searcher):
    """Whole-file BM25 lists a file whose words are spread over it, not gathered in one row."""
    result = searcher.search("sample", "Warenkorb Menge Versand Januar vor", SearchOptions(k=3, hyde=False, mode="bm25"))
    assert result.files[0].path == "web/js/locale/de.js" and result.files[0].features["bm25_rr"] == 1.0
    vector_only = searcher.search("sample", "Warenkorb", SearchOptions(k=3, hyde=False, mode="vector"))
    assert all(f.features["bm25_rr"] == 0.0 for f in vector_only.files)


def test_a_question_word_is_no_whole_file_evidence(searcher):
    """`rust/src/lib.rs` says "Where an item is stored": whole-file BM25 matched "where are prices
    parsed?" to it on that word alone, first of all files; question words are no terms now."""
    result = searcher.search("sample", "where are prices parsed?", SearchOptions(k=10, hyde=False, rerank=False))
    lib = next(f for f in result.file_candidates if f.path == "rust/src/lib.rs")
    assert lib.features["bm25_rr"] == 0.0
    assert result.files[0].path != "rust/src/lib.rs"


def test_the_best_files_show_their_best_weighed_definitions_read_whole(retriever):
    """Every definition of a listed best file is weighed, pool or not; one shown from outside
    the pool comes back whole (code, references), as a pool row would."""
    longest_first = Retriever(retriever.settings, symbol_ranker=ranking.LinearRanker({"lines": 1.0}))
    question = "how is an order CSV turned into products?"
    result = longest_first.search("sample", question, SearchOptions(k=2, pool=1, hyde=False, rerank=False))
    top = result.files[0]
    repo = registry.get_repo(retriever.index.db, "sample")
    rows = [row for kind in schema.ROW_TABLES for row in registry.open_table(retriever.index.db, repo, kind)
            .search().where(f"file_path = '{top.path}' AND kind NOT IN ('doc', 'file')").limit(None).to_list()]
    assert {d.hit.id for d in top.definitions} == {row["id"] for row in rows}
    longest = max(rows, key=lambda row: (row["end_line"] - row["start_line"], -row["start_line"]))
    shown = top.symbols[0]
    assert shown.id == longest["id"] and shown.code == longest["code"] and shown.code
    assert [r["line"] for r in shown.references] == [r["line"] for r in longest["references"]]
    assert shown.id in {h.id for h in result.results}
    plain = retriever.search("sample", question, SearchOptions(k=2, pool=1, hyde=False, definitions=False))
    assert all(f.definitions == [] for f in plain.files)


def test_a_retriever_ranks_files_with_the_model_it_is_given(retriever):
    """The eval's ablation refits the models and hands them to a Retriever: its file scores
    must be that model's, not the shipped one's."""
    bm25_only = ranking.LinearRanker({"bm25_rel": 2.0, "bm25_rr": 1.0})
    question = "how is an order CSV turned into products?"
    files = Retriever(retriever.settings, file_ranker=bm25_only).search(
        "sample", question, SearchOptions(k=5, hyde=False, rerank=False)).files
    assert files and all(f.score == pytest.approx(bm25_only.score(f.features)) for f in files)
    assert [f.score for f in files] == sorted((f.score for f in files), reverse=True)
    shipped = retriever.search("sample", question, SearchOptions(k=5, hyde=False, rerank=False)).files
    assert any(f.score != pytest.approx(bm25_only.score(f.features)) for f in shipped)


def test_a_reindexed_file_shows_its_definitions_as_they_are_now(settings, sample_copy):
    """A retriever keeps the best files' light rows between searches, per table version: a
    re-index must not leave it weighing the file as it was."""
    from codeqa.indexing.indexer import index_repo

    index_repo(sample_copy, settings, name="s", progress=False)
    retriever = Retriever(settings)
    question, options = "how is an order CSV turned into products?", SearchOptions(k=4, hyde=False, rerank=False)

    def parser_definitions() -> set[str]:
        files = retriever.search("s", question, options).files
        return {d.hit.qualified_name for d in next(f for f in files if f.path == "shop/csv_parser.py").definitions}

    before = parser_definitions()
    assert before and "parse_order_rows_again" not in before
    with (sample_copy / "shop" / "csv_parser.py").open("a", encoding="utf-8") as source:
        source.write("\n\ndef parse_order_rows_again(text):\n    return [line.split(',') for line in text.splitlines()]\n")
    index_repo(sample_copy, settings, name="s", progress=False)
    assert parser_definitions() == before | {"parse_order_rows_again"}


def test_role_is_a_filter(searcher):
    docs = searcher.search("sample", "how is the shop laid out", SearchOptions(k=8, hyde=False, role="docs"))
    assert docs.results and {h.role for h in docs.results} == {"docs"}
    with pytest.raises(QueryError, match="Unknown role"):
        searcher.search("sample", "cart", SearchOptions(k=3, hyde=False, role="tests"))


def test_filters(retriever):
    java = retriever.search("sample", "add products to stock", SearchOptions(k=8, hyde=False, language="java"))
    assert java.results and {h.language for h in java.results} == {"java"}
    web = retriever.search("sample", "cart total", SearchOptions(k=8, hyde=False, path_prefix="web/"))
    assert web.results and all(h.file_path.startswith("web/") for h in web.results)
    nothing = retriever.search("sample", "cart", SearchOptions(k=5, hyde=False, path_prefix="no_such_dir/"))
    assert nothing.results == []


def test_modes_and_pool(retriever):
    bm25 = retriever.search("sample", "formatPrice", SearchOptions(k=3, hyde=False, mode="bm25"))
    assert bm25.results[0].qualified_name == "formatPrice"
    vector = retriever.search("sample", "price formatting for display", SearchOptions(k=3, hyde=False, mode="vector"))
    assert len(vector.results) == 3
    assert SearchOptions(k=10, pool=5).pool_size() == 20 and SearchOptions(k=10).pool_size() == 30


@pytest.mark.parametrize("kind", schema.ROW_TABLES)
def test_hybrid_fusion_ranks_as_lancedbs_own_hybrid_query(retriever, kind):
    """CodeQA fuses each table's BM25 and vector rankings itself (so BM25 can run while the query
    is embedded); with every row embedded the ranking is LanceDB's hybrid RRF query's."""
    from lancedb.query import MultiMatchQuery
    from lancedb.rerankers import RRFReranker

    reader = retriever.index.reader(retriever.index.repo("sample"))
    table = reader.table(kind)
    query = parse_query("cart total price of the products in an order")
    vector = retriever.embedder.embed([query.semantic])[0]
    text = MultiMatchQuery(query.keywords, list(schema.FTS_COLUMNS), boosts=retrieval.FTS_BOOSTS)
    by_vector = reader.vector_search(kind, vector, EVERYWHERE, retrieval.SELECT, 8, retrieval.ANN_EF)
    by_text = reader.text_search(kind, query.keywords, EVERYWHERE, retrieval.SELECT, 8, retrieval.FTS_BOOSTS)
    for row in by_vector:
        row["_score_value"] = 1.0 - row["_distance"]
    ours = fuse_hybrid(by_vector, by_text)[:8]
    theirs = (table.search(query_type="hybrid").vector(vector).text(text).distance_type("cosine")
              .rerank(RRFReranker(K=RRF_K)).select(["id"]).limit(8).to_list())
    assert len(ours) >= 3
    assert [row["id"] for row in ours] == [row["id"] for row in theirs]
    assert [row["_score_value"] for row in ours] == pytest.approx([row["_relevance_score"] for row in theirs])


def test_hyde_runs_both_steps_with_the_real_llm(retriever):
    result = retriever.search("sample", "where does the cart compute its total?", SearchOptions(k=5, hyde=True))
    assert result.hyde["used"] is True
    assert result.expanded_query
    assert {"hyde", "first_search", "expansion", "search"} <= set(result.timings_ms)
    assert result.results and not result.notices


def test_llm_down_still_searches_and_says_so(indexed_sample):
    settings, _ = indexed_sample
    with http_server(lambda request: None) as (url, _):
        closed = url  # the server closes when the block ends: a port nobody answers on
    result = no_llm_retriever(settings, closed).search("sample", "cart total", SearchOptions(k=3, hyde=True))
    assert result.hyde["used"] is False and "unreachable" in result.hyde["reason"]
    assert any("HyDE skipped" in n for n in result.notices)
    assert len(result.results) == 3


def test_llm_timeout_still_searches(indexed_sample):
    settings, _ = indexed_sample

    def never_answer(request):
        time.sleep(3)

    with http_server(never_answer) as (url, _):
        result = no_llm_retriever(settings, url, timeout=0.5).search("sample", "cart total", SearchOptions(k=3, hyde=True))
    assert result.hyde["used"] is False and "timeout" in result.hyde["reason"]
    assert len(result.results) == 3


def test_bad_queries_and_unknown_repo(retriever):
    with pytest.raises(QueryError, match="empty"):
        retriever.search("sample", "   ")
    with pytest.raises(QueryError, match="limit"):
        retriever.search("sample", "x" * (MAX_QUERY_CHARS + 1))
    with pytest.raises(UnknownRepoError, match="nope"):
        retriever.search("nope", "cart")


def test_long_issue_report_is_handled_deliberately(retriever):
    report = ("Checkout crashes for big orders. " * 40 + "\n"
              + "\n".join(f"2024-01-01 INFO worker {i} processed batch" for i in range(300))
              + '\n  File "shop/models.py", line 42, in add\nValueError: quantity must be positive\n')
    parsed = parse_query(report)
    assert len(parsed.semantic) < 1500 and "add" in parsed.symbols and "shop/models.py" in parsed.files
    assert len(parsed.keywords.split()) <= 64
    result = retriever.search("sample", report, SearchOptions(k=5, hyde=False))
    assert result.results[0].file_path == "shop/models.py" and result.results[0].exact


def test_rerank_reorders_the_best_files_definitions_and_reports_it(indexed_sample):
    settings, _ = indexed_sample
    retriever = Retriever(settings)
    question = "cart total ignores the discount"
    plain = retriever.search("sample", question, SearchOptions(k=4, hyde=False, rerank=False))
    events = []
    reranked = retriever.search("sample", question, SearchOptions(k=4, hyde=False, rerank=True),
                                progress=lambda stage, state, ms, detail: events.append((stage, state)))
    assert reranked.rerank == {"used": True, "reason": "cross-encoder codeqa-reranker"}
    assert "rerank" in reranked.timings_ms and ("rerank", "done") in events
    assert [f.path for f in reranked.files] == [f.path for f in plain.files]  # files keep their order
    top = reranked.files[0]
    assert {h.id for h in top.symbols} <= {d.hit.id for d in top.definitions}
    assert all(hit.code for hit in reranked.results)  # what was reranked was read whole


def test_rerank_with_a_missing_model_reports_why(indexed_sample, tmp_path):
    settings, _ = indexed_sample
    missing = Retriever(settings.__class__(data_dir=settings.data_dir, rerank_model=str(tmp_path / "none")))
    result = missing.search("sample", "cart total", SearchOptions(k=3, hyde=False, rerank=True))
    assert result.rerank["used"] is False and "CODEQA_RERANK_MODEL" in result.rerank["reason"]
    assert any("Rerank unavailable" in n for n in result.notices)
    assert len(result.results) == 3


# --- CLI --------------------------------------------------------------------------------------------

def run_cli(args: list[str], settings) -> subprocess.CompletedProcess:
    env = {**os.environ, "CODEQA_DATA_DIR": str(settings.data_dir), "CODEQA_LOCAL_LLM": "0"}
    return subprocess.run([sys.executable, "-m", "codeqa", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_json_batch_and_errors(indexed_sample, tmp_path):
    settings, _ = indexed_sample
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"id": "a", "query": "cart total"}\n{"id": "b", "query": "format a price"}\n'
                     '{"id": "c", "query": ""}\n')
    result = run_cli(["search", "--repo", "sample", "--json", "--no-hyde", "--k", "3", "--batch", str(batch)],
                     settings)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["a", "b", "c"]
    assert len(lines[0]["results"]) == 3 and "error" in lines[2]

    single = run_cli(["search", "--repo", "sample", "--lang", "go", "--hyde", "cart store"], settings)
    assert single.returncode == 0 and "go/" in single.stdout
    assert "HyDE skipped" in single.stdout  # no LLM configured: said, not hidden

    unknown = run_cli(["search", "--repo", "nope", "--no-hyde", "x"], settings)
    assert unknown.returncode == 1 and "Unknown repo" in unknown.stderr and "Traceback" not in unknown.stderr


@pytest.mark.parametrize("language", ["ruby", "kotlin", "yaml", "sql", "dockerfile", "other", "markdown"])
def test_the_language_filter_takes_every_language_a_row_can_carry(language):
    check_options(SearchOptions(language=language))


@pytest.mark.parametrize("prefix", ["../", "/etc", "src/../../x"])
def test_a_path_filter_outside_the_repo_is_refused_by_the_search_itself(prefix):
    with pytest.raises(InvalidArgument, match="path must be a folder or file path inside the repo"):
        check_options(SearchOptions(path_prefix=prefix))


def test_a_dot_folder_filter_keeps_its_dot():
    assert SearchOptions(path_prefix=".github/").scope().where() == "(file_path LIKE '.github/%')"
    assert SearchOptions(path_prefix="././src/").scope().where() == "(file_path LIKE 'src/%')"
