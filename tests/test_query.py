"""Reading a query and the pure scoring helpers of search: no index, no model, no LLM."""

from __future__ import annotations

import pytest

from codeqa.search import retrieval
from codeqa.parsing.languages import file_role
from codeqa.parsing.tokens import code_tokens, identifier_parts, path_tokens
from codeqa.store.registry import table_prefix
from codeqa.search import exact
from codeqa.search.fusion import RRF_K, fuse_hybrid, fuse_ranked
from codeqa.search.pool import rank_pool
from codeqa.search.query import EMBED_QUERY_CHARS, MAX_KEYWORDS, parse_query, split_report, with_question
from codeqa.search.pool import TEST_FILE_WEIGHT
from codeqa.search.results import Hit
from codeqa.search.options import SearchOptions

pytestmark = pytest.mark.unit


def hit(file_path: str, score: float, name: str = "f", qualified_name: str | None = None,
        role: str | None = None) -> Hit:
    return Hit(id=f"{file_path}:{name}", table="methods", kind="function", name=name,
               qualified_name=qualified_name or name, file_path=file_path, start_line=1, end_line=2,
               language="python", signature="", doc="", code="", parent=None, references=[],
               reference_count=0, score=score, role=role or file_role(file_path))


# --- parse_query ---------------------------------------------------------------------------------

def test_code_shaped_names_and_files_are_mentions() -> None:
    parsed = parse_query("Why does `Cart.add` call make_demo_cart() and parseHTTPResponse in shop/models.py?")
    assert parsed.symbols[:3] == ("Cart.add", "make_demo_cart", "parseHTTPResponse")
    assert parsed.files == ("shop/models.py",)
    assert not parsed.about_tests
    assert parsed.semantic == parsed.text


def test_rust_paths_typescript_modules_and_windows_paths() -> None:
    parsed = parse_query(r"tokio::sync::Mutex breaks in src\pool.mts and ./web/ui.cts")
    assert "tokio.sync.Mutex" in parsed.symbols
    assert parsed.files == ("src/pool.mts", "web/ui.cts")


def test_stack_trace_frames_are_files_and_symbols() -> None:
    parsed = parse_query('Traceback:\n  File "shop/checkout.py", line 11, in checkout\nValueError: bad')
    assert parsed.files[0] == "shop/checkout.py" and parsed.symbols[0] == "checkout"


def test_long_reports_embed_their_opening_and_cap_bm25_terms() -> None:
    report = "The checkout fails.\n" + "\n".join(f"log line {i} handler_{i} failed" for i in range(400))
    parsed = parse_query(report)
    assert len(parsed.semantic) < EMBED_QUERY_CHARS + 800
    assert parsed.semantic.startswith("The checkout fails.")
    keywords = parsed.keywords.split()
    assert len(keywords) == MAX_KEYWORDS and keywords[0] == "handler0"  # code-shaped terms first


def test_question_words_are_no_terms_unless_named_as_code() -> None:
    assert parse_query("where are prices parsed?").terms == ["are", "prices", "parsed"]
    assert "when" not in parse_query("Crash when the cart is empty").terms  # a report's too
    assert "where" in parse_query("Why does `Query.where` drop nulls?").terms  # a name it asks about


@pytest.mark.parametrize(("question", "about_tests"), [
    ("why does test_cart fail under pytest", True), ("add a spec for the parser", True),
    ("how is the cart total computed", False), ("where is the latest release built", False),
])
def test_questions_about_tests(question: str, about_tests: bool) -> None:
    assert parse_query(question).about_tests is about_tests


def test_code_tokens_meet_in_the_middle() -> None:
    assert identifier_parts("parseHTTPResponse_v2") == ["parse", "http", "response", "v", "2"]
    assert set(code_tokens("merge_handler_0").split()) == set(code_tokens("MergeHandler0").split())
    assert {"merge", "handler"} <= set(code_tokens("merge handler").split())
    assert path_tokens("src/http_client/Pool.java").split()[-2:] == ["pool.java", "pool"]


# --- Scoring helpers ------------------------------------------------------------------------------

def test_test_files_rank_lower_unless_the_question_is_about_tests() -> None:
    hits = [hit("tests/test_cart.py", 1.0), hit("src/testing/helpers.py", 0.95), hit("shop/cart.py", 0.9)]
    ranked = rank_pool([hit(h.file_path, h.score) for h in hits], about_tests=False)
    assert [h.file_path for h in ranked] == ["shop/cart.py", "tests/test_cart.py", "src/testing/helpers.py"]
    assert ranked[1].score == pytest.approx(TEST_FILE_WEIGHT)
    kept = rank_pool([hit(h.file_path, h.score) for h in hits], about_tests=True)
    assert [h.score for h in kept] == [1.0, 0.95, 0.9]


def test_ranking_reads_the_role_stored_with_the_row_not_the_path() -> None:
    ranked = rank_pool([hit("src/cart.py", 1.0, role="test"), hit("tests/cart.py", 0.9, role="source")],
                             about_tests=False)
    assert [(h.file_path, h.score) for h in ranked] == [("tests/cart.py", 0.9),
                                                         ("src/cart.py", pytest.approx(TEST_FILE_WEIGHT))]


def test_generated_questions_keep_the_questions_own_names() -> None:
    question = parse_query("why is `Cart.total` wrong in shop/models.py")
    merged = with_question(parse_query("def total(self): return sum(line_total())"), question)
    assert merged.symbols == question.symbols and merged.files == question.files
    assert merged.keywords.split()[:len(question.keywords.split())] == question.keywords.split()
    assert question.semantic in merged.semantic


@pytest.mark.parametrize(("name", "matches"), [
    ("Cart.add", True), ("add", True),
    ("self.add", True), ("cart.add", True),  # `obj.m` names any `m` method
    ("Cart.remove", False), ("Cart", False), ("ad", False),
])
def test_exact_names(name: str, matches: bool) -> None:
    assert exact.row_names({"qualified_name": "Cart.add", "name": "add"}, name) is matches


def test_file_mentions_match_whole_path_segments() -> None:
    target = hit("web/js/cart.js", 1.0, name="add", qualified_name="Cart.add")
    assert exact.names(target, "cart.js") and exact.names(target, "web/js/cart.js")
    assert not exact.names(target, "t.js")


def test_filters_are_quoted_and_escaped() -> None:
    where = SearchOptions(language="Python", path_prefix="./it's_100%/").scope().where()
    assert where == "(language = 'python') AND (file_path LIKE 'it''s\\_100\\%/%')"
    assert SearchOptions().scope().where() is None


def test_pool_is_at_least_twice_k() -> None:
    assert SearchOptions(k=10).pool_size() == 30
    assert SearchOptions(k=10, pool=5).pool_size() == 20
    assert SearchOptions(k=10, pool=50).pool_size() == 50


def test_result_json_shape() -> None:
    found = hit("shop/cart.py", 0.1234567)
    found.references = [{"file_path": "a.py", "line": 3, "column": 5, "text": "add()", "kind": "call",
                         "resolution": "unique", "caller": "main"}]
    found.relevance = 0.87654
    data = found.to_json()
    assert data["score"] == 0.8765 and data["exact_match"] is False  # the relevance shown, not the pool score
    assert data["declaration"] is False and data["signatures"] == []
    assert data["references"] == [{"file_path": "a.py", "line": 3, "column": 5, "text": "add()"}]


# --- a query that is exactly a name, and the scores shown ---------------------------------------

@pytest.mark.parametrize("query, whole, symbols, files", [
    ("colordemo", "colordemo", ("colordemo",), ()),  # a plain word no other pattern takes for a name
    ("  `Context.invoke` ", "Context.invoke", ("Context.invoke",), ()),
    ("Foo::bar", "Foo.bar", ("Foo.bar",), ()),
    ("view", "view", ("view",), ()),
    ("view.js", "view.js", (), ("view.js",)),
    ("src/view.js", "src/view.js", (), ("src/view.js",)),
    ("how is colordemo run", "", (), ()),
    ("colordemo()", "", ("colordemo",), ()),
])
def test_a_query_that_is_exactly_one_name(query: str, whole: str, symbols: tuple, files: tuple) -> None:
    parsed = parse_query(query)
    assert (parsed.whole_name, parsed.symbols, parsed.files) == (whole, symbols, files)


def test_a_file_is_named_by_its_path_its_tail_or_its_stem() -> None:
    assert exact.names_file("web/view.js", "view") and exact.names_file("web/view.js", "view.js")
    assert exact.names_file("web/view.js", "web/view.js")
    assert not exact.names_file("web/view.test.js", "view") and not exact.names_file("web/review.js", "view")


@pytest.mark.parametrize("mention, named", [
    ("home/me/.venv/lib/python3.11/site-packages/requests/models.py", {"requests/models.py"}),
    ("github.com/psf/requests/blob/0e322af/requests/models.py", {"requests/models.py"}),
    ("opt/libs/fmt/trunk/include/fmt/ranges.h", {"include/fmt/ranges.h"}),  # three parts beat two
    ("home/me/registry/globset-0.4.8/src/lib.rs", set()),  # every crate's src/lib.rs: a tie names none
    ("usr/lib/python3/dist-packages/pandas/core/frame.py", set()),  # one part alone is not a tail
    ("requests/models.py", set()),  # a short mention is matched as a path's tail (names_file)
])
def test_a_long_mention_names_the_file_sharing_most_of_its_tail(mention: str, named: set) -> None:
    paths = ["requests/models.py", "requests/sessions.py", "frame.py", "include/fmt/ranges.h",
             "single_include/fmt/ranges.h", "crates/globset/src/lib.rs", "crates/ignore/src/lib.rs"]
    assert exact.named_by_long(paths, [mention]) == named
    tail = exact.tail_of_long(mention)
    assert tail is None or all(path.endswith("/" + tail) or path == tail for path in named)


def test_what_the_whole_query_names_goes_first_with_its_file() -> None:
    from codeqa.search.results import FileHit
    docs = hit("docs/colors.py", 0.9, name="show_colors")
    demo_test = hit("tests/test_colors.py", 0.5, name="colordemo", role="test")
    demo = hit("examples/colors/colors.py", 0.1, name="colordemo")
    for found in (demo, demo_test):
        found.exact = True
    files = [FileHit(h.file_path, score, h.role, "python", [h]) for h, score in
             ((docs, 2.0), (demo_test, 0.5), (demo, -1.0))]
    hits, ordered = exact.whole_name_first(parse_query("colordemo"), [docs, demo_test, demo], files)
    assert [h.file_path for h in hits] == ["examples/colors/colors.py", "tests/test_colors.py", "docs/colors.py"]
    assert [f.path for f in ordered] == ["examples/colors/colors.py", "tests/test_colors.py", "docs/colors.py"]
    unchanged = exact.whole_name_first(parse_query("how are colors shown"), [docs, demo_test, demo], files)
    assert unchanged == ([docs, demo_test, demo], files)


def test_scores_shown_never_rise_down_a_list() -> None:
    from codeqa.search.ranking import file_probability
    from codeqa.search.results import FileHit
    a, b, c, d = (hit(f"{name}.py", 0.0, name=name) for name in "abcd")
    files = [FileHit("a.py", 1.0, "source", "python", []), FileHit("b.py", -2.0, "source", "python", []),
             FileHit("c.py", 3.0, "source", "python", [])]
    hits = [a, b, c, d]  # c's file scored higher than b's, yet b ranks above it; d's file has no score
    retrieval._show_relevance(hits, files, parse_query("what is a"))
    assert [h.relevance for h in hits] == [file_probability(1.0), file_probability(-2.0),
                                           file_probability(-2.0), file_probability(-2.0)]
    assert 0.0 < hits[-1].relevance <= hits[0].relevance < 1.0
    named = hit("z.py", 0.0, name="zeta")
    named.exact = True
    retrieval._show_relevance([named, a], files + [FileHit("z.py", -5.0, "source", "python", [])], parse_query("zeta"))
    assert (named.relevance, a.relevance) == (1.0, file_probability(1.0))


def test_table_prefixes_are_safe_and_distinct() -> None:
    assert table_prefix("my repo!") != table_prefix("my repo?")
    assert table_prefix("my repo!").startswith("r_my_repo_")
    assert table_prefix("///").startswith("r_repo_")


def test_a_file_row_gives_its_place_to_a_definition_of_its_own_file() -> None:
    def row(path: str, score: float, kind: str, name: str) -> Hit:
        found = hit(path, score, name=name)
        found.kind, found.table = kind, {"file": "modules", "module": "modules"}.get(kind, "methods")
        return found

    ranked = rank_pool([row("a.py", 0.9, "file", "a.py"), row("b.py", 0.8, "function", "g"),
                              row("b.py", 0.75, "file", "b.py"), row("a.py", 0.7, "function", "f"),
                              row("c.js", 0.6, "file", "c.js"), row("c.js", 0.5, "module", "c.js")],
                             about_tests=False)
    assert [(h.file_path, h.name, h.score) for h in ranked] == [
        ("a.py", "f", 0.9), ("b.py", "g", 0.8),  # a.py's definition takes its file row's place
        ("c.js", "c.js", 0.6), ("c.js", "c.js", 0.5),  # a file with no definition found keeps its rows
        ("a.py", "a.py", 0.5), ("b.py", "b.py", 0.5)]  # redundant file rows go to the end of the pool
    assert [h.kind for h in ranked[2:]] == ["file", "module", "file", "file"]


# --- split_report: the pieces of an issue report ---------------------------------------------------

REPORT = '''Session.send fails with proxies

```python
s = requests.Session()
s.get(url, proxies={"https": "http://p:3128"})
```

Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/requests/sessions.py", line 555, in get
    return self.request("GET", url, **kwargs)
requests.exceptions.ProxyError: HTTPSConnectionPool(host='x', port=443): Max retries exceeded
    at com.google.gson.Gson.fromJson(Gson.java:932)
thread 'main' panicked at 'index out of bounds', src/main.rs:10:5
It worked in 2.18.
'''


def test_a_report_is_read_as_prose_a_code_block_and_its_error_lines() -> None:
    prose, pieces = split_report(REPORT)
    assert prose == "Session.send fails with proxies\n\nIt worked in 2.18."
    assert pieces[0] == 's = requests.Session()\ns.get(url, proxies={"https": "http://p:3128"})'
    assert pieces[1].splitlines() == [
        "requests.exceptions.ProxyError: HTTPSConnectionPool(host='x', port=443): Max retries exceeded",
        "thread 'main' panicked at 'index out of bounds', src/main.rs:10:5"]
    parsed = parse_query(REPORT)
    assert parsed.semantic == prose and parsed.pieces == pieces
    assert {"Session.send", "get"} <= set(parsed.symbols)  # the trace still names symbols for BM25


def test_a_plain_question_has_no_pieces_and_an_error_alone_stays_the_query() -> None:
    assert split_report("how does the cart compute its total?") == ("how does the cart compute its total?", ())
    prose, pieces = split_report("ValueError: invalid literal for int() with base 10")
    assert prose == "ValueError: invalid literal for int() with base 10" and pieces == (prose,)


def test_fused_rankings_reward_rows_several_pieces_agree_on() -> None:
    main = [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    piece = [{"id": "c"}, {"id": "d"}]
    fused = fuse_ranked([main, piece])
    assert [row["id"] for row in fused] == ["c", "a", "b", "d"]
    assert fused[0]["_score_value"] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))


def test_a_row_without_a_vector_yet_stands_in_its_text_rank_for_the_vector_rank() -> None:
    vectors = [{"id": "v1"}, {"id": "v2"}, {"id": "both"}]
    texts = [{"id": "new", "_no_vector": True}, {"id": "both", "_no_vector": False}, {"id": "t3", "_no_vector": False}]
    fused = fuse_hybrid(vectors, texts)
    # `new` (text rank 1, no vector) counts 1/(K+1) twice; `both` 1/(K+3) + 1/(K+2); `v1` once.
    assert [row["id"] for row in fused] == ["new", "both", "v1", "v2", "t3"]
    assert fused[0]["_score_value"] == pytest.approx(2 / (RRF_K + 1))
    # A text-only row that has a vector (it just didn't make the vector list) is not lifted.
    assert next(r for r in fused if r["id"] == "t3")["_score_value"] == pytest.approx(1 / (RRF_K + 3))
    # With every row embedded, the fusion is LanceDB's plain RRF.
    plain = fuse_hybrid([{"id": "a"}], [{"id": "b", "_no_vector": False}, {"id": "a", "_no_vector": False}])
    assert [row["id"] for row in plain] == ["a", "b"]


@pytest.mark.parametrize("question, asks", [
    ("show me an example of a middleware", True), ("where are the docs for the config file?", True),
    ("examples of plugins that register hooks", True),
    ("For example, the router matches a path to its handler", False), ("how are pooled connections closed", False),
])
def test_a_question_asking_for_docs_or_an_example_is_told_apart(question, asks) -> None:
    assert parse_query(question).about_prose is asks
