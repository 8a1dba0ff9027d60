"""Chat commands → what they bring from the index: spans of code, sources, notes.

    @definition NAME       every definition whose qualified name is NAME, ends with `.NAME`, or
                           whose name is NAME; the enclosing class header comes along
    @references NAME       the uses of those definitions, most relevant first, each with the
                           function it sits in
    @file PATH[:L|:L1-L2]  an indexed file, the definition around line L, or lines L1-L2
    @symbols-at PATH:LINE  the names used around that line, resolved to their definitions the
                           way the indexer resolves references

Each command yields spans for the packer (`packing.py`), sources for the sources panel
(labelled with the command) and notes for the LLM. A name or path that is not in the index
gives a notice with the nearest matches instead of nothing. Files are read only through
`store.gate.read_indexed_file`, the one gate to the disk.
"""

from __future__ import annotations

import posixpath
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from codeqa.chat.chat_commands import Command, CommandError, Location
from codeqa.chat.packing import Definition, FileText, Span
from codeqa.chat.symbol_index import SymbolIndex, load_symbol_index
from codeqa.core.records import FileParse, RepoInfo, SymbolInfo
from codeqa.parsing.languages import CONSTRUCTOR_CALLS, DOC_KIND, file_role, language_for
from codeqa.parsing.references import is_resolved, resolve_references
from codeqa.search.overloads import group_rows
from codeqa.store.errors import FileChangedError, FileNotIndexedError, InvalidPathError
from codeqa.store.gate import read_indexed_file
from codeqa.store.index import Index
from codeqa.store.schema import MAX_STORED_REFERENCES, ROW_IDENTITY

MAX_DEFINITIONS = 10  # definitions one name may bring
MAX_USES = 20  # uses @references brings
MAX_SYMBOLS_AT = 8  # definitions @symbols-at brings
SYMBOLS_AT_WINDOW = 2  # lines either side of the line asked about
LINE_CONTEXT = 20  # lines either side of a line outside any definition
COMMAND_RANK = 100  # rank distance between commands (items of one command rank in between)
ROW_COLUMNS = [*ROW_IDENTITY, "signature", "parent", "references", "reference_count"]
OVERLOAD_COLUMNS = ["language", "signature", "declaration", "signatures"]  # what grouping overloads reads
INDEX_CACHE = 8  # repos whose symbol index stays in memory
# How sure the indexer was that a use is a use of this definition; surer first.
RESOLUTION_ORDER = {
    "qualified": 0,
    "self": 0,
    "typed": 0,
    "module": 1,
    "unique": 1,
    "import": 1,
    "same_file": 2,
    "same_package": 3,
    "ambiguous": 4,
}


@dataclass
class Resolution:
    """What one command brought."""

    command: Command
    spans: list[Span] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problem: str = ""  # why it brought nothing, for the user
    suggestions: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "command": self.command.name,
            "argument": self.command.argument,
            "label": self.command.label,
            "status": "not_found" if self.problem else "ok",
            "message": self.problem,
            "suggestions": self.suggestions,
            "results": self.sources,
        }


def source_of(row: dict, label: str) -> dict:
    """A definition as the sources panel shows it (the same fields as a search hit's)."""
    return {
        "kind": row["kind"],
        "name": row["name"],
        "qualified_name": row["qualified_name"],
        "file_path": row["file_path"],
        "start_line": row["start_line"],
        "end_line": row["end_line"],
        "language": row["language"],
        "reference_count": row.get("reference_count") or 0,
        "declaration": bool(row.get("declaration")),
        "signatures": list(row.get("signatures") or []),
        "references": [
            {k: r[k] for k in ("file_path", "line", "column", "text")} for r in (row.get("references") or [])
        ],
        "source": label,
    }


def _signature_lines(lines: list[str], start: int, end: int, signature: str) -> tuple[int, int]:
    """The lines a definition's signature takes (after decorators / annotations)."""
    first = (signature or "").strip().splitlines()[0].strip() if (signature or "").strip() else ""
    at = start
    if first:
        head = first[:40]
        for number in range(start, min(end, len(lines)) + 1):
            if lines[number - 1].strip().startswith(head):
                at = number
                break
    height = max(1, len((signature or "").strip().splitlines()))
    return at, min(end, at + height - 1)


class CommandResolver:
    """Resolves commands against one LanceDB database; safe to share between threads."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._indexes: OrderedDict[tuple[str, float], SymbolIndex] = OrderedDict()

    # --- shared lookups -----------------------------------------------------------------------

    def symbol_index(self, repo: RepoInfo) -> SymbolIndex:
        """The repo's names and paths, loaded once per index version."""
        key = (repo.name, repo.indexed_at)
        with self._lock:
            if key in self._indexes:
                self._indexes.move_to_end(key)
                return self._indexes[key]
        index = load_symbol_index(self.index.reader(repo))
        with self._lock:
            self._indexes[key] = index
            while len(self._indexes) > INDEX_CACHE:
                self._indexes.popitem(last=False)
        return index

    def definitions(self, repo: RepoInfo, name: str, columns: list[str] = ROW_COLUMNS) -> list[dict]:
        """Rows defining `name`: exact qualified name, `….name`, or plain name; best first, one per
        overload set (a declaration whose implementation is indexed gives way to it)."""
        wanted = re.sub(r"(?<=\w)#", ".", name.replace("::", "."))  # Ruby's `A#b`; JS's `#private` keeps its `#`
        rows = self.index.reader(repo).definitions_named(wanted, list(dict.fromkeys(columns + OVERLOAD_COLUMNS)))
        return group_rows(
            sorted(
                rows,
                key=lambda r: (
                    r["qualified_name"] != wanted,
                    file_role(r["file_path"]) == "test",
                    bool(r["declaration"]),
                    -(r["reference_count"] or 0),
                    r["file_path"],
                    r["start_line"],
                ),
            )
        )

    def file(self, repo: RepoInfo, path: str) -> FileText:
        """One indexed file: its lines from disk, its definitions from the index.

        The definitions are the file's outline: functions, classes and the like, not its
        one-line constants and variables (module-level code that a skeleton would crowd with).
        Raises FileNotIndexedError / FileChangedError / InvalidPathError (from the one gate to the
        disk) or OSError."""
        reader = self.index.reader(repo)
        lines = read_indexed_file(reader, path).splitlines()
        rows = reader.outline(path, ["kind", "qualified_name", "signature", "start_line", "end_line", "language"])
        definitions = [
            Definition(
                r["start_line"],
                r["end_line"],
                *_signature_lines(lines, r["start_line"], r["end_line"], r["signature"]),
                name=r["qualified_name"] if r["kind"] != DOC_KIND else "",
            )
            for r in rows
        ]
        return FileText(path, language_for(path) or "text", lines, definitions)

    # --- resolving ----------------------------------------------------------------------------

    def lookup(self, repo: RepoInfo) -> Lookup:
        """A lookup session on one repo: resolves commands and reads each file at most once."""
        return Lookup(self, repo)


class Lookup:
    """Commands resolved against one repo for one message; `files` holds every file read."""

    def __init__(self, resolver: CommandResolver, repo: RepoInfo) -> None:
        self.resolver = resolver
        self.repo = repo
        self.files: dict[str, FileText] = {}
        self.index = resolver.symbol_index(repo)

    def resolve(self, commands: Iterable[Command]) -> list[Resolution]:
        """What each command brought, in order (@codebase is not resolved here)."""
        handlers = {
            "definition": self.definition,
            "references": self.references,
            "file": self.file,
            "symbols-at": self.symbols_at,
        }
        resolutions = []
        for number, command in enumerate(c for c in commands if c.name in handlers):
            resolution = Resolution(command)
            try:
                handlers[command.name](resolution, number * COMMAND_RANK)
            except CommandError as exc:
                resolution.problem = f"{command.label}: {exc}"
            if resolution.problem:
                hint = f" Did you mean {', '.join(resolution.suggestions)}?" if resolution.suggestions else ""
                resolution.problem += hint
                resolution.notes.append(resolution.problem)
            resolutions.append(resolution)
        return resolutions

    def text(self, path: str) -> FileText | None:
        if path not in self.files:
            try:
                self.files[path] = self.resolver.file(self.repo, path)
            except (FileNotIndexedError, FileChangedError, InvalidPathError, OSError):
                return None
        return self.files[path]

    def definition_spans(self, row: dict, label: str, rank: float) -> list[Span]:
        """A definition's lines with its signature matched, and its class header if it has one."""
        text = self.text(row["file_path"])
        if text is None:
            return []
        own = next(
            (d for d in text.definitions if d.start == row["start_line"] and d.name == row["qualified_name"]), None
        )
        matched = set(range(own.signature_start, own.signature_end + 1)) if own else {row["start_line"]}
        spans = [Span(text.path, row["start_line"], row["end_line"], label, rank, frozenset(matched))]
        parent = _enclosing(text, row["start_line"], row["end_line"], strict=True)
        if parent is not None:
            header = frozenset(range(parent.signature_start, parent.signature_end + 1))
            spans.append(Span(text.path, parent.start, parent.signature_end, label, rank, header))
        return spans

    def _unknown_name(self, resolution: Resolution, name: str) -> None:
        resolution.problem = f"{resolution.command.label}: no definition named {name} in {self.repo.name}."
        resolution.suggestions = [
            f"{s.qualified_name} ({s.file_path}:{s.start_line})" for s in self.index.similar_symbols(name)
        ]

    def _definitions(self, resolution: Resolution) -> list[dict]:
        rows = self.resolver.definitions(self.repo, resolution.command.argument)
        if not rows:
            self._unknown_name(resolution, resolution.command.argument)
        elif len(rows) > MAX_DEFINITIONS:
            resolution.notes.append(
                f"{resolution.command.label}: {len(rows)} definitions; the first {MAX_DEFINITIONS} are shown."
            )
        return rows[:MAX_DEFINITIONS]

    # --- the commands --------------------------------------------------------------------------

    def definition(self, resolution: Resolution, base: int) -> None:
        label = resolution.command.label
        for number, row in enumerate(self._definitions(resolution)):
            resolution.spans += self.definition_spans(row, label, base + number)
            resolution.sources.append(source_of(row, label))

    def references(self, resolution: Resolution, base: int) -> None:
        label = resolution.command.label
        rows = self._definitions(resolution)
        if not rows:
            return
        ranked = self.uses(rows)
        for row in rows:
            found = [use for of, use in ranked if of is row]
            count = sum(is_resolved(use["resolution"]) for use in found)
            names = len(found) - count
            matches = (
                f"; {names} name match{'es' if names != 1 else ''} (`{row['name']}` called on a receiver "
                f"of unknown type: maybe this, maybe another `{row['name']}`; listed after the uses)"
                if names
                else ""
            )
            resolution.notes.append(
                f"{label}: {row['qualified_name']} ({row['kind']}, "
                f"{row['file_path']}:{row['start_line']}) is used {count} "
                f"time{'s' if count != 1 else ''}{matches}."
            )
        if not ranked:
            return
        if len(ranked) > MAX_USES:
            named = " and name matches" if any(not is_resolved(use["resolution"]) for _, use in ranked) else ""
            resolution.notes.append(f"{label}: the {MAX_USES} most relevant of {len(ranked)} uses{named} are shown.")
        for number, (row, use) in enumerate(ranked[:MAX_USES]):
            text = self.text(use["file_path"])
            if text is None:
                continue
            caller = (
                next((d for d in text.definitions if d.name == use["caller"] and d.start <= use["line"] <= d.end), None)
                if use["caller"]
                else None
            )
            start, end = (
                (caller.start, caller.end)
                if caller
                else (use["line"] - LINE_CONTEXT // 4, use["line"] + LINE_CONTEXT // 4)
            )
            resolution.spans.append(Span(text.path, start, end, label, base + number, frozenset({use["line"]})))
            resolution.sources.append(
                {
                    "kind": "use",
                    "name": use["caller"].rsplit(".", 1)[-1] if use["caller"] else "",
                    "qualified_name": use["caller"] or "(top level)",
                    "file_path": use["file_path"],
                    "start_line": use["line"],
                    "end_line": use["line"],
                    "language": text.language,
                    "text": use["text"],
                    "uses": row["qualified_name"],
                    "reference_count": 0,
                    "references": [],
                    "resolution": use["resolution"],
                    "source": label if is_resolved(use["resolution"]) else f"{label} (name match)",
                }
            )

    def uses(self, rows: list[dict]) -> list[tuple[dict, dict]]:
        """Every use of these definition rows, as (row, use), most relevant first: the uses a row
        stores when it holds all of them, else all of them resolved again from the files."""
        # A row's list holds every use and name match unless it is full (the indexer stores
        # the resolved ones first, then name matches, up to MAX_STORED_REFERENCES).
        complete = [r for r in rows if len(r["references"] or []) < MAX_STORED_REFERENCES]
        uses = [(row, use) for row in complete for use in row["references"] or []]
        partial = [r for r in rows if r not in complete]
        if partial:
            found = self._resolve_uses(partial)
            uses += [(row, use) for row in partial for use in found.get(row["id"], [])]
        return _rank_uses(uses)

    def _resolve_uses(self, rows: list[dict]) -> dict[str, list[dict]]:
        """All uses of these definitions (beyond the ones stored with their rows), resolved the way
        the indexer resolves them, from the files whose parse results mention their names."""
        names = sorted({r["name"] for r in rows})
        files = self.resolver.index.reader(self.repo).file_parses_mentioning(names)
        symbols = self.symbols(files, names)
        wanted = set(names)
        files = [
            replace(
                f,
                references=tuple(
                    s
                    for s in f.references
                    if s.name in wanted or (s.name in CONSTRUCTOR_CALLS and s.qualifier in wanted)
                ),
            )
            for f in files
        ]
        found = resolve_references(symbols, files)
        return {r["id"]: [u.to_row() for u in found.get(r["id"], [])] for r in rows}

    def symbols(self, files: list[FileParse], names: Iterable[str]) -> list[SymbolInfo]:
        """What resolution needs: the definitions in `files` and every definition named `names`."""
        rows = self.resolver.index.reader(self.repo).definitions_with_names(
            sorted(names), ["id", "file_path", "language", "kind", "name", "qualified_name", "parent"], None
        )
        out = {s.id: s for f in files for s in f.symbols}
        for r in rows:
            out.setdefault(
                r["id"],
                SymbolInfo(
                    r["id"], r["file_path"], r["language"], r["kind"], r["name"], r["qualified_name"], r["parent"]
                ),
            )
        return list(out.values())

    def file(self, resolution: Resolution, base: int) -> None:
        command = resolution.command
        location = command.location
        text = self._indexed(resolution, location)
        if text is None:
            return
        total = len(text.lines)
        if location.start is None:
            span = Span(text.path, 1, total, command.label, base)
        elif location.end == location.start:
            span = Span(text.path, *_around(text, location.start), command.label, base, frozenset({location.start}))
        else:
            span = Span(text.path, location.start, min(location.end or total, total), command.label, base)
        resolution.spans.append(span)
        resolution.sources.append(
            {
                "kind": "file",
                "name": posixpath.basename(text.path),
                "qualified_name": str(location),
                "file_path": text.path,
                "start_line": max(1, span.start),
                "end_line": min(total, span.end),
                "language": text.language,
                "reference_count": 0,
                "references": [],
                "source": command.label,
            }
        )

    def _indexed(self, resolution: Resolution, location: Location) -> FileText | None:
        """The file a location names, or None with the problem (and nearest paths) recorded;
        raises CommandError for a line past its end."""
        path = location.path
        if not self.index.has_path(path):
            resolution.problem = f"{resolution.command.label}: {path} is not an indexed file of {self.repo.name}."
            resolution.suggestions = self.index.similar_paths(path)
            return None
        text = self.text(path)
        if text is None:
            resolution.problem = f"{resolution.command.label}: {path} can't be read any more (re-index the repo)."
        elif location.start is not None and location.start > len(text.lines):
            raise CommandError(f"{path} has {len(text.lines)} lines.")
        return text

    def symbols_at(self, resolution: Resolution, base: int) -> None:
        command = resolution.command
        location = command.location
        text = self._indexed(resolution, location)
        if text is None:
            return
        line = location.start
        assert line is not None  # @symbols-at takes PATH:LINE (chat_commands checks it)
        resolution.spans.append(Span(text.path, *_around(text, line), command.label, base, frozenset({line})))
        files = self.resolver.index.reader(self.repo).file_parses([text.path])
        sites = sorted(
            (s for f in files for s in f.references if abs(s.line - line) <= SYMBOLS_AT_WINDOW),
            key=lambda s: (abs(s.line - line), s.line, s.column),
        )
        if not sites:
            resolution.notes.append(
                f"{command.label}: no names are used within {SYMBOLS_AT_WINDOW} lines of line {line}."
            )
            return
        names = {s.name for s in sites} | {s.qualifier for s in sites if s.name in CONSTRUCTOR_CALLS and s.qualifier}
        window = [replace(f, references=tuple(sites)) for f in files]
        uses = resolve_references(self.symbols(files, names), window)
        order = {(s.line, s.column): i for i, s in enumerate(sites)}
        used = sorted(uses, key=lambda i: min(order.get((u.line, u.column), len(order)) for u in uses[i]))
        resolved = {
            s.name
            for ident in used
            for s in sites
            if any(u.line == s.line and u.column == s.column for u in uses[ident])
        }
        unresolved = sorted({s.name for s in sites} - resolved)
        if unresolved:
            resolution.notes.append(f"{command.label}: not defined in {self.repo.name}: {', '.join(unresolved)}.")
        if not used:
            return
        rows = {r["id"]: r for r in self.resolver.index.reader(self.repo).definitions_by_ids(used, ROW_COLUMNS)}
        for number, ident in enumerate(used[:MAX_SYMBOLS_AT]):
            if ident in rows:
                resolution.spans += self.definition_spans(rows[ident], command.label, base + 1 + number)
                resolution.sources.append(source_of(rows[ident], command.label))


def _around(text: FileText, line: int) -> tuple[int, int]:
    """The lines to show around one line: the definition holding it, or some lines either side."""
    holding = _enclosing(text, line, line)
    return (holding.start, holding.end) if holding else (line - LINE_CONTEXT, line + LINE_CONTEXT)


def _enclosing(text: FileText, start: int, end: int, strict: bool = False) -> Definition | None:
    """The innermost definition holding lines start..end (strict: not the one starting there)."""
    holding = [
        d
        for d in text.definitions
        if d.name and d.start <= start and end <= d.end and not (strict and d.start == start)
    ]
    return min(holding, key=lambda d: d.end - d.start, default=None)


def _rank_uses(uses: list[tuple[dict, dict]]) -> list[tuple[dict, dict]]:
    """Most relevant first: resolved uses before name matches, outside tests, surely resolved,
    one use per calling function before a second from the same one, then in file order."""
    seen: dict[tuple[str, str], int] = {}
    keyed = []
    for row, use in sorted(uses, key=lambda item: (item[1]["file_path"], item[1]["line"], item[1]["column"])):
        caller = (use["file_path"], use["caller"])
        seen[caller] = seen.get(caller, 0) + 1
        keyed.append(
            (
                (
                    not is_resolved(use["resolution"]),
                    file_role(use["file_path"]) == "test",
                    seen[caller] > 1,
                    RESOLUTION_ORDER.get(use["resolution"], 5),
                    use["file_path"],
                    use["line"],
                ),
                (row, use),
            )
        )
    unique: dict[tuple[str, int, int], tuple[dict, dict]] = {}
    for _, item in sorted(keyed, key=lambda k: k[0]):
        unique.setdefault((item[1]["file_path"], item[1]["line"], item[1]["column"]), item)
    return list(unique.values())
