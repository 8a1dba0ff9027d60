"""Which file model a question gets (question_kind.py): reports and changes one, how questions
and descriptions of a part the other."""

from __future__ import annotations

import pytest

from codeqa.search.question_kind import question_kind
from codeqa.search.query import parse_query

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text", [
    "How does the router match a path to its handler?",
    "where are plugins registered and loaded",
    "What happens when the per-request context is torn down?",
    "How does Flask decide which error handler runs for an exception raised in a view?",
    "The core dispatching loop: it reads each line of the diff and hands it to the painter.",
    "Explain the connection pool",
])
def test_how_questions_and_descriptions(text):
    assert question_kind(text) == "how"


@pytest.mark.parametrize("text", [
    "Fix crash when the config file is empty",
    "Add an option to skip hidden files",
    "Users randomly get logged out since upgrading",
    "request.files['photo'] gives me a KeyError in debug mode",
    "How do I stop this from failing on Windows?",
    "Streaming a large response and reading request.args inside the generator doesn't work",
])
def test_reports_and_changes(text):
    assert question_kind(text) == "report"


def test_a_stack_trace_makes_a_report_whatever_its_words():
    text = "how come\nTraceback (most recent call last):\n  File \"app.py\", line 3, in view\nKeyError: 'x'"
    assert parse_query(text).kind == "report"
    assert parse_query("How are pooled connections closed?").kind == "how"
