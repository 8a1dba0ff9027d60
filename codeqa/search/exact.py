"""Exact mentions: what a question names (a symbol, a file, or the question is one name) goes first."""

from __future__ import annotations

from collections.abc import Sequence

from codeqa.parsing.languages import FILE_KIND
from codeqa.search.query import ParsedQuery
from codeqa.search.results import FileHit, Hit

MAX_EXACT = 5  # rows an exact mention may lift to the top


def exact_first(parsed: ParsedQuery, hits: list[Hit], exact: list[Hit]) -> list[Hit]:
    """Put the rows the question names exactly (`exact`: symbols, files) on top, in the order named."""
    if not exact:
        return hits
    ranked = {h.id: i for i, h in enumerate(hits)}
    order = {name: i for i, name in enumerate(parsed.symbols + parsed.files)}

    def rank(hit: Hit) -> tuple[int, int]:
        named = min((i for name, i in order.items() if names(hit, name)), default=len(order))
        return named, ranked.get(hit.id, len(ranked))

    exact = sorted({h.id: h for h in exact}.values(), key=rank)[:MAX_EXACT]
    top = hits[0].score if hits else 1.0
    lifted = []
    for hit in exact:
        hit = next((h for h in hits if h.id == hit.id), hit)
        hit.exact, hit.score = True, max(hit.score, top)
        lifted.append(hit)
    lifted_ids = {h.id for h in lifted}
    return lifted + [h for h in hits if h.id not in lifted_ids]


def names_file(path: str, name: str) -> bool:
    """`name` is the file's path, a tail of it (`src/view.js`, `view.js`), or its stem (`view`)."""
    base = path.rsplit("/", 1)[-1]
    return path == name or path.endswith("/" + name) or ("." not in name and base.rsplit(".", 1)[0] == name)


def tail_of_long(mention: str) -> str | None:
    """The last two parts of a mention of three or more (`.../site-packages/requests/models.py`:
    `requests/models.py`), to look the repository's files up by; None for a shorter one."""
    parts = mention.split("/")
    return "/".join(parts[-2:]) if len(parts) >= 3 else None


def named_by_long(paths: list[str], mentions: Sequence[str]) -> set[str]:
    """The files (of `paths`) that long mentions name by their tail: an installed copy's path in
    a traceback (`/usr/lib/python3.9/site-packages/requests/models.py`), a link to the file
    (`github.com/psf/requests/blob/<sha>/requests/models.py`), a path under another checkout.
    Each mention names the one file sharing the most trailing parts with it, two at least; a
    tie names none (`.../globset-0.4.8/src/lib.rs` against every crate's `src/lib.rs`)."""
    named: set[str] = set()
    for mention in mentions:
        if tail_of_long(mention) is None:
            continue
        shared = {path: _shared_parts(path, mention) for path in paths}
        best = max(shared.values(), default=0)
        if best >= 2 and sum(count == best for count in shared.values()) == 1:
            named |= {path for path, count in shared.items() if count == best}
    return named


def _shared_parts(path: str, mention: str) -> int:
    count = 0
    for mine, theirs in zip(reversed(path.split("/")), reversed(mention.split("/")), strict=False):
        if mine != theirs:
            break
        count += 1
    return count


def named_by_whole(hit: Hit, whole_name: str) -> bool:
    """The query, being exactly one name, names this hit: its definition or its file."""
    if hit.table == "modules":
        return hit.kind == FILE_KIND and names_file(hit.file_path, whole_name)
    return row_names({"qualified_name": hit.qualified_name, "name": hit.name}, whole_name)


def whole_name_first(parsed: ParsedQuery, hits: list[Hit], files: list[FileHit]) -> tuple[list[Hit], list[FileHit]]:
    """A query that is exactly a name (`colordemo`, `Context.invoke`, `view.js`, `view`) puts
    what it names first, source before tests, whatever the rest of the evidence says; their
    files lead the file list likewise. Any other query is left as ranked."""
    if not parsed.whole_name:
        return hits, files
    named = sorted(
        (i for i, hit in enumerate(hits) if hit.exact and named_by_whole(hit, parsed.whole_name)),
        key=lambda i: (hits[i].role == "test", hits[i].table == "modules", i),
    )
    if not named:
        return hits, files
    first = [hits[i] for i in named]
    chosen = {hit.id for hit in first}
    paths = list(dict.fromkeys(hit.file_path for hit in first))
    ahead = sorted((f for f in files if f.path in paths), key=lambda f: paths.index(f.path))
    return first + [h for h in hits if h.id not in chosen], ahead + [f for f in files if f.path not in paths]


def row_names(row: dict, name: str) -> bool:
    return (
        row["qualified_name"] == name
        or row["name"] == name
        or (
            "." in name
            and row["qualified_name"].endswith("." + name.split(".", 1)[-1])
            and row["name"] == name.rsplit(".", 1)[-1]
        )
    )


def names(hit: Hit, name: str) -> bool:
    return row_names({"qualified_name": hit.qualified_name, "name": hit.name}, name) or (
        hit.file_path == name or hit.file_path.endswith("/" + name)
    )
