"""Reading @-commands out of chat messages, and what autocomplete should complete (pure, fast)."""

from __future__ import annotations

import pytest

from codeqa.chat.chat_commands import (COMMANDS, Command, CommandError, CompletionTarget, Location, completion_target,
                                       complete_commands, parse_location, parse_message, quote_argument)

pytestmark = pytest.mark.unit


def test_commands_combine_with_a_question_in_any_order():
    parsed = parse_message("@definition Cart.add @references Cart.add how do they interact? @codebase")
    assert parsed.commands == (Command("definition", "Cart.add"), Command("references", "Cart.add"),
                               Command("codebase", ""))
    assert parsed.question == "how do they interact?"
    assert parsed.codebase and [c.name for c in parsed.lookups] == ["definition", "references"]
    assert parsed.problems == ()


def test_arguments_lose_quotes_and_trailing_punctuation_and_duplicates_go():
    parsed = parse_message("What does `@definition make_demo_cart`, or @definition `make_demo_cart`? do")
    assert parsed.commands == (Command("definition", "make_demo_cart"),)
    parsed = parse_message("explain @file shop/models.py:10-20.")
    assert parsed.commands[0].location == Location("shop/models.py", 10, 20)
    assert parsed.question == "explain"


@pytest.mark.parametrize("text, location", [
    ("shop/models.py", Location("shop/models.py")),
    ("./shop/models.py:7", Location("shop/models.py", 7, 7)),
    ("c/ledger.c:3-9", Location("c/ledger.c", 3, 9)),
])
def test_locations(text, location):
    assert parse_location(text) == location


@pytest.mark.parametrize("text", ["a.py:0", "a.py:9-3"])
def test_bad_ranges_are_refused(text):
    with pytest.raises(CommandError):
        parse_location(text)


def test_missing_or_malformed_arguments_become_problems_not_commands():
    parsed = parse_message("@definition\n@symbols-at shop/models.py and @file")
    assert parsed.commands == ()
    assert any("@definition needs a name" in p for p in parsed.problems)
    assert any("needs a line" in p and "@symbols-at PATH:LINE" in p for p in parsed.problems)
    assert any("@file needs a path" in p for p in parsed.problems)


def test_a_command_typo_is_pointed_out_but_other_at_words_are_text():
    parsed = parse_message("@defintion Cart with @property and mail me at a@b.com")
    assert parsed.problems == ("Unknown command @defintion: did you mean @definition?",)
    assert parsed.commands == ()
    assert "@property" in parsed.question and "a@b.com" in parsed.question


def test_command_names_are_case_insensitive_and_labelled():
    parsed = parse_message("@CodeBase where? @Symbols-At go/main.go:12")
    assert [c.label for c in parsed.commands] == ["@codebase", "@symbols-at go/main.go:12"]


@pytest.mark.parametrize("text, kind, prefix, start", [
    ("hello @", "command", "", 6),
    ("@def", "command", "def", 0),
    ("see @definition Ca", "symbol", "Ca", 16),
    ("@references ", "symbol", "", 12),
    ("@file shop/mo", "path", "shop/mo", 6),
    ("@symbols-at go/", "path", "go/", 12),
])
def test_completion_targets(text, kind, prefix, start):
    target = completion_target(text)
    assert (target.kind, target.prefix, target.start) == (kind, prefix, start)
    assert text[target.start:] == ("@" if kind == "command" else "") + prefix  # what a pick replaces


@pytest.mark.parametrize("text", ["plain text", "@file shop/models.py:1", "@codebase how", "a@b", "@definition Cart "])
def test_nothing_to_complete(text):
    assert completion_target(text) is None


def test_command_completion_lists_every_command_for_a_bare_at():
    assert [c["value"] for c in complete_commands("")] == [f"@{name} " for name in COMMANDS]
    assert [c["label"] for c in complete_commands("ref")] == ["@references NAME"]
    assert [c["value"] for c in complete_commands("at")] == ["@symbols-at "]


@pytest.mark.parametrize("message, argument", [
    ("@file .eslintrc.js what does it enable?", ".eslintrc.js"),  # a dotfile keeps its dot
    ("see @file ./.github/ci.yml:3.", "./.github/ci.yml:3"),
    ('@file "with space.py" what is it?', "with space.py"),
    ("@file 'docs/user guide.md':2-4 explain", "docs/user guide.md:2-4"),
    ("@definition `Cart.add`?", "Cart.add"),
    ("""@file '"quoted".py'""", '"quoted".py'),
])
def test_dotfiles_and_quoted_arguments_arrive_whole(message, argument):
    parsed = parse_message(message)
    assert parsed.commands[0].argument == argument and parsed.problems == ()


def test_a_quoted_path_reads_back_as_its_location():
    parsed = parse_message('@file "with space.py":3-4 why?')
    assert parsed.commands[0].location == Location("with space.py", 3, 4)
    assert parsed.question == "why?"


@pytest.mark.parametrize("path", ["shop/models.py", ".eslintrc.js", "with space.py", "ends.", "(odd)", 'say "hi".py'])
def test_autocomplete_values_parse_back_to_the_same_path(path):
    assert parse_message(f"@file {quote_argument(path)} why?").commands == (Command("file", path),)


@pytest.mark.parametrize("text, kind, prefix, start", [
    ("@file .esl", "path", ".esl", 6),
    ('@file "with sp', "path", "with sp", 6),  # replaced from the quote: the value comes back quoted
    ("@definition 'Car", "symbol", "Car", 12),
])
def test_autocomplete_reads_dotfiles_and_an_open_quote(text, kind, prefix, start):
    assert completion_target(text) == CompletionTarget(kind, prefix, start)
    assert completion_target('@file "with space.py" ') is None
