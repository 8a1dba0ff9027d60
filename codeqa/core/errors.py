"""The one base of every error a user can act on, and how each face of CodeQA reports it.

An error that derives from `CodeQAError` carries a message written for the user (one line,
no traceback, no server paths), the exit status a CLI returns for it, the HTTP status the
web API answers with, and a machine-readable `code` for the chat stream's `error` events.
Each entry point (the indexing and search CLIs, the HTTP API, the chat stream, the MCP
server) catches `CodeQAError` once and maps it through these attributes, instead of keeping
its own list of exception types. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import re
import sys


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


# What a command-line tool reports as one line and an exit status rather than a traceback:
# our own errors, and the operating system's (a missing or unreadable file, a full disk).
CLI_ERRORS = (CodeQAError, OSError)


def cli_exit(exc: CodeQAError | OSError) -> int:
    """Report `exc` the CLI way (`error: ...` on stderr) and return the exit status."""
    print(f"error: {exc}", file=sys.stderr)
    return exc.exit_code if isinstance(exc, CodeQAError) else 1


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
