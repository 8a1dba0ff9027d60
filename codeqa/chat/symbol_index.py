"""The symbol names and file paths of one indexed repo, in memory: autocomplete and "did you mean".

Loaded once per index version from the tables (names and paths only, never code or vectors),
then every lookup runs in memory: prefixes by bisecting sorted keys, fuzzy matches with
rapidfuzz over the distinct names. That keeps `/api/complete` within a few milliseconds on an
index of 45,000 rows (see bench/complete_bench.py).
"""

from __future__ import annotations

import posixpath
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process
from rapidfuzz.distance import LCSseq

from codeqa.store.reader import RepoReader

MAX_ITEMS = 20
PREFIX_SCAN = 5_000  # prefix matches looked at before ranking (a one-letter prefix matches thousands)
SIMILAR_CUTOFF = 70  # rapidfuzz WRatio (0-100) for a "did you mean"


@dataclass(frozen=True)
class SymbolEntry:
    name: str
    qualified_name: str
    kind: str
    file_path: str
    start_line: int
    reference_count: int

    def completion(self) -> dict:
        return {
            "value": self.qualified_name,
            "label": self.qualified_name,
            "detail": f"{self.kind} · {self.file_path}:{self.start_line}",
            "kind": self.kind,
        }


def _prefixed(keys: Sequence[str], prefix: str, limit: int = PREFIX_SCAN) -> range:
    """Indexes of the sorted `keys` that start with `prefix` (at most `limit` of them)."""
    start = bisect_left(keys, prefix)
    end = start
    while end < len(keys) and end - start < limit and keys[end].startswith(prefix):
        end += 1
    return range(start, end)


class SymbolIndex:
    """Names and paths of one repo. Build with `SymbolIndex(symbols, paths)`."""

    def __init__(self, symbols: Iterable[SymbolEntry], paths: Iterable[str]) -> None:
        self.symbols = sorted(symbols, key=lambda s: (s.name.lower(), -s.reference_count, s.qualified_name))
        self._names = [s.name.lower() for s in self.symbols]
        by_qualified = sorted(range(len(self.symbols)), key=lambda i: self.symbols[i].qualified_name.lower())
        self._qualified_order = by_qualified
        self._qualified = [self.symbols[i].qualified_name.lower() for i in by_qualified]
        self._distinct: dict[str, list[int]] = {}  # lowercased name → symbols with that name
        for index, key in enumerate(self._names):
            self._distinct.setdefault(key, []).append(index)
        self._distinct_keys = list(self._distinct)
        self.paths = sorted(set(paths))
        self._lower_paths = [p.lower() for p in self.paths]
        self._path_order = sorted(range(len(self.paths)), key=lambda i: posixpath.basename(self._lower_paths[i]))
        self._basenames = [posixpath.basename(self._lower_paths[i]) for i in self._path_order]
        self.popular = sorted(self.symbols, key=lambda s: -s.reference_count)[:MAX_ITEMS]

    def __len__(self) -> int:
        return len(self.symbols)

    # --- symbols -----------------------------------------------------------------------------

    def complete_symbols(self, prefix: str, limit: int = MAX_ITEMS) -> list[dict]:
        """Names first by prefix (name, then qualified name), then by fuzzy subsequence."""
        return [s.completion() for s in self._symbols_for(prefix.strip(), limit)]

    def _symbols_for(self, typed: str, limit: int) -> list[SymbolEntry]:
        if not typed:
            return self.popular[:limit]
        key = typed.lower()
        # Same case as typed first, then shorter names; ties keep the most used first.
        by_name = sorted(
            _prefixed(self._names, key), key=lambda i: (not self.symbols[i].name.startswith(typed), len(self._names[i]))
        )
        found: dict[int, None] = dict.fromkeys(by_name)
        for j in _prefixed(self._qualified, key):
            found.setdefault(self._qualified_order[j])
        ordered = list(found)[:limit]
        if len(ordered) < limit:
            ordered += [i for i in self._fuzzy(key, limit) if i not in found][: limit - len(ordered)]
        return [self.symbols[i] for i in ordered]

    def _fuzzy(self, key: str, limit: int) -> list[int]:
        """Symbols whose name holds the typed letters in order (`mkcart` → make_demo_cart), tightest first."""
        matches = process.extract(
            key, self._distinct_keys, scorer=LCSseq.similarity, limit=limit * 4, score_cutoff=len(key)
        )
        ranked = sorted(matches, key=lambda m: (len(m[0]), m[0]))
        return [i for name, _, _ in ranked for i in self._distinct[name]]

    def similar_symbols(self, name: str, limit: int = 5) -> list[SymbolEntry]:
        """The symbols an unknown name was probably meant to be."""
        last = name.replace("::", ".").rsplit(".", 1)[-1].lower()
        close = process.extract(
            last, self._distinct_keys, scorer=fuzz.WRatio, limit=2 * limit, score_cutoff=SIMILAR_CUTOFF
        )
        out: dict[str, SymbolEntry] = {}
        # WRatio finds names that hold the typed one; plain edit distance orders them (typos first).
        for key in sorted((m[0] for m in close), key=lambda k: (-fuzz.ratio(last, k), len(k))):
            for i in self._distinct[key]:
                out.setdefault(self.symbols[i].qualified_name, self.symbols[i])
        for entry in self._symbols_for(last, limit):
            out.setdefault(entry.qualified_name, entry)
        return list(out.values())[:limit]

    # --- paths -------------------------------------------------------------------------------

    def complete_paths(self, prefix: str, limit: int = MAX_ITEMS) -> list[dict]:
        """Paths by prefix, then by file-name prefix, then by fuzzy subsequence."""
        key = prefix.strip()
        key = (key[2:] if key.startswith("./") else key).lower()
        found: dict[int, None] = {}
        for i in _prefixed(self._lower_paths, key, limit):
            found.setdefault(i)
        if key and len(found) < limit:
            for j in _prefixed(self._basenames, key, limit):
                found.setdefault(self._path_order[j])
        if key and len(found) < limit:
            matches = process.extract(
                key, self._lower_paths, scorer=LCSseq.similarity, limit=limit * 2, score_cutoff=len(key)
            )
            for _, _, i in sorted(matches, key=lambda m: (len(m[0]), m[0])):
                found.setdefault(i)
        return [
            {"value": self.paths[i], "label": self.paths[i], "detail": "file", "kind": "file"}
            for i in list(found)[:limit]
        ]

    def similar_paths(self, path: str, limit: int = 5) -> list[str]:
        """The indexed paths an unknown one was probably meant to be (same file name first)."""
        key = path.lower()
        base = posixpath.basename(key)
        same_name = [
            self.paths[self._path_order[j]]
            for j in _prefixed(self._basenames, base, limit)
            if self._basenames[j] == base
        ]
        close = process.extract(key, self._lower_paths, scorer=fuzz.WRatio, limit=limit, score_cutoff=SIMILAR_CUTOFF)
        return list(dict.fromkeys(same_name + [self.paths[i] for _, _, i in close]))[:limit]

    def has_path(self, path: str) -> bool:
        at = bisect_left(self.paths, path)
        return at < len(self.paths) and self.paths[at] == path


def load_symbol_index(reader: RepoReader) -> SymbolIndex:
    """Read one repo's names and paths (no code, no vectors) from its tables."""
    columns = ["name", "qualified_name", "kind", "file_path", "start_line", "reference_count"]
    symbols = [
        SymbolEntry(**{**row, "reference_count": row["reference_count"] or 0}) for row in reader.symbol_names(columns)
    ]
    return SymbolIndex(symbols, reader.file_paths())
