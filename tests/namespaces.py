"""A private mount namespace for one command (`unshare -Urm`): a small or read-only disk that
only the command sees, so a test fills a disk or makes it read-only for real without root
and without touching the machine's own file systems."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def _namespaces_work() -> bool:
    try:
        return subprocess.run(["unshare", "-Urm", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_namespaces = pytest.mark.skipif(not _namespaces_work(),
                                      reason="no user and mount namespaces (unshare -Urm) to mount a small disk in")


def in_namespace(setup: str, command: list[str]) -> list[str]:
    """`command` run in a private mount namespace after the shell `setup` (mounts: only the
    command sees them, and they vanish with it)."""
    return ["unshare", "-Urm", "sh", "-c", f'{setup} && exec "$@"', "sh", *command]


def read_only(path: Path) -> str:
    """Setup that makes the folder `path` read-only (a read-only bind mount of itself)."""
    return f'mount --bind "{path}" "{path}" && mount -o remount,bind,ro "{path}"'


def small_disk(path: Path, size: str) -> str:
    """Setup that puts an empty file system of `size` (`2m`, `256k`) on the folder `path`."""
    return f'mount -t tmpfs -o size={size} tmpfs "{path}"'
