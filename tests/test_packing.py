"""Packing spans into a token budget by line usefulness (pure, fast)."""

from __future__ import annotations

import pytest

from conftest import packed_lines
from codeqa.chat.packing import GAP, BODY, Definition, FileText, Source, Span, estimate_tokens, numbered_sources, pack

pytestmark = pytest.mark.unit


def make_module(methods: int = 6, body: int = 6) -> tuple[FileText, list[int], list[int]]:
    """A class with `methods` methods of `body` lines each, then a function; returns
    (file, signature lines, body lines)."""
    lines = ["import os", "", "class Store(Base):", '    """Keeps things."""', ""]
    definitions, signatures, bodies = [], [3], []
    class_start = 3
    for m in range(methods):
        start = len(lines) + 1
        lines.append(f"    def method_{m}(self, value: int) -> int:")
        signatures.append(start)
        for b in range(body):
            lines.append(f"        total_{b} = value * {b} + {m}  # step {b}")
            bodies.append(len(lines))
        definitions.append(Definition(start, len(lines), start, start))
        lines.append("")
    definitions.append(Definition(class_start, len(lines) - 1, class_start, class_start))
    start = len(lines) + 1
    lines += ["def helper(", "    x,", "):", "    return x + 1"]
    definitions.append(Definition(start, start + 3, start, start + 2))
    signatures += [start, start + 1, start + 2]
    bodies.append(start + 3)
    return FileText("pkg/store.py", "python", lines, definitions), signatures, bodies


def test_everything_fits_in_a_large_budget_in_order_without_gaps():
    module, _, _ = make_module()
    packed = pack([Span(module.path, 1, len(module.lines), "@file pkg/store.py", 0)], {module.path: module}, 10_000)
    assert packed_lines(packed.text)[module.path] == list(enumerate(module.lines, 1))
    assert GAP not in packed.text.splitlines() and packed.complete
    assert packed.text.startswith(f"### pkg/store.py (@file pkg/store.py)\n[1] pkg/store.py:1-{len(module.lines)}\n```python\n")
    assert packed.sources == [Source(1, module.path, 1, len(module.lines))]


def test_budget_sweep_keeps_signatures_before_bodies_whole_lines_once():
    module, signatures, bodies = make_module(methods=8, body=10)
    span = Span(module.path, 1, len(module.lines), "@file pkg/store.py", 0)
    previous = -1
    for budget in range(0, 2100, 7):
        packed = pack([span], {module.path: module}, budget)
        assert packed.tokens <= budget
        shown = packed_lines(packed.text).get(module.path, [])
        numbers = [n for n, _ in shown]
        assert numbers == sorted(set(numbers)), "a line shown twice or out of order"
        assert all(module.lines[n - 1] == text for n, text in shown), "a line was cut"
        if set(numbers) & set(bodies):
            assert set(signatures) <= set(numbers), f"budget {budget}: a body line before every signature"
        structure = len(set(numbers) & set(signatures))
        assert structure >= previous, "a larger budget showed fewer signatures"
        previous = structure
    assert numbers == list(range(1, len(module.lines) + 1))


def test_a_small_budget_gives_a_skeleton():
    module, signatures, bodies = make_module(methods=8, body=10)
    packed = pack([Span(module.path, 1, len(module.lines), "@file pkg/store.py", 0)], {module.path: module}, 185)
    numbers = [n for n, _ in packed_lines(packed.text)[module.path]]
    assert set(signatures) <= set(numbers) and not set(numbers) & set(bodies)
    rendered = packed.text.splitlines()
    method = rendered.index("6|    def method_0(self, value: int) -> int:")
    assert rendered[method + 1] == GAP  # class → method signature → ...
    assert rendered.index("3|class Store(Base):") < method


def test_matched_lines_come_first_then_their_neighbours():
    module, signatures, _ = make_module(methods=8, body=10)
    use = 30
    span = Span(module.path, 1, len(module.lines), "@references total_3", 0, frozenset({use}))
    packed = pack([span], {module.path: module}, 48)  # the use, under its file's and source's headers
    assert [n for n, _ in packed_lines(packed.text)[module.path]] == [use]
    roomy = pack([span], {module.path: module}, 330)
    numbers = {n for n, _ in packed_lines(roomy.text)[module.path]}
    assert set(signatures) | {use - 2, use - 1, use + 1, use + 2} <= numbers


def test_overlapping_spans_merge_and_keep_both_labels():
    module, _, _ = make_module()
    spans = [Span(module.path, 3, 20, "@definition Store", 0), Span(module.path, 6, 12, "@references method_0", 1),
             Span(module.path, 6, 12, "@codebase", 2)]
    packed = pack(spans, {module.path: module}, 5_000)
    assert packed.text.count("### pkg/store.py") == 1
    assert "(@definition Store, @references method_0, @codebase)" in packed.text
    numbers = [n for n, _ in packed_lines(packed.text)[module.path]]
    assert numbers == list(range(3, 21))
    assert (packed.shown(module.path, 3, 20), packed.shown(module.path, 1, 2), packed.shown("elsewhere.py", 1, 9)) == (
        18, 0, 0)


def test_better_ranked_spans_get_their_bodies_first():
    first, second = make_module(), make_module()
    other = FileText("pkg/other.py", "python", first[0].lines, first[0].definitions)
    files = {first[0].path: first[0], other.path: other}
    spans = [Span(other.path, 1, len(other.lines), "@codebase", 1), Span(first[0].path, 1, len(first[0].lines), "@file", 0)]
    packed = pack(spans, files, 600)
    shown = packed_lines(packed.text)
    assert list(shown) == ["pkg/store.py", "pkg/other.py"]
    assert set(first[2]) & {n for n, _ in shown["pkg/store.py"]}
    assert not set(first[2]) & {n for n, _ in shown["pkg/other.py"]}
    del second


def test_code_is_numbered_before_a_better_ranked_docs_page_which_keeps_its_lines_by_rank():
    code, _, _ = make_module()
    guide = FileText("docs/guide.rst", "rst", [f"Line {n} of the guide about stores." for n in range(1, 41)], [])
    files = {code.path: code, guide.path: guide}
    spans = [Span(guide.path, 1, 40, "@codebase", 0), Span(code.path, 1, len(code.lines), "@codebase", 1)]
    packed = pack(spans, files, 250)
    assert [s.path for s in numbered_sources(packed.text).values()] == ["pkg/store.py", "docs/guide.rst"]
    assert list(packed_lines(packed.text)) == ["pkg/store.py", "docs/guide.rst"]
    # Only the order moves: the same page under a name that is not prose keeps its place and lines.
    config = FileText("docs/guide.cfg", "ini", guide.lines, [])
    as_config = pack([Span(config.path, 1, 40, "@codebase", 0), spans[1]], {code.path: code, config.path: config}, 250)
    assert list(packed_lines(as_config.text)) == ["docs/guide.cfg", "pkg/store.py"]
    assert packed_lines(as_config.text)["docs/guide.cfg"] == packed_lines(packed.text)["docs/guide.rst"]
    assert packed_lines(as_config.text)["pkg/store.py"] == packed_lines(packed.text)["pkg/store.py"]


def test_a_files_best_ranked_source_is_numbered_first():
    code, _, _ = make_module()
    helper = code.definitions[-1]
    spans = [Span(code.path, 3, 12, "@codebase", 2), Span(code.path, helper.start, helper.end, "@codebase", 1)]
    sources = numbered_sources(pack(spans, {code.path: code}, 2000).text)
    assert (sources[1].start, sources[2].start) == (helper.start, 3)


def test_notes_come_first_and_are_never_cut():
    module, _, _ = make_module()
    notes = ["@definition Nope: no such symbol; did you mean Store?", "x" * 200]
    packed = pack([Span(module.path, 1, 5, "@file", 0)], {module.path: module}, 40, notes)
    assert packed.text.startswith("Notes:\n- @definition Nope") and packed.notes == notes[:1]
    assert "xxx" not in packed.text and packed.tokens <= 40


@pytest.mark.parametrize("budget", [0, 1, 5])
def test_tiny_budgets_give_little_or_nothing_but_never_too_much(budget):
    module, _, _ = make_module()
    packed = pack([Span(module.path, 1, len(module.lines), "@file", 0)], {module.path: module}, budget)
    assert estimate_tokens(packed.text) <= budget


def test_spans_of_unknown_files_and_out_of_range_lines_are_ignored():
    module, _, _ = make_module(methods=1, body=1)
    spans = [Span("gone.py", 1, 10, "@file", 0), Span(module.path, len(module.lines) - 1, 10_000, "@file", 0)]
    packed = pack(spans, {module.path: module}, 1000)
    assert [n for n, _ in packed_lines(packed.text)[module.path]] == [len(module.lines) - 1, len(module.lines)]
    assert BODY == 3
