"""The item file (`items.jsonl`): what one eval item is, how it is read and written, its split.

One JSON object per line. Only metadata lives here (ids, repository, pinned commits, query
text, gold); the code itself is fetched from the pinned commits by `corpus.py`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

ITEMS_FILE = Path(__file__).resolve().parent / "items.jsonl"
SPLITS = ("train", "test")
QUERY_TYPES = ("issue", "commit")


@dataclass(frozen=True)
class GoldSymbol:
    """A definition the fix changed: CodeQA's qualified name, kind and pre-fix line range."""

    qualified_name: str
    kind: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class GoldFile:
    """A non-test source file the fix modified, as it was at the pre-fix commit."""

    path: str
    language: str
    changed_lines: list[list[int]]  # [start, end] 1-based inclusive, pre-fix lines removed/replaced
    inserted_after: list[int]  # pre-fix lines after which the fix inserted code (0 = top)
    symbols: list[GoldSymbol] = field(default_factory=list)


@dataclass(frozen=True)
class Item:
    id: str
    repo: str  # owner/name on GitHub
    language: str  # the repository's main language (the item's gold files are in it)
    split: str  # train | test, by repository
    query_type: str  # issue | commit
    source: str  # where the query and the fix came from (dataset name or "git-history")
    base_commit: str  # the pre-fix commit: what gets indexed
    base_date: str  # its committer date (ISO 8601), to index a repository's items in time order
    fix_ref: str  # the fix: a commit id, or the dataset's instance id
    query: str
    query_truncated: bool
    gold: list[GoldFile]

    @property
    def gold_paths(self) -> list[str]:
        return [g.path for g in self.gold]

    @property
    def gold_symbols(self) -> list[tuple[str, str]]:
        """(file path, qualified name) of every gold symbol."""
        return [(g.path, s.qualified_name) for g in self.gold for s in g.symbols]

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=False)

    @staticmethod
    def from_dict(raw: dict) -> "Item":
        gold = [GoldFile(**{**g, "symbols": [GoldSymbol(**s) for s in g["symbols"]]}) for g in raw["gold"]]
        return Item(**{**raw, "gold": gold})


def load_items(path: Path = ITEMS_FILE) -> list[Item]:
    with path.open(encoding="utf-8") as handle:
        return [Item.from_dict(json.loads(line)) for line in handle if line.strip()]


def save_items(items: list[Item], path: Path = ITEMS_FILE) -> None:
    path.write_text("".join(item.to_json() + "\n" for item in items), encoding="utf-8")


def split_problems(items: list[Item]) -> list[str]:
    """Why the items break the split's rules (empty when they don't).

    The split is by repository, so no repository may appear in both; every language in the
    set must appear in the test split, so each language is reported where it is tuned.
    """
    problems = []
    splits_of: dict[str, set[str]] = {}
    for item in items:
        splits_of.setdefault(item.repo, set()).add(item.split)
        if item.split not in SPLITS:
            problems.append(f"{item.id}: unknown split {item.split!r}")
        if item.query_type not in QUERY_TYPES:
            problems.append(f"{item.id}: unknown query type {item.query_type!r}")
        if not item.gold:
            problems.append(f"{item.id}: no gold file")
    problems += [f"{repo} is in both splits" for repo, splits in splits_of.items() if len(splits) > 1]
    languages = {item.language for item in items}
    tested = {item.language for item in items if item.split == "test"}
    problems += [f"no test item in {language}" for language in sorted(languages - tested)]
    ids = Counter(item.id for item in items)
    problems += [f"duplicate id {item_id}" for item_id, n in ids.items() if n > 1]
    return problems


def names_file(text: str, paths: list[str]) -> bool:
    """Whether the text names one of the files, by its path or its file name."""
    lowered = text.lower()
    return any(p.lower() in lowered or PurePosixPath(p).name.lower() in lowered for p in paths)
