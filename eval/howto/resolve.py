"""Which repository files a name in a maintainer's document points at.

Documents name the code in many ways: a path (`internal/bundler/bundler.go`, `../src/x.rs`),
a bare file name (`bundler.go`), a directory or package (`helix-core`, `src/commands/`), a
module path (`pip._internal.req`, `helix_core::syntax`), or an identifier that is a file's stem
(`Lexer` for `lib/PhpParser/Lexer.php`, `bundler.ScanBundle()` for `bundler.go`). `Tree`
resolves one such name to the source files it means, at one commit, or to nothing when the
name is not a file or is ambiguous (two files of that name: neither is gold).

A directory resolves to its entry file (`ENTRY_NAMES`, in that order, the first that exists);
failing that to a sibling file named like it (Rust's `foo.rs` beside `foo/`, Ruby's
`foo.rb` beside `foo/`). A directory with neither resolves to nothing (its files are not
guessed).

A bare name (no path, no extension) is read as a file stem or folder name only when it is
shaped like an identifier (`js_parser`, `helix-core`, `Lexer`, `createSlice`), not a plain
lowercase word (`block` in "the core, block and inline chains" is not `rules_core/block.ts`);
a plain word still counts as the head of a qualified name (`bundler.ScanBundle()`,
`pickers.new`). And only where
`stems` is allowed: contributing guides name tools and packages (`esbuild`, `vite`) as often as
files, so there only paths, file names and module paths count.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from codeqa.parsing import languages

# A directory's entry files, in the order they are tried; `{name}` is the directory's own name.
ENTRY_NAMES = (
    "mod.rs", "lib.rs", "src/lib.rs", "main.rs", "src/main.rs",
    "__init__.py",
    "index.ts", "index.tsx", "index.js", "index.mjs", "src/index.ts", "src/index.js",
    "init.lua",
    "{name}.go", "{name}.zig", "{name}.h", "{name}.c", "{name}.hpp", "{name}.cpp", "{name}.lua",
    "{name}.rb", "{name}.py", "{name}.ts", "{name}.js", "{name}.kt", "{name}.swift", "{name}.php",
    "{name}.java", "{name}.ex", "{name}.cs",
    "main.go", "doc.go", "main.zig", "main.c",
)
# Names too generic to say which file they mean on their own (`main`, `mod`): as a bare stem
# they resolve to nothing; as part of a path they are fine.
GENERIC_STEMS = frozenset({"main", "mod", "lib", "index", "init", "__init__", "util", "utils", "common", "types",
                           "core", "src", "test", "tests", "build", "config", "api", "app", "base", "error",
                           "errors", "helpers", "internal", "options", "setup", "default", "data", "doc"})
FILE_SUFFIXES = frozenset(languages.SOURCE_EXTENSIONS) | {".md", ".json", ".toml", ".yaml", ".yml", ".txt"}
VENDORED_SEGMENT = re.compile(r"(^|/)_?vendor(ed)?/", re.IGNORECASE)
PLAIN_WORD = re.compile(r"[a-z]+")
MIN_STEM = 4  # shorter bare names (`org`, `foo`) are too often something else
_MODULE_SEPARATORS = re.compile(r"::|\.|/|\\")


def normalize(name: str) -> str:
    """A name compared across spellings: `helix_core`, `helix-core` and `HelixCore` are equal."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def is_gold_candidate(path: str) -> bool:
    """A file that can be gold: code CodeQA parses, in the source role by its path, and not a
    vendored copy (CodeQA's roles know `vendor/`, not pip's `_vendor/`)."""
    return languages.code_language(path) is not None and languages.file_role(path) == "source" \
        and not VENDORED_SEGMENT.search(path)


@dataclass
class Tree:
    """A repository's file list at one commit, indexed for name look-ups."""

    paths: list[str]
    files: set[str] = field(init=False)
    dirs: set[str] = field(init=False)
    _by_name: dict[str, list[str]] = field(init=False)
    _by_stem: dict[str, list[str]] = field(init=False)
    _dirs_by_name: dict[str, list[str]] = field(init=False)

    def __post_init__(self) -> None:
        self.files = set(self.paths)
        self.dirs = {str(parent) for p in self.paths for parent in PurePosixPath(p).parents if str(parent) != "."}
        self._by_name = defaultdict(list)
        self._by_stem = defaultdict(list)
        self._dirs_by_name = defaultdict(list)
        for path in sorted(self.files):
            if is_gold_candidate(path):
                pure = PurePosixPath(path)
                self._by_name[pure.name].append(path)
                self._by_stem[normalize(pure.stem)].append(path)
        for directory in sorted(self.dirs):
            if languages.file_role(directory + "/x.c") == "source" and not VENDORED_SEGMENT.search(directory + "/"):
                self._dirs_by_name[normalize(PurePosixPath(directory).name)].append(directory)

    # -- directories -----------------------------------------------------------------------
    def entry_files(self, directory: str) -> list[str]:
        """The entry file of a directory by the module rule (see the module docstring)."""
        name = PurePosixPath(directory).name
        for pattern in ENTRY_NAMES:
            candidate = f"{directory}/{pattern.format(name=name)}"
            if candidate in self.files and is_gold_candidate(candidate):
                return [candidate]
        parent = str(PurePosixPath(directory).parent)
        prefix = "" if parent == "." else parent + "/"
        siblings = [f"{prefix}{name}{ext}" for ext in (".rs", ".rb", ".zig", ".py", ".ts", ".js", ".lua", ".ex")]
        found = [s for s in siblings if s in self.files and is_gold_candidate(s)]
        return found[:1]

    # -- names -------------------------------------------------------------------------------
    def resolve(self, name: str, doc_dir: str = "", stems: bool = True) -> tuple[list[str], str]:
        """The source files `name` means and how it was read (`path`, `dir`, `file name`,
        `module`, `stem`), or ([], why not)."""
        folder = name.strip().strip("`'\"").rstrip(":,;").endswith("/")  # `operations/`: a folder, said so
        raw = name.strip().strip("`'\"").rstrip(":,;").rstrip("/")
        raw = re.sub(r"\(.*\)$", "", raw)  # a call: `bundler.ScanBundle()`
        raw = raw.split("#", 1)[0].split("?", 1)[0]
        if not raw or len(raw) > 200 or " " in raw:
            return [], "not a name"
        for candidate in self._path_forms(raw, doc_dir):
            if candidate in self.files:
                return ([candidate], "path") if is_gold_candidate(candidate) else ([], "not source")
            if candidate in self.dirs:
                entries = self.entry_files(candidate)
                return (entries, "dir") if entries else ([], "directory without entry file")
        if "/" in raw:
            return self._by_suffix(raw.lstrip("./"))
        basename = PurePosixPath(raw).name
        if normalize(PurePosixPath(basename).stem) in GENERIC_STEMS:
            return [], "generic name"  # `index.js` alone could be any of them
        if basename in self._by_name:
            hits = self._by_name[basename]
            return (hits, "file name") if len(hits) == 1 else ([], "ambiguous file name")
        if PurePosixPath(basename).suffix.lower() in FILE_SUFFIXES:
            return [], "no such file"  # `Node.js` is a runtime, not `Node.ts`
        module = self._module(raw)
        if module[0] or not stems:
            return module
        if PLAIN_WORD.fullmatch(raw) and not folder:
            return [], "plain word"  # `block`, `list`, `comment`: a word of the prose as often as a file
        return self._stem(raw, folder)

    def _path_forms(self, raw: str, doc_dir: str) -> list[str]:
        forms = []
        if doc_dir and not raw.startswith("/"):
            forms.append(posixpath.normpath(posixpath.join(doc_dir, raw)))
        forms.append(posixpath.normpath(raw.lstrip("/")))
        return [f for f in dict.fromkeys(forms) if not f.startswith("..") and f != "."]

    def _by_suffix(self, raw: str) -> tuple[list[str], str]:
        raw = posixpath.normpath(raw)
        files = [p for p in self.files if p.endswith("/" + raw)]
        if len(files) == 1:
            return ([files[0]], "path") if is_gold_candidate(files[0]) else ([], "not source")
        dirs = [d for d in self.dirs if d.endswith("/" + raw)]
        if not files and len(dirs) == 1:
            entries = self.entry_files(dirs[0])
            return (entries, "dir") if entries else ([], "directory without entry file")
        return [], "ambiguous path" if files or dirs else "no such path"

    def _module(self, raw: str) -> tuple[list[str], str]:
        """A module path (`a.b.c`, `a::b::c`): the longest prefix that is one source file or
        one package (a Rust crate `helix_core` is the folder `helix-core/src`); the rest names
        things inside it."""
        parts = [p for p in _MODULE_SEPARATORS.split(raw) if p]
        if len(parts) < 2:
            return [], "not a module path"
        for end in range(len(parts), 1, -1):
            rel = "/".join(parts[:end])
            forms = {rel, parts[0].replace("_", "-") + "/src/" + "/".join(parts[1:end])}
            hits: set[str] = set()
            for form in forms:
                hits.update(p for p in self._by_stem.get(normalize(parts[end - 1]), [])
                            if p.rsplit(".", 1)[0] == form or p.rsplit(".", 1)[0].endswith("/" + form))
                for directory in (d for d in self.dirs if d == form or d.endswith("/" + form)):
                    hits.update(self.entry_files(directory))
            if len(hits) == 1:
                return sorted(hits), "module"
            if len(hits) > 1:
                return [], "ambiguous module"
        return self._stem(parts[0]) if normalize(parts[0]) not in GENERIC_STEMS else ([], "generic name")

    def _stem(self, raw: str, folder: bool = False) -> tuple[list[str], str]:
        """An identifier spelled exactly like one source file's stem (`js_parser`, `Lexer`), or
        like one source folder's name (`helix-core`; `_` and `-` count as equal). Case counts:
        `Rope` is a type, not `rope.rs`."""
        key = normalize(raw)
        if not key or key in GENERIC_STEMS or len(key) < MIN_STEM:
            return [], "generic name"
        files = [] if folder else [p for p in self._by_stem.get(key, []) if PurePosixPath(p).stem == raw]
        if len(files) == 1:
            return files, "stem"
        if len(files) > 1:
            return [], "ambiguous stem"
        dirs = [d for d in self._dirs_by_name.get(key, [])
                if PurePosixPath(d).name.replace("_", "-") == raw.replace("_", "-")]
        if len(dirs) == 1:
            entries = self.entry_files(dirs[0])
            return (entries, "dir") if entries else ([], "directory without entry file")
        return [], "ambiguous directory" if dirs else "no such file"
