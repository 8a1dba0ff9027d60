"""Keep every definition's "used in" list current after an index run changed some files.

A definition's uses depend only on the sites with its name, the definitions sharing that name,
the citing files' imports and bindings, and what the repo's files say about its types (classes,
bases, fields, results). So an edit can change the uses of the names it defines or uses and no
others, and there are two ways to bring those up to date:

- **Re-resolve** a name: every site of it in the repo, read from the parse results of the files
  that mention it. Needed when the name's definitions changed (one added, removed or renamed)
  or when a changed file tells the repo something new about types that a site reads.
- **Patch** a definition's stored list: drop the changed files' old uses and add their new ones.
  Exact when the files' definitions and types are as they were as far as any site reads them
  (the edit of a function's body, the usual one; a new function nothing calls yet): every other
  site then resolves as before. A list cut at
  `MAX_STORED_REFERENCES` is patched only where the cut shows what follows it; otherwise its
  name is re-resolved.

A busy name (`get`, `__init__`) is used in most files of a large repo, so patching is what
makes a one-file re-index of one cheap.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from codeqa.core.records import FileParse, Reference, StoredUses, SymbolInfo
from codeqa.parsing.languages import CONSTRUCTOR_CALLS, table_of
from codeqa.parsing.references import Resolver, Use, changed_calls, is_resolved, use_order
from codeqa.store.create_tables import RepoTables
from codeqa.store.schema import MAX_STORED_REFERENCES

log = logging.getLogger("codeqa.index")

# Past this many names to re-resolve, a re-resolution reads every file rather than filter by each name.
MAX_FILTERED_NAMES = 500
# Rows of new references written at a time: a million-definition repo's would fill gigabytes at once.
REFERENCE_WRITE_ROWS = 10_000


@dataclass(frozen=True)
class ChangedFiles:
    """What the files an index run writes or deletes held before it: their parse results and
    their definitions' stored uses (the run replaces their rows, and their uses with them)."""

    paths: frozenset[str]
    parses: tuple[FileParse, ...]
    uses: dict[str, StoredUses]

    @classmethod
    def read(cls, repo: RepoTables, paths: Iterable[str], indexed: Iterable[str]) -> ChangedFiles:
        """Of `paths`, those `indexed` before are read (the others are new)."""
        paths = frozenset(paths)
        old = sorted(paths & set(indexed))
        return cls(
            paths=paths,
            parses=tuple(parse for chunk in repo.parses(paths=old) for parse in chunk),
            uses=repo.stored_uses(paths=old),
        )


def carry_uses(changed: ChangedFiles | None, parses: Sequence[FileParse], rows: Iterable[dict]) -> None:
    """Give the new rows of changed files (`parses`: their new parse results) the stored uses
    of the definitions they replace, so that a search during the run still sees where those are
    used, and an edit that moved no use rewrites none of them afterwards."""
    if changed is None:
        return
    paths = {parse.file_path for parse in parses}
    moved = _moved_definitions([parse for parse in changed.parses if parse.file_path in paths], parses)
    carried = {new: changed.uses[old] for new, old in moved.items() if old in changed.uses}
    for row in rows:
        if row["id"] in carried:
            row.update(_columns(carried[row["id"]]))


def update_references(repo: RepoTables, changed: ChangedFiles | None) -> tuple[int, int]:
    """Bring the references the change can affect up to date, rewriting only rows whose uses
    changed; `changed=None` re-resolves every name (after an interrupted run). Returns (total
    uses, rows updated)."""
    if changed is not None and not changed.paths:  # a run that wrote nothing moved no use
        return repo.total_references(), 0
    symbols = repo.symbol_infos()
    resolver = Resolver(symbols, repo.binding_parses())
    writes = _Writes(repo)
    if changed is None:
        writes.resolved(symbols, _resolve(resolver, repo.parses(), None), repo.stored_reference_hashes())
    else:
        _update_changed(repo, resolver, symbols, changed, writes)
    updated = writes.done()
    return repo.total_references(), updated


def _update_changed(
    repo: RepoTables, resolver: Resolver, symbols: list[SymbolInfo], changed: ChangedFiles, writes: _Writes
) -> None:
    """Patch what can be patched, re-resolve the names that cannot."""
    after = [parse for chunk in repo.parses(paths=sorted(changed.paths)) for parse in chunk]
    touched = _names_touched([*changed.parses, *after])
    redo = _names_to_resolve_again(repo, changed, after, touched)
    if redo != touched:
        unsure = _patch(repo, resolver, {s.id: s for s in symbols}, changed, after, redo, writes)
        log.debug("references: patched, %d names redefined, %d lists cut too short", len(redo), len(unsure))
        redo |= unsure
    if redo:
        targets = [s for s in symbols if s.name in redo]
        chunks = repo.parses(mentioning=sorted(redo)) if len(redo) <= MAX_FILTERED_NAMES else repo.parses()
        writes.resolved(targets, _resolve(resolver, chunks, redo), repo.stored_reference_hashes())


def _names_touched(parses: Iterable[FileParse]) -> set[str]:
    """Names defined or used (incl. `Foo` of `Foo::new()`) in these files' parse results."""
    names: set[str] = set()
    for parse in parses:
        names.update(symbol.name for symbol in parse.symbols)
        for reference in parse.references:
            names.add(reference.name)
            names.add(_constructed(reference))
    names.discard("")
    return names


def _constructed(reference: Reference) -> str:
    """The class a constructor call names (`Foo` of `Foo::new()`, `a.Foo.__init__()`), else ""."""
    if reference.qualifier and reference.name in CONSTRUCTOR_CALLS:
        return reference.qualifier.split(".")[-1]
    return ""


def _names_to_resolve_again(
    repo: RepoTables, changed: ChangedFiles, after: list[FileParse], touched: set[str]
) -> set[str]:
    """The names whose every site must be resolved again: those whose definitions the change
    added, removed or renamed; all it touched when it added or deleted a file, or changed what a
    file says about types that some site reads, or the class an old site of it was in
    (`changed_calls`: the changed files' old sites are resolved again now, to know which uses
    they made)."""
    before = {parse.file_path: parse for parse in changed.parses}
    now = {parse.file_path: parse for parse in after}
    if before.keys() != changed.paths or now.keys() != changed.paths:
        return touched
    calls: set[str] = set()
    for path in changed.paths:
        found = changed_calls(before[path], now[path])
        if found is None:
            return touched
        calls |= found
    # A call's new meaning reaches only sites that make the call or hold its result (a new
    # function or class nothing calls yet reaches none): a qualifier or a binding's type `k()`
    # or `k().x`, as the stored JSON spells them.
    texts = [f'"{name}(){end}' for name in sorted(calls) for end in '".']
    if texts and (repo.mention(texts) or any(_mentions(parse, texts) for parse in changed.parses)):
        return touched
    redefined: set[str] = set()
    for path in changed.paths:
        old, new = Counter(map(_definition, before[path].symbols)), Counter(map(_definition, now[path].symbols))
        redefined.update(definition[1] for definition in (old - new) + (new - old))
    return redefined


def _mentions(parse: FileParse, texts: list[str]) -> bool:
    stored = parse.to_json() + parse.bindings_json()
    return any(text in stored for text in texts)


def _definition(symbol: SymbolInfo) -> tuple[str, str, str, str | None, str]:
    """A definition as references see it: its id changes with its line, this does not."""
    return (symbol.kind, symbol.name, symbol.qualified_name, symbol.parent, symbol.language)


def _patch(
    repo: RepoTables,
    resolver: Resolver,
    symbols: dict[str, SymbolInfo],
    changed: ChangedFiles,
    after: list[FileParse],
    redo: set[str],
    writes: _Writes,
) -> set[str]:
    """Patch the stored uses of every definition the changed files used or define, but those of
    the names in `redo`; returns the names whose lists could not be patched (to re-resolve)."""
    old, new = _uses_from(resolver, changed.parses), _uses_from(resolver, after)
    moved = _moved_definitions(changed.parses, after)  # their rows were rewritten (`carry_uses`)
    ids = {i for i in old.keys() | new.keys() | moved.keys() if i in symbols and symbols[i].name not in redo}
    now = repo.stored_uses(ids=sorted(ids))
    base = now | {i: changed.uses[moved[i]] for i in ids & moved.keys() if moved[i] in changed.uses}
    unsure: set[str] = set()
    rows = []
    for i in sorted(ids):
        row = base.get(i)
        patched = _patched(row, changed.paths, old.get(i, []), new.get(i, [])) if row else None
        if patched is None:
            unsure.add(symbols[i].name)
        elif i not in now or patched.digest != now[i].digest:
            rows.append((symbols[i], patched))
    writes.patched([(symbol, uses) for symbol, uses in rows if symbol.name not in unsure])
    return unsure


def _patched(row: StoredUses, paths: frozenset[str], old: list[Use], new: list[Use]) -> StoredUses | None:
    """A definition's stored uses with the changed files' old uses swapped for their new ones;
    None when its list was cut and the cut hides which uses now belong in it."""
    kept = [Use(**use) for use in row.references if use["file_path"] not in paths]
    if len(row.references) < MAX_STORED_REFERENCES:  # the row holds all its uses
        kept += new
    else:  # what the cut left out comes after its last use: only new uses before that are sure
        last = _listed(Use(**row.references[-1]))
        kept += [use for use in new if _listed(use) <= last]
        if len(kept) < MAX_STORED_REFERENCES:
            return None
    kept.sort(key=_listed)
    count = row.count - _resolved(old) + _resolved(new)
    return _stored(count, kept)


def _resolved(uses: list[Use]) -> int:
    return sum(is_resolved(use.resolution) for use in uses)


def _moved_definitions(before: Sequence[FileParse], after: Sequence[FileParse]) -> dict[str, str]:
    """New id → old id of the changed files' definitions that are still there (an id changes
    with its line); equal definitions of one file are paired in order."""
    old_ids: dict[tuple, list[str]] = defaultdict(list)
    for parse in before:
        for symbol in parse.symbols:
            old_ids[(parse.file_path, _definition(symbol))].append(symbol.id)
    moved: dict[str, str] = {}
    for parse in after:
        for symbol in parse.symbols:
            same = old_ids.get((parse.file_path, _definition(symbol)))
            if same:
                moved[symbol.id] = same.pop(0)
    return moved


def _uses_from(resolver: Resolver, parses: Iterable[FileParse]) -> dict[str, list[Use]]:
    """The uses these files make, by definition id."""
    uses: dict[str, list[Use]] = defaultdict(list)
    for parse in parses:
        for target, use in resolver.uses_in(parse):
            uses[target].append(use)
    return uses


def _resolve(resolver: Resolver, chunks: Iterable[list[FileParse]], names: set[str] | None) -> dict[str, _UsesOf]:
    """Every use of the files' sites (of `names` only, when given), by definition id. The parse
    results stream past a chunk at a time: the resolver holds the definitions and types, not
    the references."""
    uses: dict[str, _UsesOf] = {}
    for chunk in chunks:
        for parse in chunk:
            if names is not None:
                parse = replace(
                    parse,
                    references=tuple(r for r in parse.references if r.name in names or _constructed(r) in names),
                )
            for target, use in resolver.uses_in(parse):
                uses.setdefault(target, _UsesOf()).add(use)
    return uses


def _listed(use: Use) -> tuple[bool, tuple]:
    """Where a use stands in a row's list: resolved uses first, each kind in `use_order`."""
    return (not is_resolved(use.resolution), use_order(use))


def _stored(count: int, uses: list[Use]) -> StoredUses:
    """What a row keeps of its uses (listed in order): the first MAX_STORED_REFERENCES, how many
    resolve in all, and a digest of both ("" for none), to tell whether a row must be rewritten."""
    references = [use.to_row() for use in uses[:MAX_STORED_REFERENCES]]
    digest = hashlib.sha1(json.dumps([count, references], sort_keys=True).encode()).hexdigest() if uses else ""
    return StoredUses(references, count, digest)


def _columns(row: StoredUses) -> dict:
    """The columns of a definition's row that keep its uses."""
    return {"references": row.references, "reference_count": row.count, "references_hash": row.digest}


class _UsesOf:
    """One definition's uses as they stream in, in any order: how many resolve, and the first
    MAX_STORED_REFERENCES of each kind in `use_order` (what its row keeps)."""

    __slots__ = ("resolved", "matches", "count")

    def __init__(self) -> None:
        self.resolved: list[Use] = []
        self.matches: list[Use] = []
        self.count = 0

    def add(self, use: Use) -> None:
        kept = self.resolved if is_resolved(use.resolution) else self.matches
        self.count += kept is self.resolved
        kept.append(use)
        if len(kept) > 2 * MAX_STORED_REFERENCES:  # amortised: sort and cut now and then
            kept.sort(key=use_order)
            del kept[MAX_STORED_REFERENCES:]

    def stored(self) -> StoredUses:
        return _stored(self.count, sorted(self.resolved, key=use_order) + sorted(self.matches, key=use_order))


class _Writes:
    """The reference updates of one run, written a table's chunk at a time."""

    def __init__(self, repo: RepoTables) -> None:
        self.repo = repo
        self.pending: dict[str, list[dict]] = {"methods": [], "classes": []}
        self.written = 0

    def resolved(self, targets: Iterable[SymbolInfo], uses: dict[str, _UsesOf], stored: dict[str, str]) -> None:
        """Write each target's freshly resolved uses where they differ from its row's."""
        for symbol in targets:
            found = uses.pop(symbol.id, None)  # each is read once: free it as its row is made
            row = found.stored() if found else _stored(0, [])
            if stored.get(symbol.id, row.digest) != row.digest:
                self._add(symbol, row)

    def patched(self, rows: Iterable[tuple[SymbolInfo, StoredUses]]) -> None:
        for symbol, row in rows:
            self._add(symbol, row)

    def _add(self, symbol: SymbolInfo, row: StoredUses) -> None:
        table = table_of(symbol.kind)
        self.pending[table].append({"id": symbol.id, **_columns(row)})
        if len(self.pending[table]) >= REFERENCE_WRITE_ROWS:
            self._flush(table)

    def _flush(self, table: str) -> None:
        rows, self.pending[table] = self.pending[table], []
        self.repo.update_references(table, rows)
        self.written += len(rows)

    def done(self) -> int:
        """Write what is pending; how many rows were updated in all."""
        for table in self.pending:
            self._flush(table)
        return self.written
