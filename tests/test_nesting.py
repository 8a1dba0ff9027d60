"""Deeply nested definitions cost linear space in every language (real tree-sitter grammars).

Each row stores its definition's code, so N definitions nested in one another used to store N
rows of up to the whole file each. Rows now stop MAX_NESTING definitions deep: every byte of a
file is stored in at most MAX_NESTING + 1 rows, and qualified names have at most that many parts.
"""

from __future__ import annotations

import pytest

from codeqa.parsing.treesitter import MAX_NESTING, MAX_NAME_CHARS, parse_source

pytestmark = pytest.mark.unit

LEVELS = 300  # far deeper than MAX_NESTING, small enough to parse in milliseconds


def nested(open_: str, close: str, levels: int = LEVELS, middle: str = "") -> str:
    return "".join(open_.format(i=i) for i in range(levels)) + middle + close * levels


def python(levels: int) -> str:
    return "".join("    " * i + f"def f{i}():\n" for i in range(levels)) + "    " * levels + "return 1\n"


SOURCES = {
    "python": python(LEVELS),
    "javascript": nested("function f{i}() {{\n", "}\n", middle="return 1;\n"),
    "typescript": nested("function f{i}(): number {{\n", "}\n", middle="return 1;\n"),
    "java": nested("class C{i} {{\n", "}\n"),
    "rust": nested("fn f{i}() {{\n", "}\n"),
    "c": nested("struct s{i} {{\n", "} f;\n", middle="int x;\n") + ";\n",
    "cpp": nested("class C{i} {{\n", "};\n"),
    # Go has no named nested functions: types declared in nested function literals are as deep as it gets.
    "go": "package p\n\nfunc f() {\n" + nested("\tg{i} := func() {{\n\t\ttype T{i} struct{{}}\n", "\t}\n") + "}\n",
}


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_nested_definitions_store_each_byte_a_bounded_number_of_times(language):
    source = SOURCES[language]
    parsed = parse_source(source, language, f"deep.{language}")
    assert parsed.definitions
    stored = sum(len(d.code) for d in parsed.definitions)
    assert stored <= (MAX_NESTING + 1) * len(source)
    assert max(d.qualified_name.count(".") + 1 for d in parsed.definitions) <= MAX_NESTING + 1
    if language != "go":  # Go's definitions here are siblings, each inside one function
        assert len(parsed.definitions) == MAX_NESTING + 1 and parsed.too_deep == LEVELS - MAX_NESTING - 1


def test_rows_stop_at_the_cap_and_count_the_rest():
    parsed = parse_source(nested("function f{i}() {{\n", "}\n", levels=MAX_NESTING + 3), "javascript", "a.js")
    assert [d.qualified_name for d in parsed.definitions][-1] == ".".join(f"f{i}" for i in range(MAX_NESTING + 1))
    assert parsed.too_deep == 2
    shallow = parse_source(nested("function f{i}() {{\n", "}\n", levels=MAX_NESTING + 1), "javascript", "a.js")
    assert len(shallow.definitions) == MAX_NESTING + 1 and shallow.too_deep == 0


def test_a_generated_giant_name_is_cut():
    parsed = parse_source(f"def {'x' * 5000}():\n    return 1\n", "python", "g.py")
    assert len(parsed.definitions[0].name) == MAX_NAME_CHARS


def test_module_code_nested_thousands_deep_is_chunked_not_a_crash():
    """Module-level code is opened level by level to find statement boundaries; a generated
    literal nested 3,000 deep (fmt has such test data) stops at MAX_DEPTH instead of recursing
    past Python's limit and aborting the index run."""
    source = "var data = " + "[" * 3000 + "1" + "]" * 3000 + ";\nfunction after() { return 2; }\n"
    parsed = parse_source(source, "javascript", "data.js")
    assert [d.name for d in parsed.definitions] == ["after"]
    assert parsed.module_code and parsed.module_code[0].start_line == 1
