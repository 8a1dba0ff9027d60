"""doc_sections: exact titles, qualified names and line ranges per document kind."""

from __future__ import annotations

import pytest

from codeqa.parsing.doc_sections import DocSection, split_sections

pytestmark = pytest.mark.unit

MARKDOWN = """\
Intro paragraph before any heading.

# Project

Some words.

```bash
# not a heading
echo hi
```

## Install

### From source

Run make.

Usage
-----

Call it.

## Empty

# Appendix
Last line.
"""


def _lines(text: str, section: DocSection) -> str:
    return "\n".join(text.split("\n")[section.start_line - 1:section.end_line])


def _outline(sections: list[DocSection]) -> list[tuple[str, str, int, int]]:
    return [(s.title, s.qualified_name, s.start_line, s.end_line) for s in sections]


def test_markdown_headings_nesting_and_fenced_code() -> None:
    sections = split_sections(MARKDOWN, "markdown", "README.md")
    assert _outline(sections) == [
        ("", "README.md", 1, 1),
        ("Project", "README.md > Project", 3, 10),
        ("From source", "README.md > Project > Install > From source", 12, 16),
        ("Usage", "README.md > Project > Usage", 18, 21),
        ("Empty", "README.md > Project > Empty", 23, 23),
        ("Appendix", "README.md > Appendix", 25, 26),
    ]
    for section in sections:
        assert section.text == _lines(MARKDOWN, section)
    assert "# not a heading" in sections[1].text


def test_setext_level_one_and_crlf() -> None:
    text = "Title\r\n=====\r\n\r\nBody\r\n\r\nSub\r\n---\r\nMore\r\n"
    sections = split_sections(text, "markdown", "doc.md")
    assert _outline(sections) == [
        ("Title", "doc.md > Title", 1, 4),
        ("Sub", "doc.md > Title > Sub", 6, 8),
    ]
    assert sections[1].text == "Sub\n---\nMore"


def test_front_matter_is_preamble_not_a_heading() -> None:
    text = "---\ntitle: Home\nlayout: page\n---\n\n# Welcome\nHi\n"
    sections = split_sections(text, "markdown", "index.md")
    assert _outline(sections) == [
        ("", "index.md", 1, 4),
        ("Welcome", "index.md > Welcome", 6, 7),
    ]


RST = """\
=========
 Library
=========

Intro.

Usage
=====

Use it.

Details
-------

Fine print.

::

    literal
    -------

Other
=====

End.
"""


def test_rst_titles_levels_follow_first_appearance() -> None:
    sections = split_sections(RST, "rst", "guide.rst")
    assert _outline(sections) == [
        ("Library", "guide.rst > Library", 1, 5),
        ("Usage", "guide.rst > Library > Usage", 7, 10),
        ("Details", "guide.rst > Library > Usage > Details", 12, 20),
        ("Other", "guide.rst > Library > Other", 22, 25),
    ]
    for section in sections:
        assert section.text == _lines(RST, section)


def test_plain_text_is_one_section_named_after_the_file() -> None:
    text = "\n\nFirst paragraph.\n\nSecond paragraph.\n\n"
    sections = split_sections(text, "text", "NOTES")
    assert _outline(sections) == [("", "NOTES", 3, 5)]


def test_whitespace_only_document_gives_nothing() -> None:
    assert split_sections(" \n\n\t\n", "markdown", "x.md") == []
    assert split_sections("", "text", "x.txt") == []


def _paragraphs(count: int) -> str:
    return "\n\n".join(f"Paragraph {n}: " + "word " * 30 for n in range(count))


def test_size_cap_cuts_at_blank_lines_with_exact_contiguous_ranges() -> None:
    text = "# Big\n\n" + _paragraphs(20) + "\n"
    sections = split_sections(text, "markdown", "big.md", max_chars=500)
    assert len(sections) > 3
    assert sections[0].title == "Big"
    assert [s.title for s in sections[1:3]] == ["Big (part 2)", "Big (part 3)"]
    assert sections[1].qualified_name == "big.md > Big (part 2)"
    assert sections[0].start_line == 1
    assert sections[-1].end_line == len(text.rstrip("\n").split("\n"))
    for previous, following in zip(sections, sections[1:]):
        assert following.start_line == previous.end_line + 1
    for section in sections:
        assert len(section.text) <= 500
        assert section.text == _lines(text, section)
        assert section.text.startswith(("# Big", "Paragraph"))


def test_size_cap_hard_splits_only_a_single_overlong_line() -> None:
    long_line = "x" * 250
    text = "# T\nshort\n" + long_line + "\nafter\n"
    sections = split_sections(text, "markdown", "t.md", max_chars=100)
    assert _outline(sections) == [
        ("T", "t.md > T", 1, 2),
        ("T (part 2)", "t.md > T (part 2)", 3, 3),
        ("T (part 3)", "t.md > T (part 3)", 3, 3),
        ("T (part 4)", "t.md > T (part 4)", 3, 3),
        ("T (part 5)", "t.md > T (part 5)", 4, 4),
    ]
    assert "".join(s.text for s in sections[1:4]) == long_line
    assert all(len(s.text) <= 100 for s in sections)


def test_plain_text_chunks_are_grouped_paragraphs() -> None:
    text = _paragraphs(10)
    sections = split_sections(text, "text", "notes.txt", max_chars=400)
    assert len(sections) > 1
    assert sections[1].title == "(part 2)"
    assert sections[1].qualified_name == "notes.txt (part 2)"
    for section in sections:
        assert section.text.startswith("Paragraph")
        assert section.text == _lines(text, section)
