"""A report's rows of configuration and data files follow its code rows (search/code_first.py; no index)."""

from __future__ import annotations

import pytest

from codeqa.search.code_first import code_first
from test_query import hit

pytestmark = pytest.mark.unit


def row(path: str, score: float, name: str, language: str):
    found = hit(path, score, name)
    found.language = language
    return found


def test_a_reports_configuration_rows_follow_its_code_and_docs() -> None:
    rows = [row(".github/workflows/CICD.yml", 0.9, "jobs", "yaml"), row("src/main.rs", 0.8, "run", "rust"),
            row("Cargo.toml", 0.7, "dependencies", "toml"), row("README.md", 0.6, "Usage", "markdown"),
            row("doc/bat.1.in", 0.5, "doc/bat.1.in", "other"), row("src/app.rs", 0.4, "build_app", "rust")]
    assert [h.name for h in code_first(rows, "report")] == [
        "run", "Usage", "build_app", "jobs", "dependencies", "doc/bat.1.in"]


def test_a_how_question_keeps_them_in_place() -> None:
    rows = [row(".github/workflows/ci.yml", 0.9, "jobs", "yaml"), row("src/main.rs", 0.8, "run", "rust")]
    assert code_first(rows, "how") == rows
