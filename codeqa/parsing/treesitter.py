"""Tree-sitter parsing: one query file per language, one generic walker for all of them.

Each language's `queries/<lang>.scm` uses the same capture vocabulary (aider repo-map style):
`@definition.<kind>` + `@name.definition.<kind>` (+ optional `@scope.definition.<kind>` for an
owner that is not an enclosing node), `@name.reference.<call|new|type|read>` (+ optional
`@qualifier.reference.<kind>`; a `read` is a name read as a value, by the naming convention of
the values a language defines: `MAX_ITEMS`, `settings.TIMEOUT`, Go's `ErrNotFound`; one inside an
import is none, nor is a `@name.written`: the target of an assignment or declaration, a
keyword argument's name), `@module.import` and `@name.import`, `@doc` for a doc that
is a node matched with its definition rather than comments above it (Elixir's `@doc`), and
`@declaration` on a definition's node (in its own pattern or the definition's) for a signature
whose body is elsewhere or nowhere: an `@overload` stub, a TypeScript overload signature, a
C/C++ prototype or in-class method declaration, an abstract or interface method.
`@variable.binding` + `@type.binding` say what a variable holds (`x = Cart()`, `x: Cart`) and
`@type.base` names a class's base: reference resolution reads `x.m()` with them.
Captures starting with `_` are helpers for predicates. Everything language-specific beyond the
queries is data in `languages.LANGUAGES`.

Qualified names join enclosing definitions with "."; C++ namespaces and Rust modules are not
definitions, so they never appear in qualified names. Qualifiers normalise `::` and `->` to ".".

An overload set is one definition: the declarations of a qualified name are folded into the
file's implementation of it (its `signatures` list them all, in source order), or, with no
implementation in the file, into the first of them, which stays a definition marked
`declaration`. Declarations whose implementation is in another file (a C header and its `.c`)
are grouped at search time (`codeqa.search.overloads`). A declaration inside a function body
(a local prototype) is no definition at all.
"""

from __future__ import annotations

import inspect
import re
import threading
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePath
from types import MappingProxyType

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from codeqa.core.records import EXPRESSION_QUALIFIER, Binding, Reference
from codeqa.parsing.languages import CLASS_KINDS, FUNCTION_KINDS, LANGUAGES, LanguageSpec
from codeqa.parsing.module_code import CodeChunk, module_chunks

QUERIES_DIR = Path(__file__).resolve().parent / "queries"

REFERENCE_KINDS = ("new", "call", "type", "read")  # precedence when one node is captured several ways

_MAX_LINE_TEXT = 200
# Rows stop this many definitions deep: a definition nested deeper is part of its enclosing
# definitions' code, not a row of its own. Each row holds its definition's code, so without a
# cap N nested functions store N rows of up to the whole file each (quadratic: 2,000 nested
# JavaScript functions in 41 KB stored 10 MB); with it a file's rows hold at most
# MAX_NESTING + 1 copies of any byte, and qualified names have at most MAX_NESTING + 1 parts.
MAX_NESTING = 8
MAX_NAME_CHARS = 200  # of a definition's name (a generated 10 KB identifier is not a name)
_BODY_SEARCH_DEPTH = 3
_QUALIFIER_RE = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*")
_QUALIFIER_SEP_RE = re.compile(r"::|->")
_CALLED_NAME_RE = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:::)?(?:<[^()]*>)?\s*!?$")
_GENERIC_ARGS_RE = re.compile(r"<[^<>]*>")
_TYPE_NAME_RE = re.compile(r"[A-Za-z_$][\w$]*")
_WHITESPACE_RE = re.compile(r"\s+")
# Comment markers of every language in the table: block comments `/* */`, OCaml `(* *)`,
# Haskell `{- -}`, Lua `--[[ ]]` and Julia `#= =#`; line comments `//`, `#` and `--` (Haskell's
# `-- |` and Lua's `---` doc markers included).
_BLOCK_COMMENT_OPEN_RE = re.compile(r"^(?:/\*+!?|\(\*+|\{-+\s*\|?|--\[=*\[|#=+)")
_BLOCK_COMMENT_CLOSE_RE = re.compile(r"(?:\*+/|\*+\)|-+\}|\]=*\]|=+#)$")
_BLOCK_COMMENT_STAR_RE = re.compile(r"^\s*\*(?!/) ?")
_SHEBANG_RE = re.compile(r"\A#!.*\n?")  # `#!/usr/bin/env bash`: how to run it, not what it does
_LINE_COMMENT_RE = re.compile(r"^\s*(?://+!?|#+|--+\s*[|^]?) ?")
_IMPORT_QUOTES = "\"'<>`"
# A grammar that gives an import's path no node of its own (Scala) captures the whole statement.
_IMPORT_KEYWORD_RE = re.compile(r"^import\s+")
_LICENSE_RE = re.compile(r"copyright|licen[cs]ed?\b|spdx-license", re.IGNORECASE)


@dataclass
class Definition:
    """A named code symbol (function, method, class-like) with its source and context."""

    kind: str
    name: str
    qualified_name: str
    parent: str | None
    signature: str
    doc: str
    code: str
    start_line: int
    end_line: int
    method_signatures: list[str] = field(default_factory=list)
    declaration: bool = False  # a signature only: its body is in another file, or nowhere
    signatures: list[str] = field(default_factory=list)  # of an overload set: every one, in source order


@dataclass
class ParsedFile:
    """Everything extracted from one source file."""

    language: str
    definitions: list[Definition]
    references: list[Reference]
    imports: list[str]
    imported_names: list[str]
    has_errors: bool
    bindings: list[Binding] = field(default_factory=list)  # what variables hold, class bases
    too_deep: int = 0  # definitions nested deeper than MAX_NESTING: no rows of their own
    module_doc: str = ""  # the module docstring, or the header comment (licenses left out)
    top_level_names: list[str] = field(default_factory=list)  # qualified names, in source order
    module_code: list[CodeChunk] = field(default_factory=list)  # code outside every definition


def parse_source(source: str, language: str, path: str = "") -> ParsedFile:
    """Parse source text and extract definitions, references and imports.

    `path` only selects a grammar variant (TSX for `.tsx`). Files with syntax errors still yield
    whatever parses; `has_errors` tells the caller.
    """
    spec = LANGUAGES.get(language)
    if spec is None:
        raise ValueError(f"unsupported language: {language!r}")
    variant = PurePath(path).suffix.lower() if path else ""
    variant = variant if variant in spec.variants else ""
    compiled = _compiled(language, variant)
    src = source.encode("utf-8", "surrogatepass")
    tree = _parser(language, variant).parse(src)
    return _Extractor(spec, compiled, src, source).run(tree.root_node)


# --- compiled grammar and query cache -------------------------------------------------------------


@dataclass(frozen=True)
class _Compiled:
    """A language object, its query, and what each capture name means."""

    language: Language
    query: Query
    roles: Mapping[str, tuple[str, str | None]]


def query_source(language: str, variant: str = "") -> str:
    """Concatenated .scm text for a language (and grammar variant)."""
    spec = LANGUAGES[language]
    names = spec.variants[variant].queries if variant else spec.queries
    return "\n".join((QUERIES_DIR / name).read_text(encoding="utf-8") for name in names)


@cache
def _compiled(language: str, variant: str) -> _Compiled:
    """Build the Language and Query once per language/variant; QueryError surfaces here."""
    spec = LANGUAGES[language]
    grammar = spec.variants[variant].grammar if variant else spec.grammar
    lang = Language(grammar())
    query = Query(lang, query_source(language, variant))
    roles = {query.capture_name(i): _capture_role(query.capture_name(i)) for i in range(query.capture_count)}
    return _Compiled(lang, query, MappingProxyType(roles))


_ROLE_PREFIXES = (
    ("name.definition.", "def_name"),
    ("scope.definition.", "scope"),
    ("definition.", "def"),
    ("doc", "doc"),
    ("name.reference.", "ref"),
    ("qualifier.reference.", "qualifier"),
    ("variable.binding", "bind_var"),
    ("type.binding", "bind_type"),
    ("type.base", "base"),
)


def _capture_role(name: str) -> tuple[str, str | None]:
    """Map a capture name of the shared vocabulary to (role, kind)."""
    if name.startswith("_"):
        return ("ignore", None)
    if name == "module.import":
        return ("module", None)
    if name == "name.import":
        return ("import_name", None)
    if name == "declaration":
        return ("declaration", None)
    if name == "name.written":
        return ("written", None)
    for prefix, role in _ROLE_PREFIXES:
        if name.startswith(prefix):
            return (role, name[len(prefix) :])
    raise ValueError(f"capture @{name} is not in the shared vocabulary")


_thread_state = threading.local()


def _parser(language: str, variant: str) -> Parser:
    """One Parser per language and thread: parsers are cheap to keep but not thread-safe."""
    parsers = getattr(_thread_state, "parsers", None)
    if parsers is None:
        parsers = _thread_state.parsers = {}
    parser = parsers.get((language, variant))
    if parser is None:
        parser = parsers[(language, variant)] = Parser(_compiled(language, variant).language)
    return parser


# --- extraction -----------------------------------------------------------------------------------


@dataclass
class _RawDefinition:
    pattern: int
    kind: str
    node: Node
    name: Node
    scope: Node | None
    doc: Node | None = None
    declaration: bool = False


@dataclass
class _RawReference:
    kind: str
    node: Node
    qualifier: str | None


def _imported(ref: _RawReference, imports: list[tuple[int, int]]) -> bool:
    """Whether a read is a name an import statement names (`from settings import TIMEOUT`): the
    import is no use of the value; reading it afterwards is."""
    return ref.kind == "read" and any(start <= ref.node.start_byte < end for start, end in imports)


@dataclass(frozen=True)
class _Extent:
    """Where a definition's code lies: `outer` is the node with its wrappers (`export`,
    templates), `first` adds prefixes (attributes, a Haskell signature), `last` suffixes (a Dart
    body); the signature starts at `signature_start`."""

    outer: Node
    first: Node
    last: Node
    signature_start: int


@dataclass
class _Open:
    """A definition being built, with the byte range used for nesting."""

    definition: Definition
    end_byte: int


class _Extractor:
    """Turns one tree's query matches into a ParsedFile."""

    def __init__(self, spec: LanguageSpec, compiled: _Compiled, src: bytes, source: str) -> None:
        self.spec = spec
        self.compiled = compiled
        self.src = src
        self.source = source
        self._lines: list[bytes] | None = None
        # (variable, or None for a base; type; capture suffixes: ".returns" for a function's
        # result type, ".call" for a variable holding what a named function returns)
        self._raw_bindings: list[tuple[Node | None, Node, str]] = []
        self._written: dict[tuple[int, int], Node] = {}  # names written, not read (`@name.written`)

    def run(self, root: Node) -> ParsedFile:
        raw_defs: dict[tuple[int, int], _RawDefinition] = {}
        raw_refs: dict[tuple[int, int], _RawReference] = {}
        modules: list[Node] = []
        names: list[Node] = []
        declared: set[tuple[int, int]] = set()
        for pattern, captures in QueryCursor(self.compiled.query).matches(root):
            self._collect(pattern, captures, raw_defs, raw_refs, modules, names, declared)
        for key in declared & raw_defs.keys():
            raw_defs[key].declaration = True

        definitions, spans, top_level, too_deep = self._definitions(raw_defs)
        taken = {(d.name.start_byte, d.name.end_byte) for d in raw_defs.values()}
        taken |= {(d.scope.start_byte, d.scope.end_byte) for d in raw_defs.values() if d.scope}
        taken |= self._written.keys()
        imports = [(node.start_byte, node.end_byte) for node in modules + names]
        references = self._unshadowed(
            self._references(
                [r for key, r in raw_refs.items() if key not in taken and not _imported(r, imports)], spans
            ),
            spans,
        )
        rows = [(d.start_line - 1, d.end_line - 1) for d in definitions]
        module_doc, doc_rows = self._module_doc(root, {start for start, _ in rows})
        lines = [line.rstrip("\r") for line in self.source.split("\n")]
        return ParsedFile(
            language=self.spec.name,
            definitions=definitions,
            references=references,
            imports=[_IMPORT_KEYWORD_RE.sub("", t) for t in self._texts(modules, strip=_IMPORT_QUOTES)],
            imported_names=self._texts(names),
            has_errors=root.has_error,
            bindings=self._bindings(spans),
            too_deep=too_deep,
            module_doc=module_doc,
            top_level_names=top_level,
            module_code=module_chunks(root, lines, rows, self.spec.comment_types, doc_rows),
        )

    # collection

    def _collect(
        self,
        pattern: int,
        captures: dict[str, list[Node]],
        raw_defs: dict,
        raw_refs: dict,
        modules: list,
        names: list,
        declared: set[tuple[int, int]],
    ) -> None:
        """Sort one match's captures into definitions, references, imports and declarations."""
        roles = self.compiled.roles
        by_role: dict[str, tuple[str | None, list[Node]]] = {}
        for capture, nodes in captures.items():
            role, kind = roles[capture]
            by_role[role] = (kind, nodes)
        if "def" in by_role and "def_name" in by_role:
            kind, (node, *_) = by_role["def"]
            assert kind is not None  # a definition capture always names its kind
            name = by_role["def_name"][1][0]
            scope = by_role["scope"][1][0] if "scope" in by_role else None
            doc = by_role["doc"][1][0] if "doc" in by_role else None
            key = (node.start_byte, node.end_byte)
            known = raw_defs.get(key)
            if known is None or pattern < known.pattern:  # earlier patterns win on the same node
                raw_defs[key] = _RawDefinition(pattern, kind, node, name, scope, doc)
        if "ref" in by_role:
            kind, ref_nodes = by_role["ref"]
            assert kind is not None  # a reference capture always names its kind
            qualifier_nodes = by_role.get("qualifier", (None, []))[1]
            qualifier = self._qualifier(qualifier_nodes[0]) if qualifier_nodes else None
            for node in ref_nodes:
                self._add_reference(raw_refs, _RawReference(kind, node, qualifier))
        modules.extend(by_role.get("module", (None, []))[1])
        names.extend(by_role.get("import_name", (None, []))[1])
        if "bind_var" in by_role and "bind_type" in by_role:
            self._raw_bindings.append(
                (
                    by_role["bind_var"][1][0],
                    by_role["bind_type"][1][-1],
                    (by_role["bind_var"][0] or "") + (by_role["bind_type"][0] or ""),
                )
            )
        self._raw_bindings.extend((None, node, "") for node in by_role.get("base", (None, []))[1])
        declared.update((n.start_byte, n.end_byte) for n in by_role.get("declaration", (None, []))[1])
        self._written.update(((n.start_byte, n.end_byte), n) for n in by_role.get("written", (None, []))[1])

    @staticmethod
    def _add_reference(raw_refs: dict, ref: _RawReference) -> None:
        """Keep one reference per node: new beats call beats type; keep any qualifier seen."""
        key = (ref.node.start_byte, ref.node.end_byte)
        known = raw_refs.get(key)
        if known is None:
            raw_refs[key] = ref
            return
        if REFERENCE_KINDS.index(ref.kind) < REFERENCE_KINDS.index(known.kind):
            known.kind = ref.kind
        known.qualifier = known.qualifier or ref.qualifier

    def _qualifier(self, node: Node) -> str:
        """A simple dotted qualifier (`obj`, `pkg`, `a.b`, `Type`) as written; a call as the name
        it calls (`make(x).m()` -> `make()`, `super().m()` -> `super()`: resolution reads what
        `make` returns); any other receiver (`a[0].m()`) is EXPRESSION_QUALIFIER: a member call
        on something unnamed, never a bare call."""
        text = _GENERIC_ARGS_RE.sub("", self._text(node))
        if _QUALIFIER_RE.fullmatch(text):
            return _QUALIFIER_SEP_RE.sub(".", text)
        called = _called_name(text)
        return f"{called}()" if called else EXPRESSION_QUALIFIER

    # definitions

    def _definitions(
        self, raw_defs: dict[tuple[int, int], _RawDefinition]
    ) -> tuple[list[Definition], list[tuple[int, int, str]], list[str], int]:
        """Nest definitions by byte range, then name, classify and describe each.

        Returns the definitions, their byte spans, the qualified names of the top-level ones and
        how many were nested deeper than MAX_NESTING (only counted: no rows of their own)."""
        ordered = sorted(raw_defs.values(), key=lambda d: (d.node.start_byte, -d.node.end_byte))
        stack: list[_Open] = []
        definitions: list[Definition] = []
        spans: list[tuple[int, int, str]] = []
        too_deep = 0
        top_level: list[str] = []
        for raw in ordered:
            while stack and stack[-1].end_byte <= raw.node.start_byte:
                stack.pop()
            if len(stack) > MAX_NESTING:
                too_deep += 1
                continue
            if raw.declaration and stack and stack[-1].definition.kind in FUNCTION_KINDS:
                continue  # a local prototype (`int helper(void);` in a body) defines nothing
            extent = self._extent(raw.node)
            definition = self._definition(raw, extent, [o.definition for o in stack])
            definitions.append(definition)
            spans.append((raw.node.start_byte, extent.last.end_byte, definition.qualified_name))
            if not stack:
                top_level.append(definition.qualified_name)
            stack.append(_Open(definition, extent.last.end_byte))
        definitions, spans = _fold_overloads(definitions, spans)
        self._attach_method_signatures(definitions)
        return definitions, spans, list(dict.fromkeys(top_level)), too_deep

    def _definition(self, raw: _RawDefinition, extent: _Extent, enclosing: list[Definition]) -> Definition:
        name = self._text(raw.name)[:MAX_NAME_CHARS]
        scope = self._scope(raw.scope, name) if raw.scope is not None else None
        if scope is None:
            scope, name = _split_scoped(name)
        inner = enclosing[-1] if enclosing else None
        class_parent = next((d.qualified_name for d in reversed(enclosing) if d.kind in CLASS_KINDS), None)
        parent: str | None
        if scope:
            qualified, parent = f"{scope}.{name}", scope
        else:
            qualified = f"{inner.qualified_name}.{name}" if inner else name
            parent = class_parent
        owner = scope or (inner.qualified_name if inner and inner.kind in CLASS_KINDS else None)
        kind = self._kind(raw.kind, name, owner)
        first, last = extent.first, extent.last
        return Definition(
            kind=kind,
            name=name,
            qualified_name=qualified,
            parent=parent,
            signature=self._signature(raw.node, extent.signature_start, extent.outer.end_byte),
            doc=self._doc_text(raw.doc) if raw.doc is not None else self._doc(raw.node, first),
            code=self.src[first.start_byte : last.end_byte].decode("utf-8", "replace"),
            start_line=first.start_point.row + 1,
            end_line=_end_line(last),
            declaration=raw.declaration,
        )

    def _kind(self, kind: str, name: str, owner: str | None) -> str:
        """Functions owned by a class-like become methods, or constructors by name."""
        if kind not in FUNCTION_KINDS or owner is None:
            return kind
        owner_name = owner.rsplit(".", 1)[-1]
        if name in self.spec.constructor_names or (self.spec.constructor_is_class_name and name == owner_name):
            return "constructor"
        return "method" if kind == "function" else kind

    def _scope(self, node: Node, name: str) -> str | None:
        """Owner name from a scope capture: `Foo::bar` -> `Foo`, `*Server[T]` -> `Server`.

        A scope the parser had to invent to recover from an error is none: after a macro such
        as `FMT_CONSTEXPR Ret<T>\nmake_color(...)`, tree-sitter's C++ grammar reads `Ret<T>` and
        the name as `Ret<T>::make_color` with a missing `::`, which made a free function a
        method of its return type, named across the line break."""
        if node.has_error:
            return None
        text = _GENERIC_ARGS_RE.sub("", self._text(node))
        for sep in ("::", "."):
            if text.endswith(sep + name):
                text = text[: -len(sep + name)]
        text = _QUALIFIER_SEP_RE.sub(".", text).strip("*& ")
        return text or None

    def _extent(self, node: Node) -> _Extent:
        """Where a definition's code starts and ends, and where its signature starts."""
        outer, signature_start = node, node.start_byte
        wrappers = self.spec.wrappers
        while (
            outer.parent is not None and outer.parent.type in wrappers and _sole_child_of_type(outer.parent, outer.type)
        ):
            outer = outer.parent
            if wrappers[outer.type]:
                signature_start = outer.start_byte
        if signature_start == node.start_byte and self.spec.decorator_types:
            undecorated = _start_after_decorators(node, self.spec.decorator_types)
            signature_start = signature_start if undecorated is None else undecorated
        first = outer
        prev = first.prev_named_sibling
        while prev is not None and prev.type in self.spec.prefix_types:
            first, prev = prev, prev.prev_named_sibling
        last = outer
        following = last.next_named_sibling
        while following is not None and following.type in self.spec.suffix_types:
            last, following = following, following.next_named_sibling
        return _Extent(outer, first, last, signature_start)

    def _signature(self, node: Node, start: int, end: int) -> str:
        """Header text up to the body, whitespace collapsed; the first line if there is no body."""
        body = _find_body(node, self.spec.body_types)
        if body is not None:
            text = self.src[start : body.start_byte].decode("utf-8", "replace")
        else:
            text = self.src[start:end].decode("utf-8", "replace").split("\n", 1)[0].rstrip(" \t{")
        return _WHITESPACE_RE.sub(" ", text).strip()

    def _doc(self, node: Node, first: Node) -> str:
        if self.spec.doc_style == "docstring":
            return self._docstring(node)
        return self._leading_comments(first)

    def _doc_text(self, node: Node) -> str:
        """A doc captured as a node (the string of Elixir's `@doc`): its content, dedented."""
        parts = [self._text(c) for c in node.named_children if c.type.endswith("content")]
        text = "".join(parts) if parts else self._text(node).strip("\"'`")
        return inspect.cleandoc(text)

    def _docstring(self, node: Node) -> str:
        """First statement of the body when it is a plain string (Python docstring)."""
        body = node.child_by_field_name("body")
        statement = self._docstring_statement(body) if body is not None else None
        return self._string_content(statement) if statement is not None else ""

    def _docstring_statement(self, block: Node) -> Node | None:
        """The block's first statement if it is a plain string, else None."""
        statement = next((c for c in block.named_children if c.type not in self.spec.comment_types), None)
        if statement is None or statement.type != "expression_statement":
            return None
        string = statement.named_children[0] if statement.named_child_count == 1 else None
        return statement if string is not None and string.type == "string" else None

    def _string_content(self, statement: Node) -> str:
        string = statement.named_children[0]
        content = "".join(self._text(c) for c in string.named_children if c.type == "string_content")
        return inspect.cleandoc(content)

    def _module_doc(self, root: Node, definition_rows: set[int]) -> tuple[str, list[int]]:
        """The module's docstring or header comment, and the rows it takes.

        The header is the comments before the first code, in blocks separated by blank lines;
        license and copyright blocks are left out, and so is a block directly above a
        definition (its doc), unless it is an inner doc (`//!`) that documents the module."""
        if self.spec.doc_style == "docstring":
            statement = self._docstring_statement(root)
            if statement is None:
                return "", []
            return self._string_content(statement), list(range(statement.start_point.row, _end_line(statement)))
        blocks: list[list[Node]] = []
        first_code: Node | None = None
        for child in root.named_children:
            if child.type not in self.spec.comment_types:
                first_code = child
                break
            if blocks and _end_line(blocks[-1][-1]) >= child.start_point.row:
                blocks[-1].append(child)
            else:
                blocks.append([child])
        texts: list[str] = []
        rows: list[int] = []
        for block in blocks:
            text = inspect.cleandoc("\n".join(line.rstrip() for c in block for line in _comment_lines(self._text(c))))
            inner = self._text(block[0]).lstrip().startswith(self.spec.inner_doc_prefixes)
            above_definition = (
                block is blocks[-1]
                and first_code is not None
                and _end_line(block[-1]) == first_code.start_point.row
                and first_code.start_point.row in definition_rows
            )
            if not text or _LICENSE_RE.search(text) or (above_definition and not inner):
                continue
            texts.append(text)
            rows += range(block[0].start_point.row, _end_line(block[-1]))
        return "\n\n".join(texts), rows

    def _leading_comments(self, first: Node) -> str:
        """Comments directly above the definition (no blank line, not trailing other code)."""
        comments: list[Node] = []
        below_row = first.start_point.row
        prev = self._comment_before(first)
        while prev is not None and prev.type in self.spec.comment_types:
            if prev.end_point.row < below_row - 1 or _is_trailing(prev):
                break
            if self._text(prev).lstrip().startswith(self.spec.inner_doc_prefixes):
                break
            comments.append(prev)
            below_row = prev.start_point.row
            prev = prev.prev_sibling
        lines = [line.rstrip() for c in reversed(comments) for line in _comment_lines(self._text(c))]
        return inspect.cleandoc("\n".join(lines))

    def _comment_before(self, node: Node) -> Node | None:
        """The node before `node` where a comment documenting it would be. Grammars put that
        comment in odd places: before the body that `node` opens (Ruby: `module M # doc` then
        `class C`), or as the last child of the previous node (Haskell's haddock inside the
        import list)."""
        prev = node.prev_sibling
        while prev is None and node.parent is not None and node.parent.start_byte == node.start_byte:
            node = node.parent
            prev = node.prev_sibling
        comments = self.spec.comment_types
        if prev is not None and prev.type not in comments and prev.named_child_count:
            tail = prev.named_children[-1]
            prev = tail if tail.type in comments and _end_line(tail) == _end_line(prev) else prev
        return prev

    @staticmethod
    def _attach_method_signatures(definitions: list[Definition]) -> None:
        methods: dict[str, list[str]] = {}
        for d in definitions:
            if d.kind in ("method", "constructor") and d.parent is not None:
                methods.setdefault(d.parent, []).append(d.signature)
        for d in definitions:
            if d.kind in CLASS_KINDS:
                d.method_signatures = list(methods.get(d.qualified_name, []))

    # references and imports

    def _references(self, raw_refs: list[_RawReference], spans: list[tuple[int, int, str]]) -> list[Reference]:
        """Attach the innermost enclosing definition by a sweep over start bytes."""
        raw_refs.sort(key=lambda r: r.node.start_byte)
        references: list[Reference] = []
        open_spans: list[tuple[int, int, str]] = []
        next_span = 0
        for ref in raw_refs:
            start = ref.node.start_byte
            while next_span < len(spans) and spans[next_span][0] <= start:
                while open_spans and open_spans[-1][1] <= spans[next_span][0]:
                    open_spans.pop()
                open_spans.append(spans[next_span])
                next_span += 1
            while open_spans and open_spans[-1][1] <= start:
                open_spans.pop()
            row, column = ref.node.start_point
            line = self._line(row)
            references.append(
                Reference(
                    name=self._text(ref.node),
                    kind=ref.kind,
                    qualifier=ref.qualifier,
                    line=row + 1,
                    column=_char_column(line, column),
                    text=line.decode("utf-8", "replace").strip()[:_MAX_LINE_TEXT],
                    enclosing=open_spans[-1][2] if open_spans else None,
                )
            )
        return references

    def _unshadowed(self, references: list[Reference], spans: list[tuple[int, int, str]]) -> list[Reference]:
        """`references` without the bare reads of a name their own definition writes: after a
        local `PROVIDERS = [...]`, `PROVIDERS` is the local, not the module's value."""
        written = self._references([_RawReference("written", node, None) for node in self._written.values()], spans)
        local = {(w.enclosing, w.name) for w in written if w.enclosing}
        return [r for r in references if r.kind != "read" or r.qualifier or (r.enclosing, r.name) not in local]

    def _bindings(self, spans: list[tuple[int, int, str]]) -> list[Binding]:
        """Variable, base-class and return-type bindings, each in its innermost enclosing
        definition (a base's is its class); a type is kept as its last simple name (`pkg.Cart<T>`
        -> `Cart`), what a call returns as the called name and `()` (`make_cart()`)."""
        ordered = sorted(spans)
        starts = [span[0] for span in ordered]
        bindings: list[Binding] = []
        for variable, type_node, how in self._raw_bindings:
            names = _TYPE_NAME_RE.findall(_GENERIC_ARGS_RE.sub("", self._text(type_node)))
            name = self._qualifier(variable) if variable is not None else ""
            if ".call" in how and names:
                names[-1] += "()"
            if not names or name == EXPRESSION_QUALIFIER or name.endswith(")"):
                continue
            at = type_node.start_byte
            enclosing = None
            for index in range(bisect_right(starts, at) - 1, -1, -1):
                if ordered[index][1] > at:
                    enclosing = ordered[index][2]
                    break
            kind = "base" if variable is None else "returns" if ".returns" in how else "var"
            bindings.append(Binding(kind, name, names[-1], enclosing))
        return list(dict.fromkeys(bindings))

    def _texts(self, nodes: list[Node], strip: str = "") -> list[str]:
        """Node texts in source order, each once."""
        ordered = sorted(nodes, key=lambda n: n.start_byte)
        return list(dict.fromkeys(self._text(n).strip(strip) for n in ordered))

    def _text(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def _line(self, row: int) -> bytes:
        if self._lines is None:
            self._lines = self.src.split(b"\n")
        return self._lines[row] if row < len(self._lines) else b""


def _fold_overloads(
    definitions: list[Definition], spans: list[tuple[int, int, str]]
) -> tuple[list[Definition], list[tuple[int, int, str]]]:
    """One definition per overload set of the file: each qualified name's declarations are
    folded into its first implementation, or into its first declaration when it has none;
    the one kept lists every signature of the set (only when there are several). Other
    implementations of the name (C++ overloads with bodies, a property's setter) stay apart."""
    target: dict[str, int] = {}  # qualified name → the definition its declarations fold into
    for i, d in enumerate(definitions):
        held = target.get(d.qualified_name)
        if held is None or (definitions[held].declaration and not d.declaration):
            target[d.qualified_name] = i
    kept: list[int] = []
    members: dict[int, list[str]] = {}
    for i, d in enumerate(definitions):
        into = target[d.qualified_name]
        if i == into or d.declaration:
            members.setdefault(into, []).append(d.signature)
        if i == into or not d.declaration:
            kept.append(i)
    for i, signatures in members.items():
        distinct = list(dict.fromkeys(signatures))
        if len(distinct) > 1:
            definitions[i].signatures = distinct
    return [definitions[i] for i in kept], [spans[i] for i in kept]


def _called_name(text: str) -> str | None:
    """The name a call expression calls (`a.b(x)(y)` -> None, `a.b(c(d))` -> `b`), or None."""
    if not text.endswith(")"):
        return None
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[index], 0)
        if depth == 0:
            found = _CALLED_NAME_RE.search(text[:index])
            return found.group(1) if found else None
    return None


def _split_scoped(name: str) -> tuple[str | None, str]:
    """A dotted definition name is a name in a scope: Elixir's `defmodule Billing.InvoiceMailer`
    and Ruby's `class Billing::InvoiceMailer` define `InvoiceMailer` in `Billing`."""
    if not _QUALIFIER_RE.fullmatch(name):
        return None, name
    scope, _, last = _QUALIFIER_SEP_RE.sub(".", name).rpartition(".")
    return scope or None, last


def _sole_child_of_type(parent: Node, node_type: str) -> bool:
    """A wrapper extends a definition only if it wraps no sibling definition of the same type."""
    return sum(1 for c in parent.named_children if c.type == node_type) == 1


def _start_after_decorators(node: Node, decorator_types: frozenset[str]) -> int | None:
    """Start byte of the first leading token that is not inside an annotation/decorator."""
    for child in node.children:
        if child.type in decorator_types:
            continue
        if child.child_count and child.children[0].type in decorator_types:
            start = _start_after_decorators(child, decorator_types)
            if start is None:
                continue
            return start
        return child.start_byte
    return None


def _find_body(node: Node, body_types: frozenset[str]) -> Node | None:
    """Breadth-first search for the body node a few levels down (covers `const f = () => {}`)."""
    level = [node]
    for _ in range(_BODY_SEARCH_DEPTH):
        level = [c for n in level for c in n.named_children]
        for child in level:
            if child.type in body_types:
                return child
    return None


def _is_trailing(comment: Node) -> bool:
    """A comment on the same line as preceding code documents that code, not what follows."""
    prev = comment.prev_sibling
    return prev is not None and _end_line(prev) - 1 == comment.start_point.row


def _comment_lines(text: str) -> list[str]:
    """Comment text without markers (`//`, `///`, `#`, `/** */`, leading `*`)."""
    text = _SHEBANG_RE.sub("", text).strip()
    if _BLOCK_COMMENT_OPEN_RE.match(text):
        text = _BLOCK_COMMENT_CLOSE_RE.sub("", _BLOCK_COMMENT_OPEN_RE.sub("", text))
        return [_BLOCK_COMMENT_STAR_RE.sub("", line) for line in text.split("\n")]
    return [_LINE_COMMENT_RE.sub("", line) for line in text.split("\n")]


def _end_line(node: Node) -> int:
    """1-based last line; a node ending at column 0 ends on the previous line."""
    row, column = node.end_point
    return row if column == 0 and row > node.start_point.row else row + 1


def _char_column(line: bytes, byte_column: int) -> int:
    """1-based column in characters, not bytes."""
    if line.isascii():
        return byte_column + 1
    return len(line[:byte_column].decode("utf-8", "replace")) + 1
