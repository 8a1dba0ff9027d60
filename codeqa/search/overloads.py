"""One result per overload set: a declaration (a C prototype in a header, a C++ in-class method
declaration, a stub) stands in a result list only when the repository holds no
implementation of it; otherwise its implementation takes its place and lists its signature.

The parser already folds the declarations of one file into that file's implementation
(`parsing.treesitter`); what crosses files (`ledger.h` declares, `ledger.c` defines) is
grouped here, when results are shown: by language family and qualified name, so that an
implementation in `.c` or `.cpp` answers for a `.h` the indexer read as C or C++. Keeping the
rule at read time keeps incremental indexing simple: editing the `.c` needs no rewrite of the
header's rows.

Search, `@definition` and MCP `find_symbol` all go through `group_declarations`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codeqa.parsing.languages import language_family


@dataclass(frozen=True)
class Signed:
    """What grouping needs to know of one row or hit."""

    language: str
    qualified_name: str
    declaration: bool
    signature: str
    signatures: Sequence[str]

    @property
    def key(self) -> tuple[str, str]:
        return language_family(self.language), self.qualified_name

    @property
    def own_signatures(self) -> list[str]:
        return list(self.signatures) or ([self.signature] if self.signature else [])


@dataclass(frozen=True)
class Placed:
    """One entry of a grouped list: `index` into the rows followed by the extra implementations,
    `at` the row whose place it takes (itself, or the declaration it replaces), and the overload
    set's signatures when grouping added any (else None: leave it as it is)."""

    index: int
    at: int
    signatures: list[str] | None


def signed_row(row: dict) -> Signed:
    """A row of the index (a dict with the row tables' columns) as grouping sees it."""
    return Signed(
        row["language"],
        row["qualified_name"],
        bool(row.get("declaration")),
        row.get("signature") or "",
        row.get("signatures") or [],
    )


def group_rows(rows: list[dict]) -> list[dict]:
    """`group_declarations` of index rows that hold every definition of their names (what
    `@definition` and `find_symbol` read): the rows kept, an implementation with the signatures
    of its declarations."""
    return [
        {**rows[p.index], **({"signatures": p.signatures} if p.signatures else {})}
        for p in group_declarations([signed_row(row) for row in rows])
    ]


def declared_names(rows: Sequence[Signed]) -> list[str]:
    """The qualified names of the declarations among `rows`: what to look implementations up by."""
    return list(dict.fromkeys(row.qualified_name for row in rows if row.declaration))


def group_declarations(rows: Sequence[Signed], implementations: Sequence[Signed] = ()) -> list[Placed]:
    """`rows` in order with each declaration that has an implementation replaced by it.

    The implementation is the first one in `rows`, else the first of `implementations` (rows
    looked up beside them); it takes the place of the first row of its set (declaration or not),
    appears once, and lists the declarations' signatures before its own. A declaration with no
    implementation stays where it is; so do implementations with no declaration among `rows`."""
    pool = list(rows) + list(implementations)
    implementation: dict[tuple[str, str], int] = {}
    for index, row in enumerate(pool):
        if not row.declaration:
            implementation.setdefault(row.key, index)
    declared: dict[int, list[str]] = {}  # implementation → the signatures its declarations bring
    for row in rows:
        if row.declaration and row.key in implementation:
            declared.setdefault(implementation[row.key], []).extend(row.own_signatures)
    placed: list[Placed] = []
    done: set[int] = set()
    for index, row in enumerate(rows):
        target = implementation.get(row.key, index) if row.declaration else index
        if target in done:
            continue
        done.add(target)
        merged = list(dict.fromkeys(declared.get(target, []) + pool[target].own_signatures))
        placed.append(Placed(target, index, merged if target in declared and len(merged) > 1 else None))
    return placed
