"""Spans of code → the context an LLM reads, packed into a token budget by line usefulness.

Whatever the chat commands and the search bring arrives as spans (a file, a line range, the
lines that matched, a label saying who brought it, a rank). Overlapping spans of one file are
merged into one *source*, so a line is shown once however many spans hold it; a span that is
only the header of a class holding another span (`class Cart:` above `Cart.add`) is shown
with that span instead of as a source of its own. Lines are then taken most useful first
until the budget is spent:

    1. lines that matched (a definition asked for, a use, a line asked about), class headers
       of definitions asked for;
    2. signatures of every definition inside the spans, outer ones first (class → methods);
    3. lines next to a matched line;
    4. the rest of the bodies, best-ranked span first, top to bottom.

No body line is taken while a line of tiers 1–2 is left out, so a small budget gives a
skeleton (class header, method signatures, `...` where bodies were) instead of the first
screenful of one snippet. Lines are never cut and carry their line numbers (`41|code`).

Files are shown best-ranked first, code before prose, and a file's sources best-ranked first: a
docs page that ranked above the code still gets its lines by rank, but is shown after the code,
so source [1], which the embedded model's answer opens from, is the best code (docs/answers.md
measures it).
Sources are numbered in the order the text shows them, each headed `[n] path:start-end  Name`
under its file's `### path (labels)` heading, so a model can cite one by its number and the
app can write that number out as the source's `path:line` (`numbered_sources` reads the
headers back from the text). The budget, separators and headers included, is never
exceeded: the text's size is tracked as lines are added (a header's number counted at the
widest it can be).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codeqa.parsing.languages import DOC_LANGUAGES, language_for

MATCHED, SIGNATURE, NEAR, BODY = range(4)
NEAR_LINES = 2  # lines either side of a matched line that count as its neighbourhood
GAP = "..."  # stands for lines left out
SEPARATOR = "\n\n"
MAX_NAMES = 3  # definitions a source's header names
_SOURCE_HEADER = re.compile(r"^\[(\d+)\] (\S+):(\d+)-(\d+)(?:  (.*))?$", re.MULTILINE)


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
    name: str = ""  # qualified name, for whoever looks definitions up and for source headers


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


@dataclass(frozen=True)
class Source:
    """One numbered source of a packed context: what `[number]` in an answer stands for."""

    number: int
    path: str
    start: int
    end: int
    name: str = ""

    @property
    def header(self) -> str:
        """The line above the source's code in the context."""
        return f"[{self.number}] {self.path}:{self.start}-{self.end}" + (f"  {self.name}" if self.name else "")

    @property
    def citation(self) -> str:
        """The source as `path:line` or `path:start-end`, the form the UI links to the viewer."""
        lines = str(self.start) if self.start == self.end else f"{self.start}-{self.end}"
        return f"{self.path}:{lines}"


def numbered_sources(text: str) -> dict[int, Source]:
    """The sources a packed context's text numbers, by number (a stored context is text only)."""
    return {int(m[1]): Source(int(m[1]), m[2], int(m[3]), int(m[4]), m[5] or "") for m in _SOURCE_HEADER.finditer(text)}


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
    sources: list[Source]  # in the order the text shows them, numbered from 1

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


def _header_of(text: FileText, span: Span) -> Definition | None:
    """The definition whose header (first line to end of signature) `span` is, if it is one
    that holds more than its header: such a span comes with the spans inside that definition."""
    return next(
        (d for d in text.definitions if d.start == span.start and d.signature_end == span.end and d.end > span.end),
        None,
    )


def _sources_of(text: FileText, spans: list[Span]) -> list[tuple[list[Span], list[Span]]]:
    """Spans of one file → sources, each as (its own spans, headers shown with it): own spans
    that overlap merge; a header span goes with the sources inside its definition, or stands
    alone when none is."""
    headers: list[tuple[Span, Definition]] = []
    own: list[Span] = []
    for span in spans:
        definition = _header_of(text, span)
        if definition is not None and any(
            definition.start <= s.start and s.end <= definition.end and _header_of(text, s) is None for s in spans
        ):
            headers.append((span, definition))
        else:
            own.append(span)
    groups: list[list[Span]] = []
    for span in sorted(own, key=lambda s: (s.start, s.end)):
        if groups and span.start <= max(s.end for s in groups[-1]):
            groups[-1].append(span)
        else:
            groups.append([span])
    return [
        (group, [h for h, d in headers if any(d.start <= s.start and s.end <= d.end for s in group)])
        for group in groups
    ]


def _name_of(text: FileText, spans: list[Span]) -> str:
    """The definitions a source's spans are, best-ranked first (a span of a whole file: none)."""
    names: list[str] = []
    for span in sorted(spans, key=lambda s: s.rank):
        found = [d for d in text.definitions if d.name and d.start == span.start and d.end <= span.end]
        if found:
            name = max(found, key=lambda d: d.end).name
            if name not in names:
                names.append(name)
    return ", ".join(names[:MAX_NAMES]) + (", ..." if len(names) > MAX_NAMES else "")


class _Source:
    """The lines of one source (its spans merged, class headers included) and those chosen."""

    def __init__(self, text: FileText, spans: list[Span], headers: list[Span], number_width: int) -> None:
        self.text = text
        last = len(text.lines)
        self.rank: dict[int, float] = {}
        matched: set[int] = set()
        for span in [*spans, *headers]:
            for line in range(max(1, span.start), min(last, span.end) + 1):
                self.rank[line] = min(self.rank.get(line, span.rank), span.rank)
            matched.update(line for line in span.matched if 1 <= line <= last)
        self.best = min(s.rank for s in spans)
        self.rank.update({line: self.rank.get(line, self.best) for line in matched})
        self.labels = {s.label: s.rank for s in [*spans, *headers]}
        self.matched = matched
        self.low = min(self.rank) if self.rank else 0
        self.high = max(self.rank) if self.rank else 0
        own = [line for s in spans for line in range(max(1, s.start), min(last, s.end) + 1)]
        self.start, self.end = (min(own), max(own)) if own else (0, 0)
        self.name = _name_of(text, spans)
        self.opening = f"```{text.language}\n"
        self.closing = "```"
        self.header_chars = len(Source(10**number_width - 1, text.path, self.start, self.end, self.name).header) + 1
        self.shown: list[int] = []

    def keys(self) -> list[tuple[tuple, int]]:
        """A sort key per eligible line: (tier, ..., line number)."""
        depth_of: dict[int, int] = {}
        for definition, depth in zip(self.text.definitions, _depths(self.text.definitions), strict=False):
            for line in range(definition.signature_start, definition.signature_end + 1):
                if line in self.rank:
                    depth_of[line] = min(depth_of.get(line, depth), depth)
        near: dict[int, int] = {}
        for m in self.matched:
            for line in range(m - NEAR_LINES, m + NEAR_LINES + 1):
                if line in self.rank and line not in self.matched:
                    near[line] = min(near.get(line, NEAR_LINES + 1), abs(line - m))
        out = []
        key: tuple[int, float, float, int]
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
        """How many characters showing `line` adds to this source's block (its number counted
        at the widest it can be)."""
        gap = len(GAP) + 1
        if not self.shown:
            return (
                self.header_chars
                + len(self.opening)
                + len(self.closing)
                + self.item_chars(line)
                + gap * ((line > self.low) + (line < self.high))
            )
        at = bisect_left(self.shown, line)
        before = self.shown[at - 1] if at else None
        after = self.shown[at] if at < len(self.shown) else None
        if before is None:  # a new first line: the gap before it splits
            gaps_then, gaps_now = 1, (line > self.low) + (after is not None and after > line + 1)
        elif after is None:  # a new last line
            gaps_then, gaps_now = 1, (line > before + 1) + (line < self.high)
        else:
            gaps_then, gaps_now = 1, (line > before + 1) + (after > line + 1)
        return self.item_chars(line) + gap * (gaps_now - gaps_then)

    def render(self, number: int) -> tuple[Source, str]:
        source = Source(number, self.text.path, self.start, self.end, self.name)
        items: list[str] = []
        previous = self.low - 1
        for line in self.shown:
            if line > previous + 1:
                items.append(GAP)
            items.append(line_item(line, self.text.lines[line - 1]))
            previous = line
        if previous < self.high:
            items.append(GAP)
        return source, source.header + "\n" + self.opening + "".join(item + "\n" for item in items) + self.closing


class _FileGroup:
    """The sources of one file under one `### path (labels)` heading."""

    def __init__(self, text: FileText, sources: list[_Source]) -> None:
        self.text = text
        self.sources = sorted(sources, key=lambda s: s.low)
        labels: dict[str, float] = {}
        for source in sources:
            for label, rank in source.labels.items():
                labels[label] = min(labels.get(label, rank), rank)
        self.labels = sorted(labels, key=lambda label: labels[label])
        self.best = min(s.best for s in sources)
        self.heading = f"### {text.path} ({', '.join(self.labels)})\n"

    @property
    def shown(self) -> bool:
        return any(s.shown for s in self.sources)

    def added_chars(self, source: _Source, line: int) -> int:
        """What showing `line` of `source` adds to the file's block: the heading for the file's
        first line, a line break between two of its sources."""
        extra = 0
        if not source.shown:
            extra = 1 if self.shown else len(self.heading)
        return extra + source.added_chars(line)

    def render(self, first_number: int) -> tuple[list[Source], str]:
        """The file's shown sources, best-ranked first (the answer opens from [1]), numbered on."""
        shown = sorted((s for s in self.sources if s.shown), key=lambda s: (s.best, s.low))
        rendered = [s.render(first_number + i) for i, s in enumerate(shown)]
        return [source for source, _ in rendered], self.heading + "\n".join(block for _, block in rendered)

    def lines_shown(self) -> list[int]:
        return sorted({line for s in self.sources for line in s.shown})

    def lines_held(self) -> int:
        return len({line for s in self.sources for line in s.rank})


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


def _file_groups(spans: Sequence[Span], files: Mapping[str, FileText]) -> list[_FileGroup]:
    """Spans of known files → one group per file, best-ranked file first."""
    by_file: dict[str, list[Span]] = {}
    for span in spans:
        if span.path in files:
            by_file.setdefault(span.path, []).append(span)
    found = [(files[path], _sources_of(files[path], found)) for path, found in by_file.items()]
    width = len(str(max(1, sum(len(sources) for _, sources in found))))
    groups = []
    for text, sources in found:
        kept = [s for s in (_Source(text, own, headers, width) for own, headers in sources) if s.rank]
        if kept:
            groups.append(_FileGroup(text, kept))
    return sorted(groups, key=lambda g: (g.best, g.text.path))


def _is_prose(group: _FileGroup) -> bool:
    return language_for(group.text.path) in DOC_LANGUAGES


def pack(
    spans: Sequence[Span],
    files: Mapping[str, FileText],
    budget_tokens: int,
    notes: Sequence[str] = (),
    facts: str = "",
) -> Packed:
    """Pack spans (of files in `files`), notes and `facts` into at most `budget_tokens` tokens.

    `facts` (what an exact lookup found, `structural.py`) goes last, next to the question, and is
    kept whole when it fits the budget at all: the code comes in around it."""
    limit = _chars_for(budget_tokens)
    facts = facts if len(facts) <= limit else ""
    notes_text, kept_notes = _notes_block(notes, limit - (len(facts) + len(SEPARATOR) if facts else 0))
    used = len(notes_text) + (len(facts) + len(SEPARATOR) * bool(notes_text) if facts else 0)
    groups = _file_groups(spans, files)
    sources = [(group, source) for group in groups for source in group.sources]
    candidates = sorted((key, index, line) for index, (_, source) in enumerate(sources) for key, line in source.keys())
    blocks = bool(notes_text) + bool(facts)
    skipped_structure = False
    full: set[tuple[int, int]] = set()  # (tier, source) whose next line did not fit
    for key, index, line in candidates:
        tier = key[0]
        if tier > MATCHED and skipped_structure:
            break  # nothing further down while a matched line or a signature is left out
        if (tier, index) in full:
            continue  # bodies are shown as whole runs from the top, not as scattered lines
        group, source = sources[index]
        cost = group.added_chars(source, line) + (len(SEPARATOR) if blocks and not group.shown else 0)
        if used + cost > limit:
            skipped_structure |= tier <= SIGNATURE
            if tier > SIGNATURE:
                full.add((tier, index))
            continue
        if not group.shown:
            blocks += 1
        used += cost
        insort(source.shown, line)
    numbered: list[Source] = []
    rendered: list[str] = []
    for group in sorted(groups, key=_is_prose):  # stable: by rank among code, then among prose
        if group.shown:
            shown_sources, block = group.render(len(numbered) + 1)
            numbered += shown_sources
            rendered.append(block)
    text = SEPARATOR.join(([notes_text] if notes_text else []) + rendered + ([facts] if facts else []))
    assert len(text) <= used, "packing lost track of the context's size"
    packed_files = [PackedFile(g.text.path, g.labels, g.lines_shown(), g.lines_held()) for g in groups]
    return Packed(text, budget_tokens, packed_files, kept_notes, numbered)
