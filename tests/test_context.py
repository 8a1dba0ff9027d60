"""The chat's history window and when a message brings new code: pure functions.

Packing itself is tested in test_packing.py (pure) and test_commands.py (on a real index)."""

from __future__ import annotations

import pytest

from codeqa.chat.answer import history_window
from codeqa.chat.chat_commands import parse_message

pytestmark = pytest.mark.unit


def test_history_window_fits_the_budget() -> None:
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": "x" * 300} for i in range(10)]
    window = history_window(history, 350)
    assert len(window) == 3 and window == [{"role": m["role"], "content": m["content"]} for m in history[-3:]]
    assert history_window(history, 10) == []
    noisy = [{"role": "system", "content": "s"}, {"role": "user", "content": ""}, {"role": "user", "content": "q"}]
    assert history_window(noisy, 100) == [{"role": "user", "content": "q"}]


@pytest.mark.parametrize(("message", "search", "fresh"), [
    ("@codebase how is X parsed", True, True), ("how is X parsed? @CodeBase", True, True),
    ("@codebases", False, False), ("no tag", False, False), ("@file a.py what is it?", False, True),
])
def test_codebase_tag_and_which_messages_bring_new_code(message: str, search: bool, fresh: bool) -> None:
    parsed = parse_message(message)
    assert parsed.codebase is search and bool(parsed.commands) is fresh
