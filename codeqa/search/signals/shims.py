"""Compatibility shims: files that paper over other versions (`compat.py`, `_compat.py`,
`polyfills.ts`, `legacy/`, `backports/`). They mention everything a question may name and are
seldom where a fix goes, so the file model may weigh them down.
"""

from __future__ import annotations

from functools import lru_cache

from codeqa.search.structure import name_tokens

SHIM_WORDS = frozenset({"compat", "compatibility", "shim", "polyfill", "backport", "legacy", "deprecated"})


@lru_cache(maxsize=65536)
def is_shim(path: str) -> bool:
    """Whether the file's name or a folder on its path is a compatibility shim's."""
    return any(name_tokens(part.split(".", 1)[0]) & SHIM_WORDS for part in path.split("/"))
