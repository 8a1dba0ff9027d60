"""Train the reranker further, listwise: a changed definition against its file's other definitions.

    python -m training.train_reranker_listwise --init codeqa/search/models/codeqa-reranker/model.onnx \\
        --epochs 3 --lr 3e-5 --out training/data/listwise          # resumes from --out's state.pt
    python -m training.train_reranker_listwise --merge training/data/listwise/epoch-2.pt \\
        --init codeqa/search/models/codeqa-reranker/model.onnx --out training/data/listwise/merged.pt
    python -m training.export_onnx training/data/listwise/merged.pt --reranker --out DIR

The shipped reranker learnt from one hard negative per query, two thirds of an epoch on a CPU.
Search uses it to order the best definitions of one file, so here each step reads, for every
group of the batch (`rerank_groups.py`: a query, one changed definition, up to eight other
definitions of its file), all of the group's pairs and applies cross-entropy over the group's
logits. `search_lists.py`'s lists (`--groups`) carry each definition's score from the
definition model, which is added to its logit, so the loss is over the order search makes. The
start is the shipped int8 file read back (`cross_encoder.from_onnx`); the word
embeddings stay frozen (two thirds of the weights, and what the data is least able to move), so
an epoch's file holds only the rest, in fp16 (11 MB: it fits what a GPU run may send back).

Runs on CUDA (bf16 autocast) when there is one, else on the CPU; needs only torch,
transformers, numpy and onnx (`cross_encoder.py`). After each epoch: the held-back items'
hit@1 and MRR (`rerank_groups.py --validation`, `evaluate_embedder.py`'s measure), that epoch's
weights, and `state.pt` (model, optimiser, schedule) to resume from.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from training.cross_encoder import from_onnx, keep_layers

DATA = Path(__file__).resolve().parent / "data"
GROUP_TOKENS = DATA / "groups.npz"  # rerank_groups.py writes both
VALIDATION_TOKENS = DATA / "validation.npz"
FROZEN = ("bert.embeddings.word_embeddings.weight",)


class PairLists:
    """`rerank_groups.tokenize`'s npz: lists of tokenised (question, document) pairs."""

    def __init__(self, path: Path) -> None:
        import numpy as np

        data = np.load(path)
        self.ids, self.starts, self.lengths = data["ids"], data["starts"], data["lengths"]
        self.questions, self.labels, self.lists = data["questions"], data["labels"], data["lists"]
        # what search adds the logit to (the definition model's score, `search_lists.py`); 0 for groups
        self.offsets = data["offsets"] if "offsets" in data else np.zeros(len(self.starts), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.lists) - 1

    def pairs(self, index: int) -> range:
        return range(int(self.lists[index]), int(self.lists[index + 1]))

    def batch(self, lists: list[int], device: str) -> tuple[dict, list[range]]:
        """The model's inputs for every pair of these lists, padded to the longest, and each
        list's rows in them."""
        import torch

        rows = [pair for index in lists for pair in self.pairs(index)]
        width = int(max(self.lengths[pair] for pair in rows))
        input_ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros_like(input_ids)
        types = torch.zeros_like(input_ids)
        for row, pair in enumerate(rows):
            start, length, question = int(self.starts[pair]), int(self.lengths[pair]), int(self.questions[pair])
            input_ids[row, :length] = torch.from_numpy(self.ids[start:start + length].astype("int64"))
            mask[row, :length] = 1
            types[row, question:length] = 1
        spans, at = [], 0
        for index in lists:
            size = len(self.pairs(index))
            spans.append(range(at, at + size))
            at += size
        inputs = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": types}
        offsets = torch.from_numpy(self.offsets[rows].astype("float32")).to(device)
        return {name: tensor.to(device) for name, tensor in inputs.items()}, spans, offsets


def grouped_logits(model, data: PairLists, lists: list[int], device: str):
    """(len(lists), longest list) logits plus each pair's offset (the order search makes), -inf
    past each list's end."""
    import torch

    inputs, spans, offsets = data.batch(lists, device)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
        flat = model(**inputs).logits.view(-1).float() + offsets
    grouped = torch.full((len(lists), max(len(span) for span in spans)), float("-inf"), device=device)
    for row, span in enumerate(spans):
        grouped[row, : len(span)] = flat[span.start:span.stop]
    return grouped


def validate(model, data: PairLists, device: str, batch_lists: int = 8) -> dict[str, float]:
    """hit@1 and MRR of the first changed definition (ties broken against it), as
    `evaluate_embedder.rank_metrics` measures them."""
    import numpy as np
    import torch

    hits, reciprocal = [], []
    model.eval()
    with torch.no_grad():
        for begin in range(0, len(data), batch_lists):
            lists = list(range(begin, min(begin + batch_lists, len(data))))
            logits = grouped_logits(model, data, lists, device).cpu().numpy()
            for row, index in enumerate(lists):
                changed = data.labels[int(data.lists[index]):int(data.lists[index + 1])]
                scores = logits[row, : len(changed)]
                order = np.lexsort((changed, -scores))
                first = next(rank for rank, pair in enumerate(order, 1) if changed[pair])
                hits.append(float(first == 1))
                reciprocal.append(1.0 / first)
    model.train()
    return {"hit@1": round(float(np.mean(hits)), 4), "mrr": round(float(np.mean(reciprocal)), 4), "items": len(hits)}


def trainable(model) -> dict:
    return {name: tensor for name, tensor in model.state_dict().items() if name not in FROZEN}


def train(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    groups, held_back = PairLists(args.groups), PairLists(args.validation)
    model = from_onnx(args.init)
    if args.keep:
        model = keep_layers(model, args.keep)
    model = model.to(device)
    for name, parameter in model.named_parameters():
        parameter.requires_grad = name not in FROZEN
    steps_per_epoch = len(groups) // args.batch_lists
    total = steps_per_epoch * args.epochs
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr)
    warmup = max(1, total // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (total - s) / max(1, total - warmup)))
    args.out.mkdir(parents=True, exist_ok=True)
    state_file, epoch = args.out / "state.pt", 0
    if state_file.exists():
        state = torch.load(state_file, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        epoch = state["epoch"]
        print(f"resumed after epoch {epoch}", file=sys.stderr)
    else:
        print(json.dumps({"epoch": 0, **validate(model, held_back, device)}), file=sys.stderr, flush=True)
    model.train()
    while epoch < args.epochs:
        order = np.random.default_rng(args.seed + epoch).permutation(len(groups))
        started = time.time()
        for step in range(steps_per_epoch):
            lists = [int(i) for i in order[step * args.batch_lists:(step + 1) * args.batch_lists]]
            logits = grouped_logits(model, groups, lists, device)
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(lists), dtype=torch.long, device=device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            if (step + 1) % args.log_every == 0:
                rate = (step + 1) * args.batch_lists / (time.time() - started)
                print(f"epoch {epoch + 1} step {step + 1}/{steps_per_epoch} loss {loss.item():.4f} {rate:.0f} groups/s",
                      file=sys.stderr, flush=True)
        epoch += 1
        metrics = validate(model, held_back, device)
        print(json.dumps({"epoch": epoch, **metrics, "seconds": round(time.time() - started)}), file=sys.stderr, flush=True)
        weights = {name: tensor.detach().to("cpu", torch.float16) for name, tensor in trainable(model).items()}
        torch.save({"weights": weights, "epoch": epoch, "validation": metrics}, args.out / f"epoch-{epoch}.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(), "epoch": epoch}, state_file.with_suffix(".partial"))
        state_file.with_suffix(".partial").rename(state_file)


def merge(args: argparse.Namespace) -> None:
    """An epoch's weights over the `--init` file's frozen ones, as the checkpoint that
    `export_onnx.py --reranker` reads ({"model": state dict}, fp32)."""
    import torch

    weights = torch.load(args.merge, map_location="cpu", weights_only=False)["weights"]
    layers = {int(name.split(".")[3]) for name in weights if name.startswith("bert.encoder.layer.")}
    model = keep_layers(from_onnx(args.init), sorted(layers))  # the shape; every encoder weight is the epoch's
    state = model.state_dict()
    if unknown := sorted(set(weights) - set(state)):
        raise SystemExit(f"{args.merge} holds weights this model lacks: {unknown[:3]}")
    state.update({name: tensor.float() for name, tensor in weights.items()})
    model.load_state_dict(state)
    torch.save({"model": model.state_dict()}, args.out)
    print(f"{args.merge} over {args.init} -> {args.out}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", type=Path, required=True, help="the int8 reranker to start from (its ONNX file)")
    parser.add_argument("--groups", type=Path, default=GROUP_TOKENS, help="rerank_groups.py's tokenised groups")
    parser.add_argument("--validation", type=Path, default=VALIDATION_TOKENS, help="the held-back items, tokenised")
    parser.add_argument("--out", type=Path, required=True, help="the run's folder (with --merge: the checkpoint)")
    parser.add_argument("--merge", type=Path, help="an epoch's weights to merge into --init for export")
    parser.add_argument("--keep", type=int, nargs="+", help="only these layers of --init (a smaller student)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-lists", type=int, default=32, help="groups a step")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--log-every", type=int, default=50)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.merge:
        merge(args)
    else:
        train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
