"""Static embedder vs the shipped int8 MiniLM: texts/s on real definitions, one and two threads.

    python -m bench.static_embed_bench [--package django==5.2.8] [--texts 2000] [--minilm-texts 256]
                                       [--threads 1 2] [--json out.json]

The texts are the indexer's own embedding texts (`embedding_text` of every row, as
bench/embed_bench.py takes them) of a real source tree. `StaticEmbedder` (codeqa-static) is
pure Python + numpy: with two threads the texts are split over a two-thread pool (numpy's row
gathers and sums release the GIL only in part, so this measures what threading buys). The
int8 MiniLM (`get_embedder` with default settings: all-MiniLM-L6-v2 on onnxruntime, 128 tokens)
gets `threads` onnxruntime threads; it is measured on the first `--minilm-texts` texts only
(it is ~50x slower). Reports texts/s (best of 3 runs; MiniLM best of 2) and load time
(construct + first text). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def timed(embed, texts: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        embed(texts)
        best = min(best, time.perf_counter() - started)
    return len(texts) / best


def threaded(embed, threads: int):
    """`embed` over `threads` slices of the texts at once (one thread: `embed` itself)."""
    if threads == 1:
        return embed
    pool = ThreadPoolExecutor(threads)

    def run(texts: list[str]) -> np.ndarray:
        size = -(-len(texts) // threads)
        return np.concatenate(list(pool.map(embed, [texts[i:i + size] for i in range(0, len(texts), size)])))
    return run


def main() -> None:
    from bench.embed_bench import corpus
    from bench.index_bench import fetch_source
    from codeqa.core.config import Settings
    from codeqa.indexing.embeddings import get_embedder
    from codeqa.indexing.static_embedder import StaticEmbedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="django==5.2.8")
    parser.add_argument("--subdir", default="django")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--minilm-texts", type=int, default=256)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--json")
    args = parser.parse_args()
    texts = corpus(fetch_source(args.package) / args.subdir, args.texts)
    chars = int(np.mean([len(t) for t in texts]))
    rows = []

    started = time.perf_counter()
    static = StaticEmbedder()
    static.embed(texts[:1])
    load_s = time.perf_counter() - started
    for threads in args.threads:
        rate = timed(threaded(static.embed, threads), texts, 3)
        rows.append({"embedder": static.model_id, "threads": threads, "texts": len(texts),
                     "texts_per_s": round(rate, 1), "load_s": round(load_s, 3)})
        print(json.dumps(rows[-1]), flush=True)
    for threads in args.threads:
        get_embedder.__globals__["_CACHE"].clear()  # a fresh session per thread count
        started = time.perf_counter()
        minilm = get_embedder(Settings(), threads=threads)
        minilm.embed(texts[:1])
        load = time.perf_counter() - started
        sample = texts[:args.minilm_texts]
        rate = timed(minilm.embed, sample, 2)
        rows.append({"embedder": minilm.model_id, "threads": threads, "texts": len(sample),
                     "texts_per_s": round(rate, 1), "load_s": round(load, 3)})
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{args.package}: definitions' embedding texts, {chars} characters on average\n")
    print("| embedder | threads | texts | texts/s | load s |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['embedder']} | {row['threads']} | {row['texts']} | {row['texts_per_s']} | {row['load_s']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
