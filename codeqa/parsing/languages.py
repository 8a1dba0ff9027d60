"""The language table: everything CodeQA knows about languages and file types, kept as data.

Adding a language is one `queries/<lang>.scm` file plus one `LanguageSpec` entry in `LANGUAGES`;
the walker's extensions, the parser's grammar and conventions, reference resolution's families
and constructor calls, and search's file mentions all derive from this module. Doc formats
(Markdown, reStructuredText, plain text), the text formats no grammar parses (YAML, SQL,
Dockerfile, ... and their section patterns), extensions two languages share (`.h`), the files
never indexed (secrets) and the rules that give a file its role (source, test, example, ...) live
here too, so "what kind of file is this" has one answer everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase, translate
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import tree_sitter_bash
import tree_sitter_c
import tree_sitter_c_sharp
import tree_sitter_cpp
import tree_sitter_dart
import tree_sitter_elixir
import tree_sitter_go
import tree_sitter_haskell
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_julia
import tree_sitter_kotlin
import tree_sitter_lua
import tree_sitter_objc
import tree_sitter_ocaml
import tree_sitter_php
import tree_sitter_python
import tree_sitter_ruby
import tree_sitter_rust
import tree_sitter_scala
import tree_sitter_swift
import tree_sitter_typescript
import tree_sitter_zig

# --- Kinds of definitions ------------------------------------------------------------------------

# Functions: inside a class-like they become its methods (or constructor, by name).
FUNCTION_KINDS = frozenset({"function", "method", "constructor"})
# Macros with bodies (Rust `macro_rules!`, C/C++ `#define NAME(args)`): invoked like functions.
MACRO_KIND = "macro"
# What a call site can name: rows of the methods table. Everything else defined in code
# (class-likes, value kinds) and docs sections go to the classes table.
CALLABLE_KINDS = FUNCTION_KINDS | {MACRO_KIND}
# Named module-level values: constants (Python/JS UPPER_CASE and `__all__`, exported JS/TS
# `const`, Rust `const`/`static`, Go `const`) and Go package `var`s.
# Reading one is a `read` use: a name written the way the language's values are named, bare or
# qualified (`MAX_ITEMS`, `settings.MAX_ITEMS`, Go's `ErrNotFound`); see the queries.
VALUE_KINDS = frozenset({"constant", "variable"})
# Class-like kinds: they own methods and collect their signatures.
# A `namespace` is a module that is itself a definition (Ruby `module`, Elixir `defmodule`);
# C++, C# and PHP namespaces and Java/Kotlin/Scala packages are not definitions at all.
CLASS_KINDS = frozenset({"class", "interface", "enum", "record", "struct", "union", "trait", "impl", "namespace"})
# Class-like kinds whose name can be instantiated (`Foo()`, `new Foo()`, `Foo{}`).
INSTANTIABLE_KINDS = frozenset({"class", "struct", "record", "enum", "union"})
DOC_KIND = "doc"  # a docs section, stored in the classes table
# Rows of the modules table: one `file` row per source file (its doc, imports, top-level names
# and the head of its module-level code) and `module` rows for the rest of a long module body.
FILE_KIND = "file"
MODULE_KIND = "module"
MODULE_KINDS = frozenset({FILE_KIND, MODULE_KIND})


def table_of(kind: str) -> str:
    """The table (`methods`, `classes` or `modules`) that holds rows of this kind."""
    if kind in CALLABLE_KINDS:
        return "methods"
    return "modules" if kind in MODULE_KINDS else "classes"


# --- Source languages: grammar, queries and conventions ------------------------------------------


@dataclass(frozen=True)
class GrammarVariant:
    """A grammar plus the query files to use with it (TSX differs from TS by file extension)."""

    grammar: Callable[[], object]
    queries: tuple[str, ...]


@dataclass(frozen=True)
class LanguageSpec:
    """What the generic walker needs to know about one language; data, not code paths."""

    name: str
    extensions: tuple[str, ...]
    grammar: Callable[[], object]
    queries: tuple[str, ...]
    body_types: frozenset[str]
    # Languages whose code calls each other's definitions directly resolve references together
    # (TypeScript with JavaScript, C++ with C); "" means the language is its own family.
    family: str = ""
    comment_types: frozenset[str] = frozenset({"comment"})
    # Wrapper node type -> whether its text belongs to the signature (`export`, `type`, templates
    # do; Python decorators don't). A wrapper extends the definition's range when it holds only it.
    wrappers: Mapping[str, bool] = field(default_factory=dict)
    # Preceding sibling node types that belong to the next definition (Rust `#[derive(..)]`,
    # a Haskell type signature).
    prefix_types: frozenset[str] = frozenset()
    # Following sibling node types that belong to the definition before them (Dart's grammar
    # puts a method's body beside its signature).
    suffix_types: frozenset[str] = frozenset()
    # Annotation/decorator nodes inside a definition: part of its code, not of its signature.
    decorator_types: frozenset[str] = frozenset()
    # A function with one of these names inside a class-like is its constructor.
    constructor_names: frozenset[str] = frozenset()
    constructor_is_class_name: bool = False  # C++: `Foo::Foo()`
    # Calls `Type.name()` / `Type::name()` that create a Type besides the constructor itself
    # (Rust's `Foo::new()`); reference resolution counts them as instantiations.
    factory_names: frozenset[str] = frozenset()
    # Receivers that are the calling method's own object or class (`self`, `this`, `cls`): a
    # call on one reaches the caller's class and its bases; `super_names` reach only the bases.
    # Go names its receivers like parameters, so its bindings say what they are instead.
    self_names: frozenset[str] = frozenset({"self", "this", "Self", "cls"})
    super_names: frozenset[str] = frozenset({"super"})
    # Methods values of the language's own types have (Java's `Object`, Rust's `Clone` and
    # `Option`, Python's `dict` and `str`): the repo's only `x.get()` says nothing about an
    # `x` of unknown type, so such a call stays a name match.
    builtin_methods: frozenset[str] = frozenset()
    # Whether a file sees its directory's definitions without an import (Go's package, Java's):
    # then a bare `f()` defined once in the same directory resolves there.
    package_scope: bool = True
    # Path roots that start a module path rather than name a receiver (Rust's `crate::f()`,
    # `super::f()`): what follows is a top-level definition of the crate.
    module_roots: frozenset[str] = frozenset()
    doc_style: str = "comments"  # "docstring" (first string statement) or "comments" (preceding)
    # Comments documenting the enclosing item rather than the next one (Rust `//!`).
    inner_doc_prefixes: tuple[str, ...] = ()
    variants: Mapping[str, GrammarVariant] = field(default_factory=dict)  # by file extension
    # Files of this language whatever their extension (lowercase fnmatch: `gemfile`), and the
    # interpreters whose `#!` line makes an extensionless script one of its files.
    file_names: tuple[str, ...] = ()
    interpreters: tuple[str, ...] = ()
    # File names that make a file its folder's entry, the file the module is reached through
    # (`mod.rs`, `index.ts`, `__init__.py`). Files named like their folder are entries in every
    # language (search/structure.py).
    entry_names: tuple[str, ...] = ()


_C_BODY_TYPES = frozenset({"compound_statement", "field_declaration_list", "enumerator_list"})
# Methods of JavaScript's own objects, arrays, strings and promises (see `builtin_methods`).
_ECMASCRIPT_BUILTIN_METHODS = frozenset(
    {
        "toString",
        "valueOf",
        "hasOwnProperty",
        "call",
        "apply",
        "bind",
        "push",
        "pop",
        "shift",
        "unshift",
        "slice",
        "splice",
        "concat",
        "map",
        "filter",
        "forEach",
        "reduce",
        "some",
        "every",
        "find",
        "indexOf",
        "includes",
        "join",
        "split",
        "replace",
        "trim",
        "then",
        "catch",
        "finally",
        "keys",
        "values",
        "get",
        "set",
        "has",
        "delete",
        "add",
        "clear",
        "emit",
        "on",
        "once",
        "write",
        "end",
    }
)
# What JavaScript and TypeScript share beyond ecmascript.scm: exports, decorators, constructors.
_ECMASCRIPT: Mapping[str, Any] = MappingProxyType(
    {
        "wrappers": MappingProxyType({"export_statement": True}),
        "prefix_types": frozenset({"decorator"}),
        "decorator_types": frozenset({"decorator"}),
        "constructor_names": frozenset({"constructor"}),
    }
)

LANGUAGES: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        LanguageSpec(
            name="python",
            extensions=(".py",),
            grammar=tree_sitter_python.language,
            queries=("python.scm", "python_bindings.scm"),
            self_names=frozenset({"self", "cls"}),
            super_names=frozenset({"super()"}),
            package_scope=False,
            builtin_methods=frozenset(
                {  # object, dict, list, set, str, bytes, files
                    "get",
                    "pop",
                    "update",
                    "setdefault",
                    "items",
                    "keys",
                    "values",
                    "copy",
                    "clear",
                    "append",
                    "extend",
                    "insert",
                    "remove",
                    "add",
                    "discard",
                    "index",
                    "count",
                    "sort",
                    "join",
                    "split",
                    "strip",
                    "format",
                    "encode",
                    "decode",
                    "startswith",
                    "endswith",
                    "replace",
                    "lower",
                    "upper",
                    "read",
                    "write",
                    "close",
                    "flush",
                    "readline",
                    "seek",
                }
            ),
            body_types=frozenset({"block"}),
            wrappers=MappingProxyType({"decorated_definition": False}),
            constructor_names=frozenset({"__init__"}),
            doc_style="docstring",
            entry_names=("__init__.py",),
            interpreters=("python", "python2", "python3", "pypy", "pypy3"),
        ),
        LanguageSpec(
            name="java",
            extensions=(".java",),
            grammar=tree_sitter_java.language,
            queries=("java.scm", "java_bindings.scm"),
            self_names=frozenset({"this"}),
            builtin_methods=frozenset(
                {  # Object, String, collections
                    "equals",
                    "hashCode",
                    "toString",
                    "getClass",
                    "clone",
                    "compareTo",
                    "length",
                    "charAt",
                    "add",
                    "get",
                    "put",
                    "remove",
                    "size",
                    "isEmpty",
                    "contains",
                    "iterator",
                    "clear",
                    "addAll",
                    "containsKey",
                    "keySet",
                    "values",
                    "entrySet",
                    "stream",
                    "forEach",
                    "close",
                    "flush",
                }
            ),
            body_types=frozenset(
                {"block", "class_body", "interface_body", "enum_body", "constructor_body", "annotation_type_body"}
            ),
            comment_types=frozenset({"block_comment", "line_comment"}),
            decorator_types=frozenset({"marker_annotation", "annotation"}),
        ),
        LanguageSpec(
            name="javascript",
            extensions=(".js", ".jsx", ".mjs", ".cjs"),
            grammar=tree_sitter_javascript.language,
            queries=(
                "ecmascript.scm",
                "javascript.scm",
                "jsx.scm",
                "ecmascript_bindings.scm",
                "javascript_bindings.scm",
            ),
            self_names=frozenset({"this"}),
            builtin_methods=_ECMASCRIPT_BUILTIN_METHODS,
            package_scope=False,
            body_types=frozenset({"statement_block", "class_body"}),
            interpreters=("node", "nodejs", "bun"),
            entry_names=("index.js", "index.jsx", "index.mjs", "index.cjs"),
            **_ECMASCRIPT,
        ),
        LanguageSpec(
            name="typescript",
            extensions=(".ts", ".tsx", ".mts", ".cts"),
            grammar=tree_sitter_typescript.language_typescript,
            queries=("ecmascript.scm", "typescript.scm", "ecmascript_bindings.scm", "typescript_bindings.scm"),
            self_names=frozenset({"this"}),
            builtin_methods=_ECMASCRIPT_BUILTIN_METHODS,
            package_scope=False,
            body_types=frozenset({"statement_block", "class_body", "interface_body", "enum_body"}),
            family="javascript",
            **_ECMASCRIPT,
            interpreters=("ts-node", "deno", "tsx"),
            entry_names=("index.ts", "index.tsx", "index.mts"),
            variants=MappingProxyType(
                {
                    ".tsx": GrammarVariant(
                        tree_sitter_typescript.language_tsx,
                        (
                            "ecmascript.scm",
                            "typescript.scm",
                            "jsx.scm",
                            "ecmascript_bindings.scm",
                            "typescript_bindings.scm",
                        ),
                    )
                }
            ),
        ),
        LanguageSpec(
            name="rust",
            extensions=(".rs",),
            grammar=tree_sitter_rust.language,
            queries=("rust.scm", "rust_bindings.scm"),
            self_names=frozenset({"self", "Self"}),
            super_names=frozenset(),
            module_roots=frozenset({"crate", "super", "self"}),
            builtin_methods=frozenset(
                {  # std traits, Option, Result, Vec, str, iterators
                    "clone",
                    "to_string",
                    "to_owned",
                    "into",
                    "from",
                    "as_ref",
                    "as_mut",
                    "default",
                    "eq",
                    "cmp",
                    "partial_cmp",
                    "hash",
                    "fmt",
                    "unwrap",
                    "expect",
                    "unwrap_or",
                    "unwrap_or_else",
                    "map",
                    "and_then",
                    "ok",
                    "err",
                    "is_some",
                    "is_none",
                    "is_ok",
                    "is_err",
                    "iter",
                    "into_iter",
                    "next",
                    "collect",
                    "filter",
                    "len",
                    "is_empty",
                    "push",
                    "pop",
                    "get",
                    "insert",
                    "remove",
                    "contains",
                    "extend",
                    "as_bytes",
                    "as_str",
                    "write",
                    "flush",
                    "read",
                    "drop",
                    "deref",
                }
            ),
            body_types=frozenset({"block", "field_declaration_list", "declaration_list", "enum_variant_list"}),
            comment_types=frozenset({"line_comment", "block_comment"}),
            prefix_types=frozenset({"attribute_item"}),
            factory_names=frozenset({"new"}),
            inner_doc_prefixes=("//!", "/*!"),
            entry_names=("mod.rs", "lib.rs", "main.rs"),
        ),
        LanguageSpec(
            name="go",
            extensions=(".go",),
            grammar=tree_sitter_go.language,
            queries=("go.scm", "go_bindings.scm"),
            self_names=frozenset(),
            super_names=frozenset(),
            body_types=frozenset({"block", "field_declaration_list"}),
            wrappers=MappingProxyType(
                {"type_declaration": True, "const_declaration": True, "var_declaration": True, "var_spec_list": True}
            ),
        ),
        LanguageSpec(
            name="c",
            extensions=(".c", ".h"),
            grammar=tree_sitter_c.language,
            queries=("c_family.scm", "c.scm"),
            body_types=_C_BODY_TYPES,
        ),
        LanguageSpec(
            name="cpp",
            extensions=(".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"),
            grammar=tree_sitter_cpp.language,
            queries=("c_family.scm", "cpp.scm"),
            body_types=_C_BODY_TYPES,
            family="c",
            wrappers=MappingProxyType({"template_declaration": True}),
            constructor_is_class_name=True,
        ),
        LanguageSpec(
            name="csharp",
            extensions=(".cs",),
            grammar=tree_sitter_c_sharp.language,
            queries=("csharp.scm",),
            body_types=frozenset(
                {"declaration_list", "block", "enum_member_declaration_list", "arrow_expression_clause"}
            ),
            prefix_types=frozenset({"attribute_list"}),
            decorator_types=frozenset({"attribute_list"}),
        ),
        LanguageSpec(
            name="ruby",
            extensions=(".rb", ".rake", ".gemspec"),
            grammar=tree_sitter_ruby.language,
            queries=("ruby.scm",),
            body_types=frozenset({"body_statement"}),
            constructor_names=frozenset({"initialize"}),
            factory_names=frozenset({"new"}),  # Foo.new(...) runs Foo#initialize
            file_names=(
                "gemfile",
                "rakefile",
                "podfile",
                "vagrantfile",
                "guardfile",
                "brewfile",
                "fastfile",
                "dangerfile",
            ),
            interpreters=("ruby", "jruby"),
        ),
        LanguageSpec(
            name="php",
            extensions=(".php",),
            grammar=tree_sitter_php.language_php,
            queries=("php.scm",),
            body_types=frozenset({"compound_statement", "declaration_list", "enum_declaration_list"}),
            prefix_types=frozenset({"attribute_list"}),
            decorator_types=frozenset({"attribute_list"}),
            constructor_names=frozenset({"__construct"}),
            interpreters=("php",),
        ),
        LanguageSpec(
            name="kotlin",
            extensions=(".kt", ".kts"),
            grammar=tree_sitter_kotlin.language,
            queries=("kotlin.scm",),
            body_types=frozenset({"class_body", "function_body", "enum_class_body"}),
            family="java",
            comment_types=frozenset({"line_comment", "block_comment"}),
            decorator_types=frozenset({"annotation"}),
        ),
        LanguageSpec(
            name="swift",
            extensions=(".swift",),
            grammar=tree_sitter_swift.language,
            queries=("swift.scm",),
            body_types=frozenset({"class_body", "function_body", "protocol_body", "enum_class_body"}),
            comment_types=frozenset({"comment", "multiline_comment"}),
            decorator_types=frozenset({"attribute"}),
            constructor_names=frozenset({"init"}),
            interpreters=("swift",),
        ),
        LanguageSpec(
            name="scala",
            extensions=(".scala", ".sc"),
            grammar=tree_sitter_scala.language,
            queries=("scala.scm",),
            body_types=frozenset({"template_body", "block", "indented_block", "enum_body"}),
            family="java",
            comment_types=frozenset({"comment", "block_comment"}),
            decorator_types=frozenset({"annotation"}),
            interpreters=("scala",),
        ),
        LanguageSpec(
            name="bash",
            extensions=(".sh", ".bash", ".zsh", ".ksh"),
            grammar=tree_sitter_bash.language,
            queries=("bash.scm",),
            body_types=frozenset({"compound_statement"}),
            file_names=(".bashrc", ".bash_profile", ".zshrc", ".profile", "*.bats"),
            interpreters=("sh", "bash", "zsh", "ksh", "dash", "ash", "bats"),
        ),
        LanguageSpec(
            name="lua",
            extensions=(".lua",),
            grammar=tree_sitter_lua.language,
            queries=("lua.scm",),
            body_types=frozenset({"block"}),
            factory_names=frozenset({"new"}),  # RateLimiter.new(...) by convention
            interpreters=("lua", "luajit"),
            entry_names=("init.lua",),
        ),
        LanguageSpec(
            name="elixir",
            extensions=(".ex", ".exs"),
            grammar=tree_sitter_elixir.language,
            queries=("elixir.scm",),
            body_types=frozenset({"do_block"}),
            interpreters=("elixir",),
        ),
        LanguageSpec(
            name="haskell",
            extensions=(".hs", ".lhs"),
            grammar=tree_sitter_haskell.language,
            queries=("haskell.scm",),
            body_types=frozenset({"class_declarations", "instance_declarations"}),
            comment_types=frozenset({"comment", "haddock"}),
            prefix_types=frozenset({"signature"}),
            interpreters=("runhaskell", "runghc"),
        ),
        LanguageSpec(
            name="zig",
            extensions=(".zig",),
            grammar=tree_sitter_zig.language,
            queries=("zig.scm",),
            body_types=frozenset({"block", "struct_declaration", "enum_declaration", "union_declaration"}),
            factory_names=frozenset({"init"}),  # Ledger.init() by convention
            entry_names=("main.zig", "root.zig"),
        ),
        LanguageSpec(
            name="dart",
            extensions=(".dart",),
            grammar=tree_sitter_dart.language,
            queries=("dart.scm",),
            body_types=frozenset({"class_body", "function_body", "enum_body", "block"}),
            comment_types=frozenset({"comment", "documentation_comment"}),
            suffix_types=frozenset({"function_body"}),
            decorator_types=frozenset({"annotation"}),
            constructor_is_class_name=True,
            interpreters=("dart",),
        ),
        LanguageSpec(
            name="objc",
            extensions=(".m", ".mm"),
            grammar=tree_sitter_objc.language,
            queries=("c_family.scm", "c.scm", "objc.scm"),
            body_types=_C_BODY_TYPES | {"implementation_definition"},
            family="c",
            constructor_names=frozenset({"init"}),
            factory_names=frozenset({"alloc", "new"}),  # [[Foo alloc] init...], [Foo new]
        ),
        LanguageSpec(
            name="julia",
            extensions=(".jl",),
            grammar=tree_sitter_julia.language,
            queries=("julia.scm",),
            body_types=frozenset({"block"}),
            comment_types=frozenset({"line_comment", "block_comment"}),
            interpreters=("julia",),
        ),
        LanguageSpec(
            name="ocaml",
            extensions=(".ml",),
            grammar=tree_sitter_ocaml.language_ocaml,
            queries=("ocaml.scm",),
            body_types=frozenset({"structure", "signature"}),
            interpreters=("ocaml",),
        ),
    )
}


# --- Documents ------------------------------------------------------------------------------------

DOC_EXTENSIONS = MappingProxyType({".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text"})
DOC_LANGUAGES = frozenset(DOC_EXTENSIONS.values())
# Extensionless project documents, matched case-insensitively; read as plain text.
DOC_NAMES = frozenset(
    {
        "readme",
        "changes",
        "changelog",
        "history",
        "news",
        "authors",
        "contributing",
        "install",
        "license",
        "copying",
        "notice",
        "todo",
    }
)


# --- Text formats: configuration, data, build and infrastructure files ---------------------------


@dataclass(frozen=True)
class TextFormat:
    """A file type no grammar parses: it gets a file row, and sections where it has structure.

    `section` matches the line that starts a section; its `title` group names the section and
    an optional `level` group nests it (HTML headings). Without one, the file is cut into
    line windows like any other text."""

    name: str
    extensions: tuple[str, ...] = ()
    file_names: tuple[str, ...] = ()  # lowercase fnmatch patterns: `dockerfile`, `*.env.example`
    section: re.Pattern[str] | None = None
    section_anywhere: bool = False  # whether `section` may match inside a line (`<h2>`), not only at its start


_INI_SECTION = re.compile(r"\[\[?(?P<title>[^\]\n]+)\]\]?[ \t]*(?:[#;].*)?$")
TEXT_FORMATS: dict[str, TextFormat] = {
    fmt.name: fmt
    for fmt in (
        # Top-level keys that open a block (`spec:`); `version: 3` stays in the section before it.
        TextFormat(
            "yaml",
            (".yaml", ".yml"),
            section=re.compile(r"(?P<title>[A-Za-z0-9_\"'][^:#\n]*?):[ \t]*(?:[|>][-+0-9]*)?[ \t]*(?:#.*)?$"),
        ),
        TextFormat("toml", (".toml",), ("pipfile",), section=_INI_SECTION),
        TextFormat(
            "ini",
            (".ini", ".cfg", ".conf", ".properties"),
            (
                ".env.example",
                ".env.sample",
                ".env.template",
                ".env.dist",
                ".env.defaults",
                "*.env.example",
                "*.env.sample",
                ".editorconfig",
                ".flake8",
                ".pylintrc",
                ".coveragerc",
            ),
            section=_INI_SECTION,
        ),
        TextFormat("json", (".json", ".jsonc", ".json5")),
        # Schema statements start sections; data statements stay with the schema before them.
        TextFormat(
            "sql",
            (".sql",),
            section=re.compile(r"(?P<title>(?:CREATE|ALTER|DROP|COMMENT\s+ON|GRANT|REVOKE)\b[^(;\n]*)", re.IGNORECASE),
        ),
        TextFormat(
            "dockerfile",
            (".dockerfile",),
            ("dockerfile", "dockerfile.*", "containerfile"),
            section=re.compile(r"FROM\s+(?P<title>\S+(?:\s+AS\s+\S+)?)", re.IGNORECASE),
        ),
        TextFormat(
            "makefile",
            (".mk", ".mak"),
            ("makefile", "gnumakefile", "makefile.*"),
            section=re.compile(
                r"(?!\.PHONY|\.SUFFIXES|\.DEFAULT|\.SILENT)"
                r"(?P<title>[A-Za-z0-9_./%$(){}-][^:=#\n\t]*?)[ \t]*::?(?!=)"
            ),
        ),
        TextFormat(
            "cmake",
            (".cmake",),
            ("cmakelists.txt",),
            section=re.compile(
                r"(?P<title>(?:function|macro|project|add_library|add_executable)\s*\([^)\s]*)", re.IGNORECASE
            ),
        ),
        TextFormat(
            "hcl",
            (".tf", ".tfvars", ".hcl"),
            section=re.compile(
                r"(?P<title>(?:resource|data|module|variable|output|provider|locals|terraform)\b[^{\n]*?)"
                r"[ \t]*\{"
            ),
        ),
        TextFormat("protobuf", (".proto",), section=re.compile(r"(?P<title>(?:message|service|enum|extend)\s+[\w.]+)")),
        TextFormat(
            "graphql",
            (".graphql", ".gql", ".graphqls"),
            section=re.compile(
                r"(?P<title>(?:type|input|interface|enum|union|scalar|schema|query|mutation|subscription"
                r"|fragment|directive|extend)\b[^{(=\n]*)"
            ),
        ),
        TextFormat(
            "html",
            (".html", ".htm", ".xhtml"),
            section=re.compile(r"<h(?P<level>[1-6])\b[^>]*>(?P<title>.*?)</h[1-6]>", re.IGNORECASE),
            section_anywhere=True,
        ),
        TextFormat("css", (".css", ".scss", ".sass", ".less")),
        # `.m` files that are not Objective-C (SHARED_EXTENSIONS decides).
        TextFormat("matlab", section=re.compile(r"(?P<title>(?:function|classdef)\b[^%\n]*)")),
        TextFormat(
            "xml",
            (".xml", ".xsd", ".xsl", ".xslt", ".svg", ".plist", ".csproj", ".props", ".targets", ".vbproj", ".fsproj"),
        ),
    )
}
# Files that no table above knows are indexed as text in this language (file rows and line
# windows), unless their content is binary: no repository is refused for its language.
OTHER_LANGUAGE = "other"


# --- Extensions several languages share -------------------------------------------------------------


@dataclass(frozen=True)
class SharedLanguage:
    """One of the languages of a shared extension: a file is this language when its head shows
    `constructs`, or when its directory holds files with one of `neighbours`' extensions."""

    language: str
    constructs: re.Pattern[str]
    neighbours: frozenset[str]


@dataclass(frozen=True)
class SharedExtension:
    """An extension several languages use (`.h`: C, C++ or Objective-C). The first candidate
    whose constructs the file's head shows wins; else the first whose sources are its neighbours
    while the default's are not; else `default`."""

    default: str
    default_neighbours: frozenset[str]
    candidates: tuple[SharedLanguage, ...]


_CPP_SOURCES = frozenset({".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"})
_OBJC_CONSTRUCTS = re.compile(r"^\s*(?:@(?:interface|implementation|protocol|class)\b|#\s*import\b)", re.MULTILINE)
SHARED_EXTENSIONS = MappingProxyType(
    {
        ".h": SharedExtension(
            "c",
            frozenset({".c"}),
            (
                SharedLanguage("objc", _OBJC_CONSTRUCTS, frozenset({".m", ".mm"})),
                # Templates, namespaces, classes, access labels, `enum class`, C++ keywords, a standard
                # header without `.h` (`<vector>`, `<cstdint>`; C's all end in `.h`), `::` scopes.
                SharedLanguage(
                    "cpp",
                    re.compile(
                        r"^\s*(?:template\s*<|namespace\s+[\w:]*\s*\{|class\s+\w+[^;(]*\{"
                        r"|(?:public|private|protected)\s*:|using\s+namespace\b|enum\s+(?:class|struct)\b"
                        r"|#\s*include\s*<\w+>)"
                        r"|\b(?:constexpr|noexcept|nullptr|decltype)\b|\bstd::|\w::\w",
                        re.MULTILINE,
                    ),
                    _CPP_SOURCES,
                ),
            ),
        ),
        # MATLAB has no grammar here: its files are text, cut at their functions.
        ".m": SharedExtension(
            "matlab", frozenset(), (SharedLanguage("objc", _OBJC_CONSTRUCTS, frozenset({".h", ".mm"})),)
        ),
    }
)
_COMMENTS_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


# --- Secrets: never indexed, whatever their format ------------------------------------------------

# A real `.env` holds credentials; its `.env.example` (a text format above) does not.
SECRET_NAMES = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
)


# CodeQA's own ignore rules, in .gitignore's syntax, at any level (`repo_files` reads them).
IGNORE_FILE = ".codeqaignore"
# Version control's own files (and CodeQA's ignore file): about the repository, not in it.
VCS_FILES = frozenset(
    {".gitignore", ".gitattributes", ".gitmodules", ".gitkeep", ".keep", ".hgignore", ".hgtags", IGNORE_FILE}
)


# --- Derived from the tables above ----------------------------------------------------------------

_CODE_LANGUAGE_BY_EXTENSION = {ext: spec.name for spec in LANGUAGES.values() for ext in spec.extensions}
_TEXT_FORMAT_BY_EXTENSION = {ext: fmt.name for fmt in TEXT_FORMATS.values() for ext in fmt.extensions}


class NamePatterns:
    """Shell-style file-name patterns (fnmatch's), tried in order: the first that matches wins.
    One regular expression for them all, not one `fnmatchcase` each: the walk asks for every
    file (~40 patterns a file were most of a walk of Django's sdist)."""

    def __init__(self, patterns: tuple[tuple[str, str], ...]) -> None:
        self._values = [value for _, value in patterns]
        alternatives = "|".join(f"(?P<p{i}>{translate(pattern)})" for i, (pattern, _) in enumerate(patterns))
        self._regex = re.compile(alternatives) if patterns else None

    def first(self, name: str) -> str | None:
        """The value of the first pattern `name` matches (case-sensitive), else None."""
        found = self._regex.match(name) if self._regex is not None else None
        return self._values[int(found.lastgroup[1:])] if found and found.lastgroup else None


def file_name(path: str) -> str:
    """The last part of a repo-relative POSIX path (`PurePosixPath(path).name`, without the object)."""
    return path.rsplit("/", 1)[-1]


def file_suffix(path: str) -> str:
    """A path's extension with its dot, as written (`PurePosixPath(path).suffix`): `.gz` for
    `a.tar.gz`, nothing for `.bashrc` or `a.`."""
    name = file_name(path)
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


# Name patterns before extensions (`CMakeLists.txt` is CMake, not a text document).
_LANGUAGE_BY_NAME = NamePatterns(
    tuple((pattern, fmt.name) for fmt in TEXT_FORMATS.values() for pattern in fmt.file_names)
    + tuple((pattern, spec.name) for spec in LANGUAGES.values() for pattern in spec.file_names)
)
_LANGUAGE_BY_INTERPRETER = {name: spec.name for spec in LANGUAGES.values() for name in spec.interpreters}
_SHEBANG_RE = re.compile(r"#!\s*\S*/(?:env\s+(?:-\S+\s+)*)?([\w.+-]+)")
# Secrets by name, but not their shared examples (`.env.example`): the first pattern decides.
_SECRETS = NamePatterns(
    tuple((p, "example") for fmt in TEXT_FORMATS.values() for p in fmt.file_names if p.startswith(".env"))
    + tuple((p, "secret") for p in SECRET_NAMES)
)
# Every extension tree-sitter parses, and every extension known by name (other files are
# indexed too, as `other`).
SOURCE_EXTENSIONS = tuple(_CODE_LANGUAGE_BY_EXTENSION)
INDEXED_EXTENSIONS = SOURCE_EXTENSIONS + tuple(DOC_EXTENSIONS) + tuple(_TEXT_FORMAT_BY_EXTENSION)
# Call names that instantiate their qualifier (`Foo.__init__()`, `Foo::new()`), in any language.
CONSTRUCTOR_CALLS = frozenset().union(*(spec.constructor_names | spec.factory_names for spec in LANGUAGES.values()))


def code_language(path: str) -> str | None:
    """The tree-sitter language of a file, by extension; None for files that are not parsed."""
    return _CODE_LANGUAGE_BY_EXTENSION.get(file_suffix(path).lower())


def language_for(path: str) -> str | None:
    """The language a file is indexed as, by its name: a format or language its name or
    extension says (`Dockerfile`, `x.yaml`, `README`, `x.rs`), else None: then its content
    decides (`language_from_content`)."""
    name = file_name(path).lower()
    language = _LANGUAGE_BY_NAME.first(name)
    if language is not None:
        return language
    suffix = file_suffix(path).lower()
    if suffix in DOC_EXTENSIONS:
        return DOC_EXTENSIONS[suffix]
    if not suffix and name in DOC_NAMES:
        return "text"
    return code_language(path) or _TEXT_FORMAT_BY_EXTENSION.get(suffix)


def needs_content(path: str) -> bool:
    """Whether a file's language depends on its head: a script without an extension (its
    `#!` line), or an extension two languages share (`.h`)."""
    suffix = file_suffix(path)
    if suffix.lower() in SHARED_EXTENSIONS:
        return True
    return language_for(path) is None and not suffix


def language_from_content(path: str, head: str, neighbours: frozenset[str] = frozenset()) -> str:
    """The language of a file its name leaves open, from its first bytes (`head`) and the
    extensions of the other files in its directory (`neighbours`, lowercase, with dots)."""
    shared = SHARED_EXTENSIONS.get(file_suffix(path).lower())
    if shared is not None:
        return _shared_language(shared, head, neighbours)
    shebang = _SHEBANG_RE.match(head)
    interpreter = shebang.group(1) if shebang else ""
    for name in (interpreter, interpreter.rstrip("0123456789.")):  # python3.12 is python
        if name in _LANGUAGE_BY_INTERPRETER:
            return _LANGUAGE_BY_INTERPRETER[name]
    return OTHER_LANGUAGE


def _shared_language(shared: SharedExtension, head: str, neighbours: frozenset[str]) -> str:
    """Content first (comments removed, so `// see Foo::bar` says nothing), then neighbours."""
    code = _COMMENTS_RE.sub("", head)
    for candidate in shared.candidates:
        if candidate.constructs.search(code):
            return candidate.language
    if not neighbours & shared.default_neighbours:
        for candidate in shared.candidates:
            if neighbours & candidate.neighbours:
                return candidate.language
    return shared.default


def is_secret(path: str) -> bool:
    """Whether a file holds credentials by its name (`.env`, `id_rsa`, `*.pem`): never indexed."""
    return _SECRETS.first(file_name(path).lower()) == "secret"


def section_format(language: str) -> TextFormat | None:
    """The text format of a language whose files are cut into sections by a heading pattern."""
    fmt = TEXT_FORMATS.get(language)
    return fmt if fmt is not None and fmt.section is not None else None


def entry_names(language: str) -> tuple[str, ...]:
    """File names that make a file of `language` its folder's entry (`LanguageSpec.entry_names`)."""
    spec = LANGUAGES.get(language)
    return spec.entry_names if spec is not None else ()


def language_family(language: str) -> str:
    """The group of languages whose definitions a use in `language` may refer to."""
    spec = LANGUAGES.get(language)
    return (spec.family or spec.name) if spec is not None else language


# --- File roles -------------------------------------------------------------------------------------

# Directories that hold other people's code or build output: the walker never descends into them.
VENDORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "bower_components",
        "venv",
        ".venv",
        "site-packages",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".idea",
        ".gradle",
        ".next",
        ".nuxt",
        "dist",
        "build",
        "target",
        "vendor",
        "_vendor",
        "Pods",
        "third_party",
        ".eggs",
    }
)
# A directory holding one of these files is a virtualenv whatever its name.
VENDORED_MARKERS = ("pyvenv.cfg",)

ROLES = ("source", "test", "example", "benchmark", "docs", "generated", "vendored")
# Roles whose long module-level code gets `module` rows of its own. A test file's code is mostly
# module level (`describe(..., () => { it(...) })`): chunking it would multiply the embeddings
# of a repo's tests while their file rows (whole-file BM25 and the head) already find them.
MODULE_ROW_ROLES = frozenset({"source", "example", "docs"})
HEAD_CHARS = 1000  # how much of a file's start is searched for a "generated" header
_GENERATED_HEADER = re.compile(
    r"Code generated .* DO NOT EDIT"  # Go (go generate, protoc-gen-go)
    r"|@generated\b"  # Meta's convention (Rust, JS, Hack, Buck)
    r"|This file (?:is|was) (?:auto-?generated|automatically generated|generated by)"  # many tools
    r"|Generated by the protocol buffer compiler",  # protoc for C++, Python, Java
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RoleRule:
    """A role a file has when a directory on its path or its file name matches."""

    role: str
    dirs: frozenset[str] = frozenset()  # directory names (lowercase), at any depth
    names: tuple[str, ...] = ()  # file-name patterns (fnmatch, lowercase)
    # File-name patterns whose case matters: `*Test.php` is a test, `Latest.php` is not.
    cased_names: tuple[str, ...] = ()
    # Directory-name patterns (fnmatch, lowercase), at any depth: .NET's `Foo.Tests/` projects.
    dir_patterns: tuple[str, ...] = ()


# First match wins; a path that matches none is "docs" for documents, else "source".
ROLE_RULES: tuple[RoleRule, ...] = (
    RoleRule(
        "vendored",
        dirs=frozenset(d.lower() for d in VENDORED_DIRS),
        # a library's copy shipped beside the code: minified, or named with its version (jquery-3.5.1.js)
        # and patches to another project's code (zstd's contrib/linux-kernel/*.patch)
        names=("*.min.js", "*.min.css", "*-[0-9]*.[0-9]*.js", "*.patch", "*.diff"),
    ),
    RoleRule(
        "generated",
        names=(
            "*_pb2.py",
            "*_pb2_grpc.py",  # protobuf / gRPC for Python
            "*.pb.go",
            "*.pb.cc",
            "*.pb.h",  # protobuf for Go and C++
            "*.g.dart",
            "*.freezed.dart",
            "*.pb.dart",
            "*.designer.cs",  # Dart and .NET code generators
            # lock files: written by package managers
            "package-lock.json",
            "yarn.lock",
            "pnpm-lock.yaml",
            "cargo.lock",
            "poetry.lock",
            "pipfile.lock",
            "gemfile.lock",
            "composer.lock",
            "mix.lock",
            "pubspec.lock",
            "package.resolved",
            "podfile.lock",
            "go.sum",
            "flake.lock",
            "uv.lock",
            # project files an IDE writes: Xcode's
            "*.pbxproj",
            "*.xcscheme",
            "*.xcworkspacedata",
        ),
    ),
    RoleRule(
        "test",
        dirs=frozenset(
            {
                "test",
                "tests",
                "testing",  # Python, Rust `tests/`, Java/Maven `src/test/`, Go `testing/`
                "testsuite",  # older Python packages (Flask, Jinja: `flask/testsuite/`)
                "testdata",  # Go: fixtures the go tool ignores
                "spec",  # RSpec, Jasmine
                "__tests__",  # Jest
                "androidtest",
                "integrationtest",  # Gradle source sets: src/androidTest/kotlin
            }
        ),
        dir_patterns=(
            "*.tests",
            "*.test",
            "*.unittests",
            "*.integrationtests",
            "*.specs",  # .NET test projects
        ),
        names=(
            "test_*",  # pytest / unittest: test_*.py
            "*_test.*",  # pytest *_test.py, Go *_test.go, C++ gtest *_test.cc, ExUnit *_test.exs, Dart
            "*_spec.*",  # RSpec *_spec.rb, busted *_spec.lua
            "*.test.*",
            "*.spec.*",  # Jest, Vitest, Mocha: *.test.ts, *.spec.js
            "conftest.py",  # pytest fixtures
            "*.bats",  # Bash Automated Testing System
        ),
        cased_names=(
            "*Test.java",
            "*Tests.java",
            "*Test.kt",
            "*Tests.kt",  # JUnit
            "*Tests.cs",
            "*Test.cs",  # xUnit, NUnit, MSTest
            "*Test.php",  # PHPUnit
            "*Tests.swift",
            "*Test.swift",
            "*Tests.m",  # XCTest
            "*Spec.scala",
            "*Test.scala",
            "*Suite.scala",  # ScalaTest, MUnit
            "*Spec.hs",  # Hspec
        ),
    ),
    RoleRule("benchmark", dirs=frozenset({"bench", "benches", "benchmark", "benchmarks"})),
    RoleRule("example", dirs=frozenset({"example", "examples", "example_scripts", "samples"})),
    RoleRule(
        "docs",
        dirs=frozenset({"doc", "docs"}),
        # text with no document extension: changelogs, licences, man pages, translation catalogs
        names=(
            "changes",
            "changes.old",
            "changelog",
            "history",
            "news",
            "license",
            "licence",
            "license-apache",
            "license-mit",
            "copying",
            "notice",
            "authors",
            "contributors",
            "code_of_conduct",
            "*.[1-9]",
            "*.po",
            "*.pot",
        ),
    ),
)


def file_role(path: str, head_text: str = "") -> str:
    """The role of a repo file (one of `ROLES`), from its path and, if given, its first lines.

    `path` is relative to the repo root, `/`-separated. `head_text` lets a generated-file
    header (`// Code generated ... DO NOT EDIT.`, `@generated`) decide; without it the
    path alone does.
    """
    role = _path_role(path)
    if role not in ("vendored", "generated") and _GENERATED_HEADER.search(head_text[:HEAD_CHARS]):
        return "generated"
    return role


def current_role(stored: str, path: str) -> str:
    """A row's stored role, refined by today's path rules: an index written before a rule was
    added (a vendored library's versioned copy) ranks as a fresh index of the same files would."""
    return _path_role(path) if stored == "source" else stored


@lru_cache(maxsize=65536)
def _path_role(path: str) -> str:
    """What the path alone says (search asks this for every candidate, so it is memoised)."""
    cased_name = file_name(path)
    *dirs, name = path.lower().split("/")
    for rule in ROLE_RULES:
        if (
            rule.dirs.intersection(dirs)
            or any(fnmatchcase(d, p) for d in dirs for p in rule.dir_patterns)
            or any(fnmatchcase(name, p) for p in rule.names)
            or any(fnmatchcase(cased_name, p) for p in rule.cased_names)
        ):
            return rule.role
    return "docs" if language_for(path) in DOC_LANGUAGES else "source"
