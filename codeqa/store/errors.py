"""What can be wrong with the index, as errors a user can act on (`errors.CodeQAError`)."""

from __future__ import annotations

from codeqa.core.errors import CodeQAError, UnavailableError


class IndexStoreError(CodeQAError):
    """A problem with the index the user can act on; the message says how."""

    http_status = 409


class UnknownRepoError(IndexStoreError):
    """No repo is indexed under that name (the message suggests close names)."""

    http_status = 404


class InvalidRepoNameError(IndexStoreError):
    """A repo name that is too long or has characters other than letters, digits and `._+@-`."""

    http_status = 400


class IndexNotReadyError(UnavailableError):
    """The repo is registered but its first index run has not finished (or was interrupted)."""

    code = "index_not_ready"


class ModelMismatchError(IndexStoreError):
    """The repo was indexed with another embedding model than the configured one."""


class StaleIndexError(IndexStoreError):
    """The repo's tables were written by another layout (`schema.INDEX_VERSION`) than this code reads."""


class InvalidPathError(CodeQAError, ValueError):
    """A path that is not a plain repo-relative path (absolute, `..`, backslashes)."""

    http_status = 400


class FileNotIndexedError(IndexStoreError):
    """A well-formed path that is not an indexed file of the repo, or is no longer on disk."""

    http_status = 404


class FileChangedError(IndexStoreError):
    """An indexed file whose content no longer has the hash the index recorded."""
