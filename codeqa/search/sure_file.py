"""When the file model is sure of a report's best file, the list shows more of its definitions.

A listed file shows as many definitions as the pool gave it (ranking.rank_definitions), so the
list spans many files: right when the best file is one of several likely ones, short when the
model is sure of it and the fix changed several of its functions. Where the best file's score
is more than SURE_MARGIN above the second's (about one report in ten), it shows at least
SURE_DEFINITIONS of its ranked definitions, which push the last files' rows down. A how
question keeps the list's breadth: its answer spans files (on the Flask questions the rule
cost a how question its file in the top 5, file@5 0.845 → 0.828).

Chosen on the train split from a full run's lists (40 rules simulated on them): showing more
of the best 1–4 files always, or of the best file at margins under 3, lost a C++, Java or
Python item; margins of 3–3.5 with 6 definitions gained the most with no language lower.
Measured: function hit@10 0.661 → 0.665 and recall@10 0.477 → 0.483 (Go +1 item, Go's and
Python's recall), no language lower; test split 0.760 → 0.769, 0.607 → 0.626 (docs/retrieval.md)."""

from __future__ import annotations

from codeqa.search.question_kind import QuestionKind
from codeqa.search.results import FileHit, Hit

SURE_MARGIN = 3.0  # the best file's score above the second's (the file model's log-odds)
SURE_DEFINITIONS = 6


def deepen_sure_file(files: list[FileHit], kind: QuestionKind) -> list[Hit]:
    """For a report, give the best of `files` (in their order) at least SURE_DEFINITIONS
    symbols from its ranked definitions when the model is sure of it; the rows it newly shows."""
    if kind != "report" or not files or not files[0].definitions:
        return []
    best = files[0]
    if len(files) > 1 and best.score - files[1].score <= SURE_MARGIN:
        return []
    shown = {hit.id for hit in best.symbols}
    best.symbols = [d.hit for d in best.definitions[: max(SURE_DEFINITIONS, len(best.symbols))]]
    return [hit for hit in best.symbols if hit.id not in shown]
