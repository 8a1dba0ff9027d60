"""The fact eval: its items (`facts.jsonl`, `fact_repos.json`) and the scorer.

An item is a developer's question about one public repository at a pinned commit, with the gold
facts a right answer must contain: identifiers, `path:line` ranges, file paths and values, each
taken from the code (never from a model's wording) and checked against the commit by
`check_facts.py`. The scorer decides by string match whether an answer (or the context the model
was shown) contains each fact.

Matching rules (`answer_facts`, `context_facts`):

- `name`: the identifier as a whole word: not touching a letter, digit, `_` or `$` on either side,
  so backticks, `()` and qualifiers around it are fine (`self.total()` and `Cart.total` both hold
  `total`). Qualifier separators are one: `::`, `#`, `->` and `(*T).` read as `.` in the answer and
  in the gold (`Ky.#calculateDelay` = `Ky.calculateDelay`, `Version::Get` = `Version.Get`). A
  qualified gold name (`Cart.total`) needs the qualified form, unless the fact says `"tail": true`:
  then its last part alone (`total`) counts too. A trailing `?`, `!` or `=` (Ruby) may be left
  off. Case matters. Citations are taken out of the answer first, so a cited file name never
  counts as an identifier or a value.
- `path_line`: the answer cites the gold file at a line inside the gold range, or a range that
  overlaps it: `path:line` or `path:start-end` (the UI's citation forms; `[path:start-end]` too).
  The cited path may be the gold path or a suffix of it that starts at a `/` (`click/core.py` for
  `src/click/core.py`), or the other way round.
- `path`: the gold path, or such a suffix of it down to the bare file name, written anywhere.
- `value`: a normalised string match: lower case, quotes and backticks dropped, white space
  collapsed, and not touching a letter, digit or `_`, nor a `.digit` after it (`15` is not in
  `150` or `15.5`). `alts` lists other spellings that count the same (`16384`, `16 KB`).

In the context ("the sources alone"), `name` and `value` facts are matched over the code and
notes the model was shown (source headers left out), `path` over the files it was shown, and a
`path_line` fact holds when a line inside the gold range was shown from that file (or a note
cites it).

Per item: `has_fact` (any gold fact), `entities` (the share of the distinct things the answer
should name, e.g. callers, of which it names at least one fact), and, for items whose gold is a
complete list (`complete`), `has_all`.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
FACTS = HERE / "facts.jsonl"
REPOS = HERE / "fact_repos.json"
KINDS = ("location", "how", "callers", "callees", "why")
STRUCTURAL = frozenset({"callers", "callees"})
FACT_KINDS = ("name", "path_line", "path", "value")
CALL_STYLES = ("paren", "word")


# --- Items ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """One thing a right answer says. `path` and `lines` say where it is in the code (for a
    `name` or `value`: where it occurs, which the checker confirms)."""

    kind: str
    path: str | None = None
    lines: tuple[int, int] | None = None
    name: str | None = None  # kind name
    tail: bool = False  # kind name: the last part of a qualified name counts too
    definition: bool = False  # kind name: the checker finds a definition of `name` spanning `lines`
    symbol: str | None = None  # kind path_line: the definition the range is (checked when given)
    value: str | None = None  # kind value
    code: str | None = None  # kind value: its spelling in the code, when that differs
    alts: tuple[str, ...] = ()  # kind value: other spellings that count
    about: str | None = None  # the entity it is about (a caller's name): facts about one entity count once

    @property
    def entity(self) -> str:
        return self.about or self.label

    @property
    def label(self) -> str:
        if self.kind == "name":
            return str(self.name)
        if self.kind == "value":
            return repr(self.value)
        if self.kind == "path":
            return str(self.path)
        assert self.lines is not None
        return f"{self.path}:{self.lines[0]}-{self.lines[1]}"


@dataclass(frozen=True)
class Target:
    """The definition a callers / callees question asks about."""

    name: str
    path: str
    lines: tuple[int, int]


@dataclass(frozen=True)
class Item:
    id: str
    repo: str
    language: str
    kind: str
    question: str
    source: str  # where the question comes from (a README sentence, a docstring, an error message)
    facts: tuple[Fact, ...]
    target: Target | None = None  # callers / callees
    complete: bool | None = None  # callers / callees: the gold lists every caller (callee)
    scope: str | None = None  # callers: a regex of the paths searched for calls (the gold's scope)
    call: str = "paren"  # callers: how a call is found: `name(` ("paren") or the bare word ("word")
    ignore: tuple[str, ...] = ()  # callers: enclosing definitions whose hits are not calls of the target
    note: str = ""

    @property
    def entities(self) -> list[str]:
        return list(dict.fromkeys(f.entity for f in self.facts))


@dataclass(frozen=True)
class Repo:
    name: str
    commit: str
    language: str
    url: str
    source_files: int
    note: str = ""

    @property
    def slug(self) -> str:
        return self.name.replace("/", "+")


def _lines(value: object, where: str) -> tuple[int, int]:
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)
            and 1 <= value[0] <= value[1]):
        raise ValueError(f"{where}: lines must be [start, end] with 1 <= start <= end, not {value!r}")
    return value[0], value[1]


def parse_fact(raw: dict, where: str) -> Fact:
    kind = raw.get("kind")
    if kind not in FACT_KINDS:
        raise ValueError(f"{where}: fact kind must be one of {FACT_KINDS}, not {kind!r}")
    known = {"kind", "path", "lines", "name", "tail", "definition", "symbol", "value", "code", "alts", "about"}
    if set(raw) - known:
        raise ValueError(f"{where}: unknown fact fields {sorted(set(raw) - known)}")
    lines = _lines(raw["lines"], where) if "lines" in raw else None
    fact = Fact(kind=kind, path=raw.get("path"), lines=lines, name=raw.get("name"), tail=bool(raw.get("tail")),
                definition=bool(raw.get("definition")), symbol=raw.get("symbol"), value=raw.get("value"),
                code=raw.get("code"), alts=tuple(raw.get("alts", ())), about=raw.get("about"))
    needs = {"name": ("name", "path", "lines"), "path_line": ("path", "lines"), "path": ("path",),
             "value": ("value", "path", "lines")}[kind]
    missing = [key for key in needs if getattr(fact, key) in (None, "")]
    if missing:
        raise ValueError(f"{where}: a {kind} fact needs {missing}")
    return fact


def parse_item(raw: dict, where: str = "item") -> Item:
    known = {"id", "repo", "language", "kind", "question", "source", "facts", "target", "complete", "scope",
             "call", "ignore", "note"}
    if set(raw) - known:
        raise ValueError(f"{where}: unknown fields {sorted(set(raw) - known)}")
    for key in ("id", "repo", "language", "kind", "question", "source", "facts"):
        if not raw.get(key):
            raise ValueError(f"{where}: {key} is missing")
    where = f"{where} ({raw['id']})"
    if raw["kind"] not in KINDS:
        raise ValueError(f"{where}: kind must be one of {KINDS}, not {raw['kind']!r}")
    facts = tuple(parse_fact(f, f"{where} fact {i}") for i, f in enumerate(raw["facts"]))
    target = None
    if raw.get("target"):
        t = raw["target"]
        target = Target(t["name"], t["path"], _lines(t["lines"], f"{where} target"))
    structural = raw["kind"] in STRUCTURAL
    if structural and (target is None or raw.get("complete") is None):
        raise ValueError(f"{where}: a {raw['kind']} item needs a target and says whether its list is complete")
    if raw["kind"] == "callers" and not raw.get("scope"):
        raise ValueError(f"{where}: a callers item needs the scope its callers were searched in")
    call = raw.get("call", "paren")
    if call not in CALL_STYLES:
        raise ValueError(f"{where}: call must be one of {CALL_STYLES}")
    return Item(id=raw["id"], repo=raw["repo"], language=raw["language"], kind=raw["kind"],
                question=raw["question"], source=raw["source"], facts=facts, target=target,
                complete=raw.get("complete") if structural else None, scope=raw.get("scope"), call=call,
                ignore=tuple(raw.get("ignore", ())), note=raw.get("note", ""))


def load_items(path: Path = FACTS) -> list[Item]:
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            items.append(parse_item(json.loads(line), f"{path.name}:{number}"))
    ids = [item.id for item in items]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{path.name}: duplicate ids {duplicates}")
    return items


def load_repos(path: Path = REPOS) -> dict[str, Repo]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {name: Repo(name=name, **fields) for name, fields in raw.items()}


# --- Matching ------------------------------------------------------------------------------------

# `path:line`, `path:start-end` (the UI's forms), with or without brackets around them
CITATION = re.compile(r"(?<![\w./\-])((?:[\w.\-]+/)*[\w.\-]*\w\.[A-Za-z0-9]+):(\d+)(?:\s*[-–]\s*(\d+))?")
_MARKER = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")  # an unexpanded source marker `[2]`
_GO_RECEIVER = re.compile(r"\(\s*\*?\s*([A-Za-z_]\w*)\s*\)\s*\.")  # (*Mux).ServeHTTP → Mux.ServeHTTP
_SEPARATORS = re.compile(r"::|->|#")
_DOTS = re.compile(r"\.{2,}")
_WORD = r"[\w$]"


def normalize_identifiers(text: str) -> str:
    """Qualifier separators as `.`: `A::b`, `A#b`, `A->b`, `(*A).b` and `A.#b` all read `A.b`."""
    text = _GO_RECEIVER.sub(r"\1.", text)
    text = _SEPARATORS.sub(".", text)
    return _DOTS.sub(".", text)


def _name_pattern(name: str) -> re.Pattern[str]:
    stem = re.escape(name)
    if name[-1] in "?!=":  # Ruby's `ssl_implied?`, `path=`: the mark may be left off
        stem = re.escape(name[:-1]) + "(?:" + re.escape(name[-1]) + ")?"
    return re.compile(rf"(?<!{_WORD}){stem}(?!{_WORD})")


def name_forms(fact: Fact) -> list[str]:
    """The spellings that count for a name fact, normalised (the full name, then its tail)."""
    full = normalize_identifiers(str(fact.name)).strip(".")
    forms = [full]
    if fact.tail and "." in full:
        forms.append(full.rsplit(".", 1)[1])
    return forms


def has_name(text: str, fact: Fact) -> bool:
    """`text` must already be normalised (`normalize_identifiers`)."""
    return any(_name_pattern(form).search(text) for form in name_forms(fact))


def normalize_value(text: str) -> str:
    text = text.lower().replace("`", "").replace('"', "").replace("'", "")
    return " ".join(text.split())


def has_value(text: str, fact: Fact) -> bool:
    """`text` must already be normalised (`normalize_value`)."""
    for form in (fact.value, *fact.alts):
        value = normalize_value(str(form))
        if value and re.search(rf"(?<![\w.]){re.escape(value)}(?!\w|\.\d)", text):
            return True
    return False


def same_path(cited: str, gold: str) -> bool:
    """The same file: equal, or one a suffix of the other starting at a `/`."""
    cited, gold = cited.removeprefix("./"), gold.removeprefix("./")
    return cited == gold or gold.endswith("/" + cited) or cited.endswith("/" + gold)


def has_path(text: str, path: str) -> bool:
    parts = path.split("/")
    suffixes = ["/".join(parts[i:]) for i in range(len(parts))]
    return any(re.search(rf"(?<![\w.\-/]){re.escape(s)}(?![\w\-/]|\.\w)", text) for s in suffixes)


@dataclass(frozen=True)
class Citation:
    path: str
    start: int
    end: int


def citations(text: str) -> list[Citation]:
    found = []
    for path, start, end in CITATION.findall(text):
        a, b = int(start), int(end) if end else int(start)
        found.append(Citation(path, min(a, b), max(a, b)))
    return found


def cites(cited: Iterable[Citation], fact: Fact) -> bool:
    assert fact.lines is not None and fact.path is not None
    low, high = fact.lines
    return any(same_path(c.path, fact.path) and c.start <= high and c.end >= low for c in cited)


def without_citations(text: str) -> str:
    return _MARKER.sub(" ", CITATION.sub(" ", text))


def answer_facts(item: Item, answer: str) -> list[bool]:
    """For each gold fact of `item`, whether the answer contains it."""
    cited = citations(answer)
    prose = without_citations(answer)
    names = normalize_identifiers(prose)
    values = normalize_value(prose)
    found = []
    for fact in item.facts:
        if fact.kind == "name":
            found.append(has_name(names, fact))
        elif fact.kind == "value":
            found.append(has_value(values, fact))
        elif fact.kind == "path":
            found.append(has_path(answer, str(fact.path)))
        else:
            found.append(cites(cited, fact))
    return found


# --- The context the model was shown ---------------------------------------------------------------

_SOURCE_HEADER = re.compile(r"^\[(\d+)\] (\S+):(\d+)-(\d+)")
_FILE_HEADING = re.compile(r"^### (\S+) \(")
_CODE_LINE = re.compile(r"^(\d+)\|(.*)$")


@dataclass
class Context:
    """What a packed context showed: files, the lines shown of each, and the text (code and
    notes) without the source headers."""

    files: set[str] = field(default_factory=set)
    shown: dict[str, set[int]] = field(default_factory=dict)
    spans: list[Citation] = field(default_factory=list)  # the source headers' ranges
    text: str = ""  # code lines (without their numbers) and notes
    notes: str = ""  # the lines that are neither code nor headers


def parse_context(context: str) -> Context:
    parsed = Context()
    current: str | None = None
    text: list[str] = []
    notes: list[str] = []
    for line in context.splitlines():
        header = _SOURCE_HEADER.match(line)
        heading = _FILE_HEADING.match(line)
        code = _CODE_LINE.match(line)
        if header:
            current = header.group(2)
            parsed.files.add(current)
            parsed.spans.append(Citation(current, int(header.group(3)), int(header.group(4))))
        elif heading:
            current = heading.group(1)
            parsed.files.add(current)
        elif code and current is not None:
            parsed.shown.setdefault(current, set()).add(int(code.group(1)))
            text.append(code.group(2))
        else:
            text.append(line)
            notes.append(line)
    parsed.text = "\n".join(text)
    parsed.notes = "\n".join(notes)
    return parsed


def context_facts(item: Item, context: str) -> list[bool]:
    """For each gold fact of `item`, whether the context the model was given holds it."""
    parsed = parse_context(context)
    names = normalize_identifiers(parsed.text)
    values = normalize_value(without_citations(parsed.text))
    noted = citations(parsed.notes)
    any_lines = any(parsed.shown.values())
    found = []
    for fact in item.facts:
        if fact.kind == "name":
            found.append(has_name(names, fact))
        elif fact.kind == "value":
            found.append(has_value(values, fact))
        elif fact.kind == "path":
            found.append(any(same_path(f, str(fact.path)) for f in parsed.files))
        else:
            assert fact.lines is not None
            low, high = fact.lines
            shown = any(same_path(path, str(fact.path)) and any(low <= n <= high for n in lines)
                        for path, lines in parsed.shown.items())
            if not any_lines:  # a context without numbered lines: the headers' ranges stand in
                shown = cites(parsed.spans, fact)
            found.append(shown or cites(noted, fact))
    return found


# --- Scores and tables ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """How much of an item's gold one text holds."""

    found: tuple[bool, ...]
    entities_found: int
    entities_total: int

    @property
    def has_fact(self) -> bool:
        return any(self.found)

    @property
    def has_all(self) -> bool:
        return self.entities_found == self.entities_total

    @property
    def entity_share(self) -> float:
        return self.entities_found / self.entities_total if self.entities_total else 0.0


def score(item: Item, found: Sequence[bool]) -> Score:
    by_entity: dict[str, bool] = {}
    for fact, hit in zip(item.facts, found, strict=True):
        by_entity[fact.entity] = by_entity.get(fact.entity, False) or hit
    return Score(tuple(found), sum(by_entity.values()), len(by_entity))


def score_row(item: Item, answer: str, context: str) -> dict:
    """The fact columns of one answered item, as the runner stores them."""
    in_answer = score(item, answer_facts(item, answer))
    in_context = score(item, context_facts(item, context))
    return {
        "answer_facts": [f.label for f, hit in zip(item.facts, in_answer.found) if hit],
        "context_facts": [f.label for f, hit in zip(item.facts, in_context.found) if hit],
        "answer_has_fact": in_answer.has_fact, "context_has_fact": in_context.has_fact,
        "answer_entities": [in_answer.entities_found, in_answer.entities_total],
        "context_entities": [in_context.entities_found, in_context.entities_total],
        "answer_has_all": in_answer.has_all if item.complete else None,
        "context_has_lines": any(hit for f, hit in zip(item.facts, in_context.found) if f.kind == "path_line")
        if any(f.kind == "path_line" for f in item.facts) else None,
    }


TABLE_COLUMNS = ("n", "answer has a fact", "context has a fact", "context shows gold lines",
                 "answer given context", "entities named", "all (complete lists)", "first token p50 s", "total p50 s")


def _rate(hits: int, total: int) -> str:
    return f"{hits / total:.2f} ({hits}/{total})" if total else "–"


def _median(values: list[float]) -> str:
    values = [v for v in values if v is not None]
    return f"{statistics.median(values):.1f}" if values else "–"


def summary(rows: list[dict]) -> dict[str, str]:
    """One table row over answered items (rows as `score_row` makes them, plus `first_token_s`,
    `total_s`). `answer given context`: the answer's rate over the items whose context held a
    fact, the issue's target measure; `context shows gold lines`: over the items with a gold
    range, whether a line of one was shown (stricter than a gold name occurring somewhere)."""
    with_context = [r for r in rows if r["context_has_fact"]]
    with_lines = [r for r in rows if r.get("context_has_lines") is not None]
    complete = [r for r in rows if r.get("answer_has_all") is not None]
    shares = [r["answer_entities"][0] / r["answer_entities"][1] for r in rows if r["answer_entities"][1]]
    return {
        "n": str(len(rows)),
        "answer has a fact": _rate(sum(r["answer_has_fact"] for r in rows), len(rows)),
        "context has a fact": _rate(sum(r["context_has_fact"] for r in rows), len(rows)),
        "context shows gold lines": _rate(sum(r["context_has_lines"] for r in with_lines), len(with_lines)),
        "answer given context": _rate(sum(r["answer_has_fact"] for r in with_context), len(with_context)),
        "entities named": f"{statistics.fmean(shares):.2f}" if shares else "–",
        "all (complete lists)": _rate(sum(bool(r["answer_has_all"]) for r in complete), len(complete)),
        "first token p50 s": _median([r.get("first_token_s") for r in rows]),
        "total p50 s": _median([r.get("total_s") for r in rows]),
    }


def table(rows: list[dict], by: str) -> str:
    """A markdown table with one line per value of `by` (kind, repo, language), then `all`; the
    structural kinds (callers, callees) get a line of their own when grouping by kind."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(str(row[by]), []).append(row)
    order = [k for k in KINDS if k in groups] if by == "kind" else sorted(groups)
    lines = [f"| {by} | " + " | ".join(TABLE_COLUMNS) + " |", "|---|" + "---|" * len(TABLE_COLUMNS)]
    labelled = [(key, groups[key]) for key in order]
    if by == "kind":
        structural = [r for r in rows if r["kind"] in STRUCTURAL]
        if structural:
            labelled.append(("structural (callers + callees)", structural))
    labelled.append(("all", rows))
    for label, group in labelled:
        values = summary(group)
        lines.append(f"| {label} | " + " | ".join(values[c] for c in TABLE_COLUMNS) + " |")
    return "\n".join(lines)
