"""The one gate between user-supplied paths and the disk: an indexed file's text, or a refusal.

The web file view, `@file`, the MCP `read_code` tool and every other command that reads a file
go through `read_indexed_file`. It serves only a regular file that the manifest lists, that is
reached without following a symlink (every component is opened with O_NOFOLLOW, so a path
swapped for a link, say to a secret elsewhere in the repo, is refused) and whose bytes still
have the hash the index recorded.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from codeqa.parsing.repo_files import decode_text, hash_bytes
from codeqa.store.errors import FileChangedError, FileNotIndexedError, InvalidPathError
from codeqa.store.reader import RepoReader

# What the file view reads of a file whose manifest entry predates recorded sizes.
MAX_UNSIZED_READ = 16 * 1024 * 1024


def read_indexed_file(reader: RepoReader, raw_path: object) -> str:
    """The text of a file of this repo's index, as it was indexed; anything else is refused."""
    info = reader.info
    if not isinstance(raw_path, str) or not raw_path or "\x00" in raw_path or "\\" in raw_path:
        raise InvalidPathError("Invalid path.")
    pure = PurePosixPath(raw_path)
    if pure.is_absolute() or ".." in pure.parts or str(pure) != raw_path:
        raise InvalidPathError("Invalid path: use a path relative to the repository, as in the sources.")
    entry = reader.manifest_entry(raw_path)
    if entry is None:
        raise FileNotIndexedError(f"{raw_path} is not an indexed file of {info.name}.")
    data = _read_without_links(Path(info.root), raw_path, entry.size + 1 if entry.size else MAX_UNSIZED_READ)
    if data is None:
        raise FileNotIndexedError(f"{raw_path} is no longer a file in {info.name}'s folder.")
    if hash_bytes(data) != entry.sha256:
        raise FileChangedError(f"{raw_path} has changed since {info.name} was indexed: index it again to view it.")
    return decode_text(data)[0]


def _read_without_links(root: Path, relative: str, limit: int) -> bytes | None:
    """At most `limit` bytes of the regular file `root/relative`, opened one component at a time
    without following symlinks; None if any component is a link or missing, or the file is not
    a regular file (a fifo put in its place is opened non-blocking, then refused)."""
    no_follow = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    *folders, name = relative.split("/")
    try:
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for part in folders:
            inner = os.open(part, no_follow | os.O_DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        handle = os.open(name, no_follow | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    with os.fdopen(handle, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        return file.read(limit)
