"""Mine (query, changed definition) training pairs from public history, one shard per repository.

    nice -n 10 python -m training.mine_pairs --mirror /work/.mirror --jobs 2   # mine (resumable)
    python -m training.mine_pairs --report                                    # mining.md + pairs

Queries are real: maintainers' fix-commit messages on the first-parent line (newest first from
each repository's pinned anchor in `repos.tsv`), plus issue reports linked to their fixing pull
request where a public benchmark copy has them (SWE-bench Lite/Verified, Multi-SWE-bench).
Everything that decides what a query and a positive are is the realistic eval's own code,
imported, not copied (`eval/realistic/mine.py`: commit-message and diff filters, query
cleaning; `gold.py`: the innermost definitions holding the changed pre-fix lines). So a
training pair means exactly what an eval item means.

On top of the eval's rules this script drops, per item (counts in `mining.md`):
- a query that names an excluded repository, or a duplicate of an earlier query of the repository;
- a fix with more than `MAX_POSITIVES` changed definitions (a sweeping change, not a located fix).
Items whose fix changed only module-level code have no positive: counted, kept out of the pairs.

Hard negatives: up to `NEGATIVES_PER_FILE` other definitions of each gold file at the pre-fix
commit, none holding or held by a positive (a class around a changed method is not wrong).

Each repository's result goes to `shards/<owner>+<name>.jsonl.gz` plus a `.tally.json`
written last: a rerun skips every repository whose tally exists.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time
from collections import Counter, OrderedDict, defaultdict
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent

from codeqa.parsing.treesitter import ParsedFile, parse_source
from eval.realistic.corpus import Corpus, default_cache
from eval.realistic.items import Item
import eval.realistic.mine as eval_mine
from eval.realistic.mine import DATASETS, RepoPlan, Tally, commit_items, mswe_items, swebench_items

from training.sources import Source, check_allowed, excluded_repos, load_sources, names_excluded_repo

SHARDS = HERE / "data" / "shards"
REPORT = HERE / "mining.md"
PAIRS_FILE = HERE / "pairs.jsonl.gz"  # committed: metadata and query text only, no code

MAX_POSITIVES = 12  # changed definitions per fix; more is a sweeping change (see mining.md)
NEGATIVES_PER_FILE = 8

# Issue-report sources per repository: SWE-bench Lite/Verified rows, or a Multi-SWE-bench file
# (those of the copy that hold data; svelte's, clap's and vue's are only Git LFS pointers there).
SWEBENCH_REPOS = frozenset({"sympy/sympy", "pydata/xarray", "sphinx-doc/sphinx", "pylint-dev/pylint",
                            "astropy/astropy"})
MSWE_FILES = {
    "facebook/zstd": "c/facebook__zstd_dataset.jsonl",
    "nlohmann/json": "cpp/nlohmann__json_dataset.jsonl",
    "catchorg/Catch2": "cpp/catchorg__Catch2_dataset.jsonl",
    "yhirose/cpp-httplib": "cpp/yhirose__cpp-httplib_dataset.jsonl",
    "alibaba/fastjson2": "java/alibaba__fastjson2_dataset.jsonl",
    "apache/dubbo": "java/apache__dubbo_dataset.jsonl",
    "mockito/mockito": "java/mockito__mockito_dataset.jsonl",
    "axios/axios": "js/axios__axios_dataset.jsonl",
    "expressjs/express": "js/expressjs__express_dataset.jsonl",
    "rayon-rs/rayon": "rust/rayon-rs__rayon_dataset.jsonl",
    "serde-rs/serde": "rust/serde-rs__serde_dataset.jsonl",
    "sharkdp/bat": "rust/sharkdp__bat_dataset.jsonl",
    "sharkdp/fd": "rust/sharkdp__fd_dataset.jsonl",
    "tokio-rs/bytes": "rust/tokio-rs__bytes_dataset.jsonl",
    "tokio-rs/tracing": "rust/tokio-rs__tracing_dataset.jsonl",
}


def plan_for(source: Source) -> RepoPlan:
    return RepoPlan(source.repo, source.language, "train", swebench=source.repo in SWEBENCH_REPOS,
                    mswe=MSWE_FILES.get(source.repo, ""), commits=source.max_commit_items, anchor=source.anchor)


class CachingCorpus(Corpus):
    """The eval's corpus, remembering the last files read: the gold step and the negatives
    step read the same pre-fix files one after the other."""

    def show(self, repo: str, commit: str, path: str) -> bytes | None:
        key = (repo, commit, path)
        if key not in _SHOWN:
            _SHOWN[key] = super().show(repo, commit, path)
            while len(_SHOWN) > CACHED_FILES:
                _SHOWN.popitem(last=False)
        return _SHOWN[key]


CACHED_FILES = 32
_SHOWN: OrderedDict = OrderedDict()
_PARSED: OrderedDict = OrderedDict()


def parse_cached(source: str, language: str, path: str = "") -> ParsedFile:
    """`parse_source`, remembering the last files parsed (half of mining time is parsing)."""
    key = (hash(source), len(source), language, path)
    if key not in _PARSED:
        _PARSED[key] = parse_source(source, language, path)
        while len(_PARSED) > CACHED_FILES:
            _PARSED.popitem(last=False)
    return _PARSED[key]


# The eval's gold step parses through the cache too (its module-level name; no behaviour change).
eval_mine.parse_source = parse_cached


def shard_path(repo: str) -> Path:
    return SHARDS / f"{repo.replace('/', '+')}.jsonl.gz"


def tally_path(repo: str) -> Path:
    return SHARDS / f"{repo.replace('/', '+')}.tally.json"


# --- Pairs -------------------------------------------------------------------------------------

def _overlaps_as_nesting(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """One range holds the other (a class and its method, a function and its closure)."""
    return (a[0] <= b[0] and b[1] <= a[1]) or (b[0] <= a[0] and a[1] <= b[1])


def hard_negatives(definitions: list[tuple[str, str, int, int]], positives: list[tuple[str, str, int, int]],
                   rng: random.Random, limit: int = NEGATIVES_PER_FILE) -> list[tuple[str, str, int, int]]:
    """Other definitions of the file that neither hold nor sit inside a positive."""
    ranges = [(p[2], p[3]) for p in positives]
    candidates = [d for d in definitions
                  if not any(_overlaps_as_nesting((d[2], d[3]), r) for r in ranges)]
    return sorted(rng.sample(candidates, min(limit, len(candidates))), key=lambda d: d[2])


def item_record(corpus: Corpus, item: Item) -> dict:
    """The item as a training record: query, and per gold file its positives and hard negatives."""
    rng = random.Random(item.id)
    files = []
    for gold in item.gold:
        positives = [(s.qualified_name, s.kind, s.start_line, s.end_line) for s in gold.symbols]
        negatives: list[tuple[str, str, int, int]] = []
        if positives:
            data = corpus.show(item.repo, item.base_commit, gold.path)
            text = (data or b"").decode("utf-8", "replace")
            parsed = parse_cached(text, gold.language, gold.path)
            definitions = [(d.qualified_name, d.kind, d.start_line, d.end_line) for d in parsed.definitions]
            negatives = hard_negatives(definitions, positives, rng)
        files.append({"path": gold.path, "language": gold.language,
                      "positives": [list(p) for p in positives], "negatives": [list(n) for n in negatives]})
    return {"id": item.id, "repo": item.repo, "query_type": item.query_type, "source": item.source,
            "base_commit": item.base_commit, "fix_ref": item.fix_ref, "query": item.query,
            "query_truncated": item.query_truncated, "names_symbol": names_symbol(item), "files": files}


def names_symbol(item: Item) -> bool:
    """Whether the query spells a changed definition's own name (measured, not dropped)."""
    query = item.query
    names = {s.qualified_name.rsplit(".", 1)[-1].rsplit("::", 1)[-1] for g in item.gold for s in g.symbols}
    return any(len(n) >= 4 and n in query for n in names)


def item_problem(item: Item, seen_queries: set[str], excluded: dict[str, str]) -> str | None:
    """Why an eval-valid item makes no training pairs (None when it does); the rules beyond the eval's."""
    if names_excluded_repo(item.query, excluded):
        return "names an excluded repository"
    if item.query in seen_queries:
        return "duplicate query"
    positives = sum(len(g.symbols) for g in item.gold)
    if positives > MAX_POSITIVES:
        return f"more than {MAX_POSITIVES} changed definitions"
    if positives == 0:
        return "no changed definition (module-level change only)"
    return None


def mine_repo(source: Source, mirror: Path | None, cache: Path) -> dict:
    """Mine one repository into its shard; returns its tally (also written beside the shard)."""
    check_allowed([source.repo])
    excluded = excluded_repos()
    corpus = CachingCorpus(cache, mirror)
    plan = plan_for(source)
    started = time.time()
    tally = Tally()
    corpus.fetch(plan.repo, [plan.anchor])
    issues: list[Item] = []
    if plan.swebench:
        issues += swebench_items(corpus, plan, tally)
    if plan.mswe:
        issues += mswe_items(corpus, plan, tally)
    taken = {(i.base_commit, tuple(i.gold_paths)) for i in issues}
    items = issues + commit_items(corpus, plan, taken, tally)
    records, seen_queries = [], set()
    for item in items:
        problem = item_problem(item, seen_queries, excluded)
        seen_queries.add(item.query)
        if problem is not None:
            tally.items[problem] += 1
            continue
        records.append(item_record(corpus, item))
    SHARDS.mkdir(parents=True, exist_ok=True)
    partial = shard_path(plan.repo).with_suffix(".partial")
    with gzip.open(partial, "wt", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    partial.rename(shard_path(plan.repo))
    summary = {"repo": plan.repo, "language": plan.language, "anchor": plan.anchor, "items": len(records),
               "pairs": sum(len(f["positives"]) for r in records for f in r["files"]),
               "issue_items": sum(r["query_type"] == "issue" for r in records),
               "dropped_items": dict(tally.items), "dropped_files": dict(tally.files),
               "seconds": round(time.time() - started, 1)}
    tally_path(plan.repo).write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def _mine_one(args: tuple[Source, Path | None, Path]) -> dict:
    if tally_path(args[0].repo).exists():  # another run finished it meanwhile
        return json.loads(tally_path(args[0].repo).read_text(encoding="utf-8"))
    try:
        return mine_repo(*args)
    except Exception as exc:  # one broken repository must not stop the others; reported, no tally
        return {"repo": args[0].repo, "error": f"{type(exc).__name__}: {exc}"[:500]}


# --- Report ------------------------------------------------------------------------------------

def load_shards() -> tuple[list[dict], list[dict]]:
    """Every finished repository's tally and records, in `repos.tsv` order."""
    tallies, records = [], []
    for source in load_sources():
        if not tally_path(source.repo).exists():
            continue
        tallies.append(json.loads(tally_path(source.repo).read_text(encoding="utf-8")))
        with gzip.open(shard_path(source.repo), "rt", encoding="utf-8") as shard:
            records += [json.loads(line) for line in shard if line.strip()]
    return tallies, records


def _cell(counter: Counter | dict) -> str:
    return "; ".join(f"{k}: {v}" for k, v in sorted(counter.items(), key=lambda kv: -kv[1]) if v) or "-"


def mining_report(tallies: list[dict], records: list[dict]) -> str:
    """Counts per language and repository, and every drop by rule (the basis of the filters)."""
    pair_language: Counter = Counter()
    item_language: Counter = Counter()
    repos_by_language: dict[str, set] = defaultdict(set)
    names = Counter()
    for r in records:
        for f in r["files"]:
            pair_language[f["language"]] += len(f["positives"])
            repos_by_language[f["language"]].add(r["repo"])
        item_language[r["files"][0]["language"]] += 1
        names[r["names_symbol"]] += 1
    drops_by_language: dict[str, Counter] = defaultdict(Counter)
    all_drops: Counter = Counter()
    file_drops: Counter = Counter()
    for t in tallies:
        drops_by_language[t["language"]].update(t["dropped_items"])
        all_drops.update(t["dropped_items"])
        file_drops.update(t["dropped_files"])
    total_pairs = sum(pair_language.values())
    lines = ["# Training pairs: what was mined and what was dropped", "",
             "Written by `training/mine_pairs.py --report`; see training/README.md.", "",
             f"- repositories: {len(tallies)}; items (queries): {len(records)} "
             f"({sum(r['query_type'] == 'issue' for r in records)} issue reports, "
             f"{sum(r['query_type'] == 'commit' for r in records)} commit messages); "
             f"pairs (query, changed definition): {total_pairs}",
             f"- hard negatives (same-file definitions): "
             f"{sum(len(f['negatives']) for r in records for f in r['files'])}",
             f"- queries that spell a changed definition's name: {names[True]} of {len(records)} (kept, flagged "
             "`names_symbol`)", "",
             "## Pairs per language (of the changed file)", "",
             "| language | repos | items (first gold file) | pairs |", "|---|---|---|---|"]
    for language, n in sorted(pair_language.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {language} | {len(repos_by_language[language])} | {item_language[language]} | {n} |")
    buckets = Counter(_bucket(sum(len(f["positives"]) for f in r["files"])) for r in records)
    buckets[f"> {MAX_POSITIVES} (dropped)"] = all_drops_of(tallies, f"more than {MAX_POSITIVES} changed definitions")
    lines += ["", "## Changed definitions per fix (items)", "", "| positives | items |", "|---|---|"]
    lines += [f"| {b} | {buckets[b]} |" for b in ("1", "2", "3-4", "5-8", "9-12", f"> {MAX_POSITIVES} (dropped)")]
    lines += ["", "## Dropped candidates, by rule (all repositories)", "", "| rule | dropped |", "|---|---|"]
    lines += [f"| {rule} | {n} |" for rule, n in all_drops.most_common()]
    lines += ["", "## Dropped gold files, by reason", "", "| reason | files |", "|---|---|"]
    lines += [f"| {rule} | {n} |" for rule, n in file_drops.most_common()]
    rules = [rule for rule, _ in all_drops.most_common()]
    lines += ["", "## Dropped candidates, by rule and repository language", "",
              "| language | " + " | ".join(rules) + " |", "|---" * (len(rules) + 1) + "|"]
    for language in sorted(drops_by_language):
        lines.append(f"| {language} | " + " | ".join(str(drops_by_language[language][r]) for r in rules) + " |")
    lines += ["", "## Per repository", "",
              "| repository | language | anchor | issue items | commit items | pairs | seconds |",
              "|---|---|---|---|---|---|---|"]
    for t in tallies:
        lines.append(f"| {t['repo']} | {t['language']} | {t['anchor'][:12]} | {t['issue_items']} | "
                     f"{t['items'] - t['issue_items']} | {t['pairs']} | {t['seconds']} |")
    return "\n".join(lines) + "\n"


def _bucket(positives: int) -> str:
    return "1" if positives == 1 else "2" if positives == 2 else "3-4" if positives <= 4 else \
        "5-8" if positives <= 8 else "9-12"


def all_drops_of(tallies: list[dict], rule: str) -> int:
    return sum(t["dropped_items"].get(rule, 0) for t in tallies)


def write_pairs(records: list[dict]) -> None:
    """All shards as one gzipped JSONL file, the trainer's input."""
    PAIRS_FILE.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(PAIRS_FILE, "wt", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


# --- Running -----------------------------------------------------------------------------------

def round_robin(sources: list[Source]) -> list[Source]:
    """One repository of each language in turn, so that a run cut short still covers every language."""
    by_language: dict[str, list[Source]] = defaultdict(list)
    for source in sources:
        by_language[source.language].append(source)
    queues = list(by_language.values())
    return [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=None, help="local bare mirrors at DIR/<owner>+<name>/repo")
    parser.add_argument("--cache", type=Path, default=None, help="clone cache when there is no --mirror")
    parser.add_argument("--repos", nargs="+", help="only these repositories (still from repos.tsv)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="only write mining.md and the pairs file")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sources = [s for s in load_sources() if not args.repos or s.repo in args.repos]
    check_allowed([s.repo for s in sources])
    if not args.report:
        corpus_args = (args.mirror, args.cache or default_cache())
        for dataset in {d.repo for d in DATASETS.values()}:
            Corpus(corpus_args[1], corpus_args[0]).fetch(dataset, [d.commit for d in DATASETS.values()
                                                                   if d.repo == dataset])
        todo = round_robin([s for s in sources if not tally_path(s.repo).exists()])
        print(f"{len(sources) - len(todo)} repositories already mined, {len(todo)} to go", file=sys.stderr)
        failed = 0
        with Pool(max(1, args.jobs)) as pool:
            for done, summary in enumerate(pool.imap_unordered(_mine_one, [(s, *corpus_args) for s in todo]), 1):
                if "error" in summary:
                    failed += 1
                    print(f"[{done}/{len(todo)}] {summary['repo']}: FAILED {summary['error']}", file=sys.stderr)
                else:
                    print(f"[{done}/{len(todo)}] {summary['repo']}: {summary['items']} items "
                          f"({summary['issue_items']} issue), {summary['pairs']} pairs, {summary['seconds']} s",
                          file=sys.stderr, flush=True)
        if failed:
            print(f"{failed} repositories failed; rerun to retry them", file=sys.stderr)
    tallies, records = load_shards()
    REPORT.write_text(mining_report(tallies, records), encoding="utf-8")
    write_pairs(records)
    print(f"{len(tallies)} repositories, {len(records)} items, "
          f"{sum(len(f['positives']) for r in records for f in r['files'])} pairs -> {PAIRS_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
