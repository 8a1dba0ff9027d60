"""The how-it-works item file (`items.jsonl`): one masked maintainer passage and its gold files.

Only metadata is committed: the repository, the pinned commit, where the passage is (document
path and line range), the masked query and the gold paths. `mine.py` rebuilds the file from the
pinned commits.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

ITEMS_FILE = Path(__file__).resolve().parent / "items.jsonl"
SPLITS = ("train", "test")
SOURCES = ("architecture", "folder-readme")  # an internals/architecture document, or a folder's README
KINDS = ("file", "module", "multi")  # names one file; names a folder or module (its entry file); several


@dataclass(frozen=True)
class GoldFile:
    path: str
    named_as: str  # the name in the document that resolved to this file
    how: str  # path | dir | file name | module | stem


@dataclass(frozen=True)
class Item:
    id: str
    repo: str
    language: str  # the gold files' language (the first gold file's, when they differ)
    split: str
    source: str
    kind: str
    commit: str
    doc_path: str
    doc_lines: list[int]  # [start, end], 1-based inclusive
    query: str
    gold: list[GoldFile]

    @property
    def gold_paths(self) -> list[str]:
        return [g.path for g in self.gold]

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @staticmethod
    def from_dict(raw: dict) -> "Item":
        return Item(**{**raw, "gold": [GoldFile(**g) for g in raw["gold"]]})


def load_items(path: Path = ITEMS_FILE) -> list[Item]:
    with path.open(encoding="utf-8") as handle:
        return [Item.from_dict(json.loads(line)) for line in handle if line.strip()]


def save_items(items: list[Item], path: Path = ITEMS_FILE) -> None:
    path.write_text("".join(item.to_json() + "\n" for item in items), encoding="utf-8")


def split_problems(items: list[Item]) -> list[str]:
    """Why the items break the split's rules: a repository on both sides, an unknown field
    value, a duplicate id, an item without gold."""
    problems = []
    splits_of: dict[str, set[str]] = {}
    for item in items:
        splits_of.setdefault(item.repo, set()).add(item.split)
        if item.split not in SPLITS:
            problems.append(f"{item.id}: unknown split {item.split!r}")
        if item.source not in SOURCES:
            problems.append(f"{item.id}: unknown source {item.source!r}")
        if item.kind not in KINDS:
            problems.append(f"{item.id}: unknown kind {item.kind!r}")
        if not item.gold:
            problems.append(f"{item.id}: no gold file")
    problems += [f"{repo} is in both splits" for repo, splits in splits_of.items() if len(splits) > 1]
    problems += [f"duplicate id {i}" for i, n in Counter(item.id for item in items).items() if n > 1]
    return problems
