"""Split README-like documents, and structured text files, into sections small enough to embed and cite.

Markdown headings come from markdown-it-py (so `#` inside fenced code is not a
heading); reStructuredText titles are found by their adornment lines; the text formats of
the language table (YAML, TOML, SQL, Makefile, Dockerfile, HTML, ...) by their section
pattern (a top-level key, a statement, a target, a stage, a heading); plain text is
one section cut into paragraph chunks. Every section's text is exactly the source
lines `start_line..end_line` (newlines normalised to "\\n"), so citations are exact.

Decisions:
- A heading followed directly by a deeper heading (nothing in between) is merged into
  that subsection: the chunk then starts at the parent heading and carries its context.
- Leading and trailing blank lines of a section are dropped from its range.
- Oversized sections are cut at line boundaries, preferring blank lines; the parts are
  contiguous and get " (part N)" on title and qualified name from part 2 on.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from markdown_it import MarkdownIt

from codeqa.parsing.languages import TextFormat, section_format

QUALIFIER = " > "
RST_ADORNMENT_CHARS = frozenset(string.punctuation)
# A blank-line cut is preferred unless it leaves the chunk smaller than this share.
MIN_BLANK_CUT_SHARE = 0.5


@dataclass(frozen=True)
class DocSection:
    """One heading section (or one part of an oversized one)."""

    title: str
    qualified_name: str
    text: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class _Heading:
    """A heading in the source: 0-based first line, first line after it, level, title."""

    line: int
    body: int
    level: int
    title: str


@dataclass(frozen=True)
class _Span:
    """A section before size capping: half-open 0-based line range [start, end)."""

    title: str
    qualified: str
    start: int
    end: int
    level: int
    heading_only: bool


def _front_matter_end(lines: list[str]) -> int:
    """Lines taken by a leading YAML front matter block (Jekyll, Hugo), else 0."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            return index + 1
    return 0


def _markdown_headings(lines: list[str]) -> list[_Heading]:
    """Top-level ATX and setext headings; headings in quotes or lists don't start sections.

    Front matter is blanked before parsing, else its closing `---` reads as a setext
    underline; blanking keeps line numbers intact.
    """
    skip = _front_matter_end(lines)
    tokens = MarkdownIt("commonmark").parse("\n".join([""] * skip + lines[skip:]))
    headings = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            title = " ".join(tokens[index + 1].content.split())
            headings.append(_Heading(token.map[0], token.map[1], int(token.tag[1:]), title))
    return headings


def _adornment_char(line: str) -> str | None:
    """The punctuation character a whole rst adornment line is made of, if it is one."""
    stripped = line.rstrip()
    if len(stripped) < 2 or stripped[0] not in RST_ADORNMENT_CHARS:
        return None
    return stripped[0] if stripped == stripped[0] * len(stripped) else None


def _rst_title_at(lines: list[str], index: int) -> tuple[int, tuple[str, bool], str] | None:
    """If `lines[index]` is a title line, return (section start, style, title)."""
    title_line = lines[index]
    if not title_line.strip() or _adornment_char(title_line) or index + 1 >= len(lines):
        return None
    under = _adornment_char(lines[index + 1])
    if under is None or len(lines[index + 1].rstrip()) < len(title_line.rstrip()):
        return None
    above = lines[index - 1] if index > 0 else ""
    if _adornment_char(above) == under and above.rstrip() == lines[index + 1].rstrip():
        return index - 1, (under, True), title_line.strip()
    previous_blank = index == 0 or not above.strip()
    if title_line[0].isspace() or not previous_blank:
        return None
    return index, (under, False), title_line.strip()


def _rst_headings(lines: list[str]) -> list[_Heading]:
    """Section titles; levels follow the order in which adornment styles first appear."""
    styles: list[tuple[str, bool]] = []
    headings = []
    index = 0
    while index < len(lines):
        found = _rst_title_at(lines, index)
        if found is None:
            index += 1
            continue
        start, style, title = found
        if style not in styles:
            styles.append(style)
        headings.append(_Heading(start, index + 2, styles.index(style) + 1, title))
        index += 2
    return headings


HEADING_FINDERS = {"markdown": _markdown_headings, "rst": _rst_headings}


def _format_headings(lines: list[str], fmt: TextFormat) -> list[_Heading]:
    """Lines where the format's section pattern matches (at the line's start unless the format
    says anywhere); the title is its `title` group with markup and spaces tidied."""
    assert fmt.section is not None
    find = fmt.section.search if fmt.section_anywhere else fmt.section.match
    headings = []
    for index, line in enumerate(lines):
        found = find(line)
        if found is None:
            continue
        title = " ".join(_TAG_RE.sub("", found.group("title")).split())
        level = int(found.group("level")) if "level" in fmt.section.groupindex else 1
        if title:
            headings.append(_Heading(index, index + 1, level, title))
    return headings


_TAG_RE = re.compile(r"<[^>]*>")


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """Drop blank lines at both ends of the half-open range [start, end)."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start, end


def _spans(lines: list[str], headings: list[_Heading], file_name: str) -> list[_Span]:
    """One span for the preamble (if not blank) and one per heading."""
    spans = []
    first = headings[0].line if headings else len(lines)
    start, end = _trim(lines, 0, first)
    if start < end:
        spans.append(_Span("", file_name, start, end, 0, False))
    path: list[_Heading] = []
    for position, heading in enumerate(headings):
        path = [outer for outer in path if outer.level < heading.level] + [heading]
        stop = headings[position + 1].line if position + 1 < len(headings) else len(lines)
        start, end = _trim(lines, heading.line, stop)
        heading_only = not any(line.strip() for line in lines[heading.body : end])
        qualified = QUALIFIER.join([file_name, *(outer.title for outer in path)])
        spans.append(_Span(heading.title, qualified, start, end, heading.level, heading_only))
    return spans


def _merge_heading_only(spans: list[_Span]) -> list[_Span]:
    """Fold a bare heading into the deeper section right after it, keeping its context."""
    merged: list[_Span] = []
    carry_start: int | None = None
    for span, following in zip(spans, [*spans[1:], None], strict=False):
        start = span.start if carry_start is None else carry_start
        if span.heading_only and following is not None and following.level > span.level:
            carry_start = start
            continue
        carry_start = None
        merged.append(_Span(span.title, span.qualified, start, span.end, span.level, False))
    return merged


def _greedy_stop(lines: list[str], start: int, end: int, max_chars: int) -> int:
    """End of the longest run of lines from `start` that fits (always at least one line)."""
    size, stop = len(lines[start]), start + 1
    while stop < end and size + 1 + len(lines[stop]) <= max_chars:
        size += 1 + len(lines[stop])
        stop += 1
    return stop


def _preferred_cut(lines: list[str], start: int, stop: int, max_chars: int) -> int:
    """Cut after the chunk's last blank line if that keeps the chunk reasonably full."""
    for candidate in range(stop - 1, start, -1):
        if not lines[candidate].strip():
            kept = len("\n".join(lines[start : candidate + 1]))
            return candidate + 1 if kept >= max_chars * MIN_BLANK_CUT_SHARE else stop
    return stop


def _chunk_ranges(lines: list[str], start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Contiguous half-open ranges tiling [start, end); only a lone line may exceed max_chars."""
    ranges = []
    while start < end:
        stop = _greedy_stop(lines, start, end, max_chars)
        if stop < end:
            stop = _preferred_cut(lines, start, stop, max_chars)
        ranges.append((start, stop))
        start = stop
    return ranges


def _part_name(name: str, part: int) -> str:
    return name if part == 1 else f"{name} (part {part})".strip()


def _split_to_size(lines: list[str], span: _Span, max_chars: int) -> list[DocSection]:
    pieces: list[tuple[str, int, int]] = []
    for start, stop in _chunk_ranges(lines, span.start, span.end, max_chars):
        text = "\n".join(lines[start:stop])
        parts = [text[at : at + max_chars] for at in range(0, len(text), max_chars)]
        pieces.extend((part, start + 1, stop) for part in parts)
    return [
        DocSection(_part_name(span.title, n), _part_name(span.qualified, n), text, first, last)
        for n, (text, first, last) in enumerate(pieces, start=1)
        if text.strip()
    ]


def split_sections(text: str, language: str, file_name: str, max_chars: int = 2000) -> list[DocSection]:
    """Heading sections of a markdown/rst/plain-text document or of a text format with a
    section pattern, each at most `max_chars`.

    Only a single source line longer than `max_chars` is hard-split; its parts share
    the same line number.
    """
    lines = re.sub(r"\r\n?", "\n", text).split("\n")
    fmt = section_format(language)
    if fmt is not None:
        headings = _format_headings(lines, fmt)
    else:
        headings = HEADING_FINDERS.get(language, lambda _lines: [])(lines)
    result = []
    for span in _merge_heading_only(_spans(lines, headings, file_name)):
        result.extend(_split_to_size(lines, span, max_chars))
    return result
