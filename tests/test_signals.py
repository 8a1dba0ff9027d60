"""The zero-cost ranking signals (search/signals/): what each reads from a path, and that the
file ranker's features carry it (no index, no model)."""

from __future__ import annotations

import pytest

from codeqa.search.ranking import file_features
from codeqa.search.signals.path_match import stem_asked
from codeqa.search.signals.shims import is_shim
from codeqa.search.structure import asked_words
from test_query import hit

pytestmark = pytest.mark.unit


def test_a_file_name_counts_by_the_share_of_its_words_the_question_uses() -> None:
    asked = asked_words(["cookies", "dropped", "redirect"])
    assert stem_asked("src/requests/cookies.py", asked) == 1.0  # plural and singular meet
    assert stem_asked("Source/RedirectHandler.swift", asked) == 0.5
    assert stem_asked("src/requests/sessions.py", asked) == 0.0
    assert stem_asked("Makefile", asked) == 0.0


@pytest.mark.parametrize(("path", "shim"), [
    ("src/requests/compat.py", True),
    ("src/flask/_compat.py", True),
    ("lib/legacy/router.js", True),
    ("src/polyfills.ts", True),
    ("Sources/Backports/Task.swift", True),
    ("src/compose.py", False),
    ("lib/compatible_types.rb", False),
])
def test_compatibility_shims_are_known_by_a_name_on_their_path(path: str, shim: bool) -> None:
    assert is_shim(path) is shim


def test_the_file_rankers_features_carry_the_signals() -> None:
    files = file_features([], [hit("src/compat.py", 0.9, "urlencode"), hit("src/cookies.py", 0.5, "merge")],
                          about_tests=False, terms=["cookies", "lost"])
    assert files["src/compat.py"].features["shim"] == 1.0 and files["src/cookies.py"].features["shim"] == 0.0
    assert files["src/cookies.py"].features["stem_asked"] == 1.0 and files["src/compat.py"].features["stem_asked"] == 0.0
