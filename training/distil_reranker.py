"""Distil the shipped reranker into a smaller cross-encoder: fewer layers, the same job.

    nice -n 5 python -m training.distil_reranker --keep 0 2 4     # resumes from its checkpoints
    python -m training.export_onnx training/data/distil-checkpoints/step-426.pt --reranker --out DIR

The rerank stage's cost is the model's (~11.5 ms a pair on one core for six layers), so a model
of half the layers reads the same candidates in about half the time. The teacher is the int8
ONNX file the product ships: its torch checkpoint is not kept, so `cross_encoder.from_onnx` reads the
weights back from that file (each int8 matrix times its per-channel scale) and checks that the
rebuilt model scores as the file does. The student starts as the teacher with only the `--keep`
layers (every other one by default). Its targets are the teacher's logits for each triple's
positive and hard negative, computed once by search's own `CrossEncoderReranker` (each pair
alone, as search runs it) and cached beside the triples; the loss is the squared error on each
logit plus that on the (positive − negative) margin, which is what reordering a file's
definitions depends on. `train_embedder.py` builds the triples; the held-back repositories of
`training.sources.validation_repos()` are never trained on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from training.cross_encoder import from_onnx, keep_layers
from training.train_embedder import DATA, TRIPLES, add_fit_arguments, fit, latest_checkpoint, training_triples
from training.train_reranker import load_model, pair_logits, run_on_triples

CHECKPOINTS = DATA / "distil-checkpoints"
TEACHER_LOGITS = DATA / "teacher-logits.jsonl"
MAX_TEACHER_GAP = 0.25  # logits: the rebuilt torch teacher's vs the int8 file's (dynamic quantisation's noise is ~0.05)


def teacher_logits(triples: list[dict], cache: Path, model: str) -> list[tuple[float, float]]:
    """The teacher's (positive, negative) logits of every triple, as search scores them; the
    cache (one line per triple, keyed by its query and texts) makes a rerun score only new ones."""
    from codeqa.search.rerank import CrossEncoderReranker

    def key(triple: dict) -> str:
        return json.dumps([triple["query"], triple["positive"], triple["negative"]])

    known: dict[str, tuple[float, float]] = {}
    if cache.exists():
        for line in cache.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            known[record["key"]] = (record["positive"], record["negative"])
    reranker = CrossEncoderReranker(model, threads=2)
    with cache.open("a", encoding="utf-8") as out:
        for number, triple in enumerate(triples, 1):
            if key(triple) in known:
                continue
            positive, negative = reranker.score(triple["query"], [triple["positive"], triple["negative"]])
            known[key(triple)] = (positive, negative)
            out.write(json.dumps({"key": key(triple), "positive": positive, "negative": negative}) + "\n")
            if number % 500 == 0:
                out.flush()
                print(f"teacher: {number}/{len(triples)} triples scored", file=sys.stderr, flush=True)
    return [known[key(triple)] for triple in triples]


def check_teacher(model, tokenizer, model_file: Path, triples: list[dict], expected: list[tuple[float, float]]) -> None:
    """Refuse a rebuilt teacher whose logits do not follow the file's (a MatMul mapped wrongly)."""
    import numpy as np
    import torch

    sample = triples[:32]
    with torch.no_grad():
        rebuilt = pair_logits(model, tokenizer, sample).view(-1).numpy()
    gap = float(np.abs(rebuilt - np.asarray(expected[: len(sample)]).reshape(-1)).max())
    print(f"rebuilt teacher vs {model_file.name}: largest logit gap {gap:.3f}", file=sys.stderr)
    if gap > MAX_TEACHER_GAP:
        raise SystemExit(f"the teacher rebuilt from {model_file} does not score as it does (a gap of {gap:.2f})")


def train(args: argparse.Namespace) -> None:
    import torch

    from codeqa.search.rerank import reranker_model

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    triples = training_triples(args.triples, with_negative=True)
    targets = teacher_logits(triples, args.teacher_logits, args.teacher)
    for triple, logits in zip(triples, targets, strict=True):
        triple["teacher"] = logits
    tokenizer, model = load_model()  # resumed, the checkpoint holds every weight: the base is only the shape
    if latest_checkpoint(args.checkpoints) is None:
        teacher_file = reranker_model(args.teacher).checked_path()
        model = from_onnx(teacher_file)
        model.eval()
        check_teacher(model, tokenizer, teacher_file, triples, targets)
    model = keep_layers(model, args.keep)

    def loss_of(batch: list[dict]):
        logits = pair_logits(model, tokenizer, batch)
        target = torch.tensor([triple["teacher"] for triple in batch])
        mse = torch.nn.functional.mse_loss
        return mse(logits, target) + mse(logits[:, 0] - logits[:, 1], target[:, 0] - target[:, 1])

    fit(model, triples, args, loss_of, "queries")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=Path, default=TRIPLES, help="train_embedder.py's texts")
    parser.add_argument("--teacher", default="codeqa-reranker",
                        help="the cross-encoder to imitate (as CODEQA_RERANK_MODEL)")
    parser.add_argument("--teacher-logits", type=Path, default=TEACHER_LOGITS, help="the teacher's scores, cached")
    parser.add_argument("--keep", type=int, nargs="+", default=[0, 2, 4], help="the teacher's layers the student keeps")
    add_fit_arguments(parser, CHECKPOINTS, batch_size=16, lr=8e-5, save_every=50)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_on_triples(build_parser(), train, argv)


if __name__ == "__main__":
    sys.exit(main())
