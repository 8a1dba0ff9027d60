"""Which files a fix touched count as source: the eval's one rule for it.

Gold files are the non-test *source* files a fix modified. This module is the only place that
decides it, with the same signature as the core's upcoming `languages.file_role(path,
head_text)`; when that lands, `file_role` here becomes an import of it.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

ROLES = ("source", "test", "example", "benchmark", "docs", "generated", "vendored")

_DIR_ROLES = {
    "test": {"test", "tests", "testing", "__tests__", "spec", "specs", "e2e", "testdata", "fixtures",
             "test-data", "test_data", "testsuite"},
    "example": {"example", "examples", "example_scripts", "samples", "sample", "demo", "demos"},
    "benchmark": {"bench", "benches", "benchmark", "benchmarks"},
    "docs": {"doc", "docs", "documentation"},
    "vendored": {"vendor", "third_party", "thirdparty", "3rdparty", "external", "node_modules"},
}
_TEST_NAME = re.compile(
    r"^(test_.*\.py|.*_test\.(py|go|rs|c|cc|cpp)|conftest\.py|.*Tests?\.java|.*\.(test|spec)\.[cm]?[jt]sx?|"
    r"test[-_].*\.(c|cc|cpp|h|hpp))$")
_DOC_SUFFIXES = {".md", ".markdown", ".rst", ".txt", ".adoc"}
_GENERATED_HEAD = re.compile(r"@generated|DO NOT EDIT|(auto|automatically)[- ]?generated (by|from|file)",
                             re.IGNORECASE)
HEAD_CHARS = 2000  # how much of a file's start `head_text` needs to hold


def file_role(path: str, head_text: str = "") -> str:
    """The role of a repository file from its path and the first `HEAD_CHARS` of its text."""
    pure = PurePosixPath(path)
    folders = [part.lower() for part in pure.parts[:-1]]
    for role in ("vendored", "test", "benchmark", "example", "docs"):
        if any(folder in _DIR_ROLES[role] for folder in folders):
            return role
    if _TEST_NAME.match(pure.name):
        return "test"
    if pure.suffix.lower() in _DOC_SUFFIXES:
        return "docs"
    if _GENERATED_HEAD.search(head_text[:HEAD_CHARS]):
        return "generated"
    return "source"
