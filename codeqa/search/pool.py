"""The candidate pool's order: best first, tests a little lower, a file row after its own definitions."""

from __future__ import annotations

from codeqa.parsing.languages import FILE_KIND
from codeqa.search.results import Hit

# Tests restate the code they test; unless the question is about tests, they rank a bit lower.
# Measured on the eval: file hit@5 0.741 → 0.793, MRR 0.450 → 0.486 (0.6 scored the same).
TEST_FILE_WEIGHT = 0.8


def rank_pool(hits: list[Hit], about_tests: bool) -> list[Hit]:
    """Best first; test files count a little less unless the question is about tests, and a
    file row gives its place to a definition of its own file."""
    if not about_tests:
        for hit in hits:
            if hit.role == "test":
                hit.score *= TEST_FILE_WEIGHT
    return files_yield_to_their_definitions(sorted(hits, key=lambda h: -h.score))


def files_yield_to_their_definitions(ranked: list[Hit]) -> list[Hit]:
    """A file row gives way to the definitions of its own file found in the same pool.

    The file matched as a whole and its definition is the more precise answer (the context
    shows a definition inside its file anyway). A file row ranked above its file's best
    definition hands it its place and score; a file row ranked below one is redundant. Either
    way the file row goes to the end of the pool. A file with no definition in the pool keeps
    its row where it ranked, so a file that only its file row finds stays found."""
    out = list(ranked)
    demoted: list[Hit] = []
    shown: set[str] = set()  # files with a definition at or above the current place
    at = 0
    while at < len(out):
        hit = out[at]
        if hit.kind != FILE_KIND:
            if hit.table != "modules":
                shown.add(hit.file_path)
            at += 1
            continue
        below = (
            None
            if hit.file_path in shown
            else next(
                (j for j in range(at + 1, len(out)) if out[j].file_path == hit.file_path and out[j].table != "modules"),
                None,
            )
        )
        if hit.file_path not in shown and below is None:
            at += 1
            continue
        demoted.append(out.pop(at))
        if below is not None:
            definition = out.pop(below - 1)
            definition.score = hit.score
            out.insert(at, definition)
    floor = min((h.score for h in out), default=0.0)
    for hit in demoted:
        hit.score = floor
    return out + demoted
