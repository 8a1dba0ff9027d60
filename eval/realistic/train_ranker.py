"""Train the file ranker (`models/file_ranker.json`) on the realistic eval's train split.

    python eval/realistic/train_ranker.py                  # every train item with a snapshot
    python eval/realistic/train_ranker.py --limit 8        # each repository's 8 earliest items
    python eval/realistic/train_ranker.py --dry-run        # report, write nothing

Each train item is searched as the product searches (defaults: hybrid, no HyDE, no rerank);
every file with evidence (`result.file_candidates`) is one example, its features as
`ranking.file_features` computes them, labelled 1 when the fix changed it. A logistic
regression (scikit-learn, class-balanced) learns the weights; search applies them as a dot
product, so serving needs no library. The report compares file hit@5 of the learned weights
with the shipped ones, in-sample and leaving each repository out in turn (the honest number:
the test split is never read here). Retrain after any change to the features or to what
produces them (the symbol pool, whole-file BM25).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

import numpy as np

EVAL_ROOT = Path(__file__).resolve().parents[1]
REPO_ROOT = EVAL_ROOT.parent
sys.path.insert(0, str(EVAL_ROOT))
sys.path.insert(0, str(REPO_ROOT))

from config import Settings  # noqa: E402
from ranking import FEATURES, RANKER_FILE, FileRanker  # noqa: E402

from realistic.corpus import CorpusError, default_cache  # noqa: E402
from realistic.items import Item, load_items  # noqa: E402
from realistic.run import SEARCH_DEFAULTS, select  # noqa: E402
from realistic.snapshots import SnapshotStore  # noqa: E402

C = 1.0  # inverse regularisation strength


def examples(items: list[Item], store: SnapshotStore, base: Settings) -> list[dict]:
    """One record per item: its repository, gold files and candidate files with features."""
    from retrieval import Retriever, SearchOptions

    records = []
    retrievers: dict[tuple[str, str], Retriever] = {}
    for number, item in enumerate(items, 1):
        snapshot = store.load(item.repo, item.base_commit)
        if snapshot is None:
            raise CorpusError(f"{item.repo}@{item.base_commit[:12]} has no snapshot: index it with run.py first")
        key = (item.repo, item.base_commit)
        retriever = retrievers.setdefault(key, Retriever(snapshot.settings(base)))
        result = retriever.search(snapshot.index_name, item.query, SearchOptions(**SEARCH_DEFAULTS))
        records.append({"repo": item.repo, "gold": set(item.gold_paths),
                        "files": [(f.path, [f.features[name] for name in FEATURES]) for f in result.file_candidates]})
        if number % 25 == 0:
            print(f"  searched {number}/{len(items)}", file=sys.stderr, flush=True)
    return records


def hit_at_5(records: list[dict], ranker: FileRanker) -> float:
    """Share of items with a gold file among the ranker's top 5 candidates."""
    hits = 0
    for record in records:
        scored = sorted(record["files"], key=lambda f: -ranker.score(dict(zip(FEATURES, f[1]))))
        hits += any(path in record["gold"] for path, _ in scored[:5])
    return hits / max(1, len(records))


def fit(records: list[dict]) -> FileRanker:
    from sklearn.linear_model import LogisticRegression

    rows = [(features, path in record["gold"]) for record in records for path, features in record["files"]]
    x = np.array([features for features, _ in rows], dtype=np.float64)
    y = np.array([label for _, label in rows], dtype=np.int8)
    model = LogisticRegression(C=C, class_weight="balanced", max_iter=2000).fit(x, y)
    return FileRanker(weights={name: round(float(w), 4) for name, w in zip(FEATURES, model.coef_[0])},
                      bias=round(float(model.intercept_[0]), 4))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", nargs="+", metavar="OWNER/NAME", help="only these train repositories")
    parser.add_argument("--limit", type=int, help="each repository's N earliest items")
    parser.add_argument("--cache", type=Path, help="the eval cache (default: $CODEQA_EVAL_CACHE)")
    parser.add_argument("--dry-run", action="store_true", help="report only; leave the model file as it is")
    args = parser.parse_args(argv)
    store = SnapshotStore(args.cache or default_cache())
    items = [i for i in select(load_items(), "train", args.repos, args.limit)
             if store.load(i.repo, i.base_commit) is not None]
    if not items:
        print("error: no train item has a snapshot; index some with run.py --split train --index-only",
              file=sys.stderr)
        return 1
    records = examples(items, store, Settings.from_env())
    shipped = FileRanker.load()
    learned = fit(records)
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_repo[record["repo"]].append(record)
    held_out = {repo: (hit_at_5(group, shipped),
                       hit_at_5(group, fit([r for r in records if r["repo"] != repo])))
                for repo, group in sorted(by_repo.items())}
    print(f"{len(records)} train items from {len(by_repo)} repositories; file hit@5 shipped → learned")
    print(f"  in-sample: {hit_at_5(records, shipped):.3f} → {hit_at_5(records, learned):.3f}")
    for repo, (before, after) in held_out.items():
        print(f"  {repo} left out ({len(by_repo[repo])}): {before:.3f} → {after:.3f}")
    print("weights: " + ", ".join(f"{name} {weight:+.3f}" for name, weight in learned.weights.items()))
    if args.dry_run:
        return 0
    commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    RANKER_FILE.write_text(json.dumps({
        "about": "Logistic regression over ranking.FEATURES, written by eval/realistic/train_ranker.py",
        "trained_on": {"items": len(records), "repos": sorted(by_repo), "code": commit,
                       "date": date.today().isoformat(), "C": C},
        "weights": learned.weights, "bias": learned.bias}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RANKER_FILE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
