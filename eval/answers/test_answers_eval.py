"""The answer eval's own scoring and scheduling (run: .venv/bin/pytest eval/answers/test_answers_eval.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from . import run as answers

pytestmark = pytest.mark.unit


def test_a_line_said_three_times_is_a_loop_twice_is_not():
    line = "The session is opened by open_session on each request.\n"
    assert not answers.loops("Intro.\n" + line * 2)
    assert answers.loops("Intro.\n" + line * 3)
    assert answers.loops(" ".join(["a b c d e f g h i j k l"] * 3))  # a 12-word run, three times, on one line


def test_an_answer_repeating_eight_words_of_the_instructions_copies_them():
    instructions = "Answer from the numbered sources below only and cite them by number."
    assert answers.copies("Well: Answer from the numbered sources below only and cite them.", instructions)
    assert not answers.copies("open_session loads the cookie [1].", instructions)


def test_a_sample_takes_every_kind_in_turn():
    picked = answers.load_questions(8)
    assert [q["kind"] for q in picked] == ["how", "where", "bug", "doc"] * 2
    assert len(answers.load_questions(None)) == len(answers.QUESTIONS.read_text().splitlines())


def test_other_items_are_spread_among_the_questions():
    questions = [{"id": f"q{n}"} for n in range(8)]
    merged = answers.interleave(questions, [{"id": "r1"}, {"id": "r2"}])
    assert [q["id"] for q in merged if q["id"].startswith("q")] == [q["id"] for q in questions]
    places = [n for n, q in enumerate(merged) if q["id"].startswith("r")]
    assert 0 < places[0] < places[1] < len(merged) - 1


def test_two_runs_take_turns_one_step_each(tmp_path: Path):
    baton = tmp_path / "turns"
    baton.write_text("0")
    order: list[tuple[str, int]] = []

    def run(name: str, me: int) -> None:
        turns = answers.Turns(baton, me, 2)
        for step in range(3):
            turns.wait(step)
            order.append((name, step))
            turns.done(step)

    after = threading.Thread(target=run, args=("after", 1))
    after.start()  # started first, it still waits for the before run's first step
    run("before", 0)
    after.join(timeout=10)
    assert order == [(name, step) for step in range(3) for name in ("before", "after")]
