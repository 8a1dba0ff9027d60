"""A fix's diff → the pre-fix lines it changed → the symbols (CodeQA's own rows) that hold them.

Pure functions, no git and no index: the miner feeds them a unified diff and pre-fix file text.

Rules (also in eval/README.md):
- A removed or replaced line is a changed pre-fix line.
- A run of added lines with no removed line next to it is an insertion after pre-fix line L
  (0 = at the top of the file).
- A changed line belongs to the innermost definition whose line range holds it.
- An insertion after L belongs to the innermost definition that holds both L and L+1, or that
  holds L and whose header is indented less than the first inserted line (a statement appended
  to the end of a Python function, a method appended to a class). Code added between two
  definitions, or at module level, belongs to no symbol: the file is still gold.
"""

from __future__ import annotations

from dataclasses import dataclass

from unidiff import PatchSet


@dataclass(frozen=True)
class Insertion:
    """Lines added after pre-fix line `after`; `indent` is the first non-blank added line's."""

    after: int
    indent: int


@dataclass(frozen=True)
class FileChange:
    """What a diff did to one file, in pre-fix line numbers."""

    path: str  # the pre-fix path (the new path for an added file)
    status: str  # modified | added | deleted | renamed
    changed_lines: tuple[tuple[int, int], ...]  # 1-based inclusive ranges
    insertions: tuple[Insertion, ...]


@dataclass(frozen=True)
class Span:
    """A definition's name, kind and line range, as CodeQA stores them."""

    qualified_name: str
    kind: str
    start_line: int
    end_line: int

    def holds(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line

    @property
    def size(self) -> int:
        return self.end_line - self.start_line


def indentation(line: str) -> int:
    """Leading whitespace width, tabs counted as 4."""
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip())


def _ranges(lines: list[int]) -> tuple[tuple[int, int], ...]:
    """Sorted line numbers → inclusive runs: [3, 4, 5, 9] → ((3, 5), (9, 9))."""
    runs: list[list[int]] = []
    for line in sorted(set(lines)):
        if runs and line == runs[-1][1] + 1:
            runs[-1][1] = line
        else:
            runs.append([line, line])
    return tuple((start, end) for start, end in runs)


def _status(patched) -> str:
    if patched.is_added_file:
        return "added"
    if patched.is_removed_file:
        return "deleted"
    if patched.is_rename:
        return "renamed"
    return "modified"


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def parse_diff(diff_text: str) -> list[FileChange]:
    """Every file a unified (git) diff touches, with its changed pre-fix lines and insertions."""
    changes = []
    for patched in PatchSet(diff_text):
        status = _status(patched)
        source = _strip_prefix(patched.source_file)
        path = _strip_prefix(patched.target_file) if status == "added" else source
        removed: list[int] = []
        insertions: list[Insertion] = []
        for hunk in patched:
            previous_old = hunk.source_start - 1  # the last pre-fix line seen so far
            lines = list(hunk)
            index = 0
            while index < len(lines):
                line = lines[index]
                if line.is_removed:
                    removed.append(line.source_line_no)
                    previous_old = line.source_line_no
                    index += 1
                elif line.is_added:
                    run_end = index
                    while run_end < len(lines) and lines[run_end].is_added:
                        run_end += 1
                    next_removed = run_end < len(lines) and lines[run_end].is_removed
                    prev_removed = index > 0 and lines[index - 1].is_removed
                    if not (next_removed or prev_removed):
                        text = next((a.value for a in lines[index:run_end] if a.value.strip()), "")
                        insertions.append(Insertion(previous_old, indentation(text)))
                    index = run_end
                else:
                    if line.source_line_no is not None:
                        previous_old = line.source_line_no
                    index += 1
        changes.append(FileChange(path, status, _ranges(removed), tuple(insertions)))
    return changes


def _innermost(spans: list[Span]) -> Span | None:
    return min(spans, key=lambda s: (s.size, -s.start_line), default=None)


def gold_spans(spans: list[Span], change: FileChange, source: str) -> list[Span]:
    """The innermost definitions that hold the change's lines (see the module docstring)."""
    lines = source.split("\n")
    found: dict[tuple[str, int], Span] = {}
    for start, end in change.changed_lines:
        for line in range(start, end + 1):
            span = _innermost([s for s in spans if s.holds(line)])
            if span is not None:
                found[(span.qualified_name, span.start_line)] = span
    for insertion in change.insertions:
        after = insertion.after
        holders = []
        for s in spans:
            if not s.holds(after):
                continue
            header = lines[s.start_line - 1] if s.start_line <= len(lines) else ""
            if s.holds(after + 1) or insertion.indent > indentation(header):
                holders.append(s)
        span = _innermost(holders)
        if span is not None:
            found[(span.qualified_name, span.start_line)] = span
    return sorted(found.values(), key=lambda s: (s.start_line, s.qualified_name))
