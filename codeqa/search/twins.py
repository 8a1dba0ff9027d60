"""Platform twins: files with the same job in sibling platform folders, shown together.

A C library keeps `src/unix/fs.c` and `src/win/fs.c`; Go keeps `file_unix.go` beside
`file_windows.go`; Rust `sys/unix.rs` beside `sys/windows.rs`. A question about the file
system matches both nearly alike, and whichever ranks first used to push the other out of the
list. Here twins are grouped: the group takes the place of its best member, the member for the
configured platform (`CODEQA_PLATFORM`, Linux by default) comes first, and the others follow it
at once, each marked with its twins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeqa.core.config import PLATFORMS

if TYPE_CHECKING:
    from codeqa.search.results import FileHit

# Each platform's folder and file-name words, its own first; `unix`/`posix` serve every Unix.
PLATFORM_WORDS: dict[str, tuple[str, ...]] = {
    "linux": ("linux", "unix", "posix", "nix"),
    "darwin": ("darwin", "macos", "mac", "osx", "apple", "unix", "posix"),
    "freebsd": ("freebsd", "bsd", "unix", "posix"),
    "windows": ("windows", "win", "win32", "win64", "nt", "msvc", "mingw"),
    "android": ("android",),
    "ios": ("ios",),
    "wasm": ("wasm", "wasi", "emscripten"),
}
assert tuple(PLATFORM_WORDS) == PLATFORMS, "each configurable platform needs its words here"
_WORDS = sorted({word for words in PLATFORM_WORDS.values() for word in words}, key=len, reverse=True)
# A platform word as a whole path segment (`unix/`, `win.rs`) or a file-name suffix (`_windows.go`).
_PLATFORM = re.compile(
    r"(?<![A-Za-z0-9])(" + "|".join(_WORDS) + r")(?=/|\.|$)|(?<=[_-])(" + "|".join(_WORDS) + r")(?=[._])", re.IGNORECASE
)


def twin_key(path: str) -> tuple[str, str] | None:
    """The path with its platform word blanked, and that word; None for a path without one."""
    found = list(_PLATFORM.finditer(path))
    if not found:
        return None
    match = found[-1]  # the last one: `src/unix/fs_linux.c` is the Linux twin of `src/unix/fs_darwin.c`
    word = match.group(0)
    return path[: match.start()] + "\0" + path[match.end() :], word.lower()


def preference(word: str, platform: str) -> int:
    """0 for a word of the configured platform itself, 1 for a word it shares (`unix`), 2 else."""
    words = PLATFORM_WORDS.get(platform, ())
    if word in words[:1] or (word in words and word not in ("unix", "posix")):
        return 0
    return 1 if word in words else 2


def group_twins(files: Sequence[FileHit], platform: str) -> list[FileHit]:
    """`files` (best first) with each group of platform twins together at its best member's
    place, the configured platform's member first; every member's `twins` names the others."""
    groups: dict[str, list[tuple[str, FileHit]]] = {}
    for file in files:
        key = twin_key(file.path)
        if key is not None:
            groups.setdefault(key[0], []).append((key[1], file))
    twins = {id(file): members for members in groups.values() if len(members) > 1 for _, file in members}
    ordered: list[FileHit] = []
    placed: set[int] = set()
    for file in files:
        if id(file) in placed:
            continue
        members = twins.get(id(file))
        if members is None:
            ordered.append(file)
            placed.add(id(file))
            continue
        members = sorted(members, key=lambda m: preference(m[0], platform))  # stable: rank breaks ties
        for _, member in members:
            member.twins = [other.path for _, other in members if other is not member]
            ordered.append(member)
            placed.add(id(member))
    return ordered
