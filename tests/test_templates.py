"""Issue and pull-request templates follow every other row of a report's list (search/templates.py; no index)."""

from __future__ import annotations

import pytest

from codeqa.search.templates import is_template, templates_last
from test_query import hit

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("path, template", [
    (".github/ISSUE_TEMPLATE/bug_report.md", True),
    (".github/ISSUE_TEMPLATE/config.yml", True),
    ("ISSUE_TEMPLATE.md", True),
    (".github/PULL_REQUEST_TEMPLATE.md", True),
    ("docs/pull_request_template.md", True),
    (".gitlab/merge_request_templates/Default.md", True),
    ("src/issue_templates.py", False),  # code that handles templates is code
    ("src/templates/issue.html", False),
    ("docs/reporting_issues.md", False),
    ("lib/pull_request.rb", False),
])
def test_templates_are_known_by_their_path(path: str, template: bool) -> None:
    assert is_template(path) is template


def test_a_reports_templates_follow_the_rest_and_a_how_questions_keep_their_place() -> None:
    rows = [hit(".github/ISSUE_TEMPLATE/bug_report.md", 0.9, "Describe the bug"), hit("src/args.rs", 0.8, "parse"),
            hit(".github/PULL_REQUEST_TEMPLATE.md", 0.7, "Goals"), hit("src/main.rs", 0.6, "main")]
    assert [h.name for h in templates_last(rows, "report")] == ["parse", "main", "Describe the bug", "Goals"]
    assert templates_last(rows, "how") == rows
