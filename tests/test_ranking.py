"""File ranking: the evidence each file gets, and the linear model over it (no index, no model)."""

from __future__ import annotations

import json
import math

import pytest

import ranking
from ranking import FEATURES, FileRanker, file_features, hits_in_file_order, rank_files
from test_query import hit

pytestmark = pytest.mark.unit

RECIPROCAL = FileRanker({"bm25_rr": 1.0, "sym_rr": 1.0, "test": -0.3})


def bm25(path: str, score: float, role: str = "source") -> dict:
    return {"file_path": path, "role": role, "language": "python", "_score": score}


def test_each_file_gets_every_feature_from_both_evidences() -> None:
    hits = [hit("a.py", 0.9, "lucky"), hit("b.py", 0.6, "one"), hit("b.py", 0.3, "two")]
    files = file_features([bm25("b.py", 8.0), bm25("c.py", 4.0)], hits, about_tests=False)
    assert files["b.py"].features == pytest.approx({
        "sym_rr": 1 / 2, "sym_rel": 0.6 / 0.9, "sym_rows": math.log1p(2), "file_row": 0.0, "exact": 0.0,
        "bm25_rr": 1.0, "bm25_rel": 1.0, "uses_strong": 0.0, "used_by_strong": 0.0,
        "test": 0.0, "test_asked": 0.0, "non_source": 0.0})
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
    assert FileRanker.load().score({name: 0.0 for name in FEATURES}) == pytest.approx(shipped.get("bias", 0.0))
    wrong = tmp_path / "ranker.json"
    wrong.write_text(json.dumps({"weights": {"stars": 1.0}}), encoding="utf-8")
    with pytest.raises(ValueError, match="stars"):
        FileRanker.load(wrong)


def test_symbols_follow_the_file_ranking_after_what_the_question_names() -> None:
    hits = [hit("a.py", 0.9, "a1"), hit("b.py", 0.8, "b1"), hit("a.py", 0.7, "a2"), hit("c.py", 0.6, "c1"),
            hit("d.py", 0.5, "named")]
    hits[4].exact = True
    files = rank_files([bm25("b.py", 5.0)], hits, about_tests=False, ranker=RECIPROCAL)[:2]
    assert [f.path for f in files] == ["b.py", "a.py"]
    assert [h.name for h in hits_in_file_order(hits, files)] == ["named", "b1", "a1", "a2", "c1"]


def test_docs_sections_keep_their_places_while_code_follows_the_file_ranking() -> None:
    hits = [hit("a.py", 0.9, "a1"), hit("docs/intro.md", 0.85, "Intro"), hit("b.py", 0.8, "b1"),
            hit("docs/faq.md", 0.7, "FAQ")]
    for doc in (hits[1], hits[3]):
        doc.language = "markdown"
    files = rank_files([bm25("b.py", 5.0)], hits, about_tests=False, ranker=RECIPROCAL)
    assert [f.path for f in files if f.path.endswith(".py")] == ["b.py", "a.py"]
    assert [h.name for h in hits_in_file_order(hits, files)] == ["b1", "Intro", "a1", "FAQ"]
