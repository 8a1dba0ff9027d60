"""The repository registry and each repo's table generations.

A registry table (`schema.REGISTRY_TABLE`) holds one `records.RepoInfo` per repo: its folder,
its embedding model, the layout its tables were written with and the prefix of its tables.
A repo's tables are one generation: `--rebuild` (and the upgrade of tables written before
keys were declared) builds a new generation under a new prefix while the old one keeps
serving searches, then switches the registry row to it in one commit and drops the old.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import secrets
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from codeqa.core.errors import one_line
from codeqa.core.records import RepoInfo
from codeqa.store import filters
from codeqa.store.connection import open_or_create_table, table_names
from codeqa.store.errors import InvalidRepoNameError, StaleIndexError, UnknownRepoError
from codeqa.store.schema import INDEX_VERSION, REGISTRY_SCHEMA, REGISTRY_TABLE, TABLE_KINDS, has_primary_key

if TYPE_CHECKING:
    import lancedb

MAX_REPO_NAME = 100
_REPO_NAME = re.compile(r"\w[\w.+@-]*")
# Registry columns added after registries were written, and the SQL value old rows get. A
# repo's own tables need none: one of another layout is rebuilt (`INDEX_VERSION`), not patched.
_ADDED_COLUMN_DEFAULTS = {"index_version": "CAST(1 AS INT)"}


# --- Names --------------------------------------------------------------------------------------


def check_repo_name(name: str) -> str:
    """`name` if it can name a repo: 1–100 letters, digits and `. _ + @ -`, starting with a
    letter or digit (it appears in URLs, table names and messages)."""
    if not 1 <= len(name) <= MAX_REPO_NAME or not _REPO_NAME.fullmatch(name) or not name.isprintable():
        raise InvalidRepoNameError(
            f"Invalid repo name {one_line(repr(name), 60)}: use 1 to {MAX_REPO_NAME} letters, digits "
            "and . _ + @ -, starting with a letter or digit."
        )
    return name


def repo_name_from(folder: str) -> str:
    """A valid repo name made from a folder name (other characters become `-`)."""
    name = re.sub(r"[^\w.+@-]+", "-", folder).strip(".+@-_")[: MAX_REPO_NAME - 7]
    return name or "repo"


# --- Generations of a repo's tables -------------------------------------------------------------


def table_prefix(name: str, generation: str = "") -> str:
    """A table-name-safe, collision-free prefix for a repo name (and one generation of its tables)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:40] or "repo"
    base = f"r_{slug}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return f"{base}-{generation}" if generation else base


def new_generation_prefix(name: str) -> str:
    """The prefix of a new generation of a repo's tables (never one in use)."""
    return table_prefix(name, secrets.token_hex(4))


def table_name(info: RepoInfo, kind: str) -> str:
    """The name of one of a repo's tables (`kind`: one of `schema.TABLE_KINDS`)."""
    return f"{info.prefix}__{kind}"


def open_table(db: lancedb.DBConnection, info: RepoInfo, kind: str) -> Any:
    """One of a repo's tables, opened (it must exist)."""
    return db.open_table(table_name(info, kind))


def repo_table_names(db: lancedb.DBConnection, name: str) -> set[str]:
    """Every table of every generation of the repo `name` (what `remove` drops)."""
    family = re.compile(rf"{re.escape(table_prefix(name))}(?:-[0-9a-f]{{8}})?__(?:{'|'.join(TABLE_KINDS)})")
    return {table for table in table_names(db) if family.fullmatch(table)}


def drop_tables(db: lancedb.DBConnection, names: Iterable[str]) -> None:
    for name in sorted(names):
        db.drop_table(name)


def drop_other_generations(db: lancedb.DBConnection, info: RepoInfo) -> None:
    """Drop the repo's tables that are not `info`'s generation: leftovers of an interrupted
    rebuild or of one that stopped before dropping the generation it replaced."""
    keep = {table_name(info, kind) for kind in TABLE_KINDS}
    drop_tables(db, repo_table_names(db, info.name) - keep)


# --- The registry -------------------------------------------------------------------------------


def _registry(db: lancedb.DBConnection) -> Any:
    """The registry table, created if missing. One written before it declared `name` its key is
    rewritten with the key in one commit (a registry is a few rows); columns added since (the
    layout version) are added."""
    table = open_or_create_table(db, REGISTRY_TABLE, REGISTRY_SCHEMA)
    missing = [name for name in REGISTRY_SCHEMA.names if name not in table.schema.names]
    if missing:
        table.add_columns({name: _ADDED_COLUMN_DEFAULTS[name] for name in missing})
    if has_primary_key(table.schema, "name"):
        return table
    rows = table.to_arrow().select(REGISTRY_SCHEMA.names).cast(REGISTRY_SCHEMA)
    return db.create_table(REGISTRY_TABLE, data=rows, schema=REGISTRY_SCHEMA, mode="overwrite")


def list_repos(db: lancedb.DBConnection) -> list[RepoInfo]:
    """Every registered repo. A registry listed but not yet openable is one that another
    process's first index run is creating at this instant: nothing is registered yet."""
    table = _open_registry(db)
    return [] if table is None else _read_registry(table)


def find_repo(db: lancedb.DBConnection, name: str) -> RepoInfo | None:
    """The registry row of `name`, if it is indexed."""
    return next((info for info in list_repos(db) if info.name == name), None)


def get_repo(db: lancedb.DBConnection, name: str) -> RepoInfo:
    """The registry row of `name`; `UnknownRepoError` suggests close names, never the whole list."""
    return _named(name, list_repos(db))


class RegistryCache:
    """The registry's rows as of its newest version, read again only when that version changes:
    a search asks for its repo's row every time, and reading the table whole cost 4.6 ms of a
    ~29 ms search of Django's sdist held in memory, where looking its version up costs 1.1 ms
    (docs/benchmarks.md). Safe to share between threads; what it returns is frozen (`RepoInfo`),
    in a list of its own."""

    def __init__(self, db: lancedb.DBConnection) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._table: Any = None
        self._read: tuple[int, list[RepoInfo]] | None = None  # (version, its rows)

    def repos(self) -> list[RepoInfo]:
        """Every registered repo, by name (`list_repos`)."""
        with self._lock:
            try:
                if self._table is None:
                    self._table = _open_registry(self.db)
                    if self._table is None:
                        return []
                self._table.checkout_latest()
                version = self._table.version
                if self._read is None or self._read[0] != version:
                    self._read = (version, _read_registry(self._table))
                return list(self._read[1])
            except (ValueError, OSError, RuntimeError):  # the table went away under it: read afresh
                self._table = self._read = None
                return list_repos(self.db)

    def repo(self, name: str) -> RepoInfo:
        """The registry row of `name` (`get_repo`)."""
        return _named(name, self.repos())


def _open_registry(db: lancedb.DBConnection) -> Any:
    """The registry table, or None while there is none (or its first version is being written)."""
    if REGISTRY_TABLE not in table_names(db):
        return None
    try:
        return db.open_table(REGISTRY_TABLE)
    except ValueError as exc:  # LanceDB's word for a table whose first version isn't written yet
        if "was not found" not in str(exc):
            raise
        return None


def _read_registry(table: Any) -> list[RepoInfo]:
    return sorted(map(RepoInfo.from_row, table.to_arrow().to_pylist()), key=lambda info: info.name)


def _named(name: str, repos: list[RepoInfo]) -> RepoInfo:
    """The repo of `repos` called `name`; else `UnknownRepoError`, suggesting close names."""
    found = next((info for info in repos if info.name == name), None)
    if found is not None:
        return found
    known = [info.name for info in repos]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6) if len(name) <= MAX_REPO_NAME else []
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ("" if known else " No repo is indexed yet.")
    raise UnknownRepoError(f"Unknown repo {one_line(repr(name), 60)}.{hint}")


def check_layout(info: RepoInfo) -> None:
    """Refuse to search tables of another layout, with the command that brings them up to date."""
    if info.index_version != INDEX_VERSION:
        raise StaleIndexError(
            f"Repo {info.name!r} was indexed by another version of CodeQA (index format "
            f"{info.index_version}, this one reads {INDEX_VERSION}): run `codeqa index` "
            "on its folder again to re-index it."
        )


def save_repo(db: lancedb.DBConnection, info: RepoInfo) -> None:
    """Insert or replace a repo's registry row in one commit (a new generation's prefix included)."""
    table = pa.Table.from_pylist([info.to_row()], schema=REGISTRY_SCHEMA)
    _registry(db).merge_insert("name").when_matched_update_all().when_not_matched_insert_all().execute(table)


def remove_repo(db: lancedb.DBConnection, name: str) -> RepoInfo:
    """Drop every generation of a repo's tables, then its registry row (so a crash leaves it
    listed and removable). The caller holds the repo's lease (`lease.RepoLock`)."""
    info = get_repo(db, name)
    drop_tables(db, repo_table_names(db, name))
    _registry(db).delete(filters.equals("name", name))
    return info
