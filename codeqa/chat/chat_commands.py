"""The @-commands of a chat message: what they are, how they are written, how to read them.

    @codebase                      search the repository for the question
    @definition NAME               the definition(s) of a symbol (name or qualified name)
    @references NAME               where a symbol is used
    @file PATH[:LINE | :L1-L2]     an indexed file, or a line / range of it
    @symbols-at PATH:LINE          the symbols used around a line, and their definitions

Any number of commands may stand anywhere in a message; what remains is the question. An
argument holding spaces is quoted: `@file "docs/user guide.md"` (autocomplete quotes such a
path itself, `quote_argument`). This module is pure text handling: resolving a command against
an index happens elsewhere. The same grammar drives autocomplete (`completion_target`), so the
two can never disagree.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from codeqa.core.errors import CodeQAError

# name → (argument placeholder, what it brings); the order is the order autocomplete lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "codebase": ("", "search the repository for your question"),
    "definition": ("NAME", "the definition of a symbol, with its class header"),
    "references": ("NAME", "where a symbol is used, with the enclosing function"),
    "file": ("PATH[:LINE|:L1-L2]", "an indexed file, or lines of it"),
    "symbols-at": ("PATH:LINE", "the symbols used around a line and their definitions"),
}
SYMBOL_COMMANDS = frozenset({"definition", "references"})
PATH_COMMANDS = frozenset({"file", "symbols-at"})

# An @word starts a message or follows whitespace or an opening bracket (not an e-mail address).
_AT_WORD = re.compile(r"(?<![\w@.])@([A-Za-z][\w-]*)")
# A command's argument: a quoted one (any characters but its quote and a newline, then maybe a
# line range), or a bare word.
_ARGUMENT = re.compile(
    r"""[ \t]+(?:(?P<quote>["'`])(?P<quoted>(?:(?!(?P=quote))[^\n])+)(?P=quote)"""
    r"""(?P<lines>:\d+(?:-\d+)?)?|(?P<bare>\S+))"""
)
_OPENING = "('\"`"  # taken off the front of a bare argument: `(@file a.py)`, a stray quote
_TRAILING = ".,;!?)]}'\"`"  # taken off its end: sentence punctuation, closing brackets and quotes
_LOCATION = re.compile(r"^(?P<path>.+?)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?$")
SUGGEST_CUTOFF = 0.75  # how close an unknown @word must be to a command name to be called a typo


class CommandError(CodeQAError, ValueError):
    """A command written wrongly (missing or malformed argument); the message says how to write it."""

    http_status = 400


@dataclass(frozen=True)
class Location:
    """A repo-relative path with an optional 1-based inclusive line range."""

    path: str
    start: int | None = None
    end: int | None = None

    def __str__(self) -> str:
        if self.start is None:
            return self.path
        return f"{self.path}:{self.start}" + (f"-{self.end}" if self.end != self.start else "")


@dataclass(frozen=True)
class Command:
    name: str  # a key of COMMANDS
    argument: str  # as typed, without surrounding quotes or trailing punctuation; "" for @codebase

    @property
    def label(self) -> str:
        """How the sources panel and the context name what this command brought."""
        return f"@{self.name} {self.argument}".rstrip()

    @property
    def location(self) -> Location:
        """The argument of @file / @symbols-at as a location (raises CommandError if malformed)."""
        return parse_location(self.argument, needs_line=self.name == "symbols-at")


@dataclass(frozen=True)
class ParsedMessage:
    text: str
    commands: tuple[Command, ...]  # in the order written, duplicates dropped
    question: str  # the message without its commands
    problems: tuple[str, ...]  # commands that could not be read, each a sentence for the user

    @property
    def codebase(self) -> bool:
        return any(c.name == "codebase" for c in self.commands)

    @property
    def lookups(self) -> tuple[Command, ...]:
        """The commands that name something to bring (everything but @codebase)."""
        return tuple(c for c in self.commands if c.name != "codebase")


def usage(name: str) -> str:
    placeholder = COMMANDS[name][0]
    return f"@{name} {placeholder}".rstrip()


def parse_location(text: str, needs_line: bool = False) -> Location:
    match = _LOCATION.match(text)
    if not match or not match["path"]:
        raise CommandError(f"'{text}' is not a path.")
    start = int(match["start"]) if match["start"] else None
    end = int(match["end"]) if match["end"] else start
    if start is not None and end is not None and (start < 1 or end < start):
        raise CommandError(f"'{text}': lines count from 1 and a range runs forwards (PATH:L1-L2).")
    if needs_line and start is None:
        raise CommandError(f"'{text}' needs a line: PATH:LINE.")
    path = match["path"][2:] if match["path"].startswith("./") else match["path"]
    return Location(path, start, end)


def _argument(found: re.Match[str]) -> str:
    """The argument as meant: a quoted one as is (with its line range), a bare one without the
    brackets, quotes and punctuation around it. The front loses only openers, so a dotfile's
    dot stays (`@file .eslintrc.js`)."""
    if found["quoted"] is not None:
        return found["quoted"] + (found["lines"] or "")
    return found["bare"].rstrip(_TRAILING).lstrip(_OPENING)


def quote_argument(value: str) -> str:
    """`value` written so `parse_message` reads it back whole: quoted when it holds whitespace
    or starts or ends with what a bare argument loses (`"with space.py"`)."""
    if value and not re.search(r"\s", value) and value == value.rstrip(_TRAILING).lstrip(_OPENING):
        return value
    quote = next((q for q in "\"'`" if q not in value), '"')
    return f"{quote}{value}{quote}"


def suggest_command(word: str) -> str | None:
    """The command an unknown @word was probably meant to be."""
    close = difflib.get_close_matches(word.lower(), list(COMMANDS), n=1, cutoff=SUGGEST_CUTOFF)
    return close[0] if close else None


def parse_message(text: str) -> ParsedMessage:
    """Find the commands in a message; everything else is the question."""
    commands: list[Command] = []
    problems: list[str] = []
    cuts: list[tuple[int, int]] = []
    for match in _AT_WORD.finditer(text):
        word = match.group(1)
        name = word.lower()
        if name not in COMMANDS:
            meant = suggest_command(word)
            if meant:
                problems.append(f"Unknown command @{word}: did you mean @{meant}?")
            continue  # any other @word (a decorator, a handle) is part of the question
        end = match.end()
        argument = ""
        if COMMANDS[name][0]:
            found = _ARGUMENT.match(text, end)
            argument = _argument(found) if found else ""
            if found and argument and not argument.startswith("@"):
                end = found.end()
            else:
                problems.append(f"@{name} needs {'a name' if name in SYMBOL_COMMANDS else 'a path'}: {usage(name)}.")
                cuts.append((match.start(), end))
                continue
        command = Command(name, argument)
        if name in PATH_COMMANDS:
            try:
                _ = command.location  # reading the location checks it
            except CommandError as exc:
                problems.append(f"{command.label}: {exc} Write {usage(name)}.")
                cuts.append((match.start(), end))
                continue
        if command not in commands:
            commands.append(command)
        cuts.append((match.start(), end))
    question = text
    for start, end in reversed(cuts):
        question = question[:start] + " " + question[end:]
    question = re.sub(r"[ \t]{2,}", " ", question).strip()
    return ParsedMessage(text, tuple(commands), question, tuple(problems))


# --- Autocomplete ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CompletionTarget:
    """What the end of a half-typed message asks to complete, and from which offset to replace."""

    kind: str  # command | symbol | path
    prefix: str  # what has been typed of it so far
    start: int  # offset in the text where the replacement starts


_TRAILING_COMMAND = re.compile(r"(?<![\w@.])@([\w-]*)$")
# A half-typed argument: an opened quote and what follows it, or a bare word so far.
_TRAILING_ARGUMENT = re.compile(r"""(?<![\w@.])@([A-Za-z][\w-]*)[ \t]+(?:(["'`])((?:(?!\2)[^\n])*)|([^\s"'`]*))$""")


def completion_target(text: str) -> CompletionTarget | None:
    """`...@def` → a command; `@definition Ca` → a symbol; `@file sh` or `@file "my fi` → a path
    (replaced from the quote on: the chosen value comes back quoted when it must be); else None."""
    match = _TRAILING_COMMAND.search(text)
    if match:
        return CompletionTarget("command", match.group(1), match.start())
    match = _TRAILING_ARGUMENT.search(text)
    if not match:
        return None
    name = match.group(1).lower()
    quoted = match.group(2) is not None
    argument, start = (match.group(3), match.start(2)) if quoted else (match.group(4), match.start(4))
    if name in SYMBOL_COMMANDS:
        return CompletionTarget("symbol", argument, start)
    if name in PATH_COMMANDS and ":" not in argument:  # after the colon comes a line number
        return CompletionTarget("path", argument, start)
    return None


def complete_commands(prefix: str) -> list[dict]:
    """Commands whose name starts with (or, failing that, contains) the typed prefix."""
    prefix = prefix.lower()
    names = [n for n in COMMANDS if n.startswith(prefix)] or [n for n in COMMANDS if prefix in n]
    return [{"value": f"@{n} ", "label": usage(n), "detail": COMMANDS[n][1], "kind": "command"} for n in names]
