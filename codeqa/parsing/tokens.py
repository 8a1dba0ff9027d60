"""Code-aware tokens: what BM25 indexes and what a question is matched with.

The same transform runs on the index's text columns and on queries, so `merge_handler_0`,
`MergeHandler0` and "merge handler" all meet, which a stock tokenizer (it splits on `_` and
stems) would not guarantee.
"""

from __future__ import annotations

import re
from functools import lru_cache

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_parts(identifier: str) -> list[str]:
    """`parseHTTPResponse_v2` → ['parse', 'http', 'response', 'v', '2']."""
    return [part.lower() for part in _CAMEL_PARTS.findall(identifier)]


def code_tokens(text: str) -> str:
    """Whitespace-joined tokens: each identifier whole (lowercased, `_` dropped) and its parts."""
    return " ".join(map(_expand_identifier, _IDENTIFIER.findall(text)))


def code_token_list(text: str) -> list[str]:
    """`code_tokens` as a list, in order (what the static embedder looks up)."""
    return code_tokens(text).split()


@lru_cache(maxsize=200_000)
def _expand_identifier(word: str) -> str:
    parts = identifier_parts(word)
    whole = word.replace("_", "").lower()
    if whole and (len(parts) != 1 or parts[0] != whole):
        parts.insert(0, whole)
    return " ".join(parts)


@lru_cache(maxsize=4096)
def path_tokens(file_path: str) -> str:
    """`src/http_client/Pool.java` → tokens of every segment plus the file name with and without extension."""
    name = file_path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0]
    return " ".join([code_tokens(file_path), name.lower().replace("_", ""), stem.lower()])
