"""The one base of every error a user can act on, and how each face of CodeQA reports it.

An error that derives from `CodeQAError` carries a message written for the user (one line,
no traceback, no server paths), the exit status a CLI returns for it, the HTTP status the
web API answers with, and a machine-readable `code` for the chat stream's `error` events.
Each entry point (the indexing and search CLIs, the HTTP API, the chat stream, the MCP
server) catches `CodeQAError` once and maps it through these attributes, instead of keeping
its own list of exception types. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
import re
import select
import signal
import sys
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TypeVar


class CodeQAError(Exception):
    """An error with a message fit to show a user as is."""

    exit_code = 1
    http_status = 500
    code = "error"

    @property
    def message(self) -> str:
        return str(self)

    def event(self) -> dict[str, str]:
        """The data of the chat stream's `error` event for this error."""
        return {"code": self.code, "message": self.message}


class ConfigError(CodeQAError, ValueError):
    """A setting (environment variable or `.env` entry) has a value CodeQA can't use."""


class UnavailableError(CodeQAError):
    """A service CodeQA needs (an LLM, Redis, an embedding endpoint, model weights) can't be used
    right now; the message says which and why."""

    http_status = 503
    code = "unavailable"


class LLMUnavailable(UnavailableError):
    """The LLM cannot answer (raised by the client and by the embedded server alike)."""

    code = "llm_unavailable"


class InvalidArgument(CodeQAError, ValueError):
    """An argument a caller passed (an MCP tool's, a search filter) that is not allowed; the
    message says what is."""

    http_status = 400
    code = "invalid_argument"


class StorageError(CodeQAError):
    """The disk refused to store or read data (full, read-only, no permission)."""

    http_status = 507
    code = "storage"


# What the operating system's refusals mean to a user, by errno; others keep the OS's wording.
_STORAGE_PROBLEMS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}
# LanceDB reports an I/O failure as a RuntimeError: `lance error: LanceError(IO): Read-only file
# system (os error 30) at path "/.../x.lance/..."` followed by a source location.
_LANCE_OS_ERROR = re.compile(r"LanceError\(IO\).*?\(os error (\d+)\)")
_LANCE_PATH = re.compile(r'at path "([^"]+)"')


def storage_problem(code: int) -> str:
    """A few words on why the disk refused: `the disk is full`, `the file system is read-only`."""
    return _STORAGE_PROBLEMS.get(code) or os.strerror(code)


def storage_error(exc: BaseException) -> StorageError | None:
    """LanceDB's report of the disk refusing a read or write, as one line naming the cause
    (and the folder of the table, where it names one); None for any other error."""
    found = _LANCE_OS_ERROR.search(str(exc)) if isinstance(exc, RuntimeError) else None
    if found is None:
        return None
    path = _LANCE_PATH.search(str(exc))
    where = f" ({path.group(1).split('.lance/')[0]}.lance)" if path and ".lance/" in path.group(1) else ""
    return StorageError(f"The index storage failed{where}: {storage_problem(int(found.group(1)))}.")


def user_error(exc: BaseException) -> CodeQAError | OSError | None:
    """`exc` as an error a user can act on, reported in one line without a traceback: our own,
    the operating system's (a missing file, a full disk), and the disk's as LanceDB reports
    it; None for anything else, which is a bug and keeps its traceback."""
    if isinstance(exc, (CodeQAError, OSError)):
        return exc
    return storage_error(exc)


def cli_exit(exc: CodeQAError | OSError) -> int:
    """Report `exc` the CLI way (`error: ...` on stderr, on one printable line) and return the
    exit status."""
    print(f"error: {printable(str(exc))}", file=sys.stderr)
    return exc.exit_code if isinstance(exc, CodeQAError) else 1


def run_cli(work: Callable[[], int]) -> int:
    """Run a command-line tool's work and return its exit status: an error a user can act on
    (`user_error`) is one line on stderr; a bug keeps its traceback; a reader of the output
    that went away (`codeqa search ... | head -2`) ends it quietly (`closed_pipe`)."""
    try:
        status = work()
        sys.stdout.flush()  # the output's last block: a reader gone by now is found here, not at exit
        return status
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_gone():
            return closed_pipe()
        problem = user_error(exc)
        if problem is None:
            raise
        return cli_exit(problem)


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll reports an error on
    it): a broken pipe elsewhere (a socket) is an error to report, not a reader gone."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def closed_pipe() -> int:
    """End a command whose output's reader went away as Unix tools end: without a word, with
    the status a shell reports for a tool that SIGPIPE stopped (141: 128 + SIGPIPE; Python
    ignores the signal, so a write raised `BrokenPipeError` instead). Standard output is
    pointed at /dev/null first, or Python's own flush at exit would fail again, out loud."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # stdout is not a file descriptor (a test's capture): nothing flushes it at exit
    return 128 + signal.SIGPIPE


def is_valid_unicode(text: str) -> bool:
    """False for text holding lone surrogates (JSON's `\\ud800`, file names that are not UTF-8):
    such text can't be stored, sent or shown."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def one_line(text: object, limit: int = 200) -> str:
    """`text` on one line, at most `limit` characters: fit for an error message."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# An absolute path of two or more components (`/home/u/.codeqa/lancedb`, `~/.codeqa/x`), not
# the path part of a URL (`http://host/v1`) nor a repo-relative path (`src/app.py`).
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~@-])~?(?:/[^\s/'\"`,;:()<>\[\]{}|]+){2,}/?")


def without_paths(text: str) -> str:
    """`text` with absolute file-system paths replaced by `<path>`: for messages that leave the
    server (HTTP responses, chat events); logs keep the paths."""
    return _ABSOLUTE_PATH.sub("<path>", text)


# What a terminal or a page acts on instead of showing: the C0 controls but tab (newline and
# carriage return included: they forge lines), DEL, the C1 controls, and the bidirectional
# formatting characters (embeddings, overrides, isolates, and the invisible direction marks).
# Written with escapes that Python's `re` and JavaScript's `RegExp(..., "u")` read alike: the
# web page is sent this pattern and escapes what it shows with it.
UNSAFE_PATTERN = r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_UNSAFE = re.compile(UNSAFE_PATTERN)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with each control and bidi formatting character written as an escape (`\\x1b`,
    `\\u202e`). A cloned repository picks its own file and symbol names: printed raw, an escape
    sequence retitles or clears the user's terminal, a newline forges a line of output, and a
    right-to-left override shows `evil\\u202etxt.py` as `evilyp.txt`. Every face shows such
    names through this."""
    return _UNSAFE.sub(_escape, text)


def printable_lines(lines: list[str]) -> str:
    """Lines of output joined with newlines, each made `printable`: a newline inside a name
    shows as `\\n` instead of starting a line of its own."""
    return "\n".join(printable(line) for line in lines)


T = TypeVar("T")


def repo_path_prefix(prefix: T) -> T:
    """A search's `path` filter, refused (`InvalidArgument`) when it points outside the
    repository: `../` or `/etc` would otherwise be trimmed to nothing and search everything,
    silently. Any other value passes unchanged (the search checks its type and length)."""
    if isinstance(prefix, str) and prefix.strip():
        pure = PurePosixPath(prefix.strip())
        if pure.is_absolute() or ".." in pure.parts:
            raise InvalidArgument(
                "path must be a folder or file path inside the repo, relative to its root "
                "(no '..', not absolute), e.g. src/api/."
            )
    return prefix
