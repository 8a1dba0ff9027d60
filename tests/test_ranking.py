"""File ranking: the evidence each file gets, and the linear model over it (no index, no model)."""

from __future__ import annotations

import json
import math

import pytest

from codeqa.search import ranking
from codeqa.search.ranking import FEATURES, LinearRanker, Tokens, file_features, hits_in_file_order, rank_files
from test_query import hit

pytestmark = pytest.mark.unit

RECIPROCAL = LinearRanker({"bm25_rr": 1.0, "sym_rr": 1.0, "test": -0.3})


def bm25(path: str, score: float, role: str = "source") -> dict:
    return {"file_path": path, "role": role, "language": "python", "_score": score}


def test_each_file_gets_every_feature_from_both_evidences() -> None:
    hits = [hit("a.py", 0.9, "lucky"), hit("b.py", 0.6, "one"), hit("b.py", 0.3, "two")]
    files = file_features([bm25("b.py", 8.0), bm25("c.py", 4.0)], hits, about_tests=False)
    assert files["b.py"].features == pytest.approx({
        "sym_rr": 1 / 2, "sym_rel": 0.6 / 0.9, "sym_rows": math.log1p(2), "file_row": 0.0, "exact": 0.0,
        "bm25_rr": 1.0, "bm25_rel": 1.0, "uses_strong": 0.0, "used_by_strong": 0.0,
        "test": 0.0, "test_asked": 0.0, "non_source": 0.0, "prose_asked": 0.0, "stem_asked": 0.0, "shim": 0.0})
    assert files["c.py"].features["bm25_rel"] == 0.5 and "sym_rr" not in files["c.py"].features
    assert [h.name for h in files["b.py"].symbols] == ["one", "two"] and files["c.py"].symbols == []


def test_files_both_evidences_agree_on_rank_first_and_every_feature_is_set() -> None:
    hits = [hit("a.py", 0.9, "lucky"), hit("b.py", 0.8, "one")]
    ranked = rank_files([bm25("b.py", 3.0), bm25("c.py", 2.0)], hits, about_tests=False, ranker=RECIPROCAL)
    assert [f.path for f in ranked] == ["b.py", "a.py", "c.py"]
    assert all(set(f.features) == set(FEATURES) for f in ranked)
    assert ranked[0].score == pytest.approx(1.0 + 1 / 2)


def test_a_listed_file_shows_its_best_definitions_not_its_file_row() -> None:
    row = hit("a.py", 0.9, "a.py")
    row.kind, row.table = "file", "modules"
    hits = [row] + [hit("a.py", 0.5 - i / 10, f"f{i}") for i in range(4)]
    (only,) = rank_files([], hits, about_tests=False, ranker=RECIPROCAL)
    assert [h.name for h in only.symbols] == ["f0", "f1", "f2"]  # SYMBOLS_PER_FILE, best first
    assert only.features["file_row"] == 1.0
    assert only.to_json()["symbols"][0] == {"id": "a.py:f0", "kind": "function", "qualified_name": "f0",
                                            "start_line": 1, "end_line": 2}


def test_role_features_depend_on_whether_the_question_is_about_tests() -> None:
    hits = [hit("tests/test_a.py", 0.9, "t"), hit("examples/demo.py", 0.8, "d")]
    plain = file_features([], hits, about_tests=False)
    asked = file_features([], hits, about_tests=True)
    assert (plain["tests/test_a.py"].features["test"], plain["tests/test_a.py"].features["test_asked"]) == (1.0, 0.0)
    assert (asked["tests/test_a.py"].features["test"], asked["tests/test_a.py"].features["test_asked"]) == (0.0, 1.0)
    assert plain["examples/demo.py"].features["non_source"] == 1.0


def test_a_stored_source_role_is_refined_by_todays_path_rules() -> None:
    """An index written before the vendored-copy rule stored `source` for jquery-3.5.1.js; it
    ranks as a fresh index would (non-source), and roles the index stored otherwise stay."""
    copy = hit("sphinx/themes/basic/static/jquery-3.5.1.js", 0.9, "isArrayLike", role="source")
    example = hit("docs/conf.py", 0.8, "setup", role="example")
    files = file_features([], [copy, example, hit("sphinx/domains/std.py", 0.7, "run")], about_tests=False)
    assert files["sphinx/themes/basic/static/jquery-3.5.1.js"].features["non_source"] == 1.0
    assert files["docs/conf.py"].features["non_source"] == 1.0
    assert files["sphinx/domains/std.py"].features["non_source"] == 0.0


def test_graph_features_follow_the_strong_rows_references() -> None:
    strong = hit("core.py", 0.9, "parse")
    strong.references = [{"file_path": "cli.py", "line": 3}, {"file_path": "core.py", "line": 9}]
    helper = hit("util.py", 0.2, "split")
    helper.references = [{"file_path": "core.py", "line": 5}]
    files = file_features([bm25("cli.py", 1.0)], [strong, helper], about_tests=False)
    assert files["cli.py"].features["uses_strong"] == pytest.approx(math.log1p(1))  # calls what matched
    assert files["util.py"].features["used_by_strong"] == pytest.approx(math.log1p(1))  # called from it
    # core.py uses split (strong too: the pool has two rows); its use of its own parse doesn't count
    assert files["core.py"].features["uses_strong"] == pytest.approx(math.log1p(1))


def test_the_shipped_model_weighs_only_known_features(tmp_path) -> None:
    shipped = json.loads(ranking.RANKER_FILE.read_text(encoding="utf-8"))
    assert set(shipped["weights"]) <= set(FEATURES)
    assert LinearRanker.load().score({name: 0.0 for name in FEATURES}) == pytest.approx(shipped.get("bias", 0.0))
    wrong = tmp_path / "ranker.json"
    wrong.write_text(json.dumps({"weights": {"stars": 1.0}}), encoding="utf-8")
    with pytest.raises(ValueError, match="stars"):
        LinearRanker.load(wrong)


def test_symbols_follow_the_file_ranking_after_what_the_question_names() -> None:
    hits = [hit("a.py", 0.9, "a1"), hit("b.py", 0.8, "b1"), hit("a.py", 0.7, "a2"), hit("c.py", 0.6, "c1"),
            hit("d.py", 0.5, "named")]
    hits[4].exact = True
    files = rank_files([bm25("b.py", 5.0)], hits, about_tests=False, ranker=RECIPROCAL)
    assert [f.path for f in files[:2]] == ["b.py", "a.py"] and "d.py" in {f.path for f in files}
    assert [h.name for h in hits_in_file_order(hits, files, "how")][:4] == ["named", "b1", "a1", "a2"]


def test_a_named_row_of_an_unlisted_file_does_not_lead() -> None:
    """A name pasted in a log (`show_versions`) leads only if the file ranking lists its file."""
    hits = [hit("a.py", 0.9, "a1"), hit("b.py", 0.8, "b1"), hit("a.py", 0.7, "a2"), hit("c.py", 0.6, "c1"),
            hit("d.py", 0.5, "named")]
    hits[4].exact = True
    files = rank_files([bm25("b.py", 5.0)], hits, about_tests=False, ranker=RECIPROCAL)[:2]
    assert [h.name for h in hits_in_file_order(hits, files, "how")] == ["b1", "a1", "a2", "c1", "named"]


def test_docs_sections_keep_their_places_while_code_follows_the_file_ranking() -> None:
    hits = [hit("a.py", 0.9, "a1"), hit("docs/intro.md", 0.85, "Intro"), hit("b.py", 0.8, "b1"),
            hit("docs/faq.md", 0.7, "FAQ")]
    for doc in (hits[1], hits[3]):
        doc.language = "markdown"
    files = rank_files([bm25("b.py", 5.0)], hits, about_tests=False, ranker=RECIPROCAL)
    assert [f.path for f in files if f.path.endswith(".py")] == ["b.py", "a.py"]
    assert [h.name for h in hits_in_file_order(hits, files, "how")] == ["b1", "Intro", "a1", "FAQ"]


def test_docs_sections_follow_the_listed_files_code_except_the_best() -> None:
    hits = [hit("a.py", 0.9, "a1"), hit("docs/intro.md", 0.85, "Intro"), hit("docs/faq.md", 0.8, "FAQ"),
            hit("b.py", 0.75, "b1"), hit("docs/notes.md", 0.7, "Notes"), hit("c.py", 0.6, "c1")]
    for doc in (hits[1], hits[2], hits[4]):
        doc.language = "markdown"
    files = {f.path: f for f in rank_files([bm25("b.py", 5.0)], hits, about_tests=False, ranker=RECIPROCAL)}
    code_only = [files["b.py"], files["a.py"]]
    assert [h.name for h in hits_in_file_order(hits, code_only, "how")] == ["b1", "Intro", "a1", "FAQ", "Notes", "c1"]
    faq_listed = [files["b.py"], files["docs/faq.md"], files["a.py"]]
    assert [h.name for h in hits_in_file_order(hits, faq_listed, "how")] == ["b1", "Intro", "a1", "FAQ", "Notes", "c1"]


def test_a_reports_docs_sections_all_follow_the_listed_files_code() -> None:
    hits = [hit("docs/intro.md", 0.95, "Intro"), hit("a.py", 0.9, "a1"), hit("b.py", 0.8, "b1")]
    hits[0].language = "markdown"
    files = rank_files([bm25("b.py", 5.0)], hits, about_tests=False, ranker=RECIPROCAL)
    code = [f for f in files if f.path.endswith(".py")]
    assert [h.name for h in hits_in_file_order(hits, code, "how")] == ["Intro", "b1", "a1"]
    assert [h.name for h in hits_in_file_order(hits, code, "report")] == ["b1", "a1", "Intro"]


# --- Definitions of the best files ---------------------------------------------------------------

def test_each_definition_is_weighed_against_the_question_and_its_own_file() -> None:
    parse = hit("a.py", 0.9, "parse_header")
    helper = hit("a.py", 0.0, "helper")
    helper.start_line, helper.end_line, helper.reference_count = 10, 29, 3
    other = hit("b.py", 0.0, "Reader")
    other.kind = "class"
    features = ranking.definition_features(
        [parse, helper, other], [[1.0, 0.0], [0.6, 0.8], None],
        [Tokens.of(["parse", "header", "bytes"]), Tokens.of(["split", "lines"]), Tokens.of(["reader", "header"])],
        pool=[hit("z.py", 1.0, "lucky"), parse], question_vector=[2.0, 0.0],
        question_terms=["header", "parse", "bytes"], named={other.id})
    first, second, third = features
    assert first["pool_rr"] == 0.5 and second["pool_rr"] == 0.0  # its rank in the whole pool
    assert first["cos"] == pytest.approx(1.0) and second["cos"] == pytest.approx(0.6)
    assert (second["cos_gap"], second["cos_rr"]) == (pytest.approx(-0.4), 0.5)
    assert (first["bm25_rel"], first["bm25_rr"]) == (1.0, 1.0)
    assert (second["bm25_rel"], second["bm25_rr"]) == (0.0, 0.0)  # no term of the question
    assert third["cos"] == 0.0 and third["cos_rr"] == 1.0 and third["bm25_rr"] == 1.0  # alone in its file
    # parse_header's terms are parseheader, parse, header: the question uses two of the three
    assert first["name_terms"] == pytest.approx(2 / 3) and second["name_terms"] == 0.0
    assert (third["named"], third["container"], first["container"]) == (1.0, 1.0, 0.0)
    assert second["lines"] == pytest.approx(math.log1p(20)) and second["used"] == pytest.approx(math.log1p(3))
    assert all(set(f) == set(ranking.DEFINITION_FEATURES) for f in features)


def test_a_definition_that_calls_the_pools_strong_rows_is_marked() -> None:
    matched, also = hit("api.py", 0.9, "frame_header_size"), hit("api.py", 0.8, "frame_header")
    # decode calls both strong rows (one of them twice), main one; weak is not among the strong rows
    matched.references = [{"file_path": "dec.py", "caller": "decode", "line": n} for n in (3, 5)] + [
        {"file_path": "cli.py", "caller": "main", "line": 9}]
    also.references = [{"file_path": "dec.py", "caller": "decode", "line": 7}]
    weak = hit("api.py", 0.1, "weak")
    weak.references = [{"file_path": "dec.py", "caller": "unrelated", "line": 20}]
    decode, main, unrelated = hit("dec.py", 0.0, "decode"), hit("cli.py", 0.0, "main"), hit("dec.py", 0.0, "unrelated")
    pool = [matched, also] + [hit(f"f{i}.py", 0.5, f"f{i}") for i in range(ranking.STRONG_HITS)] + [weak]
    features = ranking.definition_features([decode, main, unrelated, matched, weak], [None] * 5, [Tokens.of([])] * 5, pool,
                                           question_vector=None, question_terms=[], named=set())
    assert [f["calls_strong"] for f in features] == pytest.approx([math.log1p(2), math.log1p(1), 0, 0, 0])
    assert [f["strong"] for f in features] == [0.0, 0.0, 0.0, 1.0, 0.0]  # weak ranks below the strongest ten


def test_a_class_of_methods_owns_few_of_its_lines_and_a_struct_of_fields_all() -> None:
    def row(path: str, name: str, kind: str, start: int, end: int):
        found = hit(path, 0.0, name)
        found.kind, found.start_line, found.end_line = kind, start, end
        return found

    rows = [row("a.py", "Session", "class", 1, 40), row("a.py", "Session.open", "method", 5, 24),
            row("a.py", "Session.save", "method", 25, 40), row("a.py", "Session.save.encode", "function", 30, 39),
            row("a.py", "a.py", "module", 41, 50), row("b.rs", "Options", "struct", 1, 10),
            row("b.rs", "Options", "impl", 12, 30), row("b.rs", "Options.new", "method", 13, 20)]
    features = ranking.definition_features(rows, [None] * len(rows), [Tokens.of([])] * len(rows), pool=[],
                                           question_vector=None, question_terms=["session"], named=set())
    share = {(r.name, r.kind): f["own_share"] for r, f in zip(rows, features)}
    assert share[("Session", "class")] == pytest.approx(4 / 40)  # lines 1-4: its methods hold the rest
    assert share[("Session.save", "method")] == pytest.approx(6 / 16)  # not the nested function's lines
    assert share[("Session.open", "method")] == 1.0 and share[("Options", "struct")] == 1.0
    assert share[("Options", "impl")] == pytest.approx(11 / 19)
    assert [f["container_own"] for f in features] == pytest.approx([4 / 40, 0, 0, 0, 0, 1.0, 11 / 19, 0])
    assert [f["module"] for f in features] == [0, 0, 0, 0, 1.0, 0, 0, 0]


def test_a_listed_file_shows_the_definitions_the_ranker_scores_best_pool_or_not() -> None:
    pooled = [hit("a.py", 0.9, "pooled"), hit("a.py", 0.7, "pooled2"), hit("a.py", 0.6, "pooled3")]
    unseen = [hit("a.py", 0.0, f"d{i}") for i in range(4)]
    files = rank_files([], [*pooled, hit("b.py", 0.8, "b1"), hit("c.py", 0.5, "c1")], about_tests=False,
                       ranker=RECIPROCAL)
    c_rows = [hit("c.py", 0.0, "c1"), hit("c.py", 0.0, "c2")]
    definitions = [*pooled, *unseen, *c_rows]
    features = [{"cos": 0.1}, {"cos": 0.0}, {"cos": 0.0}, {"cos": 0.5}, {"cos": 0.9}, {"cos": 0.7}, {"cos": 0.2},
                {"cos": 0.1}, {"cos": 0.3}]
    ranking.rank_definitions(files, definitions, features, ranker=LinearRanker({"cos": 1.0}))
    a, b, c = files
    assert [h.name for h in a.symbols] == ["d1", "d2", "d0"]  # as many as the pool gave it, best first
    assert [d.hit.name for d in a.definitions][:4] == ["d1", "d2", "d0", "d3"]
    assert a.definitions[0].score == pytest.approx(0.9) and set(a.definitions[0].features) == set(
        ranking.DEFINITION_FEATURES)
    assert [h.name for h in c.symbols] == ["c2"]  # one from the pool: one shown, the best weighed
    assert [h.name for h in b.symbols] == ["b1"] and b.definitions == []  # none weighed: the pool's stay


def test_the_shipped_definition_model_weighs_only_definition_features() -> None:
    shipped = json.loads(ranking.SYMBOL_RANKER_FILE.read_text(encoding="utf-8"))
    assert set(shipped["weights"]) <= set(ranking.DEFINITION_FEATURES)
    with pytest.raises(ValueError, match="bm25_rr"):
        LinearRanker.load(ranking.SYMBOL_RANKER_FILE, features=FEATURES[2:])


def test_bm25_among_definitions_scores_as_bm25s_does() -> None:
    import bm25s

    texts = [["parse", "header", "header"], ["split", "lines", "parse"], ["reader"], ["a", "b", "c", "d"]]
    terms = ["header", "parse", "missing"]
    reference = bm25s.BM25(k1=ranking.BM25_K1, b=ranking.BM25_B)
    reference.index(texts, show_progress=False)
    counted = [Tokens.of(text) for text in texts]
    assert ranking._bm25(counted, terms) == pytest.approx(reference.get_scores(terms).tolist())
    assert ranking._bm25(counted + [Tokens.of([])], ["absent"]).tolist() == [0.0] * 5
