"""Check the fact eval's gold against the code: every item, at its repository's pinned commit.

    python -m eval.answers.check_facts --mirror /work/.mirror        # all items
    python -m eval.answers.check_facts --mirror /work/.mirror --ids click-03 --verbose

A mirror directory holds one bare git directory per repository at `<owner>+<name>/repo`
(`$CODEQA_EVAL_MIRROR` is the default); files are read with `git show COMMIT:PATH`, nothing is
checked out. Per fact:

- every path exists at the commit, and every line range lies inside its file;
- a `name` fact: its identifier (the last part of a qualified name, `#` dropped) occurs as a
  whole word inside its line range; with `"definition": true`, CodeQA's own parser
  (`codeqa.parsing.treesitter.parse_source`) finds a definition whose qualified name is the name
  (or ends with `.name`) spanning exactly that range;
- a `path_line` fact with a `symbol`: that definition spans exactly the range;
- a `value` fact: the value (or its `code` spelling) occurs inside its line range;
- a callers / callees item's `target`: a definition spanning exactly its range.

Callers items: every call of the target's name (`name(`, or the bare word for `"call": "word"`)
in the files `scope` matches is found by a text search over the commit, outside comments and
the target itself (its own definition line; a recursive call is not a caller). Each listed caller's range must hold one of them; an item marked
`complete` must list a caller around every one (definitions named in `ignore` are left out: a
same-named method of another class, a docstring's example). Callees items: each callee fact's
range lies inside the target and holds a call of the name; an item marked `complete` must name
every `name(` called in the body; otherwise `--verbose` lists the other names called there.

Exit status 1 when any fact fails.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from codeqa.parsing.languages import CALLABLE_KINDS, code_language
from codeqa.parsing.treesitter import Definition, parse_source

from eval.answers.facts import FACTS, REPOS, Fact, Item, load_items, load_repos

MIRROR_ENV = "CODEQA_EVAL_MIRROR"
_COMMENT_START = ("//", "/*", "*", "--")
_HASH_COMMENTS = frozenset({"python", "ruby"})
_CALLEE = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*[?!]?)\s*(?:<[^<>()]*>)?\s*\(")
_NOT_CALLEES = frozenset({"if", "for", "while", "switch", "return", "sizeof", "catch", "function", "elif", "and",
                          "or", "not", "in", "assert", "defined"})


class Snapshot:
    """The files of one repository at one commit: a bare git directory and a commit, or a plain
    directory (`commit=None`, used by the tests)."""

    def __init__(self, root: Path, commit: str | None) -> None:
        self.root, self.commit = root, commit
        self._texts: dict[str, str | None] = {}
        self._defs: dict[str, list[Definition]] = {}

    def files(self) -> list[str]:
        if self.commit is None:
            return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())
        listed = subprocess.run(["git", "--git-dir", str(self.root), "ls-tree", "-r", "--name-only", self.commit],
                                capture_output=True, text=True, check=True)
        return listed.stdout.splitlines()

    def read(self, path: str) -> str | None:
        if path not in self._texts:
            if self.commit is None:
                file = self.root / path
                self._texts[path] = file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None
            else:
                shown = subprocess.run(["git", "--git-dir", str(self.root), "show", f"{self.commit}:{path}"],
                                       capture_output=True, check=False)
                self._texts[path] = shown.stdout.decode("utf-8", "replace") if shown.returncode == 0 else None
        return self._texts[path]

    def definitions(self, path: str) -> list[Definition]:
        if path not in self._defs:
            text, language = self.read(path), code_language(path)
            self._defs[path] = parse_source(text, language, path).definitions if text and language else []
        return self._defs[path]


@dataclass
class Report:
    item: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def identifier(name: str) -> str:
    """The last part of a (qualified) name, as it is written at its definition or call."""
    last = re.split(r"::|->|\.", name)[-1]
    return last.lstrip("#")


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")


def _call(name: str, style: str) -> re.Pattern[str]:
    if style == "word":
        return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$?!=])" if name[-1] not in "?!=" else
                          rf"(?<![\w$]){re.escape(name)}")
    return re.compile(rf"(?<![\w$]){re.escape(name)}\s*(?:!\s*)?(?:<[^<>()]*>)?\s*\(")


def _is_comment(line: str, language: str | None) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(_COMMENT_START) or (language in _HASH_COMMENTS and stripped.startswith("#"))


def _qualified_matches(definition: Definition, name: str) -> bool:
    wanted = re.sub(r"::|->|#", ".", name).replace("..", ".")
    have = definition.qualified_name.replace("#", "")
    wanted = wanted.replace("#", "")
    return have == wanted or have.endswith("." + wanted)


def _span(snap: Snapshot, path: str, lines: tuple[int, int], report: Report, what: str) -> list[str] | None:
    text = snap.read(path)
    if text is None:
        report.problems.append(f"{what}: no file {path} at the commit")
        return None
    all_lines = text.splitlines()
    if lines[1] > len(all_lines):
        report.problems.append(f"{what}: {path}:{lines[0]}-{lines[1]} is past the file's end ({len(all_lines)} lines)")
        return None
    return all_lines[lines[0] - 1:lines[1]]


def _check_definition(snap: Snapshot, name: str, path: str, lines: tuple[int, int], report: Report, what: str) -> None:
    found = [d for d in snap.definitions(path) if _qualified_matches(d, name)]
    if not any((d.start_line, d.end_line) == lines for d in found):
        spans = ", ".join(f"{d.qualified_name} {d.start_line}-{d.end_line}" for d in found) or "none"
        report.problems.append(f"{what}: no definition {name} at {path}:{lines[0]}-{lines[1]} (found: {spans})")


def check_fact(snap: Snapshot, fact: Fact, report: Report) -> None:
    what = f"{fact.kind} {fact.label}"
    if fact.kind == "path":
        if snap.read(str(fact.path)) is None:
            report.problems.append(f"{what}: no file {fact.path} at the commit")
        return
    assert fact.path is not None and fact.lines is not None
    span = _span(snap, fact.path, fact.lines, report, what)
    if span is None:
        return
    if fact.kind == "name":
        assert fact.name is not None
        if not any(_word(identifier(fact.name)).search(line) for line in span):
            report.problems.append(f"{what}: {identifier(fact.name)!r} is not in {fact.path}:{fact.lines[0]}-{fact.lines[1]}")
        if fact.definition:
            _check_definition(snap, fact.name, fact.path, fact.lines, report, what)
    elif fact.kind == "value":
        spelling = fact.code or str(fact.value)
        if spelling not in "\n".join(span):
            report.problems.append(f"{what}: {spelling!r} is not in {fact.path}:{fact.lines[0]}-{fact.lines[1]}")
    elif fact.symbol:
        _check_definition(snap, fact.symbol, fact.path, fact.lines, report, what)


@dataclass(frozen=True)
class CallSite:
    path: str
    line: int
    caller: str  # the innermost enclosing callable definition, "" at module level


def call_sites(snap: Snapshot, item: Item) -> list[CallSite]:
    """Every call of the target's name in the item's scope (text search, comments left out)."""
    assert item.target is not None and item.scope is not None
    name = identifier(item.target.name)
    pattern = _call(name, item.call)
    scope = re.compile(item.scope)
    sites = []
    for path in snap.files():
        language = code_language(path)
        if not language or not scope.search(path):
            continue
        text = snap.read(path) or ""
        if name not in text:
            continue
        callables = [d for d in snap.definitions(path) if d.kind in CALLABLE_KINDS]
        for number, line in enumerate(text.splitlines(), 1):
            if not pattern.search(line) or _is_comment(line, language):
                continue
            around = [d for d in callables if d.start_line <= number <= d.end_line]
            inner = min(around, key=lambda d: d.end_line - d.start_line) if around else None
            if path == item.target.path and inner is not None and (inner.start_line, inner.end_line) == item.target.lines:
                continue  # the definition itself (its own line, or a recursive call)
            sites.append(CallSite(path, number, inner.qualified_name if inner else ""))
    return sites


def check_callers(snap: Snapshot, item: Item, report: Report) -> None:
    sites = [s for s in call_sites(snap, item) if s.caller and s.caller not in item.ignore]
    listed = [f for f in item.facts if f.kind in ("name", "path_line") and f.path and f.lines]
    for fact in listed:
        assert fact.lines is not None
        if not any(s.path == fact.path and fact.lines[0] <= s.line <= fact.lines[1] for s in sites):
            report.problems.append(f"caller {fact.label} ({fact.path}:{fact.lines[0]}-{fact.lines[1]}): "
                                   f"no call of {identifier(item.target.name)} there")
    unlisted = [s for s in sites
                if not any(f.path == s.path and f.lines[0] <= s.line <= f.lines[1] for f in listed)]  # type: ignore[index]
    callers = sorted({f"{s.caller} ({s.path}:{s.line})" for s in unlisted})
    if item.complete and callers:
        report.problems.append(f"marked complete, but these also call it: {', '.join(callers)}")
    elif callers:
        report.notes.append(f"other callers in scope (the list is not complete): {', '.join(callers)}")
    report.notes.append(f"{len(sites)} call sites in {len({s.caller for s in sites})} definitions")


def check_callees(snap: Snapshot, item: Item, report: Report) -> None:
    assert item.target is not None
    low, high = item.target.lines
    text = snap.read(item.target.path) or ""
    body = text.splitlines()[low - 1:high]
    for fact in item.facts:
        if fact.kind != "name":
            continue
        assert fact.lines is not None and fact.name is not None
        if fact.path != item.target.path or not (low <= fact.lines[0] and fact.lines[1] <= high):
            report.problems.append(f"callee {fact.label}: {fact.path}:{fact.lines[0]}-{fact.lines[1]} is not inside "
                                   f"the target {item.target.name}")
            continue
        span = text.splitlines()[fact.lines[0] - 1:fact.lines[1]]
        if not any(_call(identifier(fact.name), item.call).search(line) for line in span):
            report.problems.append(f"callee {fact.label}: no call of it at {fact.path}:{fact.lines[0]}-{fact.lines[1]}")
    named = {identifier(f.name) for f in item.facts if f.kind == "name" and f.name}
    called = {m for line in body[1:] if not _is_comment(line, code_language(item.target.path))
              for m in _CALLEE.findall(line)}
    other = sorted(called - named - _NOT_CALLEES)
    if other and item.complete:
        report.problems.append(f"marked complete, but the body also calls: {', '.join(other)}")
    elif other:
        report.notes.append(f"also called in the body (left out of the gold): {', '.join(other)}")


def check_item(snap: Snapshot, item: Item) -> Report:
    report = Report(item.id)
    for fact in item.facts:
        check_fact(snap, fact, report)
    if item.target is not None:
        _check_definition(snap, item.target.name, item.target.path, item.target.lines, report, "target")
        if item.kind == "callers":
            check_callers(snap, item, report)
        elif item.kind == "callees":
            check_callees(snap, item, report)
    return report


@cache
def _snapshot(root: str, commit: str) -> Snapshot:
    return Snapshot(Path(root), commit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=os.environ.get(MIRROR_ENV),
                        help=f"bare mirrors at <owner>+<name>/repo (default: ${MIRROR_ENV})")
    parser.add_argument("--items", type=Path, default=FACTS)
    parser.add_argument("--repos", type=Path, default=REPOS)
    parser.add_argument("--ids", nargs="+", help="only these items")
    parser.add_argument("--verbose", action="store_true", help="print the notes of items that pass too")
    args = parser.parse_args(argv)
    if args.mirror is None:
        parser.error(f"no mirror: pass --mirror or set ${MIRROR_ENV}")
    items = [i for i in load_items(args.items) if not args.ids or i.id in args.ids]
    repos = load_repos(args.repos)
    failed = 0
    for item in items:
        repo = repos.get(item.repo)
        if repo is None:
            print(f"FAIL {item.id}: {item.repo} is not in {args.repos.name}")
            failed += 1
            continue
        report = check_item(_snapshot(str(Path(args.mirror) / repo.slug / "repo"), repo.commit), item)
        failed += bool(report.problems)
        status = "FAIL" if report.problems else "ok  "
        print(f"{status} {item.id} [{item.kind}] {len(item.facts)} facts")
        for problem in report.problems:
            print(f"       problem: {problem}")
        if args.verbose or report.problems:
            for note in report.notes:
                print(f"       note: {note}")
    print(f"{len(items) - failed} of {len(items)} items pass; {sum(len(i.facts) for i in items)} facts checked")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
