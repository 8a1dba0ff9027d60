"""The repository's structure as file-ranking evidence (issue 32).

A how-it-works question ("how does the router match a path to its handler", "where are plugins
registered") names a part of the code, not its symbols. Ranking files by their best-matching
rows puts first the files whose function names echo its words, and misses the module that
implements or wires the part: `mod.rs`, `index.ts`, `__init__.py`, a facade named like its
folder. These features see that structure:

- `entry`: the file is a module's entry: a name its language gives entry files (`mod.rs`,
  `index.ts`, `__init__.py`: `languages.LanguageSpec.entry_names`), a file named like its folder
  (`pool/pool.go`), or one named like a folder beside it (`router.rs` beside `router/`).
  `root_entry`: the whole program's entry, weighed apart: of the root, of a layout folder
  (`src/main.rs`, `src/index.ts`) or of a package holding most of the code (below).
- `hub`: the evidence found inside the module a file is the entry of: the files under its
  folder (up to two module folders down; `src/` and `lib/` are no level, the root and they
  are no module) among the best candidates, each counting 1/its rank (the folder as a unit). Entry
  files with a hub are added to the candidates when no other evidence found them.
- `name_asked`: the share of a part's name that the question uses, for the part's entry file
  ("middleware" → `middleware/index.js`). A file's own name is matched already (its file row's
  path text; a query that is exactly `view` lists `view.js` first).
- `folder_asked`: the question uses the name of a folder on the file's path.
  A folder that holds most of the repository's code (`src/flask/`) is the program itself, not a
  part: every question about Flask says "Flask", so its name counts for neither, its entry
  (`src/flask/__init__.py`) is a `root_entry`, and it is no hub.
- `central`: personalised PageRank over the references between the candidates, started from
  the first hits, as aider's repo map ranks files: where the matching code is used from and
  what it uses.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from codeqa.parsing.languages import LANGUAGES, entry_names, language_for
from codeqa.parsing.tokens import code_tokens

if TYPE_CHECKING:
    from codeqa.search.results import FileHit, Hit

HUB_FILES = 20  # the best candidates whose folders make hubs
HUB_LEVELS = 2  # how many folders up a candidate counts for
WHOLE_SHARE = 0.5  # a folder holding more of the repository's code is the program, not a part of it
# Folders that say where code lives, not what it is: a module is named by the folder inside them.
LAYOUT_FOLDERS = frozenset(
    {
        "src",
        "lib",
        "libs",
        "pkg",
        "internal",
        "source",
        "sources",
        "main",
        "java",
        "kotlin",
        "scala",
        "app",
        "apps",
        "packages",
        "crates",
        "core",
        "cmd",
        "include",
        "common",
        "modules",
        "com",
        "org",
        "io",
        "net",
        "dev",
        "go",
        "js",
        "ts",
        "python",
        "rust",
        "swift",
        "csharp",
    }
)
# The features this module sets: a file model that weighs none of them needs no structure.
STRUCTURE_FEATURES = frozenset({"entry", "root_entry", "hub", "name_asked", "folder_asked", "central"})
PAGERANK_DAMPING = 0.85
PAGERANK_STEPS = 30


@lru_cache(maxsize=65536)
def name_tokens(name: str) -> frozenset[str]:
    """The words of a file or folder name (`map_request` → map, request; not `maprequest` too).
    Memoised: every search asks it for every part of every candidate's path."""
    tokens = code_tokens(name.replace("-", "_")).split()
    if len(tokens) > 1 and tokens[0] == "".join(tokens[1:]):
        tokens = tokens[1:]
    return frozenset(singular(t) for t in tokens)


def asked_words(question_terms: Iterable[str]) -> set[str]:
    """The question's terms as names are matched against them (singular)."""
    return {singular(t) for t in question_terms}


def singular(token: str) -> str:
    """`routes` meets `route`, `handlers` meets `handler`: English plurals, roughly."""
    return token[:-1] if len(token) > 3 and token.endswith("s") and not token.endswith("ss") else token


def file_stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _same_name(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return s.lower().replace("_", "").replace("-", "")

    return bool(a) and norm(a) == norm(b)


def module_folder(path: str, folders: frozenset[str]) -> str | None:
    """The folder `path` is the entry of, if it is one: its own folder for an entry name; the
    nearest folder above that is not a layout folder, for a file named like it (`pool/pool.go`,
    Dart's `http/lib/http.dart`); the folder beside it for `router.rs` beside `router/`; else
    None. `folders` are the repository's folders (to see the one beside)."""
    folder, name, stem = _folder(path), path.rsplit("/", 1)[-1], file_stem(path)
    language = language_for(path)
    if language and name in entry_names(language):
        return folder
    named = _named_folder(folder)
    if named is not None and _same_name(stem, named.rsplit("/", 1)[-1]):
        return named
    beside = f"{folder}/{stem}" if folder else stem
    return beside if beside in folders else None


def _named_folder(folder: str) -> str | None:
    """`folder`, or the nearest folder above it that says what the code is (not `src/`, `lib/`)."""
    while folder:
        if folder.rsplit("/", 1)[-1].lower() not in LAYOUT_FOLDERS:
            return folder
        folder = _folder(folder)
    return None


def module_name(path: str, module: str | None) -> str:
    """What a file's module is called: the stem, or for an entry file its folder's name (the
    nearest that is not a layout folder such as `src/`)."""
    if module is None:
        return file_stem(path)
    for part in reversed(module.split("/")):
        if part.lower() not in LAYOUT_FOLDERS:
            return part
    return file_stem(path)


@dataclass(frozen=True)
class RepoLayout:
    """The repository's files as search sees its structure: role and language per path, its
    folders, and each module's entry file. Built once per index version (a few ms per thousand
    files), then shared by searches."""

    files: Mapping[str, tuple[str, str]]  # path → (role, language)
    folders: frozenset[str]
    entries: Mapping[str, str]  # folder → its entry file
    modules: Mapping[str, str]  # entry file → the folder it is the entry of
    parts: frozenset[str]  # module folders that are a part of the program, not (nearly) all of it
    wide: frozenset[str]  # folders holding most of the code (`src/flask/`): the program, not a part

    @classmethod
    def of(cls, files: Mapping[str, tuple[str, str]]) -> RepoLayout:
        folders: Counter[str] = Counter()
        code = 0
        for path, (role, language) in files.items():
            counted = role == "source" and language in LANGUAGES
            code += counted
            segments = path.split("/")[:-1]
            for i in range(1, len(segments) + 1):
                folders["/".join(segments[:i])] += counted
        frozen = frozenset(folders)
        modules: dict[str, str] = {}
        entries: dict[str, str] = {}
        for path in sorted(files):  # of several (`lib.rs`, `main.rs`), the first in path order leads
            module = module_folder(path, frozen)
            if module is not None:
                modules[path] = module
                entries.setdefault(module, path)
        wide = frozenset(folder for folder, count in folders.items() if count > WHOLE_SHARE * code)
        parts = frozenset(module for module in entries if _named_folder(module) == module and module not in wide)
        return cls(dict(files), frozen, entries, modules, parts, wide)

    def hubs(self, ranked: list[str]) -> dict[str, float]:
        """Per entry file, the evidence inside its module: each of the best `HUB_FILES` of
        `ranked` under its folder (up to `HUB_LEVELS` folders up, the entry itself aside) adds
        1/its rank. Only the program's parts are hubs: the root, layout folders (`src/`) and a
        package that holds most of the code (`src/flask/`) would be everything's hub."""
        hubs: dict[str, float] = {}
        for rank, path in enumerate(ranked[:HUB_FILES], 1):
            folder = _named_folder(_folder(path))
            for _ in range(HUB_LEVELS):  # layout folders (`lib/src/`) are no level
                if folder is None:
                    break
                entry = self.entries.get(folder) if folder in self.parts else None
                if entry and entry != path:
                    hubs[entry] = hubs.get(entry, 0.0) + 1.0 / rank
                folder = _named_folder(_folder(folder))
        return hubs


def centrality(files: list[str], hits: list[Hit], prior: Mapping[str, float]) -> dict[str, float]:
    """Personalised PageRank over the candidates' reference graph, as a share of the best's:
    a file that uses a row links to the row's file and back (the wiring and the wired), the walk
    restarts at the files of the first hits (`prior`)."""
    index = {path: i for i, path in enumerate(files)}
    edges: dict[tuple[int, int], int] = {}
    for hit in hits:
        target = index.get(hit.file_path)
        if target is None:
            continue
        for user in {ref["file_path"] for ref in hit.references}:
            source = index.get(user)
            if source is not None and source != target:
                edges[(source, target)] = edges.get((source, target), 0) + 1
                edges[(target, source)] = edges.get((target, source), 0) + 1
    if not edges or not files:
        return {}
    n = len(files)
    matrix = np.zeros((n, n))
    for (source, target), count in edges.items():
        matrix[target, source] = math.log1p(count)
    outgoing = matrix.sum(axis=0)
    matrix = np.divide(matrix, outgoing, out=np.zeros_like(matrix), where=outgoing > 0)
    restart = np.array([prior.get(path, 0.0) for path in files])
    restart = restart / restart.sum() if restart.sum() > 0 else np.full(n, 1.0 / n)
    rank = restart.copy()
    for _ in range(PAGERANK_STEPS):
        rank = (1 - PAGERANK_DAMPING) * restart + PAGERANK_DAMPING * (
            matrix @ rank + restart * rank[outgoing == 0].sum()
        )
    top = rank.max() or 1.0
    return {path: float(rank[i] / top) for path, i in index.items()}


def structure_features(
    files: Mapping[str, FileHit],
    hits: list[Hit],
    asked: Set[str],
    layout: RepoLayout,
    hubs: Mapping[str, float],
) -> None:
    """Set `entry`, `root_entry`, `hub`, `name_asked`, `folder_asked` and `central` on every
    candidate; `asked` is the question's words (`asked_words`)."""
    prior = {path: file.features.get("sym_rr", 0.0) + file.features.get("bm25_rr", 0.0) for path, file in files.items()}
    central = centrality(list(files), hits, prior)
    for path, file in files.items():
        module = layout.modules.get(path)
        part = module in layout.parts
        # A part's name, as its entry's: a file's own stem is a name search already matches
        # (the file rows' path text, and a query that is exactly `view` lists `view.js` first);
        # weighed again here, `cart.js` outranked the plugin that applies coupons to a cart.
        # The program's own name (`flask` in `src/flask/__init__.py`) is in every question about it.
        name = name_tokens(module_name(path, module)) if part else set()
        parents = path.split("/")[:-1]
        folders = [
            name_tokens(parents[i])
            for i in range(len(parents))
            if parents[i].lower() not in LAYOUT_FOLDERS and "/".join(parents[: i + 1]) not in layout.wide
        ]
        file.features.update(
            entry=float(part),
            root_entry=float(module is not None and not part),
            hub=math.log1p(hubs.get(path, 0.0)),
            name_asked=len(name & asked) / len(name) if name else 0.0,
            folder_asked=float(any(tokens and tokens <= asked for tokens in folders)),
            central=central.get(path, 0.0),
        )
