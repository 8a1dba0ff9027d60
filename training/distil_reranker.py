"""Distil the shipped reranker into a smaller cross-encoder: fewer layers, the same job.

    nice -n 5 python -m training.distil_reranker --keep 0 2 4     # resumes from its checkpoints
    python -m training.export_onnx training/data/distil-checkpoints/step-426.pt --reranker --out DIR

The rerank stage's cost is the model's (~11.5 ms a pair on one core for six layers), so a model
of half the layers reads the same candidates in about half the time. The teacher is the int8
ONNX file the product ships: its torch checkpoint is not kept, so `teacher_from_onnx` reads the
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

from training.train_embedder import DATA, TRIPLES, add_fit_arguments, fit, latest_checkpoint, training_triples
from training.train_reranker import load_model, pair_logits, run_on_triples

CHECKPOINTS = DATA / "distil-checkpoints"
TEACHER_LOGITS = DATA / "teacher-logits.jsonl"
MATMULS_PER_LAYER = ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense", "intermediate.dense", "output.dense")
MAX_TEACHER_GAP = 0.25  # logits: the rebuilt torch teacher's vs the int8 file's (dynamic quantisation's noise is ~0.05)


def _dequantized(initializers: dict, name: str):
    import numpy as np
    from onnx import numpy_helper

    def array(suffix: str):
        return numpy_helper.to_array(initializers[name + suffix]).astype(np.float32)

    return (array("_quantized") - array("_zero_point")) * array("_scale")


def teacher_from_onnx(model_file: Path):
    """The int8 cross-encoder as a torch `BertForSequenceClassification` (fp32, dequantised).

    `quantize_dynamic` keeps the biases and LayerNorms under their torch names and renames each
    encoder MatMul's weight `onnx::MatMul_<n>`, numbered in the order the export traced them:
    per layer query, key, value, attention output, intermediate, output."""
    import onnx
    import torch
    from onnx import numpy_helper


    initializers = {tensor.name: tensor for tensor in onnx.load(str(model_file)).graph.initializer}
    matmuls = sorted({name.removesuffix("_quantized") for name in initializers
                      if name.startswith("onnx::MatMul_") and name.endswith("_quantized")},
                     key=lambda name: int(name.rsplit("_", 1)[1]))
    layers, rest = divmod(len(matmuls), len(MATMULS_PER_LAYER))
    if rest or not layers:
        raise SystemExit(f"{model_file} has {len(matmuls)} quantised MatMuls: not a BERT cross-encoder's")
    model = keep_layers(load_model()[1], list(range(layers)))  # the file's depth (a student's is less)
    state = model.state_dict()
    weights = {name: torch.tensor(numpy_helper.to_array(tensor).astype("float32"))
               for name, tensor in initializers.items() if name in state}
    for table in ("word_embeddings", "token_type_embeddings", "position_embeddings"):
        name = f"bert.embeddings.{table}.weight"
        weights[name] = torch.tensor(_dequantized(initializers, name))
    for number, name in enumerate(matmuls):
        layer, part = divmod(number, len(MATMULS_PER_LAYER))
        weights[f"bert.encoder.layer.{layer}.{MATMULS_PER_LAYER[part]}.weight"] = torch.tensor(
            _dequantized(initializers, name).T.copy())
    for head in ("bert.pooler.dense", "classifier"):
        weights[f"{head}.weight"] = torch.tensor(_dequantized(initializers, f"{head}.weight_Transposed").T.copy())
    if missing := sorted(set(state) - set(weights)):
        raise SystemExit(f"{model_file} lacks {missing[:3]}")
    model.load_state_dict(weights)
    return model


def keep_layers(model, keep: list[int]):
    """The model with only these encoder layers, in this order."""
    import torch

    model.bert.encoder.layer = torch.nn.ModuleList([model.bert.encoder.layer[i] for i in keep])
    model.config.num_hidden_layers = len(keep)
    return model


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
        model = teacher_from_onnx(teacher_file)
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
