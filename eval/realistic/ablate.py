"""Ablation of the learned ranking: each group of features removed, both models refit, the test split searched.

    python -m eval.realistic.ablate --results /tmp/ablation.md      # every group: about 10 minutes
    python -m eval.realistic.ablate --groups graph role
    python -m eval.realistic.ablate --train-cache DIR --config codeqa   # train snapshots elsewhere; no rerank

Zeroing a feature's weight would leave the other weights tuned to its presence, so each row
refits both models (`train_ranker.fit`, on the train split's searches with the shipped models)
without its group's features. "all features" is the same refit with nothing removed: the row
the others compare with. "shipped" is the search as served; the shipped file model was fit on
fewer train items (see its `trained_on`), so it differs from "all features". The stages that
are search options (no definition ranker, one search mode, report pieces) are configs of run.py.
Reads the snapshots only (like `run.py --no-index`): the test items that have one in the cache
are searched, with the default search (`codeqa+rerank`) unless `--config` says otherwise; the
test split is never used to fit.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


from codeqa.core.config import Settings

from eval.realistic.corpus import Corpus, CorpusError, default_cache, default_mirror
from eval.realistic.items import load_items
from eval.realistic.metrics import markdown_table, standard_groups
from eval.realistic.run import CONFIGS, Run, ensure_snapshots, main_commit, search_all, select
from eval.realistic.snapshots import SnapshotStore
from training.train_ranker import MODELS, examples, fit

# name → (what it is, file features removed, definition features removed)
FEATURE_GROUPS: dict[str, tuple[str, frozenset[str], frozenset[str]]] = {
    "graph": ("the references of the pool's strongest rows: files that use them or are used by them, "
              "definitions that are or call them",
              frozenset({"uses_strong", "used_by_strong"}), frozenset({"strong", "calls_strong"})),
    "role": ("a file's role: test (asked about or not), example, benchmark, docs, generated, vendored",
             frozenset({"test", "test_asked", "non_source", "prose_asked"}), frozenset()),
    "structure": ("the repository's structure: module entry files, the evidence inside a module, the question "
                  "naming a module or folder, PageRank in the reference graph (search/structure.py)",
                  frozenset({"entry", "root_entry", "hub", "name_asked", "folder_asked", "central"}), frozenset()),
    "whole-file-bm25": ("the whole-file BM25 rank and score", frozenset({"bm25_rr", "bm25_rel"}), frozenset()),
    "file-evidence": ("all file evidence but its best rows and role: whole-file BM25, graph, rows in the pool, "
                      "own file row, names", frozenset({"bm25_rr", "bm25_rel", "uses_strong", "used_by_strong",
                                                       "file_row", "exact", "sym_rows"}), frozenset()),
    "definition-text": ("a definition's BM25 within its file and its name's match with the question",
                        frozenset(), frozenset({"bm25_rel", "bm25_rr", "name_terms", "named"})),
    "definition-vector": ("a definition's cosine to the question (value, gap to its file's best, rank)",
                          frozenset(), frozenset({"cos", "cos_gap", "cos_rr"})),
    "definition-shape": ("a definition's size, kind and nesting: lines, class-like, own share, module code, uses",
                         frozenset(), frozenset({"lines", "container", "own_share", "container_own", "module",
                                                 "used"})),
    "path-match": ("the question uses the words of a file's name (search/signals/path_match.py)",
                   frozenset({"stem_asked"}), frozenset()),
    "shims": ("a compatibility shim's file: compat.py, polyfills, legacy/ (search/signals/shims.py)",
              frozenset({"shim"}), frozenset()),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", nargs="+", choices=sorted(FEATURE_GROUPS), default=list(FEATURE_GROUPS),
                        help="feature groups to remove, one row each (default: all)")
    parser.add_argument("--cache", type=Path, help="the eval cache (default: $CODEQA_EVAL_CACHE)")
    parser.add_argument("--train-cache", type=Path, metavar="DIR",
                        help="where the train split's snapshots are (default: the eval cache)")
    parser.add_argument("--config", choices=sorted(CONFIGS), default="codeqa+rerank",
                        help="the search each row runs (default: codeqa+rerank, the product's default)")
    parser.add_argument("--results", type=Path, help="also write the markdown table here")
    args = parser.parse_args(argv)
    cache = args.cache or default_cache()
    store = SnapshotStore(cache)
    run = Run(Corpus(cache, default_mirror()), store, Settings.from_env(), allow_index=False)
    train_store = SnapshotStore(args.train_cache) if args.train_cache else store
    train = [i for i in select(load_items(), "train", None, None) if train_store.load(i.repo, i.base_commit)]
    test = [i for i in select(load_items(), "test", None, None) if store.load(i.repo, i.base_commit)]
    try:
        snapshots, _ = ensure_snapshots(run, test)
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not train:
        print("error: no train item has a snapshot; index them with run.py --split train --index-only",
              file=sys.stderr)
        return 1
    started = time.perf_counter()
    print(f"fitting on {len(train)} train items", file=sys.stderr)
    fitted = examples(train, train_store, run.base)
    results, _ = search_all(run, test, snapshots, [args.config])
    results["shipped"] = results.pop(args.config)
    for label, removed in [("all features", (frozenset(), frozenset())),
                           *((f"without {name}", FEATURE_GROUPS[name][1:]) for name in args.groups)]:
        rankers = {"file_ranker": fit(fitted["files"], MODELS["files"], removed[0]),
                   "symbol_ranker": fit(fitted["definitions"], MODELS["definitions"], removed[1])}
        print(f"searching the test split: {label}", file=sys.stderr, flush=True)
        results[label] = search_all(run, test, snapshots, [args.config], baselines=False,
                                    rankers=rankers)[0][args.config]
    text = "\n".join([
        f"Ablation: {len(test)} test items, both models refit on {len(train)} train items for each row; "
        f"search {args.config}; CodeQA at {main_commit()}.", "",
        *(f"- without {name}: {FEATURE_GROUPS[name][0]}" for name in args.groups), "",
        markdown_table(results, standard_groups(next(iter(results.values())))),
        f"- took {(time.perf_counter() - started) / 60:.1f} min"]) + "\n"
    print(text)
    if args.results:
        args.results.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
