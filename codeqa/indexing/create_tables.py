"""Rows → LanceDB tables: schemas, embeddings, full-text indexes and crash-safe writes.

Per repo there are four tables, namespaced by a prefix derived from the repo name:
`<prefix>__methods` (functions, methods, constructors, macros), `<prefix>__classes`
(class-likes, constants and variables, docs sections as kind `doc`), `<prefix>__modules`
(one `file` row per indexed file and `module` rows of long module-level code; see
`modules_schema`) and `<prefix>__files`, the manifest of what the others hold. Every row of
the first three carries its file's `role` (source, test, example, ...; `languages.file_role`).
A registry table `codeqa_repos` lists repos with their embedding model and the index layout
(`INDEX_VERSION`) they were written with.

Crash safety comes from ordering, not transactions: a file's rows are replaced (one atomic
merge per table) before its manifest entry is written, so after a crash the manifest still
holds the old hash and the next run redoes that file; every step is idempotent.

Duplicates are impossible by construction: every table declares its key (`id`, `file_path`,
`name`) its primary key and is written only by merge-inserts on it, and LanceDB's commit
rejects a concurrent merge that inserts a key another one just inserted (the loser retries
against the winner's rows). `index_lock.py` keeps to one run per repo on top of that.

A repo's tables are one generation: `--rebuild` (and the upgrade of tables written before
keys were declared) builds a new generation under a new prefix while the old one keeps
serving searches, then switches the registry row to it in one commit and drops the old.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from datetime import timedelta
from typing import Iterable, Mapping, Sequence

os.environ.setdefault("LANCEDB_LOG", "error")  # lance warns on every hybrid query otherwise; read at import
import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, BTree, HnswSq

from codeqa.core.config import Settings
from codeqa.core.errors import CodeQAError, UnavailableError, one_line
from codeqa.parsing.languages import DOC_KIND, MODULE_KIND
from codeqa.core.records import ManifestEntry, RepoInfo
from codeqa.indexing.repo_files import decode_text, hash_bytes

log = logging.getLogger("codeqa.index")

REGISTRY_TABLE = "codeqa_repos"
# The layout of a repo's tables and what the parser puts in them. A repo written with another
# version is re-indexed from scratch by the next index run and refused by search until then.
# 2: role column, modules table, constants/variables/macros and member-assigned functions.
# 3: vectors from the int8 ONNX embedder (cosine 0.9995 to the torch vectors of 2, yet not
#    the same: a search must never compare the two); 23 languages, every other text file as
#    file rows and sections, `.h`/`.m` decided per file.
# 4: one row per overload set (`signatures`), declarations marked (`declaration`): C/C++
#    prototypes and in-class method declarations are rows now.
INDEX_VERSION = 4
ROW_TABLES = ("methods", "classes", "modules")  # tables of searchable rows, with vectors
TABLE_KINDS = ROW_TABLES + ("files",)
FTS_COLUMNS = ("search_text", "name_text", "path_text")
# Whole-file BM25: `file_text` holds the identifier-aware tokens of a file's path and text (as
# the eval's plain BM25 baseline tokenizes them), indexed without stemming or stop words.
FILE_TEXT_COLUMN = "file_text"
FILE_TEXT_CHARS = 300_000  # of a file's text; longer files (rare: data, generated) are cut
MAX_STORED_REFERENCES = 50
EMBED_TEXT_CHARS = 2000
# What `embedding_text` reads of a row (plus its id and text hash, to write the vector back).
EMBEDDED_COLUMNS = ("id", "text_hash", "kind", "qualified_name", "file_path", "signature", "doc", "code",
                    "imports", "top_level_names")
# A row is searchable by text as soon as it is written; its vector comes after (`fill_vectors`).
NO_VECTOR = "vector IS NULL"
HAS_VECTOR = "vector IS NOT NULL"
EMBED_LIST_CHARS = 300  # of a file row's imports, and of its defined names, in its embedded text
# Above this many rows a table gets an HNSW vector index: flat search of 30,000 rows took
# ~30 ms, HNSW ~5 ms at recall@30 0.99 (Django, 384-d).
ANN_MIN_ROWS = 10_000
SEARCH_CODE_CHARS = 6000  # of a row's code in its BM25 text
# Of a definition's code a row keeps (its head, in whole lines; start_line/end_line still give
# the whole extent): far more than any prompt shows, and a bound on what one row can cost.
MAX_ROW_CODE_CHARS = 100_000
# A class's BM25 text has its method signatures and only the head of its code: the methods'
# bodies have rows (and BM25 text) of their own.
CLASS_SEARCH_CODE_CHARS = 1500

REFERENCE_TYPE = pa.struct([
    ("file_path", pa.string()),
    ("line", pa.int32()),
    ("column", pa.int32()),
    ("text", pa.string()),
    ("kind", pa.string()),
    ("resolution", pa.string()),
    ("caller", pa.string()),
])


class IndexStoreError(CodeQAError):
    """A problem with the index the user can act on; the message says how."""

    http_status = 409


class UnknownRepoError(IndexStoreError):
    """No repo is indexed under that name (the message lists those that are)."""

    http_status = 404


class IndexNotReadyError(UnavailableError):
    """The repo is registered but its first index run has not finished (or was interrupted)."""

    code = "index_not_ready"


class ModelMismatchError(IndexStoreError):
    """The repo was indexed with another embedding model than the configured one."""


# Field metadata naming a column a table's (unenforced) primary key, as
# `Table.set_unenforced_primary_key` writes it: LanceDB then checks concurrent merge-inserts
# on it for inserted keys (without it, two of them inserting one key both succeed).
PRIMARY_KEY_METADATA = "lance-schema:unenforced-primary-key:position"


def key_field(name: str) -> pa.Field:
    """A table's key column: a non-null string declared its primary key."""
    return pa.field(name, pa.string(), nullable=False, metadata={PRIMARY_KEY_METADATA: "1"})


def has_primary_key(table, column: str) -> bool:
    """Whether `column` is declared the table's primary key (tables from before it was are not)."""
    metadata = table.schema.field(column).metadata or {}
    return PRIMARY_KEY_METADATA.encode() in metadata


class StaleIndexError(IndexStoreError):
    """The repo's tables were written by another layout (`INDEX_VERSION`) than this code reads."""


def row_schema(dim: int, table: str) -> pa.Schema:
    """The columns of a table of searchable rows (`ROW_TABLES`).

    All three share the symbol columns, so search reads them alike. The classes table adds
    `method_signatures`. `declaration` marks a signature whose body is in another file or
    nowhere (a prototype, an abstract or interface method; search groups it with its
    implementation where there is one) and `signatures` lists an overload set's signatures
    (empty for a single one). The modules table adds, per `file` row: `imports` (module paths as
    written), `top_level_names` (qualified names of the file's top-level definitions) and
    `file_text` (whole-file BM25 text, FTS-indexed on its own); `module` rows leave those empty.
    Rows of the modules table have `qualified_name` = `file_path` and `name` = the file name;
    a `file` row spans the whole file (line 1 to its last line), a `module` row its chunk.
    """
    fields = [
        key_field("id"),
        ("repo", pa.string()),
        ("file_path", pa.string()),
        ("language", pa.string()),
        ("role", pa.string()),  # languages.ROLES: filter with `role = 'source'`
        ("kind", pa.string()),
        ("name", pa.string()),
        ("qualified_name", pa.string()),
        ("signature", pa.string()),
        ("doc", pa.string()),
        ("code", pa.string()),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("parent", pa.string()),
        ("file_hash", pa.string()),
        ("text_hash", pa.string()),
        ("search_text", pa.string()),
        ("name_text", pa.string()),
        ("path_text", pa.string()),
        ("references", pa.list_(REFERENCE_TYPE)),
        ("reference_count", pa.int32()),
        ("references_hash", pa.string()),
        ("declaration", pa.bool_()),
        ("signatures", pa.list_(pa.string())),
    ]
    if table == "classes":
        fields.append(("method_signatures", pa.list_(pa.string())))
    elif table == "modules":
        fields += [("imports", pa.list_(pa.string())), ("top_level_names", pa.list_(pa.string())),
                   (FILE_TEXT_COLUMN, pa.string())]
    fields.append(("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


FILES_SCHEMA = pa.schema([  # one row per records.ManifestEntry
    key_field("file_path"),
    ("sha256", pa.string()),
    ("language", pa.string()),
    ("size", pa.int64()),
    ("mtime_ns", pa.int64()),  # added after the first release: older tables get it as 0
    ("non_utf8", pa.bool_()),
    ("has_errors", pa.bool_()),
    ("parsed", pa.string()),  # records.FileParse JSON: symbols, references, imports
])

REGISTRY_SCHEMA = pa.schema([  # one row per records.RepoInfo
    key_field("name"),
    ("root", pa.string()),
    ("prefix", pa.string()),
    ("embedding_model", pa.string()),
    ("embedding_dim", pa.int32()),
    ("created_at", pa.float64()),
    ("indexed_at", pa.float64()),
    ("stats", pa.string()),  # records.RepoStats JSON: summary of the last run
    ("index_version", pa.int32()),  # INDEX_VERSION the tables were written with; added in 2
])


# --- Code-aware text for BM25 -------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_parts(identifier: str) -> list[str]:
    """`parseHTTPResponse_v2` → ['parse', 'http', 'response', 'v', '2']."""
    return [part.lower() for part in _CAMEL_PARTS.findall(identifier)]


def code_tokens(text: str) -> str:
    """Whitespace-joined tokens: each identifier whole (lowercased, `_` dropped) and its parts.

    The same transform runs on queries, so `merge_handler_0`, `MergeHandler0` and
    "merge handler" all meet in the index, which the stock tokenizer (it splits on `_` and
    stems) would not guarantee.
    """
    return " ".join(map(_expand_identifier, _IDENTIFIER.findall(text)))


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


def embedding_text(row: dict) -> str:
    """What makes a row findable by meaning: where it is, what it is, its doc, then its code.

    A file row (whose qualified name is its path) says what the file imports and defines
    before its module-level code."""
    what = row["kind"] if row["qualified_name"] == row["file_path"] else f"{row['kind']} {row['qualified_name']}"
    header = f"{row['file_path']}\n{what}\n"
    if row.get("signature"):
        header += row["signature"] + "\n"
    if row.get("doc"):
        header += row["doc"][:600] + "\n"
    if row.get("imports"):
        header += "imports " + ", ".join(row["imports"])[:EMBED_LIST_CHARS] + "\n"
    if row.get("top_level_names"):
        header += "defines " + ", ".join(row["top_level_names"])[:EMBED_LIST_CHARS] + "\n"
    return (header + row.get("code", ""))[:EMBED_TEXT_CHARS]


def _derive_text_columns(row: dict) -> dict:
    code_chars = CLASS_SEARCH_CODE_CHARS if row.get("method_signatures") else SEARCH_CODE_CHARS
    row["search_text"] = code_tokens(" ".join([
        row["qualified_name"], row.get("signature", ""), row.get("doc", ""),
        *row.get("signatures", []), *row.get("method_signatures", []), *row.get("imports", []), *row.get("top_level_names", []),
        row["code"][:code_chars]]))
    row["name_text"] = " ".join([code_tokens(row["name"]), code_tokens(row["qualified_name"]),
                                 row["name"].lower(), row["qualified_name"].lower()])
    row["path_text"] = path_tokens(row["file_path"])
    row["text_hash"] = hashlib.sha256(embedding_text(row).encode()).hexdigest()
    return row


# --- Filters (LanceDB takes SQL `WHERE` text) -----------------------------------------------------

def sql_quote(value: str) -> str:
    """A SQL string literal: the only way a value may enter a filter."""
    return "'" + value.replace("'", "''") + "'"


def sql_like_escape(text: str) -> str:
    """`text` matched literally inside a LIKE pattern (`%`, `_` and `\\` lose their meaning)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def sql_in(column: str, values: Sequence[str]) -> str:
    """`column IN (...)` for string values."""
    return f"{column} IN ({', '.join(map(sql_quote, values))})"


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _scan(table, columns: list[str], where: str | None = None) -> pa.Table:
    """Read only some columns (never the vectors unless asked) of the matching rows."""
    query = table.search().select(columns).limit(None)
    return (query.where(where) if where else query).to_arrow()


# Registry columns added after registries were written, and the SQL value old rows get. A
# repo's own tables need none: one of another layout is rebuilt (`INDEX_VERSION`), not patched.
_ADDED_COLUMN_DEFAULTS = {"index_version": "CAST(1 AS INT)"}


def _add_missing_columns(table, schema: pa.Schema) -> None:
    """Bring a registry an older version wrote up to `schema`: new columns get their defaults."""
    missing = [name for name in schema.names if name not in table.schema.names]
    if missing:
        table.add_columns({name: _ADDED_COLUMN_DEFAULTS[name] for name in missing})


def table_name(info: RepoInfo, kind: str) -> str:
    """The name of one of a repo's tables (`kind`: one of TABLE_KINDS)."""
    return f"{info.prefix}__{kind}"


def open_table(db: lancedb.DBConnection, info: RepoInfo, kind: str):
    """One of a repo's tables, opened (it must exist)."""
    return db.open_table(table_name(info, kind))


def table_prefix(name: str, generation: str = "") -> str:
    """A table-name-safe, collision-free prefix for a repo name (and one generation of its tables)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:40] or "repo"
    base = f"r_{slug}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return f"{base}-{generation}" if generation else base


def new_generation_prefix(name: str) -> str:
    """The prefix of a new generation of a repo's tables (never one in use)."""
    return table_prefix(name, secrets.token_hex(4))


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


# --- Registry ---------------------------------------------------------------------------------

MAX_REPO_NAME = 100
_REPO_NAME = re.compile(r"\w[\w.+@-]*")


class InvalidRepoNameError(IndexStoreError):
    """A repo name that is too long or has characters other than letters, digits and `._+@-`."""

    http_status = 400


def check_repo_name(name: str) -> str:
    """`name` if it can name a repo: 1–100 letters, digits and `. _ + @ -`, starting with a
    letter or digit (it appears in URLs, table names and messages)."""
    if not 1 <= len(name) <= MAX_REPO_NAME or not _REPO_NAME.fullmatch(name) or not name.isprintable():
        raise InvalidRepoNameError(
            f"Invalid repo name {one_line(repr(name), 60)}: use 1 to {MAX_REPO_NAME} letters, digits "
            "and . _ + @ -, starting with a letter or digit.")
    return name


def repo_name_from(folder: str) -> str:
    """A valid repo name made from a folder name (other characters become `-`)."""
    name = re.sub(r"[^\w.+@-]+", "-", folder).strip(".+@-_")[:MAX_REPO_NAME - 7]
    return name or "repo"


def connect(settings: Settings) -> lancedb.DBConnection:
    return lancedb.connect(settings.database_uri)


def table_names(db: lancedb.DBConnection) -> set[str]:
    names: set[str] = set()
    token = None
    while True:
        page = db.list_tables(page_token=token)
        names.update(page.tables)
        token = page.page_token
        if not token:
            return names


SETTLE_TRIES = 20  # a race between runs that start together is retried this many times,
SETTLE_SECONDS = 0.05  # this far apart, before it is taken for what a killed run left behind


def open_or_create_table(db: lancedb.DBConnection, name: str, schema: pa.Schema):
    """Open table `name`, creating it empty if it is missing. A table that is listed but has no
    version yet is either being created by another run at this instant (it opens a moment later)
    or was left half-created by a run killed while creating it (it never will): once the settle
    time has passed, it is created again, empty, so a `kill -9` never breaks the next run."""
    for _ in range(SETTLE_TRIES):
        try:
            if name not in table_names(db):
                return db.create_table(name, schema=schema, exist_ok=True)
            return db.open_table(name)
        except (ValueError, OSError, RuntimeError):  # no version yet: being created, or never will be
            time.sleep(SETTLE_SECONDS)
    log.warning("table %s was left half-created by an interrupted run: creating it again", name)
    return db.create_table(name, schema=schema, mode="overwrite")


def _registry(db: lancedb.DBConnection):
    """The registry table, created if missing. One written before it declared `name` its key is
    rewritten with the key in one commit (a registry is a few rows); columns added since (the
    layout version) are added."""
    table = open_or_create_table(db, REGISTRY_TABLE, REGISTRY_SCHEMA)
    _add_missing_columns(table, REGISTRY_SCHEMA)
    if has_primary_key(table, "name"):
        return table
    rows = table.to_arrow().select(REGISTRY_SCHEMA.names).cast(REGISTRY_SCHEMA)
    return db.create_table(REGISTRY_TABLE, data=rows, schema=REGISTRY_SCHEMA, mode="overwrite")


def list_repos(db: lancedb.DBConnection) -> list[RepoInfo]:
    """Every registered repo. A registry listed but not yet openable is one that another
    process's first index run is creating at this instant: nothing is registered yet."""
    if REGISTRY_TABLE not in table_names(db):
        return []
    try:
        table = db.open_table(REGISTRY_TABLE)
    except ValueError as exc:  # LanceDB's word for a table whose first version isn't written yet
        if "was not found" not in str(exc):
            raise
        return []
    rows = table.to_arrow().to_pylist()
    return sorted(map(RepoInfo.from_row, rows), key=lambda info: info.name)


def find_repo(db: lancedb.DBConnection, name: str) -> RepoInfo | None:
    """The registry row of `name`, if it is indexed."""
    return next((info for info in list_repos(db) if info.name == name), None)


def get_repo(db: lancedb.DBConnection, name: str) -> RepoInfo:
    """The registry row of `name`; `UnknownRepoError` suggests close names, never the whole list."""
    found = find_repo(db, name)
    if found is not None:
        return found
    known = [info.name for info in list_repos(db)]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6) if len(name) <= MAX_REPO_NAME else []
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else (
        "" if known else " No repo is indexed yet.")
    raise UnknownRepoError(f"Unknown repo {one_line(repr(name), 60)}.{hint}")


def check_layout(info: RepoInfo) -> None:
    """Refuse to search tables of another layout, with the command that brings them up to date."""
    if info.index_version != INDEX_VERSION:
        raise StaleIndexError(
            f"Repo {info.name!r} was indexed by another version of CodeQA (index format "
            f"{info.index_version}, this one reads {INDEX_VERSION}): run `codeqa index` "
            "on its folder again to re-index it.")


def save_repo(db: lancedb.DBConnection, info: RepoInfo) -> None:
    """Insert or replace a repo's registry row in one commit (a new generation's prefix included)."""
    table = pa.Table.from_pylist([info.to_row()], schema=REGISTRY_SCHEMA)
    _registry(db).merge_insert("name").when_matched_update_all().when_not_matched_insert_all().execute(table)


def remove_repo(db: lancedb.DBConnection, name: str) -> RepoInfo:
    """Drop every generation of a repo's tables, then its registry row (so a crash leaves it
    listed and removable). The caller holds the repo's lock (`index_lock`)."""
    info = get_repo(db, name)
    drop_tables(db, repo_table_names(db, name))
    _registry(db).delete(f"name = {sql_quote(name)}")
    return info


class InvalidPathError(CodeQAError, ValueError):
    """A path that is not a plain repo-relative path (absolute, `..`, backslashes)."""

    http_status = 400


class FileNotIndexedError(IndexStoreError):
    """A well-formed path that is not an indexed file of the repo, or is no longer on disk."""

    http_status = 404


class FileChangedError(IndexStoreError):
    """An indexed file whose content no longer has the hash the index recorded."""


# What the file view reads of a file whose manifest entry predates recorded sizes.
MAX_UNSIZED_READ = 16 * 1024 * 1024


def read_indexed_file(db: lancedb.DBConnection, info: RepoInfo, raw_path: object) -> str:
    """The text of a file of this repo's index, refusing anything else.

    The one gate between user-supplied paths and the disk: the web file view, `@file` and
    every other command that reads a file go through it. It serves only a regular file that
    is reached without following a symlink (every component is opened with O_NOFOLLOW, so a
    path swapped for a link, say to a secret elsewhere in the repo, is refused) and whose
    bytes still have the hash the index recorded."""
    if not isinstance(raw_path, str) or not raw_path or "\x00" in raw_path or "\\" in raw_path:
        raise InvalidPathError("Invalid path.")
    pure = PurePosixPath(raw_path)
    if pure.is_absolute() or ".." in pure.parts or str(pure) != raw_path:
        raise InvalidPathError("Invalid path: use a path relative to the repository, as in the sources.")
    entry = _manifest_entry(db, info, raw_path)
    if entry is None:
        raise FileNotIndexedError(f"{raw_path} is not an indexed file of {info.name}.")
    data = _read_without_links(Path(info.root), raw_path, entry.size + 1 if entry.size else MAX_UNSIZED_READ)
    if data is None:
        raise FileNotIndexedError(f"{raw_path} is no longer a file in {info.name}'s folder.")
    if hash_bytes(data) != entry.sha256:
        raise FileChangedError(f"{raw_path} has changed since {info.name} was indexed: index it again to view it.")
    return decode_text(data)[0]


def _manifest_entry(db: lancedb.DBConnection, info: RepoInfo, file_path: str) -> ManifestEntry | None:
    name = table_name(info, "files")
    if name not in table_names(db):
        return None
    rows = _scan(db.open_table(name), FILES_SCHEMA.names, f"file_path = {sql_quote(file_path)}").to_pylist()
    return ManifestEntry.from_row(rows[0]) if rows else None


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


# --- One repo's tables ------------------------------------------------------------------------

class RepoTables:
    """The row tables and the manifest of one repo, and the writes the indexer needs."""

    def __init__(self, db: lancedb.DBConnection, info: RepoInfo) -> None:
        self.db = db
        self.info = info
        existing = table_names(db)
        dim = info.embedding_dim
        self.methods = self._open(existing, "methods", row_schema(dim, "methods"))
        self.classes = self._open(existing, "classes", row_schema(dim, "classes"))
        self.modules = self._open(existing, "modules", row_schema(dim, "modules"))
        self.files = self._open(existing, "files", FILES_SCHEMA)

    def _open(self, existing: set[str], kind: str, schema: pa.Schema):
        name = table_name(self.info, kind)
        if name not in existing:
            return self.db.create_table(name, schema=schema, exist_ok=True)
        return open_or_create_table(self.db, name, schema)

    @property
    def symbol_tables(self):
        """The tables of definitions (and docs sections): the ones references are resolved for."""
        return (self.methods, self.classes)

    @property
    def row_tables(self):
        """Every table of searchable rows (`ROW_TABLES`)."""
        return (self.methods, self.classes, self.modules)

    def manifest(self) -> dict[str, ManifestEntry]:
        rows = _scan(self.files, FILES_SCHEMA.names).to_pylist()
        return {r["file_path"]: ManifestEntry.from_row(r) for r in rows}

    def stored_file_paths(self) -> set[str]:
        """Every file path that has rows, manifest or not (finds leftovers of a crash)."""
        paths: set[str] = set()
        for table in self.row_tables:
            paths.update(_scan(table, ["file_path"])["file_path"].to_pylist())
        return paths

    def cached_vectors(self, file_paths: Sequence[str]) -> dict[str, np.ndarray]:
        """text_hash → vector for rows about to be replaced, so unchanged symbols keep theirs."""
        cache: dict[str, np.ndarray] = {}
        for table in self.row_tables:
            for chunk in _chunks(list(file_paths), 500):
                found = _scan(table, ["text_hash", "vector"], f"{sql_in('file_path', chunk)} AND {HAS_VECTOR}")
                for text_hash, vector in zip(found["text_hash"].to_pylist(),
                                             found["vector"].to_numpy(zero_copy_only=False)):
                    cache[text_hash] = vector
        return cache

    def rows_without_vectors(self, table) -> list[dict]:
        """The rows of `table` still waiting for their vector, with what `embedding_text` reads."""
        columns = [c for c in EMBEDDED_COLUMNS if c in table.schema.names]
        return _scan(table, columns, NO_VECTOR).to_pylist()

    def store_vectors(self, table, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Write the vectors of these rows (matched on id); their other columns stay as they are."""
        schema = pa.schema([table.schema.field("id"), table.schema.field("vector")])
        data = pa.Table.from_arrays([pa.array(list(ids), pa.string()),
                                     pa.FixedSizeListArray.from_arrays(
                                         pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel()),
                                         self.info.embedding_dim)], schema=schema)
        table.merge_insert("id").when_matched_update_all().execute(data)

    def vector_counts(self) -> tuple[int, int]:
        """(rows, rows without a vector yet) over the row tables."""
        return (sum(t.count_rows() for t in self.row_tables),
                sum(t.count_rows(NO_VECTOR) for t in self.row_tables))

    def delete_files(self, file_paths: Sequence[str]) -> None:
        """Remove rows first, manifest entries last (see module docstring)."""
        for chunk in _chunks(list(file_paths), 500):
            for table in self.row_tables:
                table.delete(sql_in("file_path", chunk))
            self.files.delete(sql_in("file_path", chunk))

    def replace_files(self, entries: Sequence[ManifestEntry], rows: Mapping[str, list[dict]]) -> None:
        """Swap in the new rows of these files, by table name (one atomic merge per table: a
        search never sees a file without rows), then record them in the manifest. A row's
        vector may be None: it waits for `fill_vectors` (null, which vector search skips)."""
        if not entries:
            return
        of_files = sql_in("file_path", [entry.file_path for entry in entries])
        for name, table in zip(ROW_TABLES, self.row_tables):
            data = pa.Table.from_pylist(rows.get(name, []), schema=table.schema)
            (table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .when_not_matched_by_source_delete(of_files).execute(data, on_bad_vectors="null"))
        self.update_manifest(entries)

    def update_manifest(self, entries: Sequence[ManifestEntry]) -> None:
        """Write manifest entries (insert or replace by path)."""
        if not entries:
            return
        rows = pa.Table.from_pylist([entry.to_row() for entry in entries], schema=FILES_SCHEMA)
        self.files.merge_insert("file_path").when_matched_update_all().when_not_matched_insert_all().execute(rows)

    def stored_reference_hashes(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for table in self.symbol_tables:
            data = _scan(table, ["id", "references_hash"])
            out.update(zip(data["id"].to_pylist(), data["references_hash"].to_pylist()))
        return out

    def total_references(self) -> int:
        return sum(sum(_scan(t, ["reference_count"])["reference_count"].to_pylist()) for t in self.symbol_tables)

    def update_references(self, table_name: str, updates: list[dict]) -> None:
        """Rewrite only the reference columns of the given rows (matched on id)."""
        if not updates:
            return
        table = self.methods if table_name == "methods" else self.classes
        schema = pa.schema([table.schema.field(n) for n in
                            ("id", "references", "reference_count", "references_hash")])
        for chunk in _chunks(updates, 2000):
            data = pa.Table.from_pylist(list(chunk), schema=schema)
            table.merge_insert("id").when_matched_update_all().execute(data)

    def finish(self) -> None:
        """Create missing indexes, fold new rows into them and compact; old versions go after a
        grace period (a reader may still be on one). The vector index waits for the vectors:
        built while rows still lack theirs, it would hold only some (later rows are searched
        flat until the next compaction folds them in)."""
        for table in self.row_tables:
            rows = table.count_rows()
            if rows == 0:
                continue
            indexed = {tuple(ix.columns) for ix in table.list_indices()}
            if ("vector",) not in indexed and rows >= ANN_MIN_ROWS and not table.count_rows(NO_VECTOR):
                table.create_index("vector", config=HnswSq(distance_type="cosine",
                                                           num_partitions=max(1, rows // 8192)))
            if ("file_path",) not in indexed:  # a search reads the best files' every definition
                table.create_index("file_path", config=BTree())
            text_columns = FTS_COLUMNS + ((FILE_TEXT_COLUMN,) if table is self.modules else ())
            for column in text_columns:
                if (column,) not in indexed:
                    stem = column == "search_text"
                    table.create_index(column, config=FTS(
                        base_tokenizer="whitespace", stem=stem, remove_stop_words=stem,
                        lower_case=True, ascii_folding=False, max_token_length=64))
            table.optimize(cleanup_older_than=timedelta(minutes=10))
        self.files.optimize(cleanup_older_than=timedelta(minutes=10))

    def counts(self) -> dict[str, int]:
        docs = self.classes.count_rows(f"kind = '{DOC_KIND}'")
        return {"methods": self.methods.count_rows(),
                "classes": self.classes.count_rows() - docs,
                "docs": docs,
                "modules": self.modules.count_rows(f"kind = '{MODULE_KIND}'"),
                "files": self.files.count_rows()}


def reuse_vectors(rows: list[dict], cache: Mapping[str, np.ndarray]) -> int:
    """Give each row the vector of its text from `cache` (the replaced rows' vectors), or none
    yet (`fill_vectors` embeds it after the run made the repo searchable); returns how many
    rows wait for a vector."""
    waiting = 0
    for row in rows:
        row["vector"] = cache.get(row["text_hash"])
        waiting += row["vector"] is None
    return waiting


@dataclass(frozen=True)
class EmbeddingBatch:
    """Distinct texts to embed in one call, and the rows (by id) each text's vector goes to."""

    texts: list[str]
    row_ids: list[list[str]]

    @property
    def rows(self) -> int:
        return sum(map(len, self.row_ids))


def embedding_batches(rows: Iterable[Mapping], size: int) -> list[EmbeddingBatch]:
    """Rows waiting for vectors as batches of at most `size` distinct texts, longest first.

    Identical texts (a method copied between files, generated twins) are embedded once; texts
    of like length share a batch, so the model pads little. Longest first, because the first
    batch then sizes the model's buffers and every later one fits in them: shortest first let
    the allocator's heap grow with each longer batch (django/: peak RSS 1,605 MB; flat at the
    first batch's size when the order is reversed)."""
    by_hash: dict[str, tuple[str, list[str]]] = {}
    for row in rows:
        text, ids = by_hash.setdefault(row["text_hash"], (embedding_text(row), []))
        ids.append(row["id"])
    ordered = sorted(by_hash.values(), key=lambda item: -len(item[0]))
    return [EmbeddingBatch([text for text, _ in chunk], [ids for _, ids in chunk])
            for chunk in _chunks(ordered, size)]


def capped_code(code: str) -> str:
    """At most MAX_ROW_CODE_CHARS of `code`, cut after a whole line."""
    if len(code) <= MAX_ROW_CODE_CHARS:
        return code
    cut = code.rfind("\n", 0, MAX_ROW_CODE_CHARS)
    return code[:cut + 1] if cut > 0 else code[:MAX_ROW_CODE_CHARS]


def prepare_row(row: dict) -> dict:
    """Cap the code and add the derived columns (BM25 text fields, text hash, empty references)."""
    row = _derive_text_columns({**row, "code": capped_code(row["code"])})
    row.setdefault("references", [])
    row.setdefault("reference_count", 0)
    row.setdefault("references_hash", "")
    row.setdefault("declaration", False)
    row.setdefault("signatures", [])
    return row


def file_text(file_path: str, text: str) -> str:
    """The whole-file BM25 text of a file row (`FILE_TEXT_COLUMN`)."""
    return code_tokens(file_path + "\n" + text[:FILE_TEXT_CHARS])
