"""Spans of code → the context an LLM reads, packed into a token budget by line usefulness.

Whatever the chat commands and the search bring arrives as spans (a file, a line range, the
lines that matched, a label saying who brought it, a rank). Spans of one file are merged, so a
line is shown once however many spans hold it. Lines are then taken most useful first until
the budget is spent:

    1. lines that matched (a definition asked for, a use, a line asked about), class headers
       of definitions asked for;
    2. signatures of every definition inside the spans, outer ones first (class → methods);
    3. lines next to a matched line;
    4. the rest of the bodies, best-ranked span first, top to bottom.

No body line is taken while a line of tiers 1–2 is left out, so a small budget gives a
skeleton (class header, method signatures, `...` where bodies were) instead of the first
screenful of one snippet. Lines are never cut and carry their line numbers (`41|code`), so
the LLM can cite `path:line` however much was left out. The budget, separators included, is
never exceeded: the text's size is tracked exactly as lines are added.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MATCHED, SIGNATURE, NEAR, BODY = range(4)
NEAR_LINES = 2  # lines either side of a matched line that count as its neighbourhood
GAP = "..."  # stands for lines left out
SEPARATOR = "\n\n"


def estimate_tokens(text: str) -> int:
    """A deliberately pessimistic token count (≈3 characters per token for code)."""
    return (len(text) + 2) // 3


def _chars_for(budget_tokens: int) -> int:
    """The most characters whose estimate fits the budget (inverse of `estimate_tokens`)."""
    return max(0, 3 * budget_tokens)


@dataclass(frozen=True)
class Definition:
    """Where a definition sits in its file: all its lines, and those of its signature."""

    start: int
    end: int
    signature_start: int
    signature_end: int
    name: str = ""  # qualified name, for whoever looks definitions up (the packer does not)


@dataclass
class FileText:
    """One file as the packer sees it: its lines (line 1 first) and the definitions in it."""

    path: str
    language: str
    lines: Sequence[str]
    definitions: Sequence[Definition] = ()


@dataclass(frozen=True)
class Span:
    """Lines of one file that something brought, with the lines in it that matched."""

    path: str
    start: int
    end: int
    label: str  # who brought it: "@definition Cart", "@codebase"
    rank: float  # lower comes first among spans of the same tier
    matched: frozenset[int] = frozenset()


@dataclass
class PackedFile:
    path: str
    labels: list[str]
    shown: list[int]  # line numbers shown, ascending
    eligible: int  # lines the spans held


@dataclass
class Packed:
    text: str
    budget: int
    files: list[PackedFile]
    notes: list[str]

    def shown(self, path: str, start: int, end: int) -> int:
        """How many of the lines start..end of `path` the context shows."""
        lines = next((f.shown for f in self.files if f.path == path), [])
        return bisect_right(lines, end) - bisect_left(lines, start)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    @property
    def complete(self) -> bool:
        return all(len(f.shown) == f.eligible for f in self.files)


def line_item(number: int, text: str) -> str:
    return f"{number}|{text}"


def _depths(definitions: Sequence[Definition]) -> list[int]:
    """How many other definitions enclose each one (0 = top level), in input order."""
    order = sorted(range(len(definitions)), key=lambda i: (definitions[i].start, -definitions[i].end))
    depth = [0] * len(definitions)
    stack: list[Definition] = []
    for i in order:
        d = definitions[i]
        while stack and not (stack[-1].start <= d.start and d.end <= stack[-1].end):
            stack.pop()
        depth[i] = len(stack)
        stack.append(d)
    return depth


class _FileGroup:
    """The merged spans of one file and the lines chosen from them so far."""

    def __init__(self, text: FileText, spans: list[Span]) -> None:
        self.text = text
        last = len(text.lines)
        self.rank: dict[int, float] = {}
        labels: dict[str, float] = {}
        matched: set[int] = set()
        for span in spans:
            labels[span.label] = min(labels.get(span.label, span.rank), span.rank)
            for line in range(max(1, span.start), min(last, span.end) + 1):
                self.rank[line] = min(self.rank.get(line, span.rank), span.rank)
            matched.update(line for line in span.matched if 1 <= line <= last)
        self.rank.update({line: self.rank.get(line, min(labels.values())) for line in matched})
        self.labels = sorted(labels, key=labels.get)
        self.best = min(labels.values())
        self.matched = matched
        self.low = min(self.rank) if self.rank else 0
        self.high = max(self.rank) if self.rank else 0
        self.header = f"### {text.path} ({', '.join(self.labels)})\n```{text.language}\n"
        self.footer = "```"
        self.shown: list[int] = []

    def keys(self) -> list[tuple[tuple, int]]:
        """A sort key per eligible line: (tier, ..., line number)."""
        depth_of: dict[int, int] = {}
        for definition, depth in zip(self.text.definitions, _depths(self.text.definitions)):
            for line in range(definition.signature_start, definition.signature_end + 1):
                if line in self.rank:
                    depth_of[line] = min(depth_of.get(line, depth), depth)
        near: dict[int, int] = {}
        for m in self.matched:
            for line in range(m - NEAR_LINES, m + NEAR_LINES + 1):
                if line in self.rank and line not in self.matched:
                    near[line] = min(near.get(line, NEAR_LINES + 1), abs(line - m))
        out = []
        for line, rank in self.rank.items():
            if line in self.matched:
                key = (MATCHED, rank, 0, line)
            elif line in depth_of:
                key = (SIGNATURE, depth_of[line], rank, line)
            elif line in near:
                key = (NEAR, rank, near[line], line)
            else:
                key = (BODY, rank, 0, line)
            out.append((key, line))
        return out

    def item_chars(self, line: int) -> int:
        return len(line_item(line, self.text.lines[line - 1])) + 1

    def added_chars(self, line: int) -> int:
        """Exactly how many characters showing `line` adds to this file's block."""
        gap = len(GAP) + 1
        if not self.shown:
            return len(self.header) + len(self.footer) + self.item_chars(line) + gap * (
                (line > self.low) + (line < self.high))
        at = bisect_left(self.shown, line)
        before = self.shown[at - 1] if at else None
        after = self.shown[at] if at < len(self.shown) else None
        if before is None:  # a new first line: the gap before it splits
            gaps_then, gaps_now = 1, (line > self.low) + (after > line + 1)
        elif after is None:  # a new last line
            gaps_then, gaps_now = 1, (line > before + 1) + (line < self.high)
        else:
            gaps_then, gaps_now = 1, (line > before + 1) + (after > line + 1)
        return self.item_chars(line) + gap * (gaps_now - gaps_then)

    def render(self) -> str:
        items: list[str] = []
        previous = self.low - 1
        for line in self.shown:
            if line > previous + 1:
                items.append(GAP)
            items.append(line_item(line, self.text.lines[line - 1]))
            previous = line
        if previous < self.high:
            items.append(GAP)
        return self.header + "".join(item + "\n" for item in items) + self.footer


def _notes_block(notes: Sequence[str], limit: int) -> tuple[str, list[str]]:
    """As many whole notes as fit in `limit` characters."""
    kept: list[str] = []
    text = ""
    for note in notes:
        candidate = "Notes:\n" + "\n".join(f"- {n}" for n in [*kept, note])
        if len(candidate) > limit:
            break
        kept.append(note)
        text = candidate
    return text, kept


def pack(spans: Sequence[Span], files: Mapping[str, FileText], budget_tokens: int,
         notes: Sequence[str] = ()) -> Packed:
    """Pack spans (of files in `files`) and notes into at most `budget_tokens` tokens."""
    limit = _chars_for(budget_tokens)
    notes_text, kept_notes = _notes_block(notes, limit)
    used = len(notes_text)
    by_file: dict[str, list[Span]] = {}
    for span in spans:
        if span.path in files:
            by_file.setdefault(span.path, []).append(span)
    groups = sorted((_FileGroup(files[path], found) for path, found in by_file.items()),
                    key=lambda g: (g.best, g.text.path))
    groups = [g for g in groups if g.rank]
    candidates = sorted((key, index, line) for index, group in enumerate(groups)
                        for key, line in group.keys())
    blocks = 1 if notes_text else 0
    skipped_structure = False
    full: set[tuple[int, int]] = set()  # (tier, group) whose next line did not fit
    for key, index, line in candidates:
        tier = key[0]
        if tier > MATCHED and skipped_structure:
            break  # nothing further down while a matched line or a signature is left out
        if (tier, index) in full:
            continue  # bodies are shown as whole runs from the top, not as scattered lines
        group = groups[index]
        cost = group.added_chars(line) + (len(SEPARATOR) if blocks and not group.shown else 0)
        if used + cost > limit:
            skipped_structure |= tier <= SIGNATURE
            if tier > SIGNATURE:
                full.add((tier, index))
            continue
        if not group.shown:
            blocks += 1
        used += cost
        insort(group.shown, line)
    rendered = [g.render() for g in groups if g.shown]
    text = SEPARATOR.join(([notes_text] if notes_text else []) + rendered)
    assert len(text) == used, "packing lost track of the context's size"
    packed_files = [PackedFile(g.text.path, g.labels, g.shown, len(g.rank)) for g in groups]
    return Packed(text, budget_tokens, packed_files, kept_notes)
