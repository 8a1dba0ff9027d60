"""Issue and pull-request templates last: a report is written in its repository's template
(`.github/ISSUE_TEMPLATE/bug_report.md`, `PULL_REQUEST_TEMPLATE.md`), so the template's
sections match every report the repository receives and answer none of them.

They took the first place of the list for many reports (as the best docs section, which then
kept its place: ranking.hits_in_file_order), and up to three places of a pull request's ten
(Alamofire's template sections for a commit that follows it). For a report, their rows follow
every other row; a how question ("how do I report a bug?") keeps them where they rank."""

from __future__ import annotations

import re

from codeqa.search.question_kind import QuestionKind
from codeqa.search.results import Hit

_TEMPLATE = re.compile(
    r"(?:^|/)(?:issue|pull_request|merge_request)_templates?(?:/|\.(?:md|markdown|ya?ml|txt|rst)$)", re.IGNORECASE
)


def is_template(path: str) -> bool:
    """An issue or pull (merge) request template, or a file in a folder of them."""
    return _TEMPLATE.search(path) is not None


def templates_last(hits: list[Hit], kind: QuestionKind) -> list[Hit]:
    """`hits` in their order, except that for a report the templates' rows follow all the rest."""
    if kind != "report":
        return hits
    return [hit for hit in hits if not is_template(hit.file_path)] + [hit for hit in hits if is_template(hit.file_path)]
