"""The question uses the words of a file's name: `cookies.py` for "cookies are dropped on
redirect", `ConnectionPool.swift` for "the connection pool leaks".

Search already matches a file's name through its file row's text, beside everything else the
row holds; as a feature of its own the file model weighs it directly, for every candidate (the
structure features see only entry files' names, structure.py).
"""

from __future__ import annotations

from collections.abc import Set

from codeqa.search.structure import file_stem, name_tokens


def stem_asked(path: str, asked: Set[str]) -> float:
    """The share of the words of the file's stem that the question uses (`asked`: its words,
    as `structure.asked_words` gives them)."""
    words = name_tokens(file_stem(path))
    return len(words & asked) / len(words) if words else 0.0
