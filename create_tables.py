"""Rows → LanceDB tables: schemas, embeddings, full-text indexes and crash-safe writes.

Per repo there are three tables, namespaced by a prefix derived from the repo name:
`<prefix>__methods`, `<prefix>__classes` (docs sections included, kind `doc`) and
`<prefix>__files`, the manifest of what the other two hold. A registry table
`codeqa_repos` lists repos with their embedding model.

Crash safety comes from ordering, not transactions: a file's rows are replaced (delete,
then one atomic add) before its manifest entry is written, so after a crash the manifest
still holds the old hash and the next run redoes that file; every step is idempotent.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path, PurePosixPath
from datetime import timedelta
from typing import Iterable, Sequence

os.environ.setdefault("LANCEDB_LOG", "error")  # lance warns on every hybrid query otherwise; read at import
import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, HnswSq

from config import Settings
from embeddings import Embedder
from errors import CodeQAError
from records import ManifestEntry, RepoInfo

REGISTRY_TABLE = "codeqa_repos"
TABLE_KINDS = ("methods", "classes", "files")
FTS_COLUMNS = ("search_text", "name_text", "path_text")
MAX_STORED_REFERENCES = 50
EMBED_TEXT_CHARS = 2000
# Above this many rows a table gets an HNSW vector index: flat search of 30,000 rows took
# ~30 ms, HNSW ~5 ms at recall@30 0.99 (Django, 384-d).
ANN_MIN_ROWS = 10_000
SEARCH_CODE_CHARS = 6000  # of a row's code in its BM25 text
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


class ModelMismatchError(IndexStoreError):
    """The repo was indexed with another embedding model than the configured one."""


def symbol_schema(dim: int, with_method_signatures: bool) -> pa.Schema:
    fields = [
        ("id", pa.string()),
        ("repo", pa.string()),
        ("file_path", pa.string()),
        ("language", pa.string()),
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
    ]
    if with_method_signatures:
        fields.append(("method_signatures", pa.list_(pa.string())))
    fields.append(("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


FILES_SCHEMA = pa.schema([  # one row per records.ManifestEntry
    ("file_path", pa.string()),
    ("sha256", pa.string()),
    ("language", pa.string()),
    ("size", pa.int64()),
    ("mtime_ns", pa.int64()),  # added after the first release: older tables get it as 0
    ("non_utf8", pa.bool_()),
    ("has_errors", pa.bool_()),
    ("parsed", pa.string()),  # records.FileParse JSON: symbols, references, imports
])

REGISTRY_SCHEMA = pa.schema([  # one row per records.RepoInfo
    ("name", pa.string()),
    ("root", pa.string()),
    ("prefix", pa.string()),
    ("embedding_model", pa.string()),
    ("embedding_dim", pa.int32()),
    ("created_at", pa.float64()),
    ("indexed_at", pa.float64()),
    ("stats", pa.string()),  # records.RepoStats JSON: summary of the last run
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
    """What makes a row findable by meaning: where it is, what it is, its doc, then its code."""
    header = f"{row['file_path']}\n{row['kind']} {row['qualified_name']}\n"
    if row.get("signature"):
        header += row["signature"] + "\n"
    if row.get("doc"):
        header += row["doc"][:600] + "\n"
    return (header + row.get("code", ""))[:EMBED_TEXT_CHARS]


def _derive_text_columns(row: dict) -> dict:
    code_chars = CLASS_SEARCH_CODE_CHARS if row.get("method_signatures") else SEARCH_CODE_CHARS
    row["search_text"] = code_tokens(" ".join([
        row["qualified_name"], row.get("signature", ""), row.get("doc", ""),
        *row.get("method_signatures", []), row["code"][:code_chars]]))
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


# Columns added to a schema after tables of it were written, and the SQL value old rows get.
_ADDED_COLUMN_DEFAULTS = {"mtime_ns": "CAST(0 AS BIGINT)"}


def _add_missing_columns(table, schema: pa.Schema) -> None:
    """Bring a table an older version wrote up to `schema`: new columns get their defaults."""
    missing = [name for name in schema.names if name not in table.schema.names]
    if missing:
        table.add_columns({name: _ADDED_COLUMN_DEFAULTS[name] for name in missing})


def table_name(info: RepoInfo, kind: str) -> str:
    """The name of one of a repo's tables (`kind`: one of TABLE_KINDS)."""
    return f"{info.prefix}__{kind}"


def open_table(db: lancedb.DBConnection, info: RepoInfo, kind: str):
    """One of a repo's tables, opened (it must exist)."""
    return db.open_table(table_name(info, kind))


def table_prefix(name: str) -> str:
    """A table-name-safe, collision-free prefix for a repo name."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:40] or "repo"
    return f"r_{slug}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"


# --- Registry ---------------------------------------------------------------------------------

def connect(settings: Settings) -> lancedb.DBConnection:
    return lancedb.connect(settings.database_uri)


def _table_names(db: lancedb.DBConnection) -> set[str]:
    names: set[str] = set()
    token = None
    while True:
        page = db.list_tables(page_token=token)
        names.update(page.tables)
        token = page.page_token
        if not token:
            return names


def _registry(db: lancedb.DBConnection):
    if REGISTRY_TABLE in _table_names(db):
        return db.open_table(REGISTRY_TABLE)
    return db.create_table(REGISTRY_TABLE, schema=REGISTRY_SCHEMA, exist_ok=True)


def list_repos(db: lancedb.DBConnection) -> list[RepoInfo]:
    if REGISTRY_TABLE not in _table_names(db):
        return []
    rows = db.open_table(REGISTRY_TABLE).to_arrow().to_pylist()
    return sorted(map(RepoInfo.from_row, rows), key=lambda info: info.name)


def get_repo(db: lancedb.DBConnection, name: str) -> RepoInfo:
    for info in list_repos(db):
        if info.name == name:
            return info
    known = ", ".join(info.name for info in list_repos(db)) or "none"
    raise UnknownRepoError(f"Unknown repo {name!r} (indexed repos: {known}).")


def save_repo(db: lancedb.DBConnection, info: RepoInfo) -> None:
    table = pa.Table.from_pylist([info.to_row()], schema=REGISTRY_SCHEMA)
    _registry(db).merge_insert("name").when_matched_update_all().when_not_matched_insert_all().execute(table)


def remove_repo(db: lancedb.DBConnection, name: str) -> RepoInfo:
    """Drop a repo's tables, then its registry row (so a crash leaves it listed and removable)."""
    info = get_repo(db, name)
    existing = _table_names(db)
    for kind in TABLE_KINDS:
        if table_name(info, kind) in existing:
            db.drop_table(table_name(info, kind))
    _registry(db).delete(f"name = {sql_quote(name)}")
    return info


def is_indexed_file(db: lancedb.DBConnection, info: RepoInfo, file_path: str) -> bool:
    """Whether `file_path` is in the repo's manifest (the web app serves only those files)."""
    name = table_name(info, "files")
    if name not in _table_names(db):
        return False
    return db.open_table(name).count_rows(f"file_path = {sql_quote(file_path)}") > 0


class InvalidPathError(CodeQAError, ValueError):
    """A path that is not a plain repo-relative path (absolute, `..`, backslashes)."""

    http_status = 400


class FileNotIndexedError(IndexStoreError):
    """A well-formed path that is not an indexed file of the repo, or is no longer on disk."""

    http_status = 404


def indexed_file_path(db: lancedb.DBConnection, info: RepoInfo, raw_path: object) -> Path:
    """The on-disk file for a path of this repo's index, refusing anything else.

    The one gate between user-supplied paths and the disk: the web file view, `@file` and
    every other command that reads a file go through it."""
    if not isinstance(raw_path, str) or not raw_path or "\x00" in raw_path or "\\" in raw_path:
        raise InvalidPathError("Invalid path.")
    pure = PurePosixPath(raw_path)
    if pure.is_absolute() or ".." in pure.parts or str(pure) != raw_path:
        raise InvalidPathError("Invalid path: use a path relative to the repository, as in the sources.")
    if not is_indexed_file(db, info, raw_path):
        raise FileNotIndexedError(f"{raw_path} is not an indexed file of {info.name}.")
    root = Path(info.root).resolve()
    target = (root / raw_path).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        raise FileNotIndexedError(f"{raw_path} is no longer in {info.name}'s folder.")
    return target


# --- One repo's tables ------------------------------------------------------------------------

class RepoTables:
    """The methods, classes and files tables of one repo, and the writes the indexer needs."""

    def __init__(self, db: lancedb.DBConnection, info: RepoInfo) -> None:
        self.db = db
        self.info = info
        existing = _table_names(db)
        dim = info.embedding_dim
        self.methods = self._open(existing, "methods", symbol_schema(dim, False))
        self.classes = self._open(existing, "classes", symbol_schema(dim, True))
        self.files = self._open(existing, "files", FILES_SCHEMA)

    def _open(self, existing: set[str], kind: str, schema: pa.Schema):
        name = table_name(self.info, kind)
        if name not in existing:
            return self.db.create_table(name, schema=schema, exist_ok=True)
        table = self.db.open_table(name)
        _add_missing_columns(table, schema)
        return table

    @property
    def symbol_tables(self):
        return (self.methods, self.classes)

    def manifest(self) -> dict[str, ManifestEntry]:
        rows = _scan(self.files, FILES_SCHEMA.names).to_pylist()
        return {r["file_path"]: ManifestEntry.from_row(r) for r in rows}

    def stored_file_paths(self) -> set[str]:
        """Every file path that has rows, manifest or not (finds leftovers of a crash)."""
        paths: set[str] = set()
        for table in self.symbol_tables:
            paths.update(_scan(table, ["file_path"])["file_path"].to_pylist())
        return paths

    def cached_vectors(self, file_paths: Sequence[str]) -> dict[str, np.ndarray]:
        """text_hash → vector for rows about to be replaced, so unchanged symbols skip embedding."""
        cache: dict[str, np.ndarray] = {}
        for table in self.symbol_tables:
            for chunk in _chunks(list(file_paths), 500):
                found = _scan(table, ["text_hash", "vector"], sql_in("file_path", chunk))
                for text_hash, vector in zip(found["text_hash"].to_pylist(),
                                             found["vector"].to_numpy(zero_copy_only=False)):
                    cache[text_hash] = vector
        return cache

    def delete_files(self, file_paths: Sequence[str]) -> None:
        """Remove rows first, manifest entries last (see module docstring)."""
        for chunk in _chunks(list(file_paths), 500):
            for table in self.symbol_tables:
                table.delete(sql_in("file_path", chunk))
            self.files.delete(sql_in("file_path", chunk))

    def replace_files(self, entries: Sequence[ManifestEntry], method_rows: list[dict],
                      class_rows: list[dict]) -> None:
        """Swap in the new rows of these files, then record them in the manifest."""
        paths = [entry.file_path for entry in entries]
        for chunk in _chunks(paths, 500):
            for table in self.symbol_tables:
                table.delete(sql_in("file_path", chunk))
        if method_rows:
            self.methods.add(pa.Table.from_pylist(method_rows, schema=self.methods.schema))
        if class_rows:
            self.classes.add(pa.Table.from_pylist(class_rows, schema=self.classes.schema))
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
        grace period (a reader may still be on one)."""
        for table in self.symbol_tables:
            rows = table.count_rows()
            if rows == 0:
                continue
            indexed = {tuple(ix.columns) for ix in table.list_indices()}
            if ("vector",) not in indexed and rows >= ANN_MIN_ROWS:
                table.create_index("vector", config=HnswSq(distance_type="cosine",
                                                           num_partitions=max(1, rows // 8192)))
            for column in FTS_COLUMNS:
                if (column,) not in indexed:
                    stem = column == "search_text"
                    table.create_index(column, config=FTS(
                        base_tokenizer="whitespace", stem=stem, remove_stop_words=stem,
                        lower_case=True, ascii_folding=False, max_token_length=64))
            table.optimize(cleanup_older_than=timedelta(minutes=10))
        self.files.optimize(cleanup_older_than=timedelta(minutes=10))

    def counts(self) -> dict[str, int]:
        docs = self.classes.count_rows("kind = 'doc'")
        return {"methods": self.methods.count_rows(),
                "classes": self.classes.count_rows() - docs,
                "docs": docs,
                "files": self.files.count_rows()}


def embed_rows(rows: list[dict], embedder: Embedder, cache: dict[str, np.ndarray]) -> int:
    """Fill `vector` for each row, reusing cached vectors by text hash; returns how many were embedded."""
    todo = [row for row in rows if row["text_hash"] not in cache]
    if todo:
        vectors = embedder.embed([embedding_text(row) for row in todo])
        for row, vector in zip(todo, vectors):
            cache[row["text_hash"]] = vector
    for row in rows:
        row["vector"] = cache[row["text_hash"]]
    return len({row["text_hash"] for row in todo})


def prepare_symbol_row(row: dict) -> dict:
    """Add the derived columns (BM25 text fields, text hash, empty references) to a symbol row."""
    row = _derive_text_columns(dict(row))
    row.setdefault("references", [])
    row.setdefault("reference_count", 0)
    row.setdefault("references_hash", "")
    return row
