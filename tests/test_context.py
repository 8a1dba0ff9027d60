"""Context assembly and the chat's history window, on hand-made hits: pure functions."""

from __future__ import annotations

import pytest

from answer import history_window, mentions_codebase
from context import CONTEXT_REFERENCES, build_context, estimate_tokens
from retrieval import Hit

pytestmark = pytest.mark.unit


def hit(name: str, lines: int, references: int = 0) -> Hit:
    code = "\n".join(f"    line_{i} = compute_{name}({i})" for i in range(lines))
    uses = [{"file_path": f"use_{i}.py", "line": i + 1, "column": 1, "text": f"{name}()"} for i in range(references)]
    return Hit(id=name, table="methods", kind="function", name=name, qualified_name=f"mod.{name}",
               file_path=f"src/{name}.py", start_line=10, end_line=10 + lines - 1, language="python",
               signature=f"def {name}():", doc="", code=code, parent=None, references=uses,
               reference_count=references, score=1.0)


def test_everything_fits_a_large_budget_whole_and_in_order() -> None:
    hits = [hit("a", 5), hit("b", 3)]
    context = build_context(hits, 10_000)
    assert [p.hit.name for p in context.parts] == ["a", "b"] and context.omitted == []
    assert not any(p.trimmed for p in context.parts)
    assert context.text.startswith("### src/a.py:10-14 (function mod.a)\n```python\n")
    assert context.tokens == estimate_tokens(context.text) <= 10_000


@pytest.mark.parametrize("budget", [40, 80, 120, 200, 400])
def test_a_small_budget_is_never_exceeded_and_lines_are_never_cut(budget: int) -> None:
    hits = [hit("big", 60), hit("small", 2), hit("mid", 12)]
    context = build_context(hits, budget)
    assert estimate_tokens(context.text) <= budget
    assert len(context.parts) + len(context.omitted) == len(hits)
    for part in context.parts:
        body = part.text.split("```python\n", 1)[1].split("\n```", 1)[0].splitlines()
        shown = [line for line in body if not line.startswith("... (lines ")]
        assert shown == part.hit.code.splitlines()[:len(shown)]
        assert part.trimmed == (len(shown) < len(part.hit.code.splitlines()))
    flags = [p.trimmed for p in context.parts]
    assert flags == sorted(flags), "whole snippets come before trimmed ones"


def test_trimmed_snippets_say_what_they_leave_out() -> None:
    context = build_context([hit("small", 2), hit("big", 60)], 220)
    trimmed = [p for p in context.parts if p.trimmed]
    assert [p.hit.name for p in trimmed] == ["big"]
    shown = trimmed[0].text.count("line_")
    assert f"... (lines {10 + shown}-69 not shown)" in trimmed[0].text


def test_references_are_listed_up_to_the_limit() -> None:
    text = build_context([hit("used", 2, references=CONTEXT_REFERENCES + 3)], 5_000).text
    assert f"Used in ({CONTEXT_REFERENCES} of {CONTEXT_REFERENCES + 3}):" in text
    assert "- use_0.py:1: used()" in text and f"use_{CONTEXT_REFERENCES}.py" not in text


def test_history_window_fits_the_budget() -> None:
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": "x" * 300} for i in range(10)]
    window = history_window(history, 350)
    assert len(window) == 3 and window == [{"role": m["role"], "content": m["content"]} for m in history[-3:]]
    assert history_window(history, 10) == []
    noisy = [{"role": "system", "content": "s"}, {"role": "user", "content": ""}, {"role": "user", "content": "q"}]
    assert history_window(noisy, 100) == [{"role": "user", "content": "q"}]


@pytest.mark.parametrize(("message", "search"), [
    ("@codebase how is X parsed", True), ("how is X parsed? @CodeBase", True), ("@codebases", False),
    ("no tag", False),
])
def test_codebase_tag(message: str, search: bool) -> None:
    assert mentions_codebase(message) is search
