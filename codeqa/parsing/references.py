"""Resolve raw reference sites (names at call/new/type positions) to the definitions they use.

Runs over the whole repo after every index run, from the per-file parse results kept in the
manifest, so an edit in one file updates "used in" lists everywhere without re-parsing.
Resolution stays within a language family; when a name is ambiguous the candidates are
narrowed by qualifier, `self`/`this`, same file, imports and same package, and every use
records which of those decided it.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import asdict, dataclass
from functools import cached_property, lru_cache
from typing import Iterable

from codeqa.parsing.languages import (CALLABLE_KINDS, CONSTRUCTOR_CALLS, INSTANTIABLE_KINDS, SOURCE_EXTENSIONS, VALUE_KINDS,
                       language_family)
from codeqa.core.records import FileParse, Reference, SymbolInfo

SELF_NAMES = frozenset({"self", "this", "Self", "cls", "super"})
# An `obj.m()` matching more definitions than this, with nothing to choose between them, says
# nothing about any of them: it is counted as unresolved rather than attached to all.
MAX_AMBIGUOUS = 4
# What an instantiation or a type use cannot name: functions, macros and values.
_NOT_TYPES = CALLABLE_KINDS | VALUE_KINDS
_MODULE_NOISE = frozenset({"crate", "self", "super", "std", "", ".", ".."})
_SOURCE_EXT = re.compile(r"\.(%s)$" % "|".join(re.escape(ext[1:]) for ext in SOURCE_EXTENSIONS))


class _CitingFile:
    """The file a use is in, with its imports read as path suffixes (worked out on first need)."""

    def __init__(self, parse: FileParse) -> None:
        self.file_path = parse.file_path
        self.imports = parse.imports

    @cached_property
    def _import_suffixes(self) -> frozenset[tuple[str, ...]]:
        """Every trailing run of segments of every import (with and without its last name)."""
        suffixes = set()
        for spec in self.imports:
            module = _module_segments(spec, self.file_path)
            for named in (module, module[:-1]):
                suffixes.update(named[-k:] for k in range(1, len(named) + 1))
        return frozenset(suffixes)

    def import_score(self, candidate_path: str) -> int:
        """How many trailing segments of `candidate_path` (or of its directory) an import of
        this file names; 0 when none does."""
        suffixes = self._import_suffixes
        if not suffixes:
            return 0
        stem = _path_parts(candidate_path)
        return max((k for path in (stem, stem[:-1]) for k in range(len(path), 0, -1)
                    if path[-k:] in suffixes), default=0)


@dataclass(frozen=True)
class Use:
    """A resolved use of a definition, stored with its row."""

    file_path: str
    line: int
    column: int
    text: str
    kind: str  # call | new (instantiation) | type
    resolution: str  # unique | qualified | self | same_file | import | same_package | ambiguous
    caller: str

    def to_row(self) -> dict:
        return asdict(self)


def resolve_references(symbols: Iterable[SymbolInfo],
                       files: Iterable[FileParse]) -> dict[str, list[Use]]:
    """Map each definition id to its uses, sorted by file, line and column."""
    symbols = list(symbols)
    by_name: dict[tuple[str, str], list[SymbolInfo]] = defaultdict(list)
    by_qualified: dict[tuple[str, str], SymbolInfo] = {}
    for symbol in symbols:
        by_name[(language_family(symbol.language), symbol.name)].append(symbol)
        by_qualified.setdefault((symbol.file_path, symbol.qualified_name), symbol)

    uses: dict[str, list[Use]] = defaultdict(list)
    for parse in files:
        fam = language_family(parse.language)
        file = _CitingFile(parse)
        # Within a file a site resolves the same way whenever its name, kind, qualifier and
        # the caller's class are the same (think `self.get(...)` fifty times).
        resolved: dict[tuple, list[tuple[SymbolInfo, str, str]]] = {}
        for site in parse.references:
            caller = by_qualified.get((file.file_path, site.enclosing or ""))
            key = (site.name, site.kind, site.qualifier, _class_of(caller))
            if key not in resolved:
                resolved[key] = _resolve_site(site, file, fam, by_name, caller)
            for target, kind, how in resolved[key]:
                uses[target.id].append(Use(file.file_path, site.line, site.column, site.text,
                                           kind, how, site.enclosing or ""))
    for found in uses.values():
        found.sort(key=lambda u: (u.file_path, u.line, u.column, u.kind))
    return dict(uses)


def _resolve_site(site: Reference, file: _CitingFile, fam: str,
                  by_name: dict[tuple[str, str], list[SymbolInfo]],
                  caller: SymbolInfo | None) -> list[tuple[SymbolInfo, str, str]]:
    """The (definition, use kind, resolution) triples one reference site stands for."""
    found: list[tuple[SymbolInfo, str, str]] = []
    candidates = by_name.get((fam, site.name), [])
    if site.kind == "call":
        if site.name in CONSTRUCTOR_CALLS and site.qualifier and site.qualifier not in SELF_NAMES:
            # `Foo::new()` / `Foo.__init__()` instantiate Foo as well as calling the constructor.
            classes = [s for s in by_name.get((fam, site.qualifier), []) if s.kind in INSTANTIABLE_KINDS]
            found += _pick(classes, "new", site, file, caller)
        methods = [s for s in candidates if s.kind in CALLABLE_KINDS]
        classes = [s for s in candidates if s.kind in INSTANTIABLE_KINDS and not site.qualifier]
        found += _pick(_narrow_call(methods, site, caller), "call", site, file, caller)
        found += _pick(classes, "new", site, file, caller)
    elif site.kind == "new":
        classes = [s for s in candidates if s.kind not in _NOT_TYPES]
        found += _pick(classes, "new", site, file, caller)
    else:
        types = [s for s in candidates if s.kind not in _NOT_TYPES]
        found += _pick(types, "type", site, file, caller)
    return found


def _narrow_call(methods: list[SymbolInfo], site: Reference,
                 caller: SymbolInfo | None) -> list[SymbolInfo]:
    """Drop call candidates the call syntax rules out (a bare `f()` can't reach `Other.f`)."""
    if site.qualifier:
        return methods
    own_class = _class_of(caller)
    return [m for m in methods if m.parent is None or m.parent == own_class]


def _class_of(symbol: SymbolInfo | None) -> str | None:
    if symbol is None:
        return None
    return symbol.parent if symbol.kind in CALLABLE_KINDS or symbol.kind in VALUE_KINDS else symbol.qualified_name


def _pick(candidates: list[SymbolInfo], kind: str, site: Reference, file: _CitingFile,
          caller: SymbolInfo | None) -> list[tuple[SymbolInfo, str, str]]:
    if not candidates:
        return []
    chosen, how = _disambiguate(candidates, site, file, caller)
    return [(symbol, kind, how) for symbol in chosen]


def _disambiguate(candidates: list[SymbolInfo], site: Reference, file: _CitingFile,
                  caller: SymbolInfo | None) -> tuple[list[SymbolInfo], str]:
    qualifier = site.qualifier
    if qualifier in SELF_NAMES:
        own_class = _class_of(caller)
        mine = [c for c in candidates if c.parent and c.parent == own_class]
        if mine:
            return mine, "self"
    elif qualifier:
        owned = [c for c in candidates if c.parent and c.parent.split(".")[-1] == qualifier]
        if owned:
            candidates = owned
            if len(owned) == 1:
                return owned, "qualified"
    if len(candidates) == 1:
        return candidates, "unique"
    same_file = [c for c in candidates if c.file_path == file.file_path]
    if same_file:
        return same_file, "same_file"
    imported = _best_imported(candidates, file)
    if imported:
        return imported, "import"
    directory = _directory(file.file_path)
    same_package = [c for c in candidates if _directory(c.file_path) == directory]
    if same_package:
        return same_package, "same_package"
    return (candidates if len(candidates) <= MAX_AMBIGUOUS else []), "ambiguous"


def _best_imported(candidates: list[SymbolInfo], file: _CitingFile) -> list[SymbolInfo]:
    """Candidates whose file the referencing file imports, best path match first."""
    scored = [(file.import_score(c.file_path), c) for c in candidates]
    best = max((score for score, _ in scored), default=0)
    return [c for score, c in scored if best and score == best]


def _module_segments(spec: str, importer: str) -> tuple[str, ...]:
    spec = spec.strip().strip("'\"<>")
    if spec.startswith("."):
        if "/" in spec:
            spec = posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
        else:  # Python relative import: `.x` / `..x`
            spec = spec.lstrip(".")
    spec = _SOURCE_EXT.sub("", spec)
    return tuple(s.lower() for s in re.split(r"[./:\\]+", spec) if s.lower() not in _MODULE_NOISE)


@lru_cache(maxsize=65536)
def _directory(file_path: str) -> str:
    return posixpath.dirname(file_path)


@lru_cache(maxsize=65536)
def _path_parts(file_path: str) -> tuple[str, ...]:
    return tuple(_SOURCE_EXT.sub("", file_path).lower().split("/"))
