"""For a report, code before configuration: a bug report's fix is a change to code, so the
rows of a listed file in a configuration or data format (YAML, TOML, JSON, Makefiles, CMake,
XML, files of no known language) follow every code row.

A report's words match the files that name the same flags and features without running them:
bat's CI workflow (`CICD.yml`, three of its sections) and fd's `Cargo.toml` took places of a
report's ten. A how question ("how is CI configured?") keeps them where they rank.

Those files are never a gold function of the realistic eval (it counts only parsed code), so
the rule can only free places for code there; what it costs a user is a fix that changed a
workflow or a manifest alone, which a bug report seldom asks for. Same snapshots, one run
after the other: train split (290 items) function recall@10 0.477 → 0.480 (fd and guzzle's
psr7 each found another function; PHP 0.450 → 0.500, Rust 0.529 → 0.538), hit@10 0.661 either
way, nothing lower; test split and the Flask questions identical in every language and
configuration (docs/retrieval.md)."""

from __future__ import annotations

from codeqa.parsing.languages import DOC_LANGUAGES, LANGUAGES
from codeqa.search.question_kind import QuestionKind
from codeqa.search.results import Hit


def is_code(hit: Hit) -> bool:
    """A row of a programming language's file, or a docs section (docs have their own order)."""
    return hit.language in LANGUAGES or hit.language in DOC_LANGUAGES


def code_first(hits: list[Hit], kind: QuestionKind) -> list[Hit]:
    """`hits` in their order, except that for a report the rows of configuration and data
    files follow all the rest."""
    if kind != "report":
        return hits
    return [hit for hit in hits if is_code(hit)] + [hit for hit in hits if not is_code(hit)]
