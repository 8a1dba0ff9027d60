"""Realistic eval: index each item's pre-fix commit, search with CodeQA, score beside whole-file BM25.

    python -m eval.realistic.run --quick                      # a few items of small repos: minutes
    python -m eval.realistic.run                              # every item, both splits
    python -m eval.realistic.run --split test --configs codeqa codeqa-vector
    python -m eval.realistic.run --repos psf/requests --limit 3 --json /tmp/items.json
    python -m eval.realistic.run --index-only                 # build the snapshot cache, search nothing

The first run indexes every repository at each of its items' pre-fix commits, one commit
after another with the product's incremental indexer, and keeps a snapshot of the index per
commit in the cache (`$CODEQA_EVAL_CACHE`, see snapshots.py); later runs find the snapshots and
only search. The corpus comes from corpus.py (GitHub, or `--mirror DIR`). The whole-file BM25
baseline runs in every run, over the files CodeQA indexed at that commit. Definitions and
caveats: eval/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

EVAL_ROOT = Path(__file__).resolve().parents[1]
REPO_ROOT = EVAL_ROOT.parent
os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from codeqa.core.config import Settings
from codeqa.search.ranking import DEFINITION_FEATURES, LinearRanker

from eval.realistic.baseline import BASELINES, WholeFileBM25, rank_symbols
from eval.realistic.corpus import Corpus, CorpusError, default_cache, default_mirror
from eval.realistic.items import Item, load_items, names_file
from eval.realistic.metrics import markdown_table, score_item, standard_groups
from eval.realistic.snapshots import Snapshot, SnapshotStore

K = 10
# CodeQA configurations: SearchOptions fields over today's defaults (hybrid RRF, no HyDE, no rerank).
SEARCH_DEFAULTS = {"k": K, "hyde": False, "rerank": False}
CONFIGS: dict[str, dict] = {
    "codeqa": {},
    "codeqa-vector": {"mode": "vector"},
    "codeqa-bm25": {"mode": "bm25"},
    "codeqa-k30": {"k": 30},  # 30 symbols (pool 90): more files to rank; function metrics stay @10
    "codeqa+pieces": {"pieces": True},
    "codeqa-pool-symbols": {"definitions": False},  # a file's symbols from the pool only (no definition ranker)
    "codeqa+rerank": {"rerank": True},
    "codeqa+hyde": {"hyde": True},
}
DEFAULT_CONFIGS = ("codeqa",)
# --quick: the first QUICK_LIMIT items (in time) of small repositories, one per language; cheap
# to index from an empty cache (about 8,000 rows in all).
QUICK_REPOS = ("psf/requests", "sharkdp/fd", "spf13/cobra", "expressjs/express", "google/gson", "jqlang/jq")
QUICK_LIMIT = 3


@dataclass(frozen=True)
class Run:
    """What one invocation works with."""

    corpus: Corpus
    store: SnapshotStore
    base: Settings
    allow_index: bool


def select(items: list[Item], split: str, repos: list[str] | None, limit: int | None,
           languages: list[str] | None = None) -> list[Item]:
    """Items of the split, repositories and languages asked for; `limit` keeps each repository's earliest."""
    chosen = [i for i in items if (split == "all" or i.split == split) and (not repos or i.repo in repos)
              and (not languages or i.language in languages)]
    if limit is None:
        return chosen
    per_repo: dict[str, list[Item]] = defaultdict(list)
    for item in sorted(chosen, key=lambda i: (i.base_date, i.id)):
        if len(per_repo[item.repo]) < limit:
            per_repo[item.repo].append(item)
    kept = {i.id for group in per_repo.values() for i in group}
    return [i for i in chosen if i.id in kept]


def commits_in_order(items: list[Item]) -> dict[str, list[str]]:
    """Each repository's pre-fix commits in time order: consecutive ones differ little."""
    order: dict[str, list[str]] = defaultdict(list)
    for item in sorted(items, key=lambda i: (i.base_date, i.id)):
        if item.base_commit not in order[item.repo]:
            order[item.repo].append(item.base_commit)
    return order


def ensure_snapshots(run: Run, items: list[Item]) -> tuple[dict[tuple[str, str], Snapshot], list[dict]]:
    """A snapshot for every item's commit: found in the cache, or indexed now (incrementally)."""
    snapshots: dict[tuple[str, str], Snapshot] = {}
    indexed: list[dict] = []
    for repo, commits in commits_in_order(items).items():
        missing = [c for c in commits if run.store.load(repo, c) is None]
        if missing and not run.allow_index:
            raise CorpusError(f"{repo}@{missing[0][:12]} has no snapshot in {run.store.cache} (--no-index)")
        if missing:
            run.corpus.fetch(repo, missing)
        for number, commit in enumerate(commits, 1):
            snapshot = run.store.load(repo, commit)
            if snapshot is None:
                root = run.corpus.checkout(repo, commit)
                snapshot = run.store.index(repo, commit, root, run.base)
                report = snapshot.report
                indexed.append({"repo": repo, "commit": commit, "seconds": report["seconds"],
                                "embedded": report["embedded"], "files_changed": report["added"] + report["changed"]
                                + report["deleted"]})
                print(f"  indexed {repo}@{commit[:12]} ({number}/{len(commits)}): {report['seconds']:.0f} s, "
                      f"{report['embedded']} texts needed vectors, {report.get('model_embedded', 0)} of them "
                      "new to the vector cache", file=sys.stderr, flush=True)
            snapshots[(repo, commit)] = snapshot
    return snapshots, indexed


def gold_symbols(item: Item, snapshot: Snapshot, base: Settings) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
    """The item's gold symbols under the names the index gives them today, and the (file,
    qualified name) of every row in its gold files.

    Gold names come from the parser at mining time; when a later parser names the same
    definition differently (a JavaScript function assigned to `proto.handle` became
    `proto.handle.next` rather than `next`), the row that spans exactly the gold symbol's
    pre-fix lines is the same definition, and takes its place. A gold symbol with neither a
    row of its name nor one of its lines stays, and counts as not indexed."""
    rows = snapshot.symbol_rows(base, item.gold_paths, ["file_path", "qualified_name", "start_line", "end_line"])
    return resolve_gold(item, rows), {(r["file_path"], r["qualified_name"]) for r in rows}


def resolve_gold(item: Item, rows: list[dict]) -> list[tuple[str, str]]:
    """`gold_symbols`' renaming, given the rows of the gold files."""
    known = {(r["file_path"], r["qualified_name"]) for r in rows}
    by_lines = {(r["file_path"], r["start_line"], r["end_line"]): r["qualified_name"] for r in rows}
    resolved = []
    for gold in item.gold:
        for symbol in gold.symbols:
            name = symbol.qualified_name
            if (gold.path, name) not in known:
                name = by_lines.get((gold.path, symbol.start_line, symbol.end_line), name)
            resolved.append((gold.path, name))
    return list(dict.fromkeys(resolved))


def result_files(result) -> list[str]:
    """The paths of a search result's own file ranking (`files`)."""
    return [f.path for f in result.files]


def _row(item: Item, snapshot: Snapshot, files: list[str], symbols: list[tuple[str, str]], ms: float,
         gold: tuple[list[tuple[str, str]], set[tuple[str, str]]]) -> dict:
    indexed = {f.path for f in snapshot.files}
    gold_names, known_symbols = gold
    return {
        "id": item.id, "repo": item.repo, "language": item.language, "split": item.split,
        "query_type": item.query_type, "names_gold_file": names_file(item.query, item.gold_paths),
        **score_item(item.gold_paths, gold_names, files, symbols),
        "gold_files_not_indexed": [p for p in item.gold_paths if p not in indexed],
        "gold_symbols_not_indexed": [f"{p}::{n}" for p, n in gold_names if (p, n) not in known_symbols],
        "top_files": files[:K], "top_symbols": [f"{p}::{n}" for p, n in symbols[:K]], "ms": round(ms, 1),
    }


def search_all(run: Run, items: list[Item], snapshots: dict[tuple[str, str], Snapshot], configs: list[str],
               baselines: bool = True, rankers: dict[str, LinearRanker] | None = None,
               ) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """Every item under every config, plus the baselines; a config that can't run says why.
    `rankers` (Retriever's `file_ranker`, `symbol_ranker`) replace the shipped models (see ablate.py)."""
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    chosen_baselines = BASELINES if baselines else {}
    results: dict[str, list[dict]] = {**{b: [] for b in chosen_baselines}, **{c: [] for c in configs}}
    unavailable: dict[str, str] = {}
    by_snapshot: dict[tuple[str, str], list[Item]] = defaultdict(list)
    for item in items:
        by_snapshot[(item.repo, item.base_commit)].append(item)
    done = 0
    for repo in dict.fromkeys(i.repo for i in items):
        texts = run.store.texts(repo)
        baseline = WholeFileBM25(texts)
        try:
            for key in [k for k in by_snapshot if k[0] == repo]:
                snapshot = snapshots[key]
                retriever = Retriever(snapshot.settings(run.base), **(rankers or {}))
                for item in by_snapshot[key]:
                    gold = gold_symbols(item, snapshot, run.base)
                    for name, code_only in chosen_baselines.items():
                        started = time.perf_counter()
                        files = baseline.rank_files(snapshot, item.query, code_only)
                        symbols = rank_symbols(snapshot, run.base, files, item.query)
                        ms = (time.perf_counter() - started) * 1000
                        results[name].append(_row(item, snapshot, files, symbols, ms, gold))
                    for name in configs:
                        if name in unavailable:
                            continue
                        config = dict(CONFIGS[name])
                        options = SearchOptions(**{**SEARCH_DEFAULTS, **config})
                        result = retriever.search(snapshot.index_name, item.query, options)
                        if options.rerank and not result.rerank.get("used"):
                            unavailable[name] = str(result.rerank.get("reason") or "no reason given")
                            continue
                        hits = [(h.file_path, h.qualified_name) for h in result.results]
                        files = result_files(result)
                        results[name].append(_row(item, snapshot, files, hits,
                                                  result.timings_ms.get("total", 0.0), gold))
                    done += 1
                    if done % 25 == 0:
                        print(f"  searched {done}/{len(items)}", file=sys.stderr, flush=True)
        finally:
            texts.close()
    for name in unavailable:
        results.pop(name, None)
    return results, unavailable


def main_commit() -> str:
    """The CodeQA commit being measured (with a mark when the work tree has changes)."""
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return head + ("+changes" if dirty else "")


def report(results: dict[str, list[dict]], unavailable: dict[str, str], items: list[Item], indexed: list[dict],
           search_seconds: float, commit: str) -> str:
    rows = next(iter(results.values()))
    counts = defaultdict(int)
    for item in items:
        counts[(item.split, item.language)] += 1
    lines = [f"Realistic eval: {len(items)} items from {len({i.repo for i in items})} repositories; CodeQA at "
             f"{commit}; k = {K}; the baselines ({', '.join(BASELINES)}) ran in the same run. Definitions: "
             "eval/README.md.", ""]
    lines.append(markdown_table(results, standard_groups(rows)))
    lines += [""] + [f"- {name}: unavailable ({reason})" for name, reason in unavailable.items()]
    not_indexed = sum(bool(r["gold_files_not_indexed"]) for r in rows)
    missing_symbols = sum(len(r["gold_symbols_not_indexed"]) for r in rows)
    lines.append(f"- items with a gold file CodeQA did not index: {not_indexed}; gold symbols without a row of "
                 f"that name: {missing_symbols}")
    for name, config_rows in results.items():
        lines.append(f"- {name}: median search {statistics.median(r['ms'] for r in config_rows):.0f} ms; "
                     f"{statistics.fmean(len(r['top_files']) for r in config_rows):.1f} files in its top 10 "
                     f"on average")
    if indexed:
        seconds = sum(i["seconds"] for i in indexed)
        lines.append(f"- indexed {len(indexed)} commits in {seconds / 60:.1f} min "
                     f"({sum(i['embedded'] for i in indexed)} texts embedded)")
    lines.append(f"- searching and scoring took {search_seconds / 60:.1f} min")
    return "\n".join(lines) + "\n"


def chosen_rankers(args: argparse.Namespace) -> dict[str, LinearRanker]:
    """The models `--file-model` and `--symbol-model` name, as Retriever's keyword arguments."""
    rankers = {}
    if args.file_model:
        rankers["file_ranker"] = LinearRanker.load(args.file_model)
    if getattr(args, "symbol_model", None):  # the how-it-works eval ranks files only
        rankers["symbol_ranker"] = LinearRanker.load(args.symbol_model, DEFINITION_FEATURES)
    return rankers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["train", "test", "all"], default="all")
    parser.add_argument("--repos", nargs="+", metavar="OWNER/NAME", help="only these repositories")
    parser.add_argument("--languages", nargs="+", metavar="LANGUAGE",
                        help="only items of these languages (the repository's, as in items.jsonl)")
    parser.add_argument("--limit", type=int, help="at most N items per repository (its earliest)")
    parser.add_argument("--quick", action="store_true",
                        help=f"the first {QUICK_LIMIT} items of {', '.join(QUICK_REPOS)}")
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=list(DEFAULT_CONFIGS),
                        help=f"CodeQA configurations (default: {' '.join(DEFAULT_CONFIGS)}); the baselines always run")
    parser.add_argument("--cache", type=Path, help="snapshots, checkouts, texts (default: $CODEQA_EVAL_CACHE "
                                                   "or ~/.cache/codeqa-eval)")
    parser.add_argument("--mirror", type=Path, help="local bare mirrors at DIR/<owner>+<name>/repo")
    parser.add_argument("--no-index", action="store_true", help="fail instead of indexing a missing snapshot")
    parser.add_argument("--index-only", action="store_true", help="build the snapshots, search nothing")
    parser.add_argument("--indexed-only", action="store_true",
                        help="only the items whose snapshot exists (says how many were left out); indexes nothing")
    parser.add_argument("--results", type=Path, help="the markdown table (default: <cache>/results/last-run.md; "
                                                     "eval/realistic/results.md holds the recorded numbers)")
    parser.add_argument("--json", type=Path, help="per-item dump (default: <cache>/results/last-run.json)")
    parser.add_argument("--file-model", type=Path, metavar="JSON",
                        help="search with this file model instead of the shipped one (train_ranker.py --out)")
    parser.add_argument("--symbol-model", type=Path, metavar="JSON", help="likewise the definition model")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    repos, limit = (list(QUICK_REPOS), QUICK_LIMIT) if args.quick else (args.repos, args.limit)
    items = select(load_items(), args.split, repos, limit, args.languages)
    if not items:
        print("error: no item matches", file=sys.stderr)
        return 1
    cache = args.cache or default_cache()
    run = Run(Corpus(cache, args.mirror or default_mirror()), SnapshotStore(cache), Settings.from_env(),
              allow_index=not (args.no_index or args.indexed_only))
    if args.indexed_only:
        indexed_items = [i for i in items if run.store.load(i.repo, i.base_commit) is not None]
        print(f"--indexed-only: {len(items) - len(indexed_items)} of {len(items)} items have no snapshot yet "
              "and are left out", file=sys.stderr)
        items = indexed_items
        if not items:
            print("error: no item has a snapshot", file=sys.stderr)
            return 1
    print(f"{len(items)} items, {len({i.base_commit for i in items})} commits; cache {cache}", file=sys.stderr)
    try:
        snapshots, indexed = ensure_snapshots(run, items)
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.index_only:
        return 0
    started = time.perf_counter()
    results, unavailable = search_all(run, items, snapshots, args.configs, rankers=chosen_rankers(args))
    commit = main_commit()
    text = report(results, unavailable, items, indexed, time.perf_counter() - started, commit)
    print(text)
    markdown = args.results or cache / "results" / "last-run.md"
    dump = args.json or cache / "results" / "last-run.json"
    for path in (markdown, dump):
        path.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(text, encoding="utf-8")
    dump.write_text(json.dumps({"commit": commit, "configs": results, "unavailable": unavailable,
                                "indexed": indexed}, indent=1), encoding="utf-8")
    print(f"table: {markdown}; per-item results: {dump}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
