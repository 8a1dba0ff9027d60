"""How-it-works eval: index each repository at its pinned commit, search with CodeQA, score
files beside whole-file BM25 from the same run.

    python -m eval.howto.run --split test                  # every test repository, smallest first
    python -m eval.howto.run --repos cli/cli --limit 5
    python -m eval.howto.run --split test --max-repos 6    # the 6 smallest test repositories (bytes to index)
    python -m eval.howto.run --split test --indexed-only   # search the snapshots there are, index nothing

Indexing and snapshots are the realistic eval's (eval/realistic/snapshots.py): one snapshot per
(repository, commit) in the cache (`$CODEQA_EVAL_CACHE`), so a rerun only searches. CodeQA's
file ranking is the search's own `files` list (as in eval/realistic/run.py); the baselines are
eval/realistic/baseline.py's `bm25-files` (whole files, docs included) and `bm25-code` (source
languages only). Metrics over files: NDCG@10 (binary relevance, every gold file relevant) and
hit@5. The table goes to stdout and `--results` (eval/howto/results.md holds the recorded run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from codeqa.core.config import Settings
from codeqa.parsing import languages

from eval.howto.items import Item, load_items
from eval.realistic.baseline import BASELINES, WholeFileBM25
from eval.realistic.corpus import Corpus, CorpusError, default_cache, default_mirror, git
from eval.realistic.run import SEARCH_DEFAULTS, chosen_rankers, main_commit, result_files
from eval.realistic.snapshots import IndexedFile, Snapshot, SnapshotStore

K = 10
METRICS = ("ndcg@10", "hit@5", "mrr@10")


def ndcg(gold: list[str], ranked: list[str], k: int = K) -> float:
    """Binary-relevance NDCG@k over files: every gold file has gain 1."""
    wanted = set(gold)
    dcg = sum(1.0 / math.log2(rank + 2) for rank, path in enumerate(ranked[:k]) if path in wanted)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(wanted), k)))
    return dcg / ideal if ideal else 0.0


def score(gold: list[str], ranked: list[str]) -> dict:
    first = next((rank for rank, path in enumerate(ranked[:K], 1) if path in set(gold)), None)
    return {"ndcg@10": ndcg(gold, ranked), "hit@5": float(first is not None and first <= 5),
            "mrr@10": 1.0 / first if first else 0.0, "first_gold_rank": first}


def source_bytes(corpus: Corpus, repo: str, commit: str) -> int:
    """Bytes of the files CodeQA would index at a commit, by their names (code, docs and text
    formats under the file-size limit): the indexing work, and the order repositories run in."""
    listing = git(corpus.git_dir(repo), "ls-tree", "-r", "-l", commit)
    total = 0
    for line in listing.splitlines():
        meta, _, path = line.partition("\t")
        size = meta.split()[3]
        if size.isdigit() and int(size) < 1_000_000 and languages.language_for(path):
            total += int(size)
    return total


def ensure_snapshot(corpus: Corpus, store: SnapshotStore, base: Settings, repo: str, commit: str) -> Snapshot:
    snapshot = store.load(repo, commit)
    if snapshot is None:
        corpus.fetch(repo, [commit])
        root = corpus.checkout(repo, commit)
        started = time.perf_counter()
        snapshot = store.index(repo, commit, root, base)
        print(f"  indexed {repo}@{commit[:12]}: {time.perf_counter() - started:.0f} s, "
              f"{snapshot.report.get('embedded', 0)} texts embedded", file=sys.stderr, flush=True)
    return snapshot


def walked_snapshot(corpus: Corpus, store: SnapshotStore, base: Settings, repo: str, commit: str) -> Snapshot:
    """The files CodeQA would index at a commit, without indexing them: enough for the baselines."""
    from codeqa.parsing.repo_files import walk_repo

    root = corpus.checkout(repo, commit)
    sources = walk_repo(root, base.max_file_bytes).read_all()
    texts = store.texts(repo)
    try:
        texts.add(sources)
    finally:
        texts.close()
    return Snapshot(repo, commit, Path(), [IndexedFile(f.path, f.sha256, f.language) for f in sources], {})


def ranked_without_source(item: Item, files: list[str]) -> list[str]:
    """A ranking without the document the question was taken from: that passage, word for word,
    is in it, so any search finds it first (the user's question is not in the repository)."""
    return [path for path in files if path != item.doc_path]


def run_baselines(store: SnapshotStore, snapshot: Snapshot, items: list[Item]) -> dict[str, list[dict]]:
    """The baselines alone on one repository's items (`--bm25-only`)."""
    rows: dict[str, list[dict]] = {b: [] for b in BASELINES}
    texts = store.texts(snapshot.repo)
    try:
        baseline = WholeFileBM25(texts)
        for item in items:
            common = {"id": item.id, "repo": item.repo, "language": item.language, "split": item.split,
                      "source": item.source, "kind": item.kind, "gold": item.gold_paths}
            for name, code_only in BASELINES.items():
                files = ranked_without_source(item, baseline.rank_files(snapshot, item.query, code_only))
                rows[name].append({**common, **score(item.gold_paths, files), "top_files": files[:K]})
    finally:
        texts.close()
    return rows


def run_repo(store: SnapshotStore, base: Settings, snapshot: Snapshot, items: list[Item],
             rankers: dict | None = None) -> dict[str, list[dict]]:
    """CodeQA and the baselines on one repository's items (`rankers` replace the shipped models)."""
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    rows: dict[str, list[dict]] = {"codeqa": [], **{b: [] for b in BASELINES}}
    indexed = {f.path for f in snapshot.files}
    texts = store.texts(snapshot.repo)
    try:
        baseline = WholeFileBM25(texts)
        retriever = Retriever(snapshot.settings(base), **(rankers or {}))
        for item in items:
            common = {"id": item.id, "repo": item.repo, "language": item.language, "split": item.split,
                      "source": item.source, "kind": item.kind, "gold": item.gold_paths,
                      "gold_not_indexed": [p for p in item.gold_paths if p not in indexed]}
            for name, code_only in BASELINES.items():
                files = ranked_without_source(item, baseline.rank_files(snapshot, item.query, code_only))
                rows[name].append({**common, **score(item.gold_paths, files), "top_files": files[:K]})
            started = time.perf_counter()
            result = retriever.search(snapshot.index_name, item.query, SearchOptions(**{**SEARCH_DEFAULTS, "k": K + 1}))
            files = ranked_without_source(item, result_files(result))[:K]
            rows["codeqa"].append({**common, **score(item.gold_paths, files), "top_files": files[:K],
                                   "ms": round((time.perf_counter() - started) * 1000, 1),
                                   "file_model": result.file_model})
    finally:
        texts.close()
    return rows


def table(results: dict[str, list[dict]]) -> str:
    """One row per group: n, then each config's NDCG@10 and hit@5."""
    configs = list(results)
    rows = results[configs[0]]
    groups: list[tuple[str, callable]] = [("**all**", lambda r: True)]
    groups += [(f"language · {v}", lambda r, v=v: r["language"] == v) for v in sorted({r["language"] for r in rows})]
    groups += [(f"source · {v}", lambda r, v=v: r["source"] == v) for v in sorted({r["source"] for r in rows})]
    groups += [(f"kind · {v}", lambda r, v=v: r["kind"] == v) for v in sorted({r["kind"] for r in rows})]
    groups += [(f"repo · {v}", lambda r, v=v: r["repo"] == v) for v in dict.fromkeys(r["repo"] for r in rows)]
    header = ["group", "n"] + [f"{c} {m}" for c in configs for m in ("NDCG@10", "hit@5")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, keep in groups:
        n = sum(keep(r) for r in rows)
        if not n:
            continue
        cells = [label, str(n)]
        for config in configs:
            chosen = [r for r in results[config] if keep(r)]
            cells += [f"{statistics.fmean(r['ndcg@10'] for r in chosen):.3f}",
                      f"{statistics.fmean(r['hit@5'] for r in chosen):.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["train", "test", "all"], default="test")
    parser.add_argument("--repos", nargs="+", metavar="OWNER/NAME")
    parser.add_argument("--max-repos", type=int, help="only the N smallest repositories of the selection "
                                                        "(by the bytes CodeQA would index)")
    parser.add_argument("--limit", type=int, help="at most N items per repository")
    parser.add_argument("--bm25-only", action="store_true",
                        help="the baselines alone, on the files CodeQA would index (no index, no CodeQA): "
                             "how hard each repository is for plain BM25, in minutes")
    parser.add_argument("--indexed-only", action="store_true",
                        help="only repositories that already have a snapshot at their commit: search, index nothing")
    parser.add_argument("--cache", type=Path, help="default: $CODEQA_EVAL_CACHE or ~/.cache/codeqa-eval")
    parser.add_argument("--mirror", type=Path, help="local bare mirrors at DIR/<owner>+<name>/repo")
    parser.add_argument("--results", type=Path, help="markdown table (default: <cache>/results/howto-last-run.md)")
    parser.add_argument("--json", type=Path, help="per-item rows (default: <cache>/results/howto-last-run.json)")
    parser.add_argument("--file-model", type=Path, metavar="JSON",
                        help="search with this file model instead of the shipped one (train_ranker.py --out)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    items = [i for i in load_items() if (args.split == "all" or i.split == args.split)
             and (not args.repos or i.repo in args.repos)]
    if not items:
        print("error: no item matches", file=sys.stderr)
        return 1
    cache = args.cache or default_cache()
    corpus, store, base = Corpus(cache, args.mirror or default_mirror()), SnapshotStore(cache), Settings.from_env()
    by_repo: dict[tuple[str, str], list[Item]] = defaultdict(list)
    for item in items:
        by_repo[(item.repo, item.commit)].append(item)
    try:
        order = sorted(by_repo, key=lambda key: source_bytes(corpus, *key))
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.indexed_only:
        order = [key for key in order if store.load(*key) is not None]
    if args.max_repos:
        order = order[:args.max_repos]
    if not order:
        print("error: no repository to run", file=sys.stderr)
        return 1
    results: dict[str, list[dict]] = defaultdict(list)
    markdown = args.results or cache / "results" / "howto-last-run.md"
    dump = args.json or cache / "results" / "howto-last-run.json"
    for path in (markdown, dump):
        path.parent.mkdir(parents=True, exist_ok=True)
    for repo, commit in order:
        chosen = by_repo[(repo, commit)][:args.limit] if args.limit else by_repo[(repo, commit)]
        try:
            if args.bm25_only:
                found = run_baselines(store, walked_snapshot(corpus, store, base, repo, commit), chosen)
            else:
                found = run_repo(store, base, ensure_snapshot(corpus, store, base, repo, commit), chosen,
                                 chosen_rankers(args))
        except CorpusError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        for config, rows in found.items():
            results[config] += rows
        first = next(iter(results.values()))
        text = (f"How-it-works eval: {len(first)} items from {len({r['repo'] for r in first})} repositories "
                f"({args.split} split); CodeQA at {main_commit()}; k = {K}; "
                + ("baselines only (--bm25-only). " if args.bm25_only else "the baselines ran in the same run. ")
                + "Definitions: eval/howto/README.md.\n\n" + table(results) + "\n")
        if not args.bm25_only:
            text += (f"\n- items with a gold file CodeQA did not index: "
                     f"{sum(bool(r['gold_not_indexed']) for r in results['codeqa'])}\n"
                     f"- CodeQA median search: {statistics.median(r['ms'] for r in results['codeqa']):.0f} ms\n"
                     f"- the file model each question got: " + ", ".join(
                         f"{name} {count}" for name, count in
                         Counter(r.get("file_model", "?") for r in results["codeqa"]).most_common()) + "\n")
        markdown.write_text(text, encoding="utf-8")  # after each repository: a cut run keeps what it did
        dump.write_text(json.dumps(results, indent=1), encoding="utf-8")
        print(f"{repo}: {len(chosen)} items searched", file=sys.stderr, flush=True)
    print(text)
    print(f"table: {markdown}; per-item rows: {dump}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
