"""Creating and writing a repo's tables: the index's one writer (the indexer drives it).

Crash safety comes from ordering, not transactions: a file's rows are replaced (one atomic
merge per table) before its manifest entry is written, so after a crash the manifest still
holds the old hash and the next run redoes that file; every step is idempotent.

Duplicates are impossible by construction: every table declares its key (`id`, `file_path`,
`name`) its primary key and is written only by merge-inserts on it, and LanceDB's commit
rejects a concurrent merge that inserts a key another one just inserted (the loser retries
against the winner's rows). `lease.py` keeps to one run per repo on top of that.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from codeqa.core.records import FileParse, FileState, ManifestEntry, RepoInfo, StoredUses, SymbolInfo
from codeqa.parsing.languages import DOC_KIND, MODULE_KIND
from codeqa.store import filters
from codeqa.store.connection import open_or_create_table, table_names
from codeqa.store.filters import HAS_VECTOR, NO_VECTOR, Where
from codeqa.store.lancedb_import import lancedb_module
from codeqa.store.registry import table_name
from codeqa.store.rows import EMBEDDED_COLUMNS
from codeqa.store.schema import (
    ANN_MIN_ROWS,
    FILE_TEXT_COLUMN,
    FILES_SCHEMA,
    FTS_COLUMNS,
    MAX_TOKEN_BYTES,
    ROW_TABLES,
    STEMMED_COLUMNS,
    row_schema,
)

if TYPE_CHECKING:
    import lancedb

DELETE_CHUNK = 500  # file paths per delete or vector read: bounds the length of one filter
OLD_VERSIONS_KEPT = timedelta(minutes=10)  # a reader still on an older version finishes its query
OPTIMIZE_ALWAYS_BELOW = 100_000  # rows: a smaller table is optimized after every run (seconds at most)
OPTIMIZE_UNINDEXED_SHARE = 0.01  # of a larger table's rows, outside its indexes, before it is optimized
OPTIMIZE_SMALL_FRAGMENTS = 32  # each run adds a few small fragments to a table; many slow every read


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _scan(table: Any, columns: list[str], where: Where | None = None) -> pa.Table:
    """Read only some columns (never the vectors unless asked) of the matching rows."""
    query = table.search().select(columns).limit(None)
    return (query.where(where) if where else query).to_arrow()


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

    def _open(self, existing: set[str], kind: str, schema: pa.Schema) -> Any:
        name = table_name(self.info, kind)
        if name not in existing:
            return self.db.create_table(name, schema=schema, exist_ok=True)
        return open_or_create_table(self.db, name, schema)

    @property
    def symbol_tables(self) -> tuple[Any, Any]:
        """The tables of definitions (and docs sections): the ones references are resolved for."""
        return (self.methods, self.classes)

    @property
    def row_tables(self) -> tuple[Any, Any, Any]:
        """Every table of searchable rows (`ROW_TABLES`)."""
        return (self.methods, self.classes, self.modules)

    def file_states(self) -> dict[str, FileState]:
        """Every indexed file's state (hash, size, mtime; not its parse results), by path."""
        columns = [name for name in FILES_SCHEMA.names if name != "parsed"]
        return {r["file_path"]: FileState.from_row(r) for r in _scan(self.files, columns).to_pylist()}

    def parses(
        self, paths: Sequence[str] | None = None, mentioning: Sequence[str] | None = None, chunk_rows: int = 2048
    ) -> Iterator[list[FileParse]]:
        """The parse results the manifest keeps, a chunk of files at a time (a large repo's are
        hundreds of MB, never all in memory at once): of every file, of `paths`, or of the files
        whose parse results hold one of the names `mentioning` (defined, used or imported, or
        last in a dotted name: `crate.a.Foo` of `crate::a::Foo::new()` mentions `Foo`)."""
        wheres: list[Where | None]
        if paths is not None:
            wheres = [filters.is_in("file_path", part) for part in _chunks(list(paths), DELETE_CHUNK)]
        elif mentioning is not None:
            wheres = [
                filters.any_of(filters.contains("parsed", f'{lead}{name}"') for name in part for lead in '".')
                for part in _chunks(list(mentioning), DELETE_CHUNK)
            ]
        else:
            wheres = [None]
        for where in wheres:
            for rows in self._scan_batches(["file_path", "language", "parsed", "bindings"], where, chunk_rows):
                yield [FileParse.from_json(r["parsed"], r["file_path"], r["language"], r["bindings"]) for r in rows]

    def mention(self, texts: Sequence[str]) -> bool:
        """Whether any file's parse results (bindings included) hold one of these texts."""
        columns = ("parsed", "bindings")
        where = filters.any_of(filters.contains(column, text) for column in columns for text in texts)
        return self.files.count_rows(where) > 0

    def binding_parses(self, chunk_rows: int = 8192) -> Iterator[FileParse]:
        """Every file's bindings alone (what its names hold, its classes' bases), as parse results."""
        for rows in self._scan_batches(["file_path", "language", "bindings"], None, chunk_rows):
            yield from (FileParse.from_json("", r["file_path"], r["language"], r["bindings"]) for r in rows)

    def symbol_infos(self) -> list[SymbolInfo]:
        """Every definition references can point at (no docs sections, no declarations): what
        `FileParse.symbols` holds, read from the definition tables' columns, not the manifest's JSON."""
        columns = [f.name for f in fields(SymbolInfo)]
        where = filters.all_of(filters.not_equals("kind", DOC_KIND), filters.negate(filters.is_true("declaration")))
        found = [_scan(table, columns, where) for table in self.symbol_tables]
        # Column by column: a million definitions' rows as dicts first took a third longer.
        return [SymbolInfo(*row) for data in found for row in zip(*(data[c].to_pylist() for c in columns), strict=True)]

    def _scan_batches(self, columns: list[str], where: Where | None, chunk_rows: int) -> Iterator[list[dict]]:
        query = self.files.search().select(columns).limit(None)
        for batch in (query.where(where) if where else query).to_batches(chunk_rows):
            yield batch.to_pylist()

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
            for chunk in _chunks(list(file_paths), DELETE_CHUNK):
                found = _scan(
                    table, ["text_hash", "vector"], filters.all_of(filters.is_in("file_path", chunk), HAS_VECTOR)
                )
                for text_hash, vector in zip(
                    found["text_hash"].to_pylist(), found["vector"].to_numpy(zero_copy_only=False), strict=False
                ):
                    cache[text_hash] = vector
        return cache

    def rows_without_vectors(self, table: Any, chunk_rows: int = 8192) -> Iterator[list[dict]]:
        """The rows of `table` still waiting for their vector, with what `embedding_text` reads,
        a chunk at a time (a large repo's rows never sit in memory at once). The scan reads the
        table's version as it was when it started, so vectors written meanwhile don't move it."""
        columns = [c for c in EMBEDDED_COLUMNS if c in table.schema.names]
        reader = table.search().where(NO_VECTOR).select(columns).limit(None).to_batches(chunk_rows)
        for batch in reader:
            yield batch.to_pylist()

    def store_vectors(self, table: Any, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Write the vectors of these rows (matched on id); their other columns stay as they are."""
        schema = pa.schema([table.schema.field("id"), table.schema.field("vector")])
        data = pa.Table.from_arrays(
            [
                pa.array(list(ids), pa.string()),
                pa.FixedSizeListArray.from_arrays(
                    pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel()), self.info.embedding_dim
                ),
            ],
            schema=schema,
        )
        table.merge_insert("id").when_matched_update_all().execute(data)

    def vector_counts(self) -> tuple[int, int]:
        """(rows, rows without a vector yet) over the row tables."""
        return (sum(t.count_rows() for t in self.row_tables), sum(t.count_rows(NO_VECTOR) for t in self.row_tables))

    def delete_files(self, file_paths: Sequence[str]) -> None:
        """Remove rows first, manifest entries last (see module docstring)."""
        for chunk in _chunks(list(file_paths), DELETE_CHUNK):
            for table in self.row_tables:
                table.delete(filters.is_in("file_path", chunk))
            self.files.delete(filters.is_in("file_path", chunk))

    def replace_files(self, entries: Sequence[ManifestEntry], rows: Mapping[str, list[dict]]) -> None:
        """Swap in the new rows of these files, by table name (one atomic merge per table: a
        search never sees a file without rows), then record them in the manifest. A row's
        vector may be None: it waits for `fill_vectors` (null, which vector search skips)."""
        if not entries:
            return
        of_files = filters.is_in("file_path", [entry.file_path for entry in entries])
        for name, table in zip(ROW_TABLES, self.row_tables, strict=False):
            data = pa.Table.from_pylist(rows.get(name, []), schema=table.schema)
            (
                table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(of_files)
                .execute(data, on_bad_vectors="null")
            )
        self.update_manifest(entries)

    def add_files(self, entries: Sequence[ManifestEntry], rows: Mapping[str, list[dict]]) -> None:
        """Append the rows of files that have none yet (a new generation's), then their manifest
        entries. Appending skips the merge's join with every row already written, which grows
        with the table; a crash between the writes leaves rows without a manifest entry, which
        the next run's plan finds (`stored_file_paths`) and replaces."""
        if not entries:
            return
        for name, table in zip(ROW_TABLES, self.row_tables, strict=False):
            if rows.get(name):
                table.add(pa.Table.from_pylist(rows[name], schema=table.schema), on_bad_vectors="null")
        self.files.add(pa.Table.from_pylist([entry.to_row() for entry in entries], schema=FILES_SCHEMA))

    def record_states(self, states: Sequence[FileState]) -> None:
        """Write new sizes and mtimes of files whose content is unchanged (their parse results stay)."""
        if not states:
            return
        schema = pa.schema([self.files.schema.field(name) for name in ("file_path", "size", "mtime_ns")])
        data = pa.Table.from_pylist(
            [{"file_path": s.file_path, "size": s.size, "mtime_ns": s.mtime_ns} for s in states], schema=schema
        )
        self.files.merge_insert("file_path").when_matched_update_all().execute(data)

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
            out.update(zip(data["id"].to_pylist(), data["references_hash"].to_pylist(), strict=False))
        return out

    def stored_uses(self, ids: Sequence[str] = (), paths: Sequence[str] = ()) -> dict[str, StoredUses]:
        """The stored uses of the definitions with these ids and of those in these files, by id."""
        wheres = [filters.is_in("id", chunk) for chunk in _chunks(list(ids), DELETE_CHUNK)]
        wheres += [filters.is_in("file_path", chunk) for chunk in _chunks(list(paths), DELETE_CHUNK)]
        out: dict[str, StoredUses] = {}
        for table in self.symbol_tables:
            for where in wheres:
                for row in _scan(table, ["id", "references", "reference_count", "references_hash"], where).to_pylist():
                    out[row["id"]] = StoredUses(row["references"], row["reference_count"], row["references_hash"])
        return out

    def total_references(self) -> int:
        return sum(sum(_scan(t, ["reference_count"])["reference_count"].to_pylist()) for t in self.symbol_tables)

    def update_references(self, table_name: str, updates: list[dict]) -> None:
        """Rewrite only the reference columns of the given rows (matched on id)."""
        if not updates:
            return
        table = self.methods if table_name == "methods" else self.classes
        _index_ids(table)
        schema = pa.schema([table.schema.field(n) for n in ("id", "references", "reference_count", "references_hash")])
        for chunk in _chunks(updates, 2000):
            data = pa.Table.from_pylist(list(chunk), schema=schema)
            table.merge_insert("id").when_matched_update_all().execute(data)

    def finish(self, fold: bool = True) -> None:
        """Build the indexes a table lacks, and compact and fold new rows into the ones it has
        once enough has changed (`_needs_optimize`); then, too, old versions go, after a grace
        period (a reader may still be on one). Compaction comes before a new index, so that the
        index is not optimized again at once, which costs an HNSW index as much as building it
        (measured: 14.5 s for 130,000 rows, each time). The vector index waits for the vectors:
        built while rows still lack theirs, it would hold only some (later rows are searched
        flat until the next compaction folds them in). Without `fold` (a watcher's run: it folds
        once the tree is quiet), only missing indexes are built."""
        for table in self.row_tables:
            rows = table.count_rows()
            if rows == 0:
                continue
            _cover_ids(table, rows)
            missing = self._missing_indexes(table, rows)
            if missing or (fold and _needs_optimize(table, rows)):
                table.optimize(cleanup_older_than=OLD_VERSIONS_KEPT)
            for column, config in missing:
                table.create_index(column, config=config)
        if fold:
            self.files.optimize(cleanup_older_than=OLD_VERSIONS_KEPT)

    def _missing_indexes(self, table: lancedb.table.Table, rows: int) -> list[tuple[str, object]]:
        """(column, index config) of each index `table` should have and has not."""
        FTS, BTree, HnswSq = (getattr(lancedb_module().index, name) for name in ("FTS", "BTree", "HnswSq"))
        indexed = {tuple(ix.columns) for ix in table.list_indices()}
        wanted: list[tuple[str, object]] = []
        if ("vector",) not in indexed and rows >= ANN_MIN_ROWS and not table.count_rows(NO_VECTOR):
            wanted.append(("vector", HnswSq(distance_type="cosine", num_partitions=max(1, rows // 8192))))
        wanted += [(column, BTree()) for column in ("file_path", "id") if (column,) not in indexed]
        text_columns = FTS_COLUMNS + ((FILE_TEXT_COLUMN,) if table is self.modules else ())
        for column in text_columns:
            if (column,) not in indexed:
                stem = column in STEMMED_COLUMNS
                config = FTS(
                    base_tokenizer="whitespace",
                    stem=stem,
                    remove_stop_words=stem,
                    lower_case=True,
                    ascii_folding=False,
                    max_token_length=MAX_TOKEN_BYTES,
                )
                wanted.append((column, config))
        return wanted

    def counts(self) -> dict[str, int]:
        docs = self.classes.count_rows(filters.equals("kind", DOC_KIND))
        return {
            "methods": self.methods.count_rows(),
            "classes": self.classes.count_rows() - docs,
            "docs": docs,
            "modules": self.modules.count_rows(filters.equals("kind", MODULE_KIND)),
            "files": self.files.count_rows(),
        }


def _needs_optimize(table: lancedb.table.Table, rows: int) -> bool:
    """Whether to compact `table` and fold its new rows into its indexes now. Rows outside an
    index are still found (searched flat beside it) but not ranked quite as they would be
    inside it (BM25 over them differs: on the realistic eval's incremental snapshots, two C and
    Rust functions fell out of the top 10), so a table is kept fully indexed unless that is
    expensive: at a million rows, optimizing after a one-file edit took minutes, every index of
    every table rewritten. So a large table waits until 1% of its rows are outside an index or
    small fragments pile up (LanceDB advises optimizing after about 100,000 changed rows)."""
    if rows < OPTIMIZE_ALWAYS_BELOW:
        return True
    stats: Any = table.stats()  # typed as a dataclass, returned as a dict (lancedb 0.40)
    if stats["fragment_stats"]["num_small_fragments"] >= OPTIMIZE_SMALL_FRAGMENTS:
        return True
    indexes = (table.index_stats(ix.name) for ix in table.list_indices())
    unindexed = max((ix.num_unindexed_rows for ix in indexes if ix), default=0)
    return unindexed >= OPTIMIZE_UNINDEXED_SHARE * rows


def _cover_ids(table: lancedb.table.Table, rows: int) -> None:
    """Index the `id` column again where writes in place left it uncovered. A merge that writes
    some columns of existing rows (`update_references`, `store_vectors`: the id and the new
    values) rewrites those columns of every fragment it touches, and LanceDB 0.40 then counts
    all the rows of those fragments outside the indexes on them: for `id`, most of the table.
    The rows did not change, and a new BTree of a million ids takes 0.2 s; left so, a large
    table looked unindexed to `_needs_optimize`, which then folded every index of it after
    each edit that moved a use. A small table is optimized anyway."""
    if rows < OPTIMIZE_ALWAYS_BELOW:
        return
    index = next((ix for ix in table.list_indices() if list(ix.columns) == ["id"]), None)
    stats = table.index_stats(index.name) if index is not None else None
    if stats is not None and stats.num_unindexed_rows >= OPTIMIZE_UNINDEXED_SHARE * rows:
        table.create_index("id", config=lancedb_module().index.BTree(), replace=True)


def _index_ids(table: lancedb.table.Table) -> None:
    """Give a table its `id` index if it has rows and none yet. A merge on `id` without one reads
    every row of the table, all columns (measured: +1.7 GB and 2.3 s per 10,000 rows merged into
    130,000), with one it reads the matched rows alone (0.1 s, no growth); rows added later are
    searched beside the index until `optimize` folds them in."""
    if ("id",) not in {tuple(ix.columns) for ix in table.list_indices()} and table.count_rows():
        table.create_index("id", config=lancedb_module().index.BTree())
