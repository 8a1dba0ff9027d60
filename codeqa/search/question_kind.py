"""What kind of question a search answers, so the file ranking weighs what that kind needs.

Two kinds ask for different files. A **report** (a bug report, an error, a change to make:
"`flask run` can't find my app", "Fix the crash when …") is answered by the file whose code
does the failing thing, and the words of the report name it: the file model trained on fixes
(`models/file_ranker.json`) ranks those. A **how** question ("how does the router match a path
to its handler", "where are plugins loaded", or a description of a part) is answered by the
file that implements or wires the part: its module's entry, the hub of its folder. The model
that weighs the repository's structure (`models/file_ranker_structure.json`) ranks those, and
loses a little on reports (docs/retrieval.md, "How-it-works questions").

The rules are plain on purpose: a user can tell why a question went one way, and they were
checked on every eval's questions (docs/retrieval.md has the shares each kind is read right).
"""

from __future__ import annotations

import re
from typing import Literal

QuestionKind = Literal["report", "how"]

# A question that opens by asking how, where or what: a how question, unless it says something fails.
_ASKS = re.compile(r"^\s*(?:how|where|what|which|who|explain|describe|walk me|show me|tell me|overview)\b", re.I)
_FAILS = re.compile(r"\b(?:fail|crash|broken|bug|wrong|fix|(?:does|do|is|are)\s*n.?t work)", re.I)
# A commit message's or a task's opening verb: a change to make.
_CHANGE = re.compile(
    r"^\s*(?:fix|add|remove|support|allow|make|use|update|handle|avoid|don'?t|ensure|improve|refactor|"
    r"rename|move|change|deprecate|implement|prevent|bump|revert|drop|correct|respect|clean|set|replace|"
    r"introduce|enable|disable|merge|return|pass|skip|stop|check|raise|throw|let)\b",
    re.I,
)
# Words of something going wrong, anywhere in the text.
_WRONG = re.compile(
    r"\b(?:errors?|exceptions?|traceback|crash(?:es|ed|ing)?|fail(?:s|ed|ing|ures?)?|bugs?|broken|breaks?|"
    r"wrong(?:ly)?|incorrect(?:ly)?|regression|unexpected(?:ly)?|panic(?:s|ked)?|segfault|segmentation|"
    r"hangs?|leaks?|warnings?|raises?|throws?|thrown|invalid|doesn'?t|does not|don'?t|can'?t|cannot|won'?t|"
    r"isn'?t|aren'?t|wasn'?t|not work(?:ing)?|no longer|instead of|expected|should|fix(?:es|ed|ing)?|issue|"
    r"workaround|reproduce|repro|anymore|randomly|(?:since|after) (?:upgrading|updating))\b",
    re.I,
)

_EXCEPTION_NAME = re.compile(r"[A-Za-z]\w*(?:Error|Exception|Panic)\b")  # KeyError, NullPointerException


def question_kind(text: str, has_report_pieces: bool = False) -> QuestionKind:
    """ "report" or "how" for a question's text; `has_report_pieces` when it holds code blocks,
    stack-trace or error lines (retrieval.split_report found some), which only reports carry."""
    if has_report_pieces:
        return "report"
    first = next((line for line in text.strip().splitlines() if line.strip()), "")
    if _ASKS.match(first) and not _FAILS.search(first):
        return "how"
    if _CHANGE.match(first) or _WRONG.search(text) or _EXCEPTION_NAME.search(text):
        return "report"
    return "how"
