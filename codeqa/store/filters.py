"""Filters for LanceDB's `where`: the one place a value is quoted into SQL.

LanceDB takes a filter as SQL text. Every value that reaches one (a repo name, a path a user
typed, a symbol name read from a repository) goes through `quote` here, and every filter is
built from the functions below, so no other module writes SQL by hand
(`tests/test_store_filters.py` feeds them hostile names). Column names are the code's own
constants, never input: `_column` refuses anything else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NewType

Where = NewType("Where", str)  # a filter built here; LanceDB's `where` takes it as is

_COLUMN = re.compile(r"(?:target\.)?[a-z_][a-z0-9_]*")  # `target.`: a merge-insert's existing row

# A row is searchable by text as soon as it is written; its vector comes after (`fill_vectors`).
NO_VECTOR = Where("vector IS NULL")
HAS_VECTOR = Where("vector IS NOT NULL")


def _column(name: str) -> str:
    if not _COLUMN.fullmatch(name):
        raise ValueError(f"not a column name: {name!r}")
    return name


def quote(value: str) -> str:
    """A SQL string literal: the only way a value may enter a filter."""
    return "'" + value.replace("'", "''") + "'"


def _like_escape(text: str) -> str:
    """`text` matched literally inside a LIKE pattern (`%`, `_` and `\\` lose their meaning)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def equals(column: str, value: str | int) -> Where:
    literal = str(int(value)) if isinstance(value, int) else quote(value)
    return Where(f"{_column(column)} = {literal}")


def not_equals(column: str, value: str) -> Where:
    return Where(f"{_column(column)} != {quote(value)}")


def is_in(column: str, values: Sequence[str]) -> Where:
    """`column IN (...)`; an empty list matches nothing."""
    if not values:
        return Where("FALSE")
    return Where(f"{_column(column)} IN ({', '.join(map(quote, values))})")


def starts_with(column: str, prefix: str) -> Where:
    return Where(f"{_column(column)} LIKE {quote(_like_escape(prefix) + '%')}")


def ends_with(column: str, suffix: str) -> Where:
    return Where(f"{_column(column)} LIKE {quote('%' + _like_escape(suffix))}")


def contains(column: str, text: str) -> Where:
    return Where(f"{_column(column)} LIKE {quote('%' + _like_escape(text) + '%')}")


def is_true(column: str) -> Where:
    return Where(_column(column))


def negate(clause: Where) -> Where:
    return Where(f"NOT ({clause})")


def both(first: Where, second: Where) -> Where:
    return Where(f"({first}) AND ({second})")


def all_of(*clauses: Where | None) -> Where | None:
    """The clauses joined by AND (None ones left out); None when there are none."""
    kept = [clause for clause in clauses if clause]
    return Where(" AND ".join(f"({clause})" for clause in kept)) if kept else None


def any_of(clauses: Iterable[Where]) -> Where:
    """The clauses joined by OR; matches nothing when there are none."""
    kept = list(clauses)
    return Where(" OR ".join(f"({clause})" for clause in kept)) if kept else Where("FALSE")
