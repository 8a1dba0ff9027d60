"""Structural questions answered from the index: what calls X, what X calls, where X is defined,
which files import Y.

A question asked with @codebase that reads like one of these (`recognise`: plain rules, measured
on the fact eval's questions and the Flask questions so they do not fire on "where is the
session cookie written?") also gets the exact lookup, besides the search:

    callers     the calls of X, resolved the way `@references X` resolves uses, one per caller
    uses        the same with type uses (annotations, `extends`) counted too
    callees     the calls inside X's lines (the references the index's manifest keeps for its
                file), resolved to the definitions they call the way the indexer resolves uses
    definition  the definitions `@definition X` finds
    imports     the files whose parse results import module Y

What the lookup finds (`IndexFacts`) reaches the model twice: as code spans the packer shows
(each caller with its call line matched, X with its call lines matched, ...) and as a short
numbered list it can restate (`prompt_block`), and it reaches the user as a list of its own, a
`facts` event the page renders as links, whatever the model writes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from codeqa.chat.packing import FileText, Span
from codeqa.chat.resolver import Lookup, source_of
from codeqa.parsing.languages import CONSTRUCTOR_CALLS, file_role
from codeqa.parsing.references import is_resolved, resolve_references

KINDS = ("callers", "uses", "callees", "definition", "imports")
MAX_ITEMS = 20  # what the user's list holds
MAX_PROMPT_ITEMS = 10  # what the model's list holds: a 0.5B model restates a short list, not a long one
IMPORT_LINES = 2  # lines either side of an import that the model sees
_NOT_CALLS = frozenset({"type", "read"})  # reference kinds that are no call: a type use, a value read

# --- Recognising a structural question -------------------------------------------------------------

# A name as a question writes it: in backticks (anything but a backtick), or a bare code-like word
# (`Cart.add`, `DBImpl::Get`, `#calculateDelay`, `app.callback()`, `set_logger`).
_NAME = r"(?:`(?P<tick>[^`\n]{1,200})`|(?P<bare>[A-Za-z_$#][\w$#]*(?:(?:\.|::|#|->)[A-Za-z_$#][\w$#]*)*(?:\(\))?))"
_OWNER = r"(?:[\w.-]+'s\s+)?"  # "chi's `Mux.Mount`", "Koa's `app.callback()`"
_WHO = r"^\W*(?:what|who|which\s+(?:\w+\s+)?(?:functions?|methods?|code|places?|files?))\s+(?:else\s+)?"
_WHERE = r"^\W*where\s+(?:is|are)\s+"
_LIST = r"^\W*(?:(?:show|list|find)\s+(?:me\s+)?)?(?:all\s+)?(?:the\s+)?"
# (kind, rule) in the order they are tried; each reads the start of the question.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("callers", rf"{_WHO}(?:calls|call|invokes?)\s+{_OWNER}{_NAME}"),
        ("callers", rf"{_WHERE}{_OWNER}{_NAME}\s+(?:being\s+)?(?:called|invoked)\b"),
        ("callers", rf"{_LIST}(?:callers|call\s+sites)\s+(?:of|for|to)\s+{_OWNER}{_NAME}"),
        ("uses", rf"{_WHO}uses\s+{_OWNER}{_NAME}"),
        ("uses", rf"{_WHERE}{_OWNER}{_NAME}\s+(?:being\s+)?(?:used|referenced)\b"),
        ("uses", rf"{_LIST}(?:uses|usages|references)\s+(?:of|to)\s+{_OWNER}{_NAME}"),
        ("callees", rf"^\W*(?:what|which)\s+(?:\w+\s+)?(?:does|do)\s+{_OWNER}{_NAME}(?:\s+in\s+[^?]*?)?\s+call\b"),
        ("callees", rf"^\W*(?:what|which\s+(?:functions?|methods?))\s+(?:is|are)\s+called\s+(?:by|from|in)\s+{_NAME}"),
        ("definition", rf"{_WHERE}{_OWNER}{_NAME}\s+(?:defined|declared|implemented)\b"),
        ("definition", rf"{_WHERE}{_OWNER}{_NAME}\s*\??\s*$"),
        ("definition", rf"{_LIST}definition\s+of\s+{_OWNER}{_NAME}"),
        ("imports", rf"^\W*(?:what|which|who)\s+(?:(?:\w+\s+)?(?:files?|modules?)\s+)?imports?\s+{_OWNER}{_NAME}"),
        ("imports", rf"{_WHERE}{_OWNER}{_NAME}\s+imported\b"),
    )
)
# Words that stand where a name would but are not one ("what calls it?" is a follow-up).
_NOT_NAMES = frozenset(
    "it its this that these those them they the a an my our your their which what each every all any "
    "something anything".split()
)
_HINT_STOP = frozenset(
    "what which who where does do did is are the a an in of for to from by and or call calls called "
    "invoke invokes used use uses defined declared implemented import imports imported file files "
    "module modules function functions method methods code crate package library project repo".split()
)


@dataclass(frozen=True)
class Ask:
    """A structural question: its kind, the name it asks about, and its other words (which pick
    among several definitions of the name: "`respond` in Koa's application.js")."""

    kind: str
    name: str
    hints: tuple[str, ...] = ()


def _code_like(name: str) -> bool:
    """A name no English sentence would use as a plain word: `_`, a qualifier, `()`, camelCase."""
    return bool(re.search(r"[_.#$]|::|->|\(\)|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]", name))


def recognise(question: str) -> Ask | None:
    """The structural question `question` asks, if it reads like one, else None.

    Only the shapes in `_RULES`, at the start of the question; "where is X?" only when X is
    code-like or in backticks (so "where is it decided ...?" stays a search)."""
    for kind, rule in _RULES:
        match = rule.search(question.strip())
        if not match:
            continue
        ticked = match.group("tick")
        name = (ticked or match.group("bare") or "").strip().removesuffix("()").strip()
        if not name or name.lower() in _NOT_NAMES:
            continue
        if kind == "definition" and not ticked and not _code_like(name):
            continue
        rest = (question[: match.start("tick" if ticked else "bare")] + " " + question[match.end() :]).lower()
        hints = tuple(
            dict.fromkeys(w for w in re.findall(r"[\w.]+", rest) if len(w) > 2 and w.strip(".") not in _HINT_STOP)
        )
        return Ask(kind, name, hints)
    return None


# --- What the index says ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FactItem:
    """One thing the lookup found: a caller, a callee, a definition, an importing file."""

    name: str
    file_path: str
    line: int  # the line to open: the call, the definition's first line, the import
    start_line: int  # the definition the item is, or the one it sits in
    end_line: int
    text: str = ""  # the source line of a call or import
    note: str = ""  # "name match": a call of the name on a receiver of unknown type

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "file_path": self.file_path,
            "line": self.line,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "text": self.text,
            "note": self.note,
        }


@dataclass
class IndexFacts:
    """What the exact lookup of a structural question found, for the model, the packer and the user."""

    ask: Ask
    label: str  # who brought the spans and sources ("what calls Cart.add")
    target: str = ""  # the definition asked about, `Name (path:start-end)`; the module for imports
    target_at: tuple[str, int] | None = None  # that definition's file and first line
    target_name: str = ""  # its qualified name
    items: list[FactItem] = field(default_factory=list)
    total: int = 0  # items found, before MAX_ITEMS
    external: list[str] = field(default_factory=list)  # callees: called names not resolved to a definition
    spans: list[Span] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)
    problem: str = ""  # why there is nothing to list

    def title(self) -> str:
        """One line saying what the list is, e.g. "What calls `Cart.add` (shop/models.py:39-45): 3 callers"."""
        name, target, count = self.ask.name, self.target or f"`{self.ask.name}`", self.total
        return {
            "callers": f"What calls {target}: {count} caller{'s' * (count != 1)}",
            "uses": f"Where {target} is used: {count} place{'s' * (count != 1)}",
            "callees": f"What {target} calls: {count} definition{'s' * (count != 1)} of this repository",
            "definition": f"Where `{name}` is defined: {count} definition{'s' * (count != 1)}",
            "imports": f"Which files import `{name}`: {count} file{'s' * (count != 1)}",
        }[self.ask.kind]

    def prompt_block(self) -> str:
        """The list as the model reads it: numbered, one short line each, `path:line` written out
        so that restating an item cites it."""
        if self.problem:
            return f"From the index: {self.problem}"
        lines = [f"From the index (exact). {self.title()}:"]
        for number, item in enumerate(self.items[:MAX_PROMPT_ITEMS], 1):
            lines.append(f"{number}. {self._prompt_item(item)}")
        if self.total > MAX_PROMPT_ITEMS:
            lines.append(f"... and {self.total - MAX_PROMPT_ITEMS} more.")
        if self.external:
            lines.append(f"Also called (not resolved to one definition here): {', '.join(self.external[:12])}.")
        return "\n".join(lines)

    def _prompt_item(self, item: FactItem) -> str:
        where = f"{item.file_path}:{item.line}"
        if self.ask.kind == "definition":
            where = f"{item.file_path}:{item.start_line}-{item.end_line}"
        if self.ask.kind == "imports":
            return f"{where} `{item.text}`"
        note = f" ({item.note})" if item.note else ""
        return f"`{item.name}` at {where}{note}"

    def lead(self) -> str:
        """The words the answer goes on with after its opening citation, which set the model to
        restate the list: "`Cart.add` is called by ", "`checkout` calls ". Measured on the fact
        eval's structural questions (docs/answers.md): told the list only, the 0.5B model often
        named the target instead of its callers, or the wrong direction."""
        name = self.target_name or self.ask.name
        return {
            "callers": f"`{name}` is called by ",
            "uses": f"`{name}` is used by ",
            "callees": f"`{name}` calls ",
            "definition": f"`{name}` is defined in ",
            "imports": f"`{name}` is imported by ",
        }[self.ask.kind]

    def anchor(self) -> tuple[str, int] | None:
        """The file and line of the code that holds the answer, which the answer should open
        from: the first caller's call, X's own lines for what X calls, the first definition or
        import."""
        if self.ask.kind == "callees":
            return self.target_at
        return (self.items[0].file_path, self.items[0].line) if self.items else None

    def to_event(self) -> dict:
        """The `facts` stream event: the list the page shows as links, whatever the model writes."""
        return {
            "kind": self.ask.kind,
            "name": self.ask.name,
            "title": self.problem or self.title(),
            "items": [item.to_json() for item in self.items],
            "total": self.total,
            "external": self.external,
        }


_LABELS = {
    "callers": "what calls {}",
    "uses": "where {} is used",
    "callees": "what {} calls",
    "definition": "where {} is defined",
    "imports": "what imports {}",
}


def look_up(lookup: Lookup, ask: Ask, rank: float) -> IndexFacts:
    """Run the exact lookup a structural question asks for; spans rank from `rank` on."""
    facts = IndexFacts(ask, _LABELS[ask.kind].format(ask.name))
    if ask.kind == "imports":
        _importers(lookup, facts, rank)
        return facts
    rows = _targets(lookup, ask)
    if not rows:
        facts.problem = f"no definition named {ask.name} in {lookup.repo.name}."
        return facts
    if ask.kind == "definition":
        _definitions(lookup, facts, rows, rank)
        return facts
    row = rows[0]
    facts.target = f"`{row['qualified_name']}` ({row['file_path']}:{row['start_line']}-{row['end_line']})"
    facts.target_at = (row["file_path"], row["start_line"])
    facts.target_name = row["qualified_name"]
    (_callees if ask.kind == "callees" else _callers)(lookup, facts, row, rank)
    return facts


def _targets(lookup: Lookup, ask: Ask) -> list[dict]:
    """The definitions the question's name means, best first: the name as written, else its last
    part (`app.callback` → `callback`); among several, those whose path or qualified name hold
    more of the question's other words ("in httparty's Request", "in Koa's application.js") and
    whose qualifier the written one starts (`app` for `Application`), outside tests first."""
    name = ask.name.replace("::", ".").replace("->", ".").strip(".")
    rows = lookup.resolver.definitions(lookup.repo, name)
    qualifier = ""
    if not rows and "." in name:
        qualifier, name = name.rsplit(".", 1)
        rows = lookup.resolver.definitions(lookup.repo, name)

    def fit(row: dict) -> tuple[int, int, bool]:
        where = f"{row['file_path']} {row['qualified_name']}".lower()
        hints = sum(hint in where for hint in ask.hints)
        parent = (row["qualified_name"].rsplit(".", 1)[0] if "." in row["qualified_name"] else "").lower()
        owner = bool(qualifier) and parent.rsplit(".", 1)[-1].startswith(qualifier.lower().rsplit(".", 1)[-1])
        return (-hints, -owner, file_role(row["file_path"]) == "test")

    return sorted(rows, key=fit)  # stable: the resolver's order (exact name, source, most used) breaks ties


def _definitions(lookup: Lookup, facts: IndexFacts, rows: list[dict], rank: float) -> None:
    facts.total = len(rows)
    for number, row in enumerate(rows[:MAX_ITEMS]):
        facts.items.append(
            FactItem(row["qualified_name"], row["file_path"], row["start_line"], row["start_line"], row["end_line"])
        )
        facts.spans += lookup.definition_spans(row, facts.label, rank + number)
        facts.sources.append(source_of(row, facts.label))


def _callers(lookup: Lookup, facts: IndexFacts, row: dict, rank: float) -> None:
    """One item per calling definition (its first use of X), resolved uses before name matches
    (`Lookup.uses` ranks them); for "what calls", a type use (an annotation) or a value read is
    not a call."""
    uses = [use for _, use in lookup.uses([row])]
    calls = [use for use in uses if use["kind"] not in _NOT_CALLS] if facts.ask.kind == "callers" else uses
    seen: set[tuple[str, str]] = set()
    for use in calls:
        text = lookup.text(use["file_path"])
        caller = (use["file_path"], use["caller"] or f"line {use['line']}")
        if text is None or caller in seen:
            continue
        seen.add(caller)
        held = [d for d in text.definitions if d.start <= use["line"] <= d.end]
        definition = next((d for d in held if use["caller"] and d.name == use["caller"]), None)
        start, end = (definition.start, definition.end) if definition else (use["line"], use["line"])
        note = "" if is_resolved(use["resolution"]) else "name match"
        item = FactItem(use["caller"] or "(top level)", use["file_path"], use["line"], start, end, use["text"], note)
        facts.items.append(item)
        if len(facts.items) <= MAX_ITEMS:
            low, high = (start, end) if definition else (use["line"] - IMPORT_LINES, use["line"] + IMPORT_LINES)
            number = len(facts.items) - 1
            facts.spans.append(Span(item.file_path, low, high, facts.label, rank + number, frozenset({use["line"]})))
            facts.sources.append(_use_source(item, facts.label, row["qualified_name"], text.language))
    facts.total = len(facts.items)
    facts.items = facts.items[:MAX_ITEMS]


def _callees(lookup: Lookup, facts: IndexFacts, row: dict, rank: float) -> None:
    """The calls inside X's lines, from the references its file's parse results keep, resolved to
    the definitions they call; names the repository does not define are listed apart."""
    parses = lookup.resolver.index.reader(lookup.repo).file_parses([row["file_path"]])
    sites = [
        site
        for parse in parses
        for site in parse.references
        if site.kind not in _NOT_CALLS and row["start_line"] <= site.line <= row["end_line"]
    ]
    call_lines = frozenset(site.line for site in sites)
    facts.spans.append(Span(row["file_path"], row["start_line"], row["end_line"], facts.label, rank, call_lines))
    facts.sources.append(source_of(row, facts.label))
    if not sites:
        return
    names = {s.name for s in sites} | {s.qualifier for s in sites if s.name in CONSTRUCTOR_CALLS and s.qualifier}
    window = [replace(parse, references=tuple(sites)) for parse in parses]
    uses = resolve_references(lookup.symbols(parses, names), window)
    first_call = {ident: min((u.line, u.column) for u in found) for ident, found in uses.items() if found}
    resolved = {ident for ident, found in uses.items() if any(is_resolved(u.resolution) for u in found)}
    ordered = sorted(resolved & set(first_call) - {row["id"]}, key=lambda ident: first_call[ident])
    rows = {r["id"]: r for r in lookup.resolver.index.reader(lookup.repo).definitions_by_ids(ordered, _CALLEE_COLUMNS)}
    called = [rows[ident] for ident in ordered if ident in rows]
    lines = {ident: first_call[ident][0] for ident in ordered}
    texts = {site.line: site.text for site in sites}
    facts.total = len(called)
    for number, callee in enumerate(called[:MAX_ITEMS]):
        line = lines[callee["id"]]
        facts.items.append(
            FactItem(
                callee["qualified_name"],
                callee["file_path"],
                callee["start_line"],
                callee["start_line"],
                callee["end_line"],
                texts.get(line, ""),
                f"called at line {line}",
            )
        )
        facts.spans += lookup.definition_spans(callee, facts.label, rank + 1 + number)
        facts.sources.append(source_of(callee, facts.label))
    defined = {callee["name"] for callee in called}
    facts.external = sorted({s.name for s in sites} - defined - {row["name"]})


_CALLEE_COLUMNS = ["id", "kind", "name", "qualified_name", "file_path", "start_line", "end_line", "language"]


def _importers(lookup: Lookup, facts: IndexFacts, rank: float) -> None:
    """The files whose parse results import the module the question names: its dotted or slashed
    path, or a tail of it (`sessions` for `flask.sessions`, `utils` for `./lib/utils.js`)."""
    wanted = _module_parts(facts.ask.name)
    if not wanted:
        facts.problem = f"{facts.ask.name} is not a module name."
        return
    found: list[FactItem] = []
    for parse in lookup.resolver.index.reader(lookup.repo).file_parses_holding(wanted[-1]):
        imports = [i for i in parse.imports if _module_parts(i)[-len(wanted) :] == wanted]
        if not imports:
            continue
        text = lookup.text(parse.file_path)
        line = _import_line(text.lines if text else [], imports[0], wanted[-1])
        found.append(FactItem(parse.file_path, parse.file_path, line, line, line, _line(text, line)))
    found.sort(key=lambda item: (file_role(item.file_path) == "test", item.file_path))
    facts.total = len(found)
    facts.items = found[:MAX_ITEMS]
    if not found:
        facts.problem = f"no indexed file imports {facts.ask.name}."
    for number, item in enumerate(facts.items):
        low, high = max(1, item.line - IMPORT_LINES), item.line + IMPORT_LINES
        facts.spans.append(Span(item.file_path, low, high, facts.label, rank + number, frozenset({item.line})))
        imported = lookup.text(item.file_path)
        facts.sources.append(_use_source(item, facts.label, facts.ask.name, imported.language if imported else ""))


def _module_parts(name: str) -> list[str]:
    """A module path as its parts: `flask.sessions`, `./lib/utils.js`, `crate::log` → the names."""
    name = re.sub(r"\.(?:[cm]?[jt]sx?|py|rb|go|rs|h|hpp)$", "", name.strip("\"'`<> "))
    return [part for part in re.split(r"[./:\\]+", name) if part and part != "crate"]


def _import_line(lines: Sequence[str], module: str, last: str) -> int:
    """The first line that imports `module` (1 when none can be told)."""
    for wanted in (module, last):
        for number, line in enumerate(lines, 1):
            if wanted in line and re.search(r"\b(?:import|require|include|use|from|load)\b", line):
                return number
    return 1


def _line(text: FileText | None, line: int) -> str:
    return text.lines[line - 1].strip() if text and 1 <= line <= len(text.lines) else ""


def _use_source(item: FactItem, label: str, of: str, language: str) -> dict:
    """A found caller or import as the sources panel shows it (a use, like `@references`' entries)."""
    return {
        "kind": "use",
        "name": item.name.rsplit(".", 1)[-1],
        "qualified_name": item.name,
        "file_path": item.file_path,
        "start_line": item.line,
        "end_line": item.line,
        "language": language,
        "text": item.text,
        "uses": of,
        "reference_count": 0,
        "references": [],
        "source": label,
    }
