"""Module-level code: what a source file holds outside every definition, in statement-sized chunks.

A constants file, a locale that exports one object literal, a plugin whose methods are
assigned inside `export default (o, c) => {...}`, an `if __name__ == "__main__":` block: code
that no function or class row holds. The indexer gives it rows of its own (kinds `file` and
`module`, see `languages.MODULE_KINDS`) so every line of a repo can be found.

The split follows the syntax tree, not a character count: a top-level statement that no
definition overlaps is one piece; a statement that holds definitions (the plugin's arrow
function) is opened and its own statements become pieces; a piece larger than the cap is
opened too when it has children (the pairs of a huge object literal). Consecutive pieces with
no definition between them form a run of contiguous lines, and a run is cut into chunks of at
most `CHUNK_CHARS` at piece boundaries. Every chunk is a contiguous range of whole lines, so
its `start_line`/`end_line` mean what they mean for any other row.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace

from tree_sitter import Node

CHUNK_CHARS = 1500  # about what the embedder reads of a row (256 tokens of code)
# A long module body gets bigger chunks rather than more rows: the embedder is the cost of
# indexing, and beyond this count a file's extra chunks would mostly repeat one shape.
MAX_CHUNKS = 16
MIN_CHUNK_CHARS = 40  # a lone `export default locale` or `}` says nothing as a row of its own
MAX_DEPTH = 100  # syntax levels opened to find statement boundaries: below Python's recursion limit


@dataclass(frozen=True)
class CodeChunk:
    """Contiguous lines of module-level code (1-based, inclusive)."""

    start_line: int
    end_line: int
    code: str


@dataclass(frozen=True)
class _Piece:
    start_row: int  # 0-based, inclusive
    end_row: int
    comment: bool
    depth: int  # 0: a top-level statement; more: inside an opened one


class _Coverage:
    """The rows that definitions hold, as sorted disjoint intervals."""

    def __init__(self, spans: Collection[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.starts = [s for s, _ in merged]
        self.ends = [e for _, e in merged]

    def _around(self, row: int) -> int:
        """Index of the last interval starting at or before `row` (-1 if none)."""
        return bisect_right(self.starts, row) - 1

    def covers(self, start: int, end: int) -> bool:
        at = self._around(start)
        return at >= 0 and self.ends[at] >= end

    def touches(self, start: int, end: int) -> bool:
        at = self._around(end)
        return at >= 0 and self.ends[at] >= start

    def between(self, after: int, before: int) -> bool:
        """Whether a definition lies on a row strictly between these two rows."""
        return after + 1 < before and self.touches(after + 1, before - 1)


class _Lines:
    """A file's lines with their running character counts, so any span's size is one subtraction."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.offsets = [0]
        for line in lines:
            self.offsets.append(self.offsets[-1] + len(line) + 1)

    def chars(self, start: int, end: int) -> int:
        """Characters of rows start..end (0-based, inclusive), newlines included."""
        end = min(end, len(self.lines) - 1)
        return self.offsets[end + 1] - self.offsets[start] if end >= start else 0

    def chunk(self, start: int, end: int) -> CodeChunk:
        return CodeChunk(start + 1, end + 1, "\n".join(self.lines[start : end + 1]))


def module_chunks(
    root: Node,
    lines: Sequence[str],
    definition_rows: Collection[tuple[int, int]],
    comment_types: Collection[str],
    skip_rows: Collection[int] = (),
) -> list[CodeChunk]:
    """The file's code outside `definition_rows` (0-based inclusive row spans), chunked.

    `skip_rows` are rows already accounted for elsewhere (the module docstring or header
    comment, which become the file row's doc).
    """
    coverage = _Coverage(definition_rows)
    text = _Lines(lines)
    skipped = frozenset(skip_rows)
    pieces = [
        p
        for p in _pieces(root, coverage, text, frozenset(comment_types))
        if not skipped.issuperset(range(p.start_row, p.end_row + 1))
    ]
    runs = _runs(pieces, coverage)
    total = sum(text.chars(run[0].start_row, run[-1].end_row) for run in runs)
    # Cuts fall between pieces, so chunks come out a little under the cap: aim below MAX_CHUNKS.
    cap = max(CHUNK_CHARS, -(-total // (MAX_CHUNKS - 2)))
    return [chunk for run in runs for chunk in _split(run, text, cap)]


def line_chunks(lines: Sequence[str]) -> list[CodeChunk]:
    """A file no grammar parses, as windows of whole lines: the text fallback's module code.

    Each window holds at most the cap that keeps the file within `MAX_CHUNKS` windows (at
    least `CHUNK_CHARS`) and ends after a blank line where that leaves it at least half full,
    so paragraphs and blocks stay whole. Blank windows are dropped."""
    text = _Lines(lines)
    total = text.chars(0, len(lines) - 1)
    cap = max(CHUNK_CHARS, -(-total // (MAX_CHUNKS - 2)))
    chunks: list[CodeChunk] = []
    start = 0
    while start < len(lines):
        stop = start
        while stop + 1 < len(lines) and text.chars(start, stop + 1) <= cap:
            stop += 1
        if stop + 1 < len(lines):
            blank = next((row for row in range(stop, start, -1) if not lines[row].strip()), None)
            if blank is not None and text.chars(start, blank) >= cap // 2:
                stop = blank
        if any(line.strip() for line in lines[start : stop + 1]):
            chunks.append(text.chunk(start, stop))
        start = stop + 1
    return chunks


def file_head(chunks: Sequence[CodeChunk]) -> str:
    """What the file row holds of the module body: its start, up to `CHUNK_CHARS`."""
    return "\n".join(chunk.code for chunk in chunks)[:CHUNK_CHARS]


def chunks_with_rows(chunks: Sequence[CodeChunk]) -> list[CodeChunk]:
    """The chunks that get `module` rows of their own: none when the file row holds the whole
    body; else each of some substance, at most `MAX_CHUNKS` (the largest: runs that lie
    between definitions cannot merge). The whole-file BM25 text still has every line."""
    if sum(len(chunk.code) + 1 for chunk in chunks) <= CHUNK_CHARS + 1:
        return []
    kept = [chunk for chunk in chunks if len(chunk.code.strip()) >= MIN_CHUNK_CHARS]
    if len(kept) > MAX_CHUNKS:
        kept = sorted(sorted(kept, key=lambda c: -len(c.code))[:MAX_CHUNKS], key=lambda c: c.start_line)
    return kept


def _pieces(
    node: Node, coverage: _Coverage, text: _Lines, comment_types: frozenset[str], depth: int = 0
) -> Iterator[_Piece]:
    """Statement-sized pieces of `node`'s children that no definition holds, in order."""
    for child in node.named_children:
        start, end = child.start_point.row, _end_row(child)
        if coverage.covers(start, end):
            continue
        if child.type in comment_types:
            yield _Piece(start, end, True, depth)
            continue
        partial = coverage.touches(start, end)
        too_big = text.chars(start, end) > CHUNK_CHARS and child.named_child_count > 0
        if not (partial or too_big) or depth >= MAX_DEPTH:  # deeper: generated data, taken whole
            yield _Piece(start, end, False, depth)
            continue
        inner = list(_pieces(child, coverage, text, comment_types, depth + 1))
        if not partial and inner:
            # A big statement opened only for its size keeps its own first and last lines.
            inner[0] = replace(inner[0], start_row=start)
            inner[-1] = replace(inner[-1], end_row=end)
        yield from inner


def _runs(pieces: list[_Piece], coverage: _Coverage) -> list[list[_Piece]]:
    """Pieces grouped into runs with no definition in between; comments only where they sit
    inside a run or directly above its first code."""
    runs: list[list[_Piece]] = []
    current: list[_Piece] = []
    for piece in pieces:
        if current and coverage.between(current[-1].end_row, piece.start_row):
            runs.append(current)
            current = []
        current.append(piece)
    if current:
        runs.append(current)
    return [trimmed for run in runs if (trimmed := _trim_comments(run))]


def _trim_comments(run: list[_Piece]) -> list[_Piece]:
    """Drop trailing comments and leading ones not attached (no blank line) to the first code."""
    while run and run[-1].comment:
        run = run[:-1]
    first = next((i for i, p in enumerate(run) if not p.comment), None)
    if first is None:
        return []
    start = first
    while start > 0 and run[start - 1].end_row + 1 >= run[start].start_row:
        start -= 1
    return run[start:]


def _split(run: list[_Piece], text: _Lines, cap: int) -> Iterator[CodeChunk]:
    """Cut a run into chunks of at most `cap` characters between pieces, preferring the
    shallowest boundary (between top-level statements rather than inside one) among those
    that leave a chunk at least half full. A single piece larger than the cap (a long string)
    stays whole; pieces sharing a line are never separated."""
    start, at = 0, 1
    while at < len(run):
        if text.chars(run[start].start_row, run[at].end_row) <= cap:
            at += 1
            continue
        breaks = [j for j in range(start + 1, at + 1) if run[j].start_row > run[j - 1].end_row]
        full = [j for j in breaks if text.chars(run[start].start_row, run[j].start_row - 1) >= cap // 2]
        if not full and not breaks:
            at += 1
            continue
        cut = min(full or breaks, key=lambda j: (run[j].depth, -j))
        yield text.chunk(run[start].start_row, run[cut - 1].end_row)
        start, at = cut, cut + 1
    yield text.chunk(run[start].start_row, max(p.end_row for p in run[start:]))


def _end_row(node: Node) -> int:
    """0-based last row; a node ending at column 0 ends on the previous row."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point.row else row
