"""Resolve raw reference sites (names at call/new/type positions, and values read) to the
definitions they use.

Runs over the whole repo after every index run, from the per-file parse results kept in the
manifest, so an edit in one file updates "used in" lists everywhere without re-parsing.
Resolution stays within a language family. A call `x.m()` counts for `C.m` only when `x` is
known to be a `C`: the caller's own receiver (`self`, `this`, `cls`: the caller's class or one
of its bases), a variable, parameter or field the parser saw constructed or declared as a `C`
(`Binding`), `C` itself (`C.m()`, `C::new()`), an imported module, or `m` being the only
callable of its name in the repo. A receiver known to be of a type that has no `m` (`sb =
StringBuilder()`, an external class) uses nothing here. Anything else is a *name match*
(resolution "name"): kept so a reader can see it, but not counted as a use. A bare `f()` is
narrowed by the caller's class, same file, imports and same package. A value read (`read`: a
bare `MAX_ITEMS`, `settings.MAX_ITEMS`, `Limits::MAX`) reaches only the named values
(`VALUE_KINDS`): a bare one like a bare call, a qualified one through the module the qualifier
imports or the type it names. Every use records which rule decided it (`RESOLUTIONS`).
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, fields
from functools import cached_property, lru_cache

from codeqa.core.records import FileParse, Reference, SymbolInfo
from codeqa.parsing.languages import (
    CALLABLE_KINDS,
    CONSTRUCTOR_CALLS,
    INSTANTIABLE_KINDS,
    LANGUAGES,
    SOURCE_EXTENSIONS,
    VALUE_KINDS,
    LanguageSpec,
    language_family,
)

# How a use was attributed, surest first; every one but NAME_MATCH is a resolved use.
NAME_MATCH = "name"
RESOLUTIONS = ("qualified", "self", "typed", "module", "unique", "same_file", "import", "same_package", NAME_MATCH)
# A use matching more definitions than this, with nothing to choose between them, says
# nothing about any of them: it is dropped rather than attached to all as name matches. Name
# matches are shown apart and never counted, so a handful are worth listing (click has 5
# `invoke` methods).
MAX_AMBIGUOUS = 8
MAX_BASE_DEPTH = 8  # inheritance levels searched for a receiver's method
# What an instantiation or a type use cannot name: functions, macros and values.
_NOT_TYPES = CALLABLE_KINDS | VALUE_KINDS
_INTERFACE_KINDS = frozenset({"interface", "trait"})
_MODULE_NOISE = frozenset({"crate", "self", "super", "std", "", ".", ".."})
_SOURCE_EXT = re.compile(r"\.({})$".format("|".join(re.escape(ext[1:]) for ext in SOURCE_EXTENSIONS)))
_DEFAULT_SPEC = LanguageSpec(name="", extensions=(), grammar=lambda: None, queries=(), body_types=frozenset())


def is_resolved(resolution: str) -> bool:
    """Whether a use counts: everything but a name match."""
    return resolution != NAME_MATCH


class _CitingFile:
    """The file a use is in: its imports read as path suffixes, its bindings by scope."""

    def __init__(self, parse: FileParse) -> None:
        self.file_path = parse.file_path
        self.imports = parse.imports
        self.spec = LANGUAGES.get(parse.language, _DEFAULT_SPEC)
        self.bindings: dict[tuple[str | None, str], set[str]] = defaultdict(set)
        for binding in parse.bindings:
            if binding.kind == "var":
                self.bindings[(binding.enclosing, binding.name)].add(binding.type)
        # Names an import binds: `from a import b` -> b, `import a.b` -> a, Go's `x/y/render` -> render.
        self.imported = frozenset(parse.imported_names) | frozenset(
            part for spec in parse.imports for part in _import_handles(spec)
        )

    def external_imports(self, repo_names: frozenset[str]) -> frozenset[str]:
        """Handles of the imports whose module is no file or directory of the repo (`strings`,
        `github.com/stretchr/testify/require`): a call through one reaches nothing here."""
        return frozenset(
            part
            for spec in self.imports
            if _import_handles(spec) and _import_handles(spec)[-1].lower() not in repo_names
            for part in _import_handles(spec)
        )

    @cached_property
    def _import_suffixes(self) -> frozenset[tuple[str, ...]]:
        """Every trailing run of segments of every import (with and without its last name)."""
        suffixes: set[tuple[str, ...]] = set()
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
        return max(
            (k for path in (stem, stem[:-1]) for k in range(len(path), 0, -1) if path[-k:] in suffixes), default=0
        )

    def bound(self, name: str, scope: str | None) -> set[str] | None:
        """The types `name` is bound to in `scope` or a scope around it (the file last)."""
        while True:
            types = self.bindings.get((scope, name))
            if types:
                return types
            if scope is None:
                return None
            scope = scope.rsplit(".", 1)[0] if "." in scope else None


class _Types:
    """What the repo's classes are made of: their bases and their fields' types, by simple name."""

    def __init__(self, symbols: Iterable[SymbolInfo], files: Iterable[FileParse]) -> None:
        """From every definition, then every file's bindings, read once (`files` may be a stream
        of parse results whose references are left out: only paths and bindings are read)."""
        self.classes: set[tuple[str, str]] = set()  # (family, simple name) of every class-like
        self.interfaces: set[tuple[str, str]] = set()  # whose methods run in their implementers
        self.kinds: dict[tuple[str, str], str] = {}  # (file, qualified name) -> kind
        for symbol in symbols:
            self.kinds[(symbol.file_path, symbol.qualified_name)] = symbol.kind
            if symbol.kind not in _NOT_TYPES:
                self.classes.add((language_family(symbol.language), symbol.name))
            if symbol.kind in _INTERFACE_KINDS:
                self.interfaces.add((language_family(symbol.language), symbol.name))
        names: set[str] = set()  # every file stem and directory name, to tell the repo's modules from others
        self.bases: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.fields: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.returns: dict[tuple[str, str], set[str]] = defaultdict(set)  # function name -> result types
        self.package_vars: dict[tuple[str, str], set[str]] = defaultdict(set)  # (directory, name)
        for parse in files:
            names.update(_path_parts(parse.file_path))
            fam = language_family(parse.language)
            spec = LANGUAGES.get(parse.language, _DEFAULT_SPEC)
            for binding in parse.bindings:
                owner = self.class_around(parse.file_path, binding.enclosing)
                if binding.kind == "base" and binding.enclosing:
                    self.bases[(fam, _simple(binding.enclosing))].add(binding.type)
                elif binding.kind == "returns":
                    own = self.class_around(parse.file_path, binding.enclosing) if binding.type == "Self" else None
                    self.returns[(fam, binding.name)].add(own or binding.type)
                elif spec.package_scope and binding.enclosing in (None, binding.name):
                    self.package_vars[(_directory(parse.file_path), binding.name)].add(binding.type)
                elif binding.kind == "var" and owner:
                    head, _, field = binding.name.partition(".")
                    if field and head in spec.self_names and "." not in field:
                        self.fields[(fam, owner, field)].add(binding.type)  # self.x = Cart()
                    elif not field and owner == _simple(binding.enclosing or ""):
                        self.fields[(fam, owner, head)].add(binding.type)  # a declared field
        self.repo_names = frozenset(names)

    def class_around(self, file_path: str, scope: str | None) -> str | None:
        """The simple name of the innermost class-like definition enclosing `scope` (itself included)."""
        while scope:
            kind = self.kinds.get((file_path, scope))
            if kind is not None and kind not in _NOT_TYPES:
                return _simple(scope)
            parent = scope.rsplit(".", 1)[0] if "." in scope else None
            if kind in CALLABLE_KINDS and parent and self.kinds.get((file_path, parent)) is None:
                return _simple(parent)  # a method of a class defined elsewhere (a Go receiver type)
            scope = parent
        return None

    def lineage(self, fam: str, types: Iterable[str]) -> list[set[str]]:
        """The types, then their bases, then theirs... (each level once, nearest first)."""
        levels: list[set[str]] = []
        seen: set[str] = set()
        level = set(types)
        while level and len(levels) < MAX_BASE_DEPTH:
            levels.append(level)
            seen |= level
            level = {b for t in level for b in self.bases.get((fam, t), ())} - seen
        return levels

    def receiver(
        self, fam: str, file: _CitingFile, qualifier: str, scope: str | None, own_class: str | None
    ) -> tuple[set[str] | None, str]:
        """What `qualifier` of `qualifier.m()` is: (its possible types, or None when unknown; how
        it is known: "self" for the caller's own receiver, else "typed")."""
        head, *rest = qualifier.split(".")
        how = "typed"
        if head in file.spec.self_names:
            types, how = ({own_class} if own_class else None), "self"
        elif head in file.spec.super_names:
            types, how = (self.bases.get((fam, own_class)) if own_class else None), "self"
        elif head.endswith("()"):  # `make_cart().m()`
            types = self._results(fam, {head})
        else:
            types = self._results(fam, file.bound(head, scope))
            if types is None and own_class:  # a field used without `this.`
                types = self._results(fam, self._field(fam, {own_class}, head))
            if types is None and file.spec.package_scope:  # a package-level variable (Go)
                types = self._results(fam, self.package_vars.get((_directory(file.file_path), head)))
        for part in rest:  # `self.engine.m()`: a field of what came before
            if not types:
                return None, how
            types, how = self._results(fam, self._field(fam, types, part)), "typed"
        return (types or None), how

    def _results(self, fam: str, types: set[str] | None) -> set[str] | None:
        """Types with each call `make()` replaced by what `make` returns: its class when it is
        one, else the one result type every function of that name declares; unknown (None)
        when a call's result is not known."""
        if not types:
            return None
        out = set()
        for name in types:
            if not name.endswith("()"):
                out.add(name)
                continue
            called = name[:-2]
            results = {called} if (fam, called) in self.classes else self.returns.get((fam, called), set())
            if len(results) != 1:
                return None
            out |= results
        return out

    def _field(self, fam: str, types: set[str], name: str) -> set[str] | None:
        for level in self.lineage(fam, types):
            found = set().union(*(self.fields.get((fam, t, name), ()) for t in level))
            if found:
                return found
        return None


@dataclass(frozen=True, slots=True)  # a large repo's resolution holds millions of these
class Use:
    """A use of a definition, stored with its row."""

    file_path: str
    line: int
    column: int
    text: str
    kind: str  # call | new (instantiation) | type | read (of a value)
    resolution: str  # one of RESOLUTIONS; "name" is a name match, not a resolved use
    caller: str

    def to_row(self) -> dict:
        # Not `dataclasses.asdict`, which deep-copies each field: it was a third of a one-file
        # re-index's reference update on a large repo.
        return {name: getattr(self, name) for name in _USE_FIELDS}


_USE_FIELDS = tuple(f.name for f in fields(Use))


class _Named:
    """The definitions of one name in one language family, sorted once into what sites ask for:
    a busy name (`get`, `__init__`) has thousands of definitions in a large repo and is asked for
    at thousands of sites, so filtering its list at each site was most of a re-resolution."""

    __slots__ = ("callables", "instantiable", "types", "values", "_callables_by_class", "_values_by_class")

    def __init__(self, symbols: list[SymbolInfo]) -> None:
        self.callables = [s for s in symbols if s.kind in CALLABLE_KINDS]
        self.instantiable = [s for s in symbols if s.kind in INSTANTIABLE_KINDS]
        self.types = [s for s in symbols if s.kind not in _NOT_TYPES]
        self.values = [s for s in symbols if s.kind in VALUE_KINDS]
        self._callables_by_class = _by_class(self.callables)
        self._values_by_class = _by_class(self.values)

    def callables_of(self, classes: set[str]) -> list[SymbolInfo]:
        """The callables whose class (by simple name) is one of `classes`, in their order."""
        return _of_classes(self._callables_by_class, classes)

    def values_of(self, owner: str) -> list[SymbolInfo]:
        """The values whose class (or other container, by simple name) is `owner`."""
        return [symbol for _, symbol in self._values_by_class.get(owner, ())]


def _by_class(symbols: list[SymbolInfo]) -> dict[str, list[tuple[int, SymbolInfo]]]:
    """Symbols with a parent by the parent's simple name, each with its position in `symbols`."""
    grouped: dict[str, list[tuple[int, SymbolInfo]]] = defaultdict(list)
    for position, symbol in enumerate(symbols):
        if symbol.parent:
            grouped[_simple(symbol.parent)].append((position, symbol))
    return grouped


def _of_classes(grouped: dict[str, list[tuple[int, SymbolInfo]]], classes: set[str]) -> list[SymbolInfo]:
    found = [entry for name in classes for entry in grouped.get(name, ())]
    if len(classes) > 1:
        found.sort(key=lambda entry: entry[0])
    return [symbol for _, symbol in found]


_NO_DEFINITIONS = _Named([])


class Resolver:
    """Resolves the reference sites of one file at a time against the repo's definitions and types:
    built once from every definition and every file's bindings, then fed files one by one, so a
    large repo's references never sit in memory together."""

    def __init__(self, symbols: Iterable[SymbolInfo], files: Iterable[FileParse]) -> None:
        symbols = list(symbols)
        self.types = _Types(symbols, files)
        self._by_name: dict[tuple[str, str], list[SymbolInfo]] = defaultdict(list)
        for symbol in symbols:
            self._by_name[(language_family(symbol.language), symbol.name)].append(symbol)
        self._named: dict[tuple[str, str], _Named] = {}  # filled as sites ask for names

    def named(self, fam: str, name: str) -> _Named:
        """The definitions of `name` in the family `fam`."""
        key = (fam, name)
        found = self._named.get(key)
        if found is None:
            symbols = self._by_name.get(key)
            found = self._named[key] = _Named(symbols) if symbols else _NO_DEFINITIONS
        return found

    def uses_in(self, parse: FileParse) -> list[tuple[str, Use]]:
        """(definition id, use) for every site of the file that resolves or name-matches."""
        fam = language_family(parse.language)
        file = _CitingFile(parse)
        found: list[tuple[str, Use]] = []
        # Within a file a site resolves the same way whenever its name, kind, qualifier and
        # scope are the same (think `self.get(...)` fifty times in one method).
        resolved: dict[tuple, list[tuple[SymbolInfo, str, str]]] = {}
        for site in parse.references:
            key = (site.name, site.kind, site.qualifier, site.enclosing)
            if key not in resolved:
                own_class = self.types.class_around(file.file_path, site.enclosing)
                resolved[key] = _resolve_site(site, file, fam, self, own_class)
            for target, kind, how in resolved[key]:
                found.append(
                    (target.id, Use(file.file_path, site.line, site.column, site.text, kind, how, site.enclosing or ""))
                )
        return found


def resolve_references(symbols: Iterable[SymbolInfo], files: Iterable[FileParse]) -> dict[str, list[Use]]:
    """Map each definition id to its uses (resolved ones and name matches), sorted by file,
    line and column."""
    files = list(files)
    resolver = Resolver(symbols, files)
    uses: dict[str, list[Use]] = defaultdict(list)
    for parse in files:
        for target, use in resolver.uses_in(parse):
            uses[target].append(use)
    for found in uses.values():
        found.sort(key=use_order)
    return dict(uses)


def use_order(use: Use) -> tuple[str, int, int, str, str, str, str]:
    """The order uses are listed in: by file, line, column and kind (then the rest, so that
    equal keys are equal uses and any two lists of the same uses sort alike)."""
    return (use.file_path, use.line, use.column, use.kind, use.resolution, use.caller, use.text)


def changed_calls(before: FileParse, after: FileParse) -> frozenset[str] | None:
    """How differently sites resolve against a file after an edit: the names `k` whose call
    `k()` now stands for another type (a function's declared result changed, a class of that
    name came or went), which only a site or binding with `k()` in it reads; none when sites
    resolve alike. None when the edit changed more about types (interfaces, bases, fields,
    package variables) or put an old site of the file in another class (a renamed Go method no
    longer tells whose receiver its old sites had)."""
    old, new = _Types(before.symbols, [before]), _Types(after.symbols, [after])
    scopes = {site.enclosing for site in before.references}
    if any(old.class_around(before.file_path, scope) != new.class_around(after.file_path, scope) for scope in scopes):
        return None
    if any(getattr(old, facts) != getattr(new, facts) for facts in ("interfaces", "bases", "fields", "package_vars")):
        return None
    results = {key for key in old.returns.keys() | new.returns.keys() if old.returns.get(key) != new.returns.get(key)}
    return frozenset(name for _, name in (old.classes ^ new.classes) | results)


def _resolve_site(
    site: Reference, file: _CitingFile, fam: str, resolver: Resolver, own_class: str | None
) -> list[tuple[SymbolInfo, str, str]]:
    """The (definition, use kind, resolution) triples one reference site stands for."""
    found: list[tuple[SymbolInfo, str, str]] = []
    named = resolver.named(fam, site.name)
    types = resolver.types
    qualifier = site.qualifier
    if site.kind == "call":
        self_like = qualifier in file.spec.self_names or qualifier in file.spec.super_names
        if site.name in CONSTRUCTOR_CALLS and qualifier and not self_like:
            # `Foo::new()` / `Foo.__init__()` instantiate Foo as well as calling the constructor.
            classes = resolver.named(fam, qualifier.split(".")[-1]).instantiable
            found += _pick(classes, "new", site, file, own_class)
        if qualifier:
            found += _method_call(named, site, file, fam, types, own_class)
            found += [(s, "new", how) for s, _, how in _module_call(named.instantiable, site, file, types)]
        else:
            found += _pick(_narrow_call(named.callables, site.enclosing, own_class), "call", site, file, own_class)
            found += _pick(named.instantiable, "new", site, file, own_class)
    elif site.kind == "new":
        found += _pick(named.types, "new", site, file, own_class)
    elif site.kind == "read":
        found += _value_read(named, site, file, types, own_class)
    else:
        found += _pick(named.types, "type", site, file, own_class)
    return found


def _method_call(
    named: _Named, site: Reference, file: _CitingFile, fam: str, types: _Types, own_class: str | None
) -> list[tuple[SymbolInfo, str, str]]:
    """`qualifier.m()`: the methods the qualifier is known to reach, else name matches."""
    if not named.callables:
        return []
    qualifier = site.qualifier or ""
    receiver, how = types.receiver(fam, file, qualifier, site.enclosing, own_class)
    if receiver is not None:
        lineage = types.lineage(fam, receiver)
        for level in lineage:
            reached = named.callables_of(level)
            if reached:  # of the classes of that name, the file's own or imported one
                return [(m, "call", how) for m in _narrow(reached, file)]
        if not any((fam, t) in types.interfaces for level in lineage for t in level):
            return []  # a known receiver whose type has no such method here: an external one
        # An interface without the method among its definitions: its implementers decide.
    owned = named.callables_of({qualifier.split(".")[-1]})
    if owned:  # `Cart.m()`, `Cart::m()`: the qualifier names the class
        return [(m, "call", "qualified") for m in _narrow(owned, file)]
    return _module_call(named.callables, site, file, types)


def _value_read(
    named: _Named, site: Reference, file: _CitingFile, types: _Types, own_class: str | None
) -> list[tuple[SymbolInfo, str, str]]:
    """A value read: a bare `NAME` as a bare call is narrowed (the scope's own, the file's, an
    imported one, ...); `Type.NAME` / `Type::NAME` a value of the type it names; `module.NAME`
    an imported module's (nothing for a receiver of unknown type)."""
    if not site.qualifier:
        return _pick(_narrow_call(named.values, site.enclosing, own_class), "read", site, file, own_class)
    owned = named.values_of(site.qualifier.split(".")[-1])
    if owned:
        return [(v, "read", "qualified") for v in _narrow(owned, file)]
    return _module_call([v for v in named.values if v.parent is None], site, file, types)


def _module_call(
    candidates: list[SymbolInfo], site: Reference, file: _CitingFile, types: _Types
) -> list[tuple[SymbolInfo, str, str]]:
    """`q.f()` with `q` not known to be of a type: an imported module's top-level `f` when `q`
    names an import (`utils.f()`, Go's `render.JSON()`, `flask.Flask()`), nothing when the
    import is outside the repo, else a method the name alone picks: the only one of its name
    ("unique") or name matches."""
    qualifier = site.qualifier or ""
    last = qualifier.split(".")[-1]
    if qualifier.split(".")[0] in file.spec.module_roots:  # Rust's `crate::restock!()`
        top = [c for c in candidates if c.parent is None]
        if top:
            return [(c, site.kind, "module") for c in _narrow(top, file)]
    if qualifier in file.imported:
        module = [c for c in candidates if c.parent is None and last.lower() in _path_parts(c.file_path)]
        if module:
            return [(c, site.kind, "module") for c in _narrow(module, file)]
        if qualifier in file.external_imports(types.repo_names):
            return []
    methods = [c for c in candidates if c.parent is not None]  # `x.f()` reaches no top-level `f`
    if not methods:
        return []
    if len(methods) == 1 and not qualifier.endswith(")") and site.name not in file.spec.builtin_methods:
        # The only `f` in the repo, called on a named receiver, and no builtin type's method.
        return [(methods[0], site.kind, "unique")]
    return [(m, site.kind, NAME_MATCH) for m in methods] if len(methods) <= MAX_AMBIGUOUS else []


def _narrow(candidates: list[SymbolInfo], file: _CitingFile) -> list[SymbolInfo]:
    """Several equally named targets of a sure rule: the citing file's own or imported ones."""
    if len(candidates) == 1:
        return candidates
    same_file = [c for c in candidates if c.file_path == file.file_path]
    return same_file or _best_imported(candidates, file) or candidates


def _narrow_call(methods: list[SymbolInfo], scope: str | None, own_class: str | None) -> list[SymbolInfo]:
    """The callables a bare `f()` in `scope` can reach: top-level ones, its class's methods and
    functions nested in `scope` or around it (not `Other.f`, not `other_function.f`); the
    nearest nested one when there is one."""
    around = set()
    while scope:
        around.add(scope)
        scope = scope.rsplit(".", 1)[0] if "." in scope else None
    nested = [m for m in methods if _container(m) in around]
    if nested:
        deepest = max(len(_container(m) or "") for m in nested)
        return [m for m in nested if len(_container(m) or "") == deepest]
    return [m for m in methods if _container(m) is None or (m.parent and _simple(m.parent) == own_class)]


def _container(symbol: SymbolInfo) -> str | None:
    """The qualified name of the definition around `symbol` (a class, or a function for a
    nested one), None at top level."""
    return symbol.qualified_name.rsplit(".", 1)[0] if "." in symbol.qualified_name else None


def _pick(
    candidates: list[SymbolInfo], kind: str, site: Reference, file: _CitingFile, own_class: str | None
) -> list[tuple[SymbolInfo, str, str]]:
    if not candidates:
        return []
    chosen, how = _disambiguate(candidates, site, file, own_class)
    return [(symbol, kind, how) for symbol in chosen]


def _disambiguate(
    candidates: list[SymbolInfo], site: Reference, file: _CitingFile, own_class: str | None
) -> tuple[list[SymbolInfo], str]:
    """A bare name (or a type's qualified name): narrowed by qualifier, the file, imports and
    the package; what is left undecided is a name match."""
    qualifier = site.qualifier
    if qualifier:
        owned = [c for c in candidates if c.parent and _simple(c.parent) == qualifier.split(".")[-1]]
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
    if same_package and file.spec.package_scope:
        return same_package, "same_package"
    return (candidates if len(candidates) <= MAX_AMBIGUOUS else []), NAME_MATCH


def _best_imported(candidates: list[SymbolInfo], file: _CitingFile) -> list[SymbolInfo]:
    """Candidates whose file the referencing file imports, best path match first."""
    scored = [(file.import_score(c.file_path), c) for c in candidates]
    best = max((score for score, _ in scored), default=0)
    return [c for score, c in scored if best and score == best]


def _import_handles(spec: str) -> tuple[str, ...]:
    """The names an import spec can be used by: its first and last segments (`import a.b`
    binds `a`; Go's `github.com/x/render` and JS's `./router` are used as `render`, `router`)."""
    parts = [p for p in re.split(r"[./:\\]+", _SOURCE_EXT.sub("", spec.strip().strip("'\"<>"))) if p]
    return (parts[0], parts[-1]) if parts else ()


def _simple(qualified: str) -> str:
    return qualified.rsplit(".", 1)[-1]


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
