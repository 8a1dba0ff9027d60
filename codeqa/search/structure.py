"""The repository's structure as file-ranking evidence (issue 32).

A how-it-works question ("how does the router match a path to its handler", "where are plugins
registered") names a part of the code, not its symbols. Ranking files by their best-matching
rows puts first the files whose function names echo its words, and misses the module that
implements or wires the part: `mod.rs`, `index.ts`, `__init__.py`, a facade named like its
folder. These features see that structure:

- `entry`: the file is a module's entry: a name its language gives entry files (`mod.rs`,
  `index.ts`, `__init__.py`: `languages.LanguageSpec.entry_names`), a file named like its folder
  (`pool/pool.go`), or one named like a folder beside it (`router.rs` beside `router/`).
- `hub`: the evidence found inside the module a file is the entry of: the files under its
  folder among the best candidates, each counting 1/its rank (the folder as a unit). Entry
  files with a hub are added to the candidates when no other evidence found them.
- `name_asked`: the share of the module's name (the file's stem, or its folder's name for an
  entry file) that the question uses (`view` → `view.js`; "middleware" → `middleware/index.js`).
- `folder_asked`: the question uses the name of a folder on the file's path.
- `central`: personalised PageRank over the references between the candidates, started from
  the first hits, as aider's repo map ranks files: where the matching code is used from and
  what it uses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from codeqa.indexing.create_tables import code_tokens
from codeqa.parsing.languages import entry_names, language_for

if TYPE_CHECKING:
    from codeqa.search.ranking import FileHit
    from codeqa.search.retrieval import Hit

HUB_FILES = 20  # the best candidates whose folders make hubs
HUB_LEVELS = 2  # how many folders up a candidate counts for
# Folders that say where code lives, not what it is: a module is named by the folder inside them.
LAYOUT_FOLDERS = frozenset({
    "src", "lib", "libs", "pkg", "internal", "source", "sources", "main", "java", "kotlin", "scala",
    "app", "apps", "packages", "crates", "core", "cmd", "include", "common", "modules", "com", "org",
    "io", "net", "dev", "go", "js", "ts", "python", "rust", "swift", "csharp",
})
PAGERANK_DAMPING = 0.85
PAGERANK_STEPS = 30


def _name_tokens(name: str) -> set[str]:
    """The words of a file or folder name (`map_request` → map, request; not `maprequest` too)."""
    tokens = code_tokens(name.replace("-", "_")).split()
    if len(tokens) > 1 and tokens[0] == "".join(tokens[1:]):
        tokens = tokens[1:]
    return {_singular(t) for t in tokens}


def _singular(token: str) -> str:
    """`routes` meets `route`, `handlers` meets `handler`: English plurals, roughly."""
    return token[:-1] if len(token) > 3 and token.endswith("s") and not token.endswith("ss") else token


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _same_name(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return s.lower().replace("_", "").replace("-", "")
    return bool(a) and norm(a) == norm(b)


def module_folder(path: str, folders: frozenset[str]) -> str | None:
    """The folder `path` is the entry of, if it is one: its own folder for an entry name or a file
    named like its folder; the folder beside it for `router.rs` beside `router/`; else None.
    `folders` are the repository's folders (to see the one beside)."""
    folder, name, stem = _folder(path), path.rsplit("/", 1)[-1], _stem(path)
    language = language_for(path)
    if language and name in entry_names(language):
        return folder
    if folder and _same_name(stem, folder.rsplit("/", 1)[-1]):
        return folder
    beside = f"{folder}/{stem}" if folder else stem
    return beside if beside in folders else None


def module_name(path: str, module: str | None) -> str:
    """What a file's module is called: the stem, or for an entry file its folder's name (the
    nearest that is not a layout folder such as `src/`)."""
    if module is None:
        return _stem(path)
    for part in reversed(module.split("/")):
        if part.lower() not in LAYOUT_FOLDERS:
            return part
    return _stem(path)


@dataclass(frozen=True)
class RepoLayout:
    """The repository's files as search sees its structure: role and language per path, its
    folders, and each module's entry file. Built once per index version (a few ms per thousand
    files), then shared by searches."""

    files: Mapping[str, tuple[str, str]]  # path → (role, language)
    folders: frozenset[str]
    entries: Mapping[str, str]  # folder → its entry file
    modules: Mapping[str, str]  # entry file → the folder it is the entry of

    @classmethod
    def of(cls, files: Mapping[str, tuple[str, str]]) -> "RepoLayout":
        folders: set[str] = set()
        for path in files:
            parts = path.split("/")[:-1]
            folders.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        frozen = frozenset(folders)
        modules: dict[str, str] = {}
        entries: dict[str, str] = {}
        for path in sorted(files):  # of several (`lib.rs`, `main.rs`), the first in path order leads
            module = module_folder(path, frozen)
            if module is not None:
                modules[path] = module
                entries.setdefault(module, path)
        return cls(dict(files), frozen, entries, modules)

    def hubs(self, ranked: list[str]) -> dict[str, float]:
        """Per entry file, the evidence inside its module: each of the best `HUB_FILES` of
        `ranked` under its folder (up to `HUB_LEVELS` folders up, the entry itself aside) adds
        1/its rank."""
        hubs: dict[str, float] = {}
        for rank, path in enumerate(ranked[:HUB_FILES], 1):
            folder = _folder(path)
            for _ in range(HUB_LEVELS):
                entry = self.entries.get(folder)
                if entry and entry != path:
                    hubs[entry] = hubs.get(entry, 0.0) + 1.0 / rank
                if not folder:
                    break
                folder = _folder(folder)
        return hubs


def centrality(files: list[str], hits: list["Hit"], prior: Mapping[str, float]) -> dict[str, float]:
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
        rank = (1 - PAGERANK_DAMPING) * restart + PAGERANK_DAMPING * (matrix @ rank + restart * rank[outgoing == 0].sum())
    top = rank.max() or 1.0
    return {path: float(rank[i] / top) for path, i in index.items()}


def structure_features(files: Mapping[str, "FileHit"], hits: list["Hit"], question_terms: Iterable[str],
                       layout: RepoLayout, hubs: Mapping[str, float]) -> None:
    """Set `entry`, `hub`, `name_asked`, `folder_asked` and `central` on every candidate."""
    asked = {_singular(t) for t in question_terms}
    prior = {path: file.features.get("sym_rr", 0.0) + file.features.get("bm25_rr", 0.0)
             for path, file in files.items()}
    central = centrality(list(files), hits, prior)
    for path, file in files.items():
        module = layout.modules.get(path)
        name = _name_tokens(module_name(path, module))
        folders = [_name_tokens(part) for part in path.split("/")[:-1] if part.lower() not in LAYOUT_FOLDERS]
        file.features.update(
            entry=float(module is not None), hub=math.log1p(hubs.get(path, 0.0)),
            name_asked=len(name & asked) / len(name) if name else 0.0,
            folder_asked=float(any(tokens and tokens <= asked for tokens in folders)),
            central=central.get(path, 0.0))
