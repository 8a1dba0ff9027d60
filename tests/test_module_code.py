"""Module-level code: chunks at statement boundaries, within the cap, never across a definition."""

from __future__ import annotations

import pytest

from codeqa.parsing.module_code import CHUNK_CHARS, MAX_CHUNKS, MIN_CHUNK_CHARS, CodeChunk, chunks_with_rows, file_head
from codeqa.parsing.treesitter import parse_source

pytestmark = pytest.mark.unit


def lines_of(chunk: CodeChunk, source: str) -> str:
    return "\n".join(source.split("\n")[chunk.start_line - 1:chunk.end_line])


def test_a_long_body_is_cut_between_statements_and_never_across_a_definition() -> None:
    head = "".join(f"setting_{i} = compute_setting({i}, 'a value long enough to matter')\n" for i in range(40))
    tail = "".join(f"registry.register('handler_{i}', handler_{i})\n" for i in range(40))
    source = head + "\n\ndef helper():\n    return 1\n\n\n" + tail
    chunks = parse_source(source, "python").module_code
    helper_line = source.split("\n").index("def helper():") + 1
    assert len(chunks) >= 4
    for chunk in chunks:
        assert chunk.code == lines_of(chunk, source)  # contiguous whole lines, range exact
        assert len(chunk.code) <= CHUNK_CHARS
        assert not chunk.start_line <= helper_line <= chunk.end_line
        first, last = chunk.code.split("\n")[0], chunk.code.split("\n")[-1]
        assert first.startswith(("setting_", "registry.")) and last.endswith(")")
    covered = {line for c in chunks for line in range(c.start_line, c.end_line + 1)}
    assert covered == set(range(1, 41)) | set(range(helper_line + 4, helper_line + 44))


def test_a_statement_too_big_for_one_chunk_is_opened_at_its_own_boundaries() -> None:
    entries = "".join(f"    'key_{i}': 'a translated text for entry number {i}',\n" for i in range(80))
    source = f"MESSAGES_VERSION = 2\nmessages = {{\n{entries}}}\n"
    chunks = parse_source(source, "python").module_code
    assert len(chunks) >= 3
    assert chunks[0].code.startswith("messages = {") and chunks[-1].code.endswith("}")
    for before, after in zip(chunks, chunks[1:]):
        assert after.start_line == before.end_line + 1  # pair by pair, nothing lost in between
        assert after.code.lstrip().startswith("'key_")


def test_cuts_prefer_the_boundary_between_top_level_statements() -> None:
    first = "".join(f"    'first_{i}': 'a value that takes up a little room',\n" for i in range(20))
    second = "".join(f"    'second_{i}': 'a value that takes up a little room',\n" for i in range(20))
    source = f"first = {{\n{first}}}\nsecond = {{\n{second}}}\n"
    chunks = parse_source(source, "python").module_code
    assert [c.code.split("\n")[0] for c in chunks] == ["first = {", "second = {"]


def test_a_module_of_any_size_gets_at_most_max_chunks() -> None:
    source = "".join(f"value_{i} = transform(value_{i - 1}, 'step number {i} of the pipeline')\n"
                     for i in range(3000))
    chunks = parse_source(source, "python").module_code
    assert len(chunks) <= MAX_CHUNKS
    assert (chunks[0].start_line, chunks[-1].end_line) == (1, 3000)
    assert all(b.start_line == a.end_line + 1 for a, b in zip(chunks, chunks[1:]))


def test_comments_come_along_only_inside_code_or_directly_above_it() -> None:
    source = ("def f():\n    pass\n\n# Loose note about nothing.\n\n# Directly above the loop.\n"
              "for name in NAMES:\n    # inside\n    print(name)\n\n# Trailing remark.\n\ndef g():\n    pass\n")
    chunks = parse_source(source, "python").module_code
    assert [(c.start_line, c.end_line) for c in chunks] == [(6, 9)]


def test_which_chunks_get_rows_and_what_the_file_row_keeps() -> None:
    small = [CodeChunk(1, 3, "import os\n\nDEBUG = os.environ.get('DEBUG')")]
    assert chunks_with_rows(small) == [] and file_head(small) == small[0].code
    tiny = CodeChunk(100, 100, "export default locale")
    big = [CodeChunk(1, 40, "x" * CHUNK_CHARS), tiny, CodeChunk(120, 150, "y" * 900)]
    assert len(tiny.code) < MIN_CHUNK_CHARS
    assert chunks_with_rows(big) == [big[0], big[2]]
    assert file_head(big) == "x" * CHUNK_CHARS
    many = [CodeChunk(10 * i + 1, 10 * i + 5, f"call_{i}(" + "a" * (100 + i) + ")") for i in range(MAX_CHUNKS + 5)]
    kept = chunks_with_rows(many)
    assert len(kept) == MAX_CHUNKS and kept == sorted(kept, key=lambda c: c.start_line)
    assert many[0] not in kept and many[-1] in kept  # the largest are kept
