"""Scoring and label checks of the eval runner (run: .venv/bin/pytest eval/test_run_eval.py)."""

from __future__ import annotations

import pytest

from eval.run_eval import Question, load_questions, score, section_name, validate

pytestmark = pytest.mark.unit

APP = "src/flask/app.py"
DOC = "docs/config.rst"
INDEX = {(APP, "Flask.make_response"), (APP, "Flask.run"), ("tests/test_basic.py", "test_run"),
         (DOC, "config.rst > Config"), (DOC, "config.rst > Config > Builtin")}


def question(symbols: tuple[str, ...], files: tuple[str, ...] = (APP,)) -> Question:
    return Question("q1", "how", "?", files, symbols)


def test_section_name_folds_parts_only() -> None:
    assert section_name("config.rst > Config (part 3)") == "config.rst > Config"
    assert section_name("Flask.run") == "Flask.run"


def test_score_ranks_symbols_and_files() -> None:
    q = question(("Flask.make_response", "Flask.run"))
    hits = [("tests/test_basic.py", "test_run"), (APP, "Flask.wsgi_app"), (APP, "Flask.run")]
    result = score(q, q.gold_pairs(INDEX), hits)
    assert result["file@5"] == 1.0
    assert result["sym_recall@10"] == 0.5
    assert result["mrr@10"] == pytest.approx(1 / 3)
    assert result["first_gold_rank"] == 3


def test_score_needs_the_file_to_match() -> None:
    q = question(("Flask.run",))
    result = score(q, q.gold_pairs(INDEX), [("src/other.py", "Flask.run")])
    assert result == {"file@5": 0.0, "file@10": 0.0, "sym_recall@10": 0.0, "mrr@10": 0.0, "first_gold_rank": None}


def test_doc_gold_matches_parts_and_subsections_but_not_parents() -> None:
    q = question(("config.rst > Config > Builtin",), (DOC,))
    gold = q.gold_pairs(INDEX)
    assert score(q, gold, [(DOC, "config.rst > Config > Builtin (part 2)")])["mrr@10"] == 1.0
    assert score(q, gold, [(DOC, "config.rst > Config > Builtin > Sessions")])["mrr@10"] == 1.0
    assert score(q, gold, [(DOC, "config.rst > Config")])["mrr@10"] == 0.0


def test_validate_rejects_a_misspelt_symbol() -> None:
    with pytest.raises(SystemExit, match="Flask.make_respons"):
        validate([question(("Flask.make_respons",))], INDEX)


def test_question_file_is_well_formed() -> None:
    questions = load_questions()
    assert len(questions) >= 45
    assert {q.kind for q in questions} == {"how", "where", "bug", "doc"}
    assert sum(len(q.query) >= 500 for q in questions if q.kind == "bug") >= 5
