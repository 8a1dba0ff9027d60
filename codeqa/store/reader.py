"""Reading one repo's index: the typed read API that search, the chat and the MCP tools share.

`RepoReader(db, info)` owns the repo's tables of one generation and answers the questions the
rest of CodeQA asks of them: full-text and vector searches narrowed to a `Scope`, rows by id,
by file, by name; the manifest's files and their parse results. Each read sees the table's
newest version. No caller writes a filter: they are built here from `filters`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codeqa.core.records import FileParse, ManifestEntry, RepoInfo
from codeqa.parsing.languages import DOC_KIND, FILE_KIND, VALUE_KINDS
from codeqa.store import filters
from codeqa.store.filters import NO_VECTOR, Where
from codeqa.store.lancedb_import import lancedb_module
from codeqa.store.registry import table_name
from codeqa.store.schema import FILE_TEXT_COLUMN, FILES_SCHEMA, FTS_COLUMNS, SYMBOL_TABLES

if TYPE_CHECKING:
    import lancedb
    import numpy as np
    import pyarrow as pa

Row = dict[str, Any]


@dataclass(frozen=True)
class Scope:
    """What a search is narrowed to: a language, a path prefix, a file role (None: any)."""

    language: str | None = None
    path_prefix: str | None = None
    role: str | None = None

    @property
    def prefix(self) -> str:
        """The path prefix as stored paths begin (`./src` is `src`); "" for any path."""
        return re.sub(r"^(?:\./)+", "", self.path_prefix.strip()) if self.path_prefix else ""

    def where(self) -> Where | None:
        return filters.all_of(
            filters.equals("language", self.language.lower()) if self.language else None,
            filters.starts_with("file_path", self.prefix) if self.prefix else None,
            filters.equals("role", self.role.lower()) if self.role else None,
        )


EVERYWHERE = Scope()


def _implementations(scope: Scope) -> Where | None:
    """The scope's rows that are not declarations (prototypes, signatures without a body)."""
    return filters.all_of(scope.where(), filters.negate(filters.is_true("declaration")))


class RepoReader:
    """Typed reads of one repo's tables (one generation, `info.prefix`); safe to share between threads."""

    holds_rows = False  # store.resident.ResidentReader holds them in memory

    def __init__(self, db: lancedb.DBConnection, info: RepoInfo) -> None:
        self.db = db
        self.info = info
        self._lock = threading.Lock()
        self._tables: dict[str, Any] = {}

    def in_memory(self) -> bool:
        """Whether the searches' reads are answered in memory (store.resident), not by queries."""
        return False

    def renew(self, info: RepoInfo) -> None:
        """The repo's registry row changed (an index run finished); its tables stay the same."""
        self.info = info

    def table(self, kind: str) -> Any:
        """The repo's table `kind`, opened once and moved to its newest version on every call."""
        with self._lock:
            table = self._tables.get(kind)
            if table is None:
                table = self._tables[kind] = self.db.open_table(table_name(self.info, kind))
        table.checkout_latest()
        return table

    def version(self, kind: str) -> tuple[str, int]:
        """(table name, newest version): a key for what a caller derives from the table and keeps."""
        table = self.table(kind)
        return table.name, table.version

    # --- searches ---------------------------------------------------------------------------

    def text_search(
        self,
        kind: str,
        keywords: str,
        scope: Scope,
        columns: Sequence[str],
        limit: int,
        boosts: Sequence[float],
        implementations_only: bool = False,
    ) -> list[Row]:
        """Rows by BM25 over the row text columns (`schema.FTS_COLUMNS`, weighed by `boosts`), best
        first, each with `_score` and `_no_vector` (whether it still waits for its vector)."""
        query = lancedb_module().query.MultiMatchQuery(keywords, list(FTS_COLUMNS), boosts=list(boosts))
        selected = {**{column: column for column in columns}, "_score": "_score", "_no_vector": NO_VECTOR}
        where = _implementations(scope) if implementations_only else scope.where()
        return (
            _prefiltered(self.table(kind).search(query, query_type="fts"), where)
            .select(selected)
            .limit(limit)
            .to_list()
        )

    def vector_search(
        self,
        kind: str,
        vector: Sequence[float] | np.ndarray,
        scope: Scope,
        columns: Sequence[str],
        limit: int,
        ef: int,
        implementations_only: bool = False,
    ) -> list[Row]:
        """Rows by cosine distance to `vector` (rows without a vector yet are not found), each
        with `_distance`; `ef` is the HNSW search breadth where the table has a vector index."""
        builder = self.table(kind).search(vector, query_type="vector").distance_type("cosine").ef(ef)
        columns = [*columns, "_distance"]  # named, so that lance does not warn of its auto-projection
        if implementations_only and scope.where() is None:
            # Declarations are few (2% of a million-row table's methods): dropping them from twice
            # the rows costs less than a filter before an HNSW search (measured: 18 ms against 43).
            rows = builder.where(_implementations(scope), prefilter=False).select(columns).limit(2 * limit).to_list()
            return rows[:limit]
        where = _implementations(scope) if implementations_only else scope.where()
        return _prefiltered(builder, where).select(columns).limit(limit).to_list()

    def file_text_search(self, terms: Sequence[str], scope: Scope, limit: int) -> list[Row]:
        """Files by BM25 over their whole text (`schema.FILE_TEXT_COLUMN`): `file_path`, `role`,
        `language` and `_score` of each file row, best first."""
        where = filters.all_of(filters.equals("kind", FILE_KIND), scope.where())
        query = lancedb_module().query.MatchQuery(" ".join(terms), FILE_TEXT_COLUMN)
        builder = self.table("modules").search(query, query_type="fts")
        return _prefiltered(builder, where).select(["file_path", "role", "language", "_score"]).limit(limit).to_list()

    # --- rows -------------------------------------------------------------------------------

    def rows_by_ids(
        self, kind: str, ids: Sequence[str], columns: Sequence[str], paths: Sequence[str] | None = None
    ) -> list[Row]:
        """The rows of table `kind` with these ids (`paths`, when given, the files that hold them:
        the B-tree index on `file_path` narrows the read)."""
        where = filters.all_of(
            filters.is_in("file_path", paths) if paths is not None else None, filters.is_in("id", ids)
        )
        return self._rows(kind, where, columns, len(ids))

    def rows_in_files(self, kind: str, paths: Sequence[str], columns: Sequence[str], limit: int) -> pa.Table:
        """The definitions and module code (no docs sections, no file rows) of these files, as Arrow."""
        where = filters.all_of(
            filters.is_in("file_path", paths), filters.negate(filters.is_in("kind", [DOC_KIND, FILE_KIND]))
        )
        return self.table(kind).search().where(where).select(list(columns)).limit(limit).to_arrow()

    def rows_named(
        self, kind: str, names: Sequence[str], tails: Sequence[str], scope: Scope, columns: Sequence[str], limit: int
    ) -> list[Row]:
        """Rows whose qualified name or name is one of `names`, or (docs sections aside) whose
        name is one of `tails` (the last part of a dotted name a question mentions)."""
        named = [filters.is_in("qualified_name", names), filters.is_in("name", names)]
        if tails:
            named.append(filters.both(filters.is_in("name", tails), filters.not_equals("kind", DOC_KIND)))
        return self._rows(kind, filters.all_of(filters.any_of(named), scope.where()), columns, limit)

    def implementations_of(
        self, kind: str, qualified_names: Sequence[str], scope: Scope, columns: Sequence[str], limit: int
    ) -> list[Row]:
        """Rows with these qualified names that are not declarations: where a prototype's code is."""
        where = filters.all_of(filters.is_in("qualified_name", qualified_names), _implementations(scope))
        return self._rows(kind, where, columns, limit)

    def file_rows_named(
        self, paths: Sequence[str], stem: str | None, scope: Scope, columns: Sequence[str], limit: int
    ) -> list[Row]:
        """The `file` rows of files a question names: a path or a path's tail (`src/view.js`,
        `view.js`), or, given `stem`, any file named `stem.<extension>`."""
        named = [
            filters.any_of([filters.equals("file_path", path), filters.ends_with("file_path", "/" + path)])
            for path in paths
        ]
        if stem:
            named.append(filters.starts_with("name", stem + "."))
        if not named:
            return []
        where = filters.all_of(filters.equals("kind", FILE_KIND), filters.any_of(named), scope.where())
        return self._rows("modules", where, columns, limit)

    def file_rows(self, columns: Sequence[str]) -> list[Row]:
        """Every file's `file` row (one per indexed file with text)."""
        return self._rows("modules", filters.equals("kind", FILE_KIND), columns, None)

    # --- definitions (the symbol tables, docs sections left out) -------------------------------

    def definitions_named(self, name: str, columns: Sequence[str], limit: int | None = 200) -> list[Row]:
        """Definitions whose qualified name is `name` or ends with `.name`, or whose name is `name`."""
        where = filters.any_of(
            [
                filters.equals("qualified_name", name),
                filters.equals("name", name),
                filters.ends_with("qualified_name", "." + name),
            ]
        )
        return self._definitions(where, columns, limit)

    def definitions_with_names(
        self, names: Sequence[str], columns: Sequence[str], limit: int | None = 200
    ) -> list[Row]:
        """Definitions whose (unqualified) name is one of `names`."""
        return self._definitions(filters.is_in("name", names), columns, limit)

    def definitions_by_ids(self, ids: Sequence[str], columns: Sequence[str]) -> list[Row]:
        return self._definitions(filters.is_in("id", ids), columns, 200)

    def outline(self, path: str, columns: Sequence[str]) -> list[Row]:
        """A file's functions, classes and the like (and docs sections): not its constants and variables."""
        where = filters.all_of(
            filters.equals("file_path", path), filters.negate(filters.is_in("kind", sorted(VALUE_KINDS)))
        )
        return [row for kind in SYMBOL_TABLES for row in self._rows(kind, where, columns, None)]

    def symbol_names(self, columns: Sequence[str]) -> list[Row]:
        """Every definition's `columns` (no code, no vectors): what the chat's name index holds."""
        where = filters.not_equals("kind", DOC_KIND)
        return [
            row
            for kind in SYMBOL_TABLES
            for row in self.table(kind).search().where(where).select(list(columns)).limit(None).to_arrow().to_pylist()
        ]

    # --- files (the manifest) -----------------------------------------------------------------

    def file_paths(self) -> list[str]:
        """Every indexed file's path."""
        return self.table("files").search().select(["file_path"]).limit(None).to_arrow()["file_path"].to_pylist()

    def manifest_entry(self, path: str) -> ManifestEntry | None:
        """The manifest's entry of one file, None when it is not an indexed file."""
        rows = self._rows("files", filters.equals("file_path", path), FILES_SCHEMA.names, None)
        return ManifestEntry.from_row(rows[0]) if rows else None

    def file_parses(self, paths: Sequence[str]) -> list[FileParse]:
        """The parse results (definitions, references, imports) the manifest keeps for these files."""
        return self._parses(filters.is_in("file_path", paths))

    def file_parses_mentioning(self, names: Sequence[str]) -> list[FileParse]:
        """The parse results of every file that defines or uses one of `names` (as a whole name)."""
        return self._parses(filters.any_of(filters.contains("parsed", f'"{name}"') for name in names))

    def file_parses_holding(self, text: str) -> list[FileParse]:
        """The parse results of every file whose stored parse holds `text` anywhere (a module
        name among its imports, say): a prefilter, the caller checks what it needs."""
        return self._parses(filters.contains("parsed", text))

    # --- helpers --------------------------------------------------------------------------------

    def _rows(self, kind: str, where: Where | None, columns: Sequence[str], limit: int | None) -> list[Row]:
        query = self.table(kind).search()
        if where:
            query = query.where(where)
        return query.select(list(columns)).limit(limit).to_list()

    def _definitions(self, where: Where, columns: Sequence[str], limit: int | None) -> list[Row]:
        kept = filters.all_of(where, filters.not_equals("kind", DOC_KIND))
        return [row for kind in SYMBOL_TABLES for row in self._rows(kind, kept, columns, limit)]

    def _parses(self, where: Where) -> list[FileParse]:
        rows = self._rows("files", where, ["file_path", "language", "parsed", "bindings"], None)
        return [FileParse.from_json(r["parsed"], r["file_path"], r["language"], r["bindings"]) for r in rows]


def _prefiltered(builder: Any, where: Where | None) -> Any:
    return builder.where(where, prefilter=True) if where else builder
