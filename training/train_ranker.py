"""Train the ranking models on the realistic eval's train split: the file ranker
(`models/file_ranker.json`) and the definition ranker (`models/symbol_ranker.json`).

    python -m training.train_ranker                      # both, every train item with a snapshot
    python -m training.train_ranker --model definitions  # one of them
    python -m training.train_ranker --limit 8            # each repository's 8 earliest items
    python -m training.train_ranker --dry-run            # report, write nothing

Each train item is searched as the product searches (defaults: hybrid, no HyDE, no rerank).
Files: every file with evidence (`result.file_candidates`) is one example, its features as
`ranking.file_features` computes them, labelled 1 when the fix changed it; an item is one group,
scored by whether a gold file is among its top 5. Definitions: every definition the search
weighed in a listed file the fix changed (`FileHit.definitions`), labelled 1 when the fix changed
it; a file is one group, scored by whether a gold definition is among its top SYMBOLS_PER_FILE
(what the file shows). A logistic regression (scikit-learn, class-balanced) learns the weights;
search applies them as a dot product, so serving needs no library. The report compares the
learned weights with the shipped ones, in-sample and leaving each repository out in turn (the
honest number: the test split is never read here). Retrain after any change to the features or
to what produces them; the file model first, since it decides which files' definitions are weighed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

from codeqa.core.config import Settings
from codeqa.search.ranking import (DEFINITION_FEATURES, FEATURES, RANKER_FILE, SYMBOL_RANKER_FILE, SYMBOLS_PER_FILE,
                     LinearRanker)

from eval.realistic.corpus import CorpusError, default_cache
from eval.realistic.items import Item, load_items
from eval.realistic.run import SEARCH_DEFAULTS, gold_symbols, select
from eval.realistic.snapshots import SnapshotStore

C = 1.0  # inverse regularisation strength


@dataclass(frozen=True)
class Model:
    """One of the models: where it lives, what it weighs, and how many of a group's best count."""

    path: Path
    features: tuple[str, ...]
    top: int


MODELS = {"files": Model(RANKER_FILE, FEATURES, 5),
          "definitions": Model(SYMBOL_RANKER_FILE, DEFINITION_FEATURES, SYMBOLS_PER_FILE)}


def examples(items: list[Item], store: SnapshotStore, base: Settings) -> dict[str, list[dict]]:
    """Groups of labelled candidates per model: {"repo", "candidates": [(label, features)]}."""
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    groups: dict[str, list[dict]] = {name: [] for name in MODELS}
    retrievers: dict[tuple[str, str], Retriever] = {}
    for number, item in enumerate(items, 1):
        snapshot = store.load(item.repo, item.base_commit)
        if snapshot is None:
            raise CorpusError(f"{item.repo}@{item.base_commit[:12]} has no snapshot: index it with run.py first")
        key = (item.repo, item.base_commit)
        retriever = retrievers.setdefault(key, Retriever(snapshot.settings(base), structure=True))
        result = retriever.search(snapshot.index_name, item.query, SearchOptions(**SEARCH_DEFAULTS))
        gold_files, gold_names = set(item.gold_paths), set(gold_symbols(item, snapshot, base)[0])
        groups["files"].append({"repo": item.repo, "candidates": [
            (f.path in gold_files, [f.features[name] for name in FEATURES]) for f in result.file_candidates]})
        for file in result.files:
            labels = [(d.hit.file_path, d.hit.qualified_name) in gold_names for d in file.definitions]
            if any(labels):
                groups["definitions"].append({"repo": item.repo, "candidates": [
                    (label, [d.features[name] for name in DEFINITION_FEATURES])
                    for label, d in zip(labels, file.definitions)]})
        if number % 25 == 0:
            print(f"  searched {number}/{len(items)}", file=sys.stderr, flush=True)
    return groups


def howto_groups(cache: Path, base: Settings) -> list[dict]:
    """File-model groups from the how-it-works eval's train items that have a snapshot in
    `cache` (its run.py builds them): every candidate file, labelled 1 when the passage named it."""
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions
    from eval.howto.items import load_items as load_howto_items

    store = SnapshotStore(cache)
    groups: list[dict] = []
    retrievers: dict[tuple[str, str], Retriever] = {}
    for item in load_howto_items():
        snapshot = store.load(item.repo, item.commit) if item.split == "train" else None
        if snapshot is None:
            continue
        retriever = retrievers.setdefault((item.repo, item.commit),
                                          Retriever(snapshot.settings(base), structure=True))
        result = retriever.search(snapshot.index_name, item.query, SearchOptions(**SEARCH_DEFAULTS))
        gold = set(item.gold_paths)
        groups.append({"repo": item.repo, "kind": "howto", "candidates": [
            (f.path in gold, [f.features[name] for name in FEATURES]) for f in result.file_candidates
            if f.path != item.doc_path]})  # the question's own document: not in a user's repository
    return groups


def hit_at(groups: list[dict], ranker: LinearRanker, model: Model) -> float:
    """Share of groups with a positive among the ranker's top `model.top` candidates."""
    hits = 0
    for group in groups:
        scored = sorted(group["candidates"], key=lambda c: -ranker.score(dict(zip(model.features, c[1]))))
        hits += any(label for label, _ in scored[:model.top])
    return hits / max(1, len(groups))


def fit(groups: list[dict], model: Model, removed: frozenset[str] = frozenset()) -> LinearRanker:
    """A logistic regression on every candidate of `groups`; the `removed` features are left out
    (their columns dropped, so the others are fit without them, not beside a zero)."""
    from sklearn.linear_model import LogisticRegression

    keep = [i for i, name in enumerate(model.features) if name not in removed]
    rows = [candidate for group in groups for candidate in group["candidates"]]
    x = np.array([[features[i] for i in keep] for _, features in rows], dtype=np.float64).reshape(len(rows), len(keep))
    y = np.array([label for label, _ in rows], dtype=np.int8)
    # Each kind of question weighs the same in all: a how-it-works question has ~3x the
    # candidates of a bug report, so unweighted, the 123 how-it-works groups outweighed the 36
    # reports and the Flask eval lost (file@5 0.862 → 0.828; weighed by kind: 0.862).
    sizes = Counter(group.get("kind", "bug report") for group in groups for _ in group["candidates"])
    weights = np.array([len(rows) / (len(sizes) * sizes[group.get("kind", "bug report")])
                        for group in groups for _ in group["candidates"]], dtype=np.float64)
    learned = LogisticRegression(C=C, class_weight="balanced", max_iter=3000).fit(x, y, sample_weight=weights)
    return LinearRanker(weights={model.features[i]: round(float(w), 4) for i, w in zip(keep, learned.coef_[0])},
                        bias=round(float(learned.intercept_[0]), 4))


def train(name: str, groups: list[dict], dry_run: bool, items: int, removed: frozenset[str] = frozenset(),
          out: Path | None = None) -> None:
    """Fit one model (without the `removed` features), report it beside the shipped one, and
    write it (into the folder `out` instead of the shipped file, when given) unless `dry_run`."""
    model = MODELS[name]
    shipped = LinearRanker.load(model.path, model.features) if model.path.exists() else LinearRanker({})
    learned = fit(groups, model, removed)
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for group in groups:
        by_repo[group["repo"]].append(group)
    print(f"{name}: {len(groups)} groups from {len(by_repo)} repositories; hit@{model.top} shipped → learned")
    print(f"  in-sample: {hit_at(groups, shipped, model):.3f} → {hit_at(groups, learned, model):.3f}")
    left_out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for repo, held in sorted(by_repo.items()):
        rest = fit([g for g in groups if g["repo"] != repo], model, removed)
        before, after = hit_at(held, shipped, model), hit_at(held, rest, model)
        left_out[held[0].get("kind", "bug report")] += [(before, after)] * len(held)
        print(f"  {repo} left out ({len(held)}): {before:.3f} → {after:.3f}")
    for kind, pairs in sorted(left_out.items()):
        print(f"  {kind}, each repository left out in turn ({len(pairs)} groups): "
              f"{sum(b for b, _ in pairs) / len(pairs):.3f} → {sum(a for _, a in pairs) / len(pairs):.3f}")
    print("  weights: " + ", ".join(f"{feature} {weight:+.3f}" for feature, weight in learned.weights.items()))
    if dry_run:
        return
    commit = subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    path = out / model.path.name if out else model.path
    path.write_text(json.dumps({
        "about": f"Logistic regression over the {name} features of ranking.py, written by "
                 "training/train_ranker.py",
        "trained_on": {"items": items, "groups": len(groups), "repos": sorted(by_repo), "code": commit,
                       "date": date.today().isoformat(), "C": C, **({"without": sorted(removed)} if removed else {})},
        "weights": learned.weights, "bias": learned.bias}, indent=1) + "\n", encoding="utf-8")
    print(f"  wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), nargs="+", default=sorted(MODELS),
                        help="which models to train (default: both)")
    parser.add_argument("--repos", nargs="+", metavar="OWNER/NAME", help="only these train repositories")
    parser.add_argument("--limit", type=int, help="each repository's N earliest items")
    parser.add_argument("--cache", type=Path, help="the eval cache (default: $CODEQA_EVAL_CACHE)")
    parser.add_argument("--howto-cache", type=Path, metavar="DIR",
                        help="also train the file model on the how-it-works eval's train items indexed in DIR "
                             "(eval/howto/run.py --split train --cache DIR)")
    parser.add_argument("--howto-only", action="store_true",
                        help="train the file model on the how-it-works groups alone (with --howto-cache): "
                             "the model CODEQA_FILE_MODEL=auto gives how questions")
    parser.add_argument("--without", nargs="+", default=[], metavar="FEATURE",
                        help="fit without these features (an ablation); unknown names are an error")
    parser.add_argument("--out", type=Path, metavar="DIR", help="write the models into DIR, not over the shipped ones")
    parser.add_argument("--dry-run", action="store_true", help="report only; leave the model files as they are")
    args = parser.parse_args(argv)
    if args.howto_only and (not args.howto_cache or args.model != ["files"]):
        parser.error("--howto-only trains the file model (--model files) on --howto-cache's groups")
    store = SnapshotStore(args.cache or default_cache())
    items = [] if args.howto_only else [i for i in select(load_items(), "train", args.repos, args.limit)
                                        if store.load(i.repo, i.base_commit) is not None]
    if not items and not args.howto_only:
        print("error: no train item has a snapshot; index some with run.py --split train --index-only",
              file=sys.stderr)
        return 1
    groups = examples(items, store, Settings.from_env())
    if args.howto_cache:
        groups["files"] += howto_groups(args.howto_cache, Settings.from_env())
    unknown = set(args.without) - set(FEATURES) - set(DEFINITION_FEATURES)
    if unknown:
        parser.error(f"unknown features: {', '.join(sorted(unknown))}")
    for name in args.model:
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
        train(name, groups[name], args.dry_run, len(items), frozenset(args.without), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
