"""Which public repositories the training pairs come from, and which ones they must never use.

One home for both lists:
- `repos.tsv` beside this file: language, owner/name, the pinned anchor commit (the newest
  commit mined), the first-parent commit count there and how many commit items to take (newest
  first), one repository a line;
- `EXCLUDED`: the held-out repositories, and the evals' test repositories, read from the evals'
  own item files (`eval/realistic/items.jsonl`, `eval/howto/items.jsonl`) so that a repository
  an eval adds to its test split is refused without a code change. `check_allowed` refuses them,
  and the miner calls it before touching any repository. A notes file of `test`/`train` lines
  (`extra_files`) can add more.

Repository names are compared case-insensitively (GitHub treats `FasterXML/jackson-core` and
`fasterxml/jackson-core` as one repository).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOS_FILE = HERE / "repos.tsv"
MIRROR = Path("/work/.mirror")  # bare mirrors, <owner>+<name>/repo: where `fetch` puts them (every script's --mirror)
EVAL_ITEM_FILES = (HERE.parent / "eval" / "realistic" / "items.jsonl", HERE.parent / "eval" / "howto" / "items.jsonl")

# Reason -> repositories. Never mined, never a source of negatives, never named in a query.
EXCLUDED: dict[str, frozenset[str]] = {
    # Kept for an independent check of generalisation (eval/realistic/mine.py HELD_OUT).
    "held out": frozenset({"pytest-dev/pytest", "iamkun/dayjs", "tokio-rs/tokio", "FasterXML/jackson-core",
                           "grpc/grpc-go"}),
    # The new-language eval's test repositories (issue 30), as announced before its list was written.
    "new-language eval test split": frozenset({
        "sinatra/sinatra", "slimphp/Slim", "square/okio", "Alamofire/Alamofire", "elixir-plug/plug",
        "jbogard/MediatR", "scopt/scopt", "nvm-sh/nvm", "rxi/lume", "koalaman/shellcheck", "zigtools/zls",
        "dart-lang/http"}),
}

# One repository in this many of each language (at least one) is kept out of training and
# measured on (training/evaluate_embedder.py): a check of the matcher on repositories it never saw.
VALIDATION_SHARE = 7

_REPO_NAME = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9_])\b")


class ExcludedRepository(ValueError):
    """A repository that an eval keeps for testing was asked for."""


@dataclass(frozen=True)
class Source:
    """One repository to mine: its main language and the pinned newest commit."""

    language: str
    repo: str
    anchor: str
    max_commit_items: int  # commit items taken, newest first: no repository dominates the data


def load_sources(path: Path = REPOS_FILE) -> list[Source]:
    sources = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        language, repo, anchor, _commits, max_items = line.split("\t")
        sources.append(Source(language, repo, anchor, int(max_items)))
    return sources


def validation_repos(sources: list[Source] | None = None) -> frozenset[str]:
    """The training data's own held-back repositories: per language (repos.tsv), the first
    ceil(n / VALIDATION_SHARE) in sha1 order of their names, an order unrelated to their content."""
    by_language: dict[str, list[str]] = {}
    for source in sources if sources is not None else load_sources():
        by_language.setdefault(source.language, []).append(source.repo)
    chosen: set[str] = set()
    for repos in by_language.values():
        ranked = sorted(repos, key=lambda repo: hashlib.sha1(repo.lower().encode()).hexdigest())
        chosen.update(ranked[:math.ceil(len(ranked) / VALIDATION_SHARE)])
    return frozenset(chosen)


def eval_test_repos(items_files: tuple[Path, ...] = EVAL_ITEM_FILES) -> frozenset[str]:
    """The evals' test-split repositories (realistic bug reports, how-it-works questions), read
    from their item files."""
    repos = set()
    for items_file in items_files:
        for line in items_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                if item.get("split") == "test":
                    repos.add(item["repo"])
    return frozenset(repos)


def repos_named_in(path: Path) -> frozenset[str]:
    """Every `owner/name` written in a notes file, except on lines that start with `train`.

    The evals write `test <language> owner/name` and `train <language> owner/name` lines (and
    comments naming test-only repositories); anything not marked train is taken as held back.
    """
    names = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.split()[:1] == ["train"]:
            continue
        names |= {m.group(1) for m in _REPO_NAME.finditer(line) if not m.group(1).startswith(("http", "www."))}
    return frozenset(names)


def excluded_repos(extra_files: tuple[Path, ...] = ()) -> dict[str, str]:
    """Lower-cased owner/name -> why it is excluded."""
    reasons: dict[str, str] = {}
    for reason, repos in EXCLUDED.items():
        reasons.update({r.lower(): reason for r in repos})
    reasons.update({r.lower(): "an eval's test split" for r in eval_test_repos()})
    for path in extra_files:
        if path.exists():
            reasons.update({r.lower(): f"listed in {path.name}" for r in repos_named_in(path)
                            if r.lower() not in reasons})
    return reasons


def check_allowed(repos: list[str], extra_files: tuple[Path, ...] = ()) -> None:
    """Raise `ExcludedRepository` naming every requested repository that an eval keeps for testing."""
    reasons = excluded_repos(extra_files)
    refused = [f"{repo} ({reasons[repo.lower()]})" for repo in repos if repo.lower() in reasons]
    if refused:
        raise ExcludedRepository("refusing excluded repositories: " + ", ".join(refused))


def names_excluded_repo(text: str, excluded: dict[str, str]) -> bool:
    """Whether a query mentions an excluded repository (`excluded_repos()`) by owner/name."""
    lowered = text.lower()
    return any(repo in lowered for repo in excluded)
