"""Typed records that cross module boundaries and live in the index, with their stored forms.

The parser's references, the manifest entry of each indexed file and the registry row of each
repo (with its last run's stats) are written by the indexer and read by reference resolution,
search and the web app. Each is one dataclass here, encoded and decoded in one place, so no
module reads these as dicts by key or as lists by position.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

# The qualifier of a member call on an unnamed receiver (`f(x).m()`, `a[0].m()`): not a bare call.
EXPRESSION_QUALIFIER = "()"


@dataclass(frozen=True, slots=True)  # millions of these live through a large repo's references
class Reference:
    """A use of a name, as the parser found it: a call, an instantiation, a type use or a value read."""

    name: str
    kind: str  # call | new | type | read
    qualifier: str | None  # `obj` of `obj.m()`, `Foo` of `Foo::new()`, EXPRESSION_QUALIFIER; None when bare
    line: int
    column: int
    text: str  # the source line, stripped and capped
    enclosing: str | None  # qualified name of the innermost definition around the use


@dataclass(frozen=True, slots=True)
class Binding:
    """What the parser learned a name holds, for resolving `name.m()` to the right `Type.m`.

    kind "var": inside definition `enclosing` (None: the file), variable `name` holds a `type`
    (`x = Cart()`, `x: Cart`, `Cart x`, `c *Cart`, `let x = Cart::new()`, `self.x = Cart()`).
    kind "base": class `enclosing` extends `type`, so its own receiver is a `type` too (`name` "").
    """

    kind: str  # var | base
    name: str
    type: str
    enclosing: str | None


@dataclass(frozen=True, slots=True)
class SymbolInfo:
    """What reference resolution needs to know about one indexed definition."""

    id: str
    file_path: str
    language: str
    kind: str
    name: str
    qualified_name: str
    parent: str | None


@dataclass(frozen=True, slots=True)
class StoredUses:
    """A definition's uses as its row keeps them: the first `MAX_STORED_REFERENCES` (resolved
    ones first; each a `references.Use` as a dict), how many resolve in all, and a digest of
    both ("" for none) that tells whether the row must be rewritten."""

    references: list[dict]
    count: int
    digest: str


_REFERENCE_FIELDS = tuple(f.name for f in fields(Reference))


@dataclass(frozen=True)
class FileParse:
    """One file's definitions, references and imports: the input of reference resolution.

    The manifest keeps it so an edit elsewhere re-resolves references without re-parsing this
    file: its bindings in column `bindings` (every run reads them all to learn the repo's types,
    so they are kept apart from the far larger references), the rest in column `parsed`. The
    stored JSON is compact (lists in field order, without the path and language the manifest
    entry already holds); `to_json`, `bindings_json` and `from_json` are the only code that
    knows that layout.
    """

    file_path: str
    language: str
    symbols: tuple[SymbolInfo, ...] = ()
    references: tuple[Reference, ...] = ()
    imports: tuple[str, ...] = ()
    imported_names: tuple[str, ...] = ()
    bindings: tuple[Binding, ...] = ()

    def to_json(self) -> str:
        return json.dumps(
            {
                "symbols": [[s.id, s.kind, s.name, s.qualified_name, s.parent] for s in self.symbols],
                "references": [[getattr(r, name) for name in _REFERENCE_FIELDS] for r in self.references],
                "imports": list(self.imports),
                "imported_names": list(self.imported_names),
            },
            separators=(",", ":"),
        )

    def bindings_json(self) -> str:
        return json.dumps([[b.kind, b.name, b.type, b.enclosing] for b in self.bindings], separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, file_path: str, language: str, bindings: str = "") -> FileParse:
        """The parse results from their two stored texts; `text` "" reads the bindings alone."""
        data = json.loads(text) if text else {"symbols": [], "references": [], "imports": [], "imported_names": []}
        return cls(
            file_path=file_path,
            language=language,
            symbols=tuple(
                SymbolInfo(
                    id=s[0],
                    file_path=file_path,
                    language=language,
                    kind=s[1],
                    name=s[2],
                    qualified_name=s[3],
                    parent=s[4],
                )
                for s in data["symbols"]
            ),
            references=tuple(Reference(*r) for r in data["references"]),
            imports=tuple(data["imports"]),
            imported_names=tuple(data["imported_names"]),
            bindings=tuple(Binding(*b) for b in json.loads(bindings)) if bindings else (),
        )


@dataclass(frozen=True)
class FileState:
    """One indexed file as the manifest (the `<prefix>__files` table) records it, without its
    parse results: what an index plan compares a walk with (a large repo's parse results are
    hundreds of MB, which a plan never needs)."""

    file_path: str
    sha256: str
    language: str
    size: int
    # Modification time when it was read, or 0: unknown (a manifest from before mtimes were
    # kept) or too recent to trust. 0 never matches, so such a file is hashed on the next run.
    mtime_ns: int
    non_utf8: bool
    has_errors: bool

    def same_stat(self, size: int, mtime_ns: int) -> bool:
        """Whether size and mtime say the file is the one recorded, so it need not be read."""
        return self.mtime_ns != 0 and self.mtime_ns == mtime_ns and self.size == size

    def to_row(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def state_of(cls, row: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of a manifest row, tolerant of rows from before sizes and mtimes were kept."""
        return {
            "file_path": row["file_path"],
            "sha256": row["sha256"],
            "language": row["language"],
            "size": row.get("size") or 0,
            "mtime_ns": row.get("mtime_ns") or 0,
            "non_utf8": bool(row.get("non_utf8")),
            "has_errors": bool(row.get("has_errors")),
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> FileState:
        return cls(**cls.state_of(row))


@dataclass(frozen=True)
class ManifestEntry(FileState):
    """A manifest entry whole: the file's state and its parse results."""

    parsed: str  # FileParse JSON, its bindings apart
    bindings: str  # FileParse.bindings_json()

    @cached_property
    def parse(self) -> FileParse:
        """The decoded parse results (decoded once, on first use)."""
        return FileParse.from_json(self.parsed, self.file_path, self.language, self.bindings)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ManifestEntry:
        return cls(**cls.state_of(row), parsed=row["parsed"], bindings=row.get("bindings") or "")


def _int_map(value: Any) -> dict[str, int]:
    return {str(k): int(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


@dataclass
class RepoStats:
    """The summary of a repo's last index run, shown by `list`, the web app and search (a
    value: the indexer's `IndexReport` counts into one, the registry keeps a copy)."""

    files_by_language: dict[str, int] = field(default_factory=dict)
    files: int = 0
    methods: int = 0
    classes: int = 0
    docs: int = 0
    modules: int = 0  # module-code rows (`module` kind; every file also has one `file` row)
    references: int = 0
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    embedded: int = 0
    rows: int = 0  # searchable rows, file and module rows included
    vectors_pending: int = 0  # rows searchable by text only, until the run's embedding reaches them
    skipped: dict[str, int] = field(default_factory=dict)
    non_utf8: int = 0
    syntax_errors: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def embedded_percent(self) -> int:
        """How many of the rows have their vector, in whole percent (100 only when all do)."""
        if not self.vectors_pending or not self.rows:
            return 100
        return min(99, (self.rows - self.vectors_pending) * 100 // self.rows)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RepoStats:
        """Tolerant of older rows: missing keys take defaults, unknown keys are ignored."""
        counts = {
            f.name: int(data.get(f.name) or 0)
            for f in fields(cls)
            if f.name not in ("files_by_language", "skipped", "timings")
        }
        return cls(
            files_by_language=_int_map(data.get("files_by_language")),
            skipped=_int_map(data.get("skipped")),
            timings={str(k): float(v) for k, v in (data.get("timings") or {}).items()},
            **counts,
        )


_PENDING_KEY = "references_pending"  # kept in the stats JSON, where earlier versions put it


@dataclass(frozen=True)
class RepoInfo:
    """One indexed repo: a row of the `codeqa_repos` registry."""

    name: str
    root: str
    prefix: str  # of the repo's table names
    embedding_model: str
    embedding_dim: int
    created_at: float
    indexed_at: float
    stats: RepoStats = field(default_factory=RepoStats)
    # Set while a run writes and cleared when it has resolved references: still set at the
    # start of a run means the last one was interrupted, so every reference is re-resolved.
    references_pending: bool = False
    # The table layout (store.schema.INDEX_VERSION) the repo was written with; registry rows
    # from before versions were kept are 1.
    index_version: int = 1

    def to_row(self) -> dict[str, Any]:
        stats = self.stats.to_json()
        if self.references_pending:
            stats[_PENDING_KEY] = True
        return {
            "name": self.name,
            "root": self.root,
            "prefix": self.prefix,
            "embedding_model": self.embedding_model,
            "embedding_dim": self.embedding_dim,
            "created_at": self.created_at,
            "indexed_at": self.indexed_at,
            "stats": json.dumps(stats, sort_keys=True),
            "index_version": self.index_version,
        }

    def summary(self) -> dict[str, Any]:
        """What the faces show of a repo (web API, MCP `list_repos`): where it is, its counts.
        While its first index run still writes the rows (`indexed_at` is 0), none has a vector
        yet: 0% embedded, not the 100% that an empty row count would give."""
        stats = self.stats
        return {
            "name": self.name,
            "root": self.root,
            "files": stats.files,
            "methods": stats.methods,
            "classes": stats.classes,
            "docs": stats.docs,
            "references": stats.references,
            "indexed_at": self.indexed_at,
            "languages": stats.files_by_language,
            "embedded_percent": stats.embedded_percent if self.indexed_at else 0,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RepoInfo:
        stats = json.loads(row.get("stats") or "{}")
        return cls(
            name=row["name"],
            root=row["root"],
            prefix=row["prefix"],
            embedding_model=row["embedding_model"],
            embedding_dim=row["embedding_dim"],
            created_at=row["created_at"],
            indexed_at=row["indexed_at"],
            stats=RepoStats.from_json(stats),
            references_pending=bool(stats.get(_PENDING_KEY)),
            index_version=row.get("index_version") or 1,
        )
