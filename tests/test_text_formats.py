"""Files no grammar parses (issue 30): configuration, data, build and infrastructure formats get
a file row and sections where they have structure; any other text gets a file row and line
windows. Pure logic on tests/fixtures/polyglot and small texts."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeqa.indexing.file_rows import file_rows, text_fallback_notice
from codeqa.parsing.repo_files import walk_repo
from codeqa.parsing.doc_sections import split_sections
from codeqa.parsing.module_code import CHUNK_CHARS, MAX_CHUNKS, line_chunks

pytestmark = pytest.mark.unit

POLYGLOT = Path(__file__).parent / "fixtures" / "polyglot"

# path -> (language, the titles of its sections in order: "" is the part before the first)
TEXT_FILES = {
    "Dockerfile": ("dockerfile", ["golang:1.22 AS build", "gcr.io/distroless/base AS runtime"]),
    "Makefile": ("makefile", ["", "all", "build", "test", "lint"]),
    "config/.env.example": ("ini", [""]),
    "config/billing.toml": ("toml", ["", "database", "payment_provider"]),
    "db/schema.sql": ("sql", ["", "CREATE TABLE customers", "CREATE TABLE invoices",
                              "CREATE INDEX invoices_due_on ON invoices"]),
    "deploy/k8s/worker-deployment.yaml": ("yaml", ["", "metadata", "spec"]),
    "infra/storage.tf": ("hcl", ['provider "aws"', 'resource "aws_s3_bucket" "invoice_archive"',
                                 'variable "retention_days"', 'output "archive_bucket"']),
    "proto/refunds.proto": ("protobuf", ["", "service RefundService", "message RefundRequest", "message RefundReply"]),
    "web/schema.graphql": ("graphql", ["", "type Query", "type Invoice", "type Mutation"]),
    "web/templates/help.html": ("html", ["", "Billing help", "How do I update my credit card?",
                                         "Why was I charged twice?"]),
    # no sections: line windows
    "web/package.json": ("json", []),
    "web/static/dashboard.css": ("css", []),
    "legacy/exchange_rates.nim": ("other", []),
    # a `.m` file that is not Objective-C: MATLAB, cut at its functions
    "matlab/forecast_revenue.m": ("matlab", ["function total = forecast_revenue(monthly, months)"]),
}


@pytest.fixture(scope="module")
def rows_by_path() -> dict[str, dict[str, list[dict]]]:
    """Every fixture file's rows by table, as the indexer builds them."""
    return {found.path: file_rows("polyglot", found, 0).rows for found in walk_repo(POLYGLOT).read_all()}


@pytest.mark.parametrize("path", sorted(TEXT_FILES))
def test_each_text_file_has_a_file_row_and_its_sections(rows_by_path, path: str) -> None:
    language, titles = TEXT_FILES[path]
    rows = rows_by_path[path]
    (file_row,) = [r for r in rows["modules"] if r["kind"] == "file"]
    assert file_row["language"] == language and file_row["role"] == "source"
    assert file_row["code"] and file_row["file_text"]  # its head for the vector, all of it for BM25
    sections = [r for r in rows["classes"] if r["kind"] == "doc"]
    assert [r["name"] for r in sections] == titles
    assert not rows["methods"] and all(r["kind"] == "doc" for r in rows["classes"])
    assert file_row["top_level_names"] == [t for t in dict.fromkeys(titles)]


def test_sections_are_exact_line_ranges(rows_by_path) -> None:
    source = (POLYGLOT / "db" / "schema.sql").read_text().split("\n")
    for row in rows_by_path["db/schema.sql"]["classes"]:
        assert row["code"] == "\n".join(source[row["start_line"] - 1:row["end_line"]])
    invoices = next(r for r in rows_by_path["db/schema.sql"]["classes"] if r["name"] == "CREATE TABLE invoices")
    assert (invoices["start_line"], invoices["end_line"]) == (7, 12)
    assert invoices["qualified_name"] == "schema.sql > CREATE TABLE invoices"


def test_every_fixture_file_has_a_row() -> None:
    walked = walk_repo(POLYGLOT)
    found = walked.read_all()
    assert {f.path for f in found} >= set(TEXT_FILES) | {"scripts/rotate-logs"}
    assert all(file_rows("polyglot", f, 0).rows["modules"] for f in found)
    assert not walked.skipped


@pytest.mark.parametrize(("language", "text", "titles"), [
    ("yaml", "version: 3\nservices:\n  web: {}\n# note\nvolumes:\n  data:\n", ["", "services", "volumes"]),
    ("yaml", "jobs: |\n  run\nkey: value\n", ["jobs"]),  # a block scalar opens a section, a value doesn't
    ("toml", "[tool.ruff]\nline-length = 100\n[[tool.mypy.overrides]]\nmodule = 'x'\n",
     ["tool.ruff", "tool.mypy.overrides"]),
    ("sql", "create or replace view v as select 1;\ninsert into t values (1);\nALTER TABLE t ADD c INT;\n",
     ["create or replace view v as select 1", "ALTER TABLE t ADD c INT"]),
    ("makefile", ".PHONY: x\nCC := gcc\nX = a:b\nx: y\n\tcc\n%.o: %.c\n\tcc $<\n", ["", "x", "%.o"]),
    ("dockerfile", "from python:3.12-slim\nRUN pip install x\n", ["python:3.12-slim"]),
    ("html", "<h1>Guide</h1>\n<p>Intro</p>\n<section><h3 id=a>Setup <em>now</em></h3></section>\n<p>x</p>\n",
     ["Guide", "Setup now"]),
])
def test_section_patterns(language: str, text: str, titles: list[str]) -> None:
    assert [s.title for s in split_sections(text, language, "f")] == titles


def test_line_windows_tile_a_file_within_the_chunk_cap() -> None:
    lines = [f"line {n} of a language without a grammar" for n in range(2000)]
    chunks = line_chunks(lines)
    assert len(chunks) <= MAX_CHUNKS
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 2000
    assert all(a.end_line + 1 == b.start_line for a, b in zip(chunks, chunks[1:]))
    small = line_chunks(["a", "", "b", "", ""])
    assert [(c.start_line, c.end_line) for c in small] == [(1, 5)]
    assert all(len(c.code) <= max(CHUNK_CHARS, len("\n".join(lines)) // (MAX_CHUNKS - 2)) for c in chunks)


def test_a_long_file_without_a_grammar_gets_module_rows(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lexer.nim").write_text("".join(f"proc token{n}*(): int = {n}\n\n" for n in range(400)))
    (found,) = walk_repo(tmp_path).read_all()
    rows = file_rows("r", found, 0).rows
    kinds = [r["kind"] for r in rows["modules"]]
    assert kinds[0] == "file" and 2 <= kinds.count("module") <= MAX_CHUNKS
    assert found.language == "other" and not rows["methods"] and not rows["classes"]


def test_the_run_says_what_it_indexed_as_text() -> None:
    notice = text_fallback_notice({"a.nim": "other", "b.nim": "other", "bin/x": "other", "c.v": "other",
                                   "d.py": "python", "e.yaml": "yaml"})
    assert notice == "4 files indexed as text (no grammar for them): .nim (2), x (1), .v (1)"
    assert text_fallback_notice({"d.py": "python"}) is None
