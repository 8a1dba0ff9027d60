"""Measure static embedders on the held-back repositories, beside BM25 and the transformers.

    python -m training.evaluate_static --static distill-base --static contrastive
    python -m training.evaluate_static --static contrastive --no-transformers --split dev

Items are `static_data.py items` rows of `sources.validation_repos()` (never trained on; `--split
dev` takes train_static.py's dev repositories instead). Two tasks per item:

- **file**: rank the fix's changed definitions among its gold files' definitions (the changed
  ones and up to 8 others per file, as mined; `evaluate_embedder.py`'s task): hit@1 and MRR of
  the first changed one. Items whose candidates are all changed are left out.
- **repo**: rank them among every candidate of every item of the same repository (a pool of a
  few hundred to a few thousand definitions, across the repository's mined commits). Another
  item's copy of a definition the item itself holds (same path and qualified name, another
  commit) is left out of its pool, so no near-duplicate of a gold definition counts as wrong.
  MRR of the first changed one and R@10 (the share of the changed ones in the top 10).

Scorers: BM25 (the realistic eval's, identifier-aware tokens), the int8 ONNX transformers as
the product runs them (`base`: all-MiniLM-L6-v2, `matcher`: codeqa-matcher, 128 tokens), static
model folders (`--static NAME` under data/static/models, or a path), and vectors computed
elsewhere (`--vectors FILE.npz` with `texts` and `vectors`, e.g. model2vec's own distillation in
its own virtualenv: `training/model2vec_baseline.py`). Transformer vectors are cached under
data/static/cache/, so a rerun embeds only what is new. Reported per language (of the item's
first gold file), per query kind, and overall.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np

from training.static_data import STATIC
from training.train_static import MODELS, load_items

CACHE = STATIC / "cache"
Embed = Callable[[list[str]], np.ndarray]


def header(text: str) -> str:
    """A definition's path and kind + qualified name (the first two lines of its embedded text)."""
    return "\n".join(text.split("\n", 2)[:2])


def repo_pools(items: list[dict]) -> list[tuple[list[str], list[bool]]]:
    """Per item: its candidates plus every other candidate of its repository whose header none of
    its own candidates has (deduplicated by text), and which are changed."""
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        by_repo[item["repo"]].append(item)
    pools = []
    for item in items:
        own = {header(c) for c in item["candidates"]}
        texts, changed, seen = list(item["candidates"]), list(item["changed"]), set(item["candidates"])
        for other in by_repo[item["repo"]]:
            if other is item:
                continue
            for candidate in other["candidates"]:
                if candidate not in seen and header(candidate) not in own:
                    seen.add(candidate)
                    texts.append(candidate)
                    changed.append(False)
        pools.append((texts, changed))
    return pools


def first_rank(scores: np.ndarray, changed: list[bool]) -> tuple[np.ndarray, int]:
    """Order best first (ties against the changed ones) and the 1-based rank of the first changed one."""
    order = np.lexsort((np.asarray(changed), -scores))
    flags = np.asarray(changed)[order]
    return flags, int(np.argmax(flags)) + 1


def cached_embed(name: str, embed: Embed) -> Embed:
    """`embed` with its vectors kept in data/static/cache/<name>.npz (by text sha1)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.npz"
    store: dict[str, np.ndarray] = {}
    if path.exists():
        data = np.load(path)
        store = dict(zip(data["keys"].tolist(), data["vectors"]))

    def run(texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in store))
        by_key = dict(zip(keys, texts))
        for start in range(0, len(missing), 2000):  # saved as it goes: a killed run resumes
            chunk = missing[start:start + 2000]
            started = time.time()
            store.update(zip(chunk, embed([by_key[k] for k in chunk])))
            np.savez(path, keys=np.array(list(store)), vectors=np.stack(list(store.values())))
            print(f"{name}: {start + len(chunk)}/{len(missing)} new texts ({len(chunk) / (time.time() - started):.1f}/s)",
                  file=sys.stderr, flush=True)
        return np.stack([store[k] for k in keys])
    return run


def vector_scores(embed: Embed, items: list[dict], pools: list[tuple[list[str], list[bool]]]):
    texts = list(dict.fromkeys(t for item, (pool, _) in zip(items, pools) for t in (item["query"], *pool)))
    vectors = embed(texts)
    index = {t: i for i, t in enumerate(texts)}
    file_scores, pool_scores = [], []
    for item, (pool, _) in zip(items, pools):
        query = vectors[index[item["query"]]]
        pool_vectors = vectors[[index[t] for t in pool]]
        scores = pool_vectors @ query
        pool_scores.append(scores)
        file_scores.append(scores[:len(item["candidates"])])
    return file_scores, pool_scores


def bm25_scores_of(items: list[dict], pools: list[tuple[list[str], list[bool]]]):
    from eval.realistic.baseline import bm25_scores, tokens

    token_cache: dict[str, list[str]] = {}

    def toks(text: str) -> list[str]:
        if text not in token_cache:
            token_cache[text] = tokens(text)
        return token_cache[text]

    file_scores, pool_scores = [], []
    for item, (pool, _) in zip(items, pools):
        query = toks(item["query"])
        if not query:
            pool_scores.append(np.zeros(len(pool)))
            file_scores.append(np.zeros(len(item["candidates"])))
            continue
        file_scores.append(np.asarray(bm25_scores([toks(c) for c in item["candidates"]], query)))
        pool_scores.append(np.asarray(bm25_scores([toks(c) for c in pool], query)))
    return file_scores, pool_scores


def minmax(scores: np.ndarray) -> np.ndarray:
    low, high = float(np.min(scores)), float(np.max(scores))
    return (scores - low) / (high - low) if high > low else np.zeros_like(scores, dtype=float)


def fused(first, second, weight: float):
    """Per item, `weight` x the min-max normalised first scores + the rest x the second's."""
    return [weight * minmax(a) + (1 - weight) * minmax(b) for a, b in zip(first, second)]


def metrics(items, pools, file_scores, pool_scores) -> dict[str, dict[str, list[float]]]:
    """group -> metric -> per-item values."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for item, (pool, changed), fs, ps in zip(items, pools, file_scores, pool_scores):
        groups = ("all", item["language"], f"({item['kind']})")
        if not all(item["changed"]):
            _, rank = first_rank(fs, item["changed"])
            for g in groups:
                out[g]["file hit@1"].append(float(rank == 1))
                out[g]["file MRR"].append(1.0 / rank)
        flags, rank = first_rank(ps, changed)
        for g in groups:
            out[g]["repo MRR"].append(1.0 / rank)
            out[g]["repo R@10"].append(float(flags[:10].sum()) / float(flags.sum()))
    return out


def table(results: dict[str, dict], metric_names: list[str]) -> str:
    names = list(results)
    first = results[names[0]]
    groups = sorted(first, key=lambda g: (g != "all", g.startswith("("), g))
    lines = []
    for metric in metric_names:
        lines.append(f"\n**{metric}**\n")
        lines.append("| group | n | " + " | ".join(names) + " |")
        lines.append("|---|---:|" + "---:|" * len(names))
        for group in groups:
            values = [np.mean(results[n][group][metric]) if results[n][group][metric] else float("nan") for n in names]
            best = max(values)
            cells = [f"**{v:.3f}**" if v == best else f"{v:.3f}" for v in values]
            lines.append(f"| {group} | {len(first[group][metric])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", action="append", default=[], help="a static model folder (name or path)")
    parser.add_argument("--vectors", action="append", default=[], type=Path, help="precomputed vectors (.npz)")
    parser.add_argument("--no-transformers", action="store_true", help="leave the ONNX transformers out")
    parser.add_argument("--no-bm25", action="store_true")
    parser.add_argument("--split", choices=("validation", "dev"), default="validation")
    parser.add_argument("--fuse", type=float, default=0.0,
                        help="also each vector scorer fused with BM25: this weight x BM25's min-max normalised "
                             "scores + the rest x the vectors' (per item)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--metrics", default="file MRR,file hit@1,repo MRR,repo R@10")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    items = load_items(args.split)
    pools = repo_pools(items)
    print(f"{len(items)} items of {len({i['repo'] for i in items})} {args.split} repositories; "
          f"{sum(len(i['candidates']) for i in items)} candidates; repo pools of "
          f"{int(np.median([len(p) for p, _ in pools]))} (median)", flush=True)
    results: dict[str, dict] = {}
    scores: dict[str, tuple] = {}
    if not args.no_bm25 or args.fuse:
        scores["BM25"] = bm25_scores_of(items, pools)
    if not args.no_transformers:
        from codeqa.indexing.embeddings import LocalEmbedder, base_model, matcher_model

        for name, model in (("MiniLM int8", base_model()), ("matcher int8", matcher_model())):
            embedder = LocalEmbedder(threads=args.threads, model=model)
            embed = cached_embed(model.model_id.replace(":", "_"), lambda texts, e=embedder: np.asarray(e.embed(texts)))
            scores[name] = vector_scores(embed, items, pools)
    for path in args.vectors:
        data = np.load(path)
        store = dict(zip(data["keys"].tolist(), data["vectors"]))
        embed = lambda texts, s=store: np.stack([s[hashlib.sha1(t.encode()).hexdigest()] for t in texts])  # noqa: E731
        scores[path.stem] = vector_scores(embed, items, pools)
    for name in args.static:
        from codeqa.indexing.static_embedder import StaticEmbedder, StaticFiles

        directory = Path(name) if "/" in name else MODELS / name
        embedder = StaticEmbedder(StaticFiles(directory))
        scores[directory.name] = vector_scores(embedder.embed, items, pools)
    for name, (file_scores, pool_scores) in scores.items():
        if name != "BM25" or not args.no_bm25:
            results[name] = metrics(items, pools, file_scores, pool_scores)
    if args.fuse:
        for name, (file_scores, pool_scores) in scores.items():
            if name != "BM25":
                bm25_file, bm25_pool = scores["BM25"]
                results[f"BM25+{name}"] = metrics(items, pools, fused(bm25_file, file_scores, args.fuse),
                                                  fused(bm25_pool, pool_scores, args.fuse))
    print(table(results, args.metrics.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
