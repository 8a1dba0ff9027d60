"""Train CodeQA's static code embedder (`codeqa/indexing/static_embedder.py`); every stage resumable.

    python -m training.static_data items  --jobs 2          # texts (training/static_data.py)
    python -m training.static_data corpus --jobs 2
    python -m training.train_static vocab                   # token counts -> the vocabulary
    python -m training.train_static distill --teacher base  # token vectors from the transformer
    python -m training.train_static featurize --teacher base --texts 40000
    python -m training.train_static tokenlearn --init distill-base --teacher base
    python -m training.train_static contrastive --init tokenlearn-base --out contrastive
    python -m training.train_static export --model contrastive   # -> codeqa/indexing/models/codeqa-static

Every model stage writes a model folder under `data/static/models/<name>/` in the shipped
format (`vectors.npy`, `vocab.txt`), so `training/evaluate_static.py` measures each one with the
product's own inference code (`StaticEmbedder`). The stages:

1. **vocab**: token counts (`parsing.tokens.code_token_list`: identifiers whole and split, as the
   index's full-text columns split them) over the corpus of the TRAIN repositories (definitions and commit
   messages, `static_data.py corpus`). The vocabulary is the transformer's own word pieces that a
   code token can reach (lowercase letters and digits: the fallback for unseen tokens) plus the
   most frequent code tokens seen in at least `--min-repos` repositories, up to `--size`.
2. **distill** (model2vec's recipe, written for this vocabulary): each token's vector is the
   teacher's mean-pooled output for that token alone (`[CLS] token [SEP]`; a code token is fed as
   its parts, `parsehttpresponse` as "parse http response"), PCA to `--dims`, times a SIF weight
   a / (a + p(token)) from the token's corpus frequency.
3. **featurize** + **tokenlearn** (tokenlearn's recipe): the teacher embeds real definitions and
   commit messages; the token vectors (and a per-token weight) are fitted so that a text's mean
   token vector, through a linear map, predicts the teacher's (PCA'd) embedding of it.
4. **contrastive**: (query → changed definition) pairs of the train repositories, in-batch
   negatives plus the same-file hard negatives, cross-entropy over cosines × `--scale`; the
   vectors stay near their start (an L2 pull, `--anchor`). A dev set (one train repository in ten)
   picks the best step; the held-back repositories are never seen.

Checkpoints go to `data/static/checkpoints/<name>/` (newest two kept), so a killed run resumes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from codeqa.indexing.static_embedder import (CONTINUATION, MODEL_DIR, VECTORS_FILE, VOCAB_FILE, StaticEmbedder,
                                             StaticFiles, Vocabulary)
from codeqa.parsing.tokens import code_token_list
from training.sources import check_allowed, validation_repos
from training.static_data import CORPUS, ITEMS, STATIC, read_shards
from training.train_embedder import batches, latest_checkpoint, save_checkpoint

MODELS = STATIC / "models"
CHECKPOINTS = STATIC / "checkpoints"
COUNTS = STATIC / "counts.json.gz"
FEATURES = STATIC / "features"
_PIECE = re.compile(r"(##)?[a-z0-9]+")
DEV_SHARE = 10  # one train repository in this many is the dev set of the contrastive stage


# ---------------------------------------------------------------------------------------------
# data


def train_repos_of(rows: list[dict]) -> set[str]:
    held_back = validation_repos()
    repos = {row["repo"] for row in rows} - held_back
    check_allowed(sorted(repos))
    return repos


def dev_repos(repos: set[str]) -> set[str]:
    """One train repository in `DEV_SHARE` (at least one), in sha1 order of the names."""
    ranked = sorted(repos, key=lambda repo: hashlib.sha1(f"dev:{repo.lower()}".encode()).hexdigest())
    return set(ranked[:max(1, math.ceil(len(ranked) / DEV_SHARE))])


def load_items(split: str) -> list[dict]:
    """`train`, `dev` (train repositories held for choosing steps) or `validation` (the held-back ones)."""
    held_back = validation_repos()
    items = read_shards(ITEMS)
    if split == "validation":
        return [item for item in items if item["repo"] in held_back]
    train = train_repos_of(items)
    dev = dev_repos(train)
    chosen = dev if split == "dev" else train - dev
    return [item for item in items if item["repo"] in chosen]


def corpus_texts() -> list[dict]:
    held_back = validation_repos()
    rows = []
    for path in sorted(CORPUS.glob("*.jsonl.gz")):
        repo = path.name[:-len(".jsonl.gz")].replace("+", "/", 1)
        if repo in held_back:
            raise SystemExit(f"a held-back repository in the corpus: {repo}")
        check_allowed([repo])
        for line in gzip.open(path, "rt", encoding="utf-8"):
            row = json.loads(line)
            row["repo"] = repo
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# model folders


def save_model(name: str, vectors: np.ndarray, words: list[str], meta: dict | None = None) -> Path:
    directory = MODELS / name
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / VECTORS_FILE, vectors.astype(np.float32))
    (directory / VOCAB_FILE).write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    if meta is not None:
        (directory / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return directory


def load_model(name: str) -> tuple[np.ndarray, list[str]]:
    directory = MODELS / name
    vectors = np.load(directory / VECTORS_FILE).astype(np.float32)
    words = (directory / VOCAB_FILE).read_text(encoding="utf-8").split("\n")[:-1]
    return vectors, words


def embedder_of(name: str) -> StaticEmbedder:
    return StaticEmbedder(StaticFiles(MODELS / name))


# ---------------------------------------------------------------------------------------------
# 1. vocabulary


def count_tokens() -> dict:
    """Token counts over the corpus, the repositories each token is seen in, and each code
    token's teacher text (its parts, space-separated)."""
    if COUNTS.exists():
        return json.load(gzip.open(COUNTS, "rt", encoding="utf-8"))
    counts: Counter[str] = Counter()
    repos_of: dict[str, set[str]] = {}
    spelled: dict[str, str] = {}
    word = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
    for number, row in enumerate(corpus_texts(), 1):
        for identifier in word.findall(row["text"]):
            found = code_token_list(identifier)
            if len(found) > 1 and found[0] not in spelled:
                spelled[found[0]] = " ".join(found[1:])
            for token in found:
                counts[token] += 1
                repos_of.setdefault(token, set()).add(row["repo"])
        if number % 50_000 == 0:
            print(f"vocab: {number} texts, {len(counts)} tokens", file=sys.stderr, flush=True)
    result = {"counts": dict(counts), "repos": {t: len(r) for t, r in repos_of.items()}, "spelled": spelled}
    with gzip.open(COUNTS, "wt", encoding="utf-8") as out:
        json.dump(result, out)
    return result


def teacher_vocabulary() -> dict[str, int]:
    from codeqa.indexing.embeddings import TOKENIZER_FILE

    return json.loads(TOKENIZER_FILE.read_text(encoding="utf-8"))["model"]["vocab"]


def build_vocab(args: argparse.Namespace) -> None:
    stats = count_tokens()
    counts, repos = stats["counts"], stats["repos"]
    pieces = [w for w in teacher_vocabulary() if _PIECE.fullmatch(w)]
    piece_set = set(pieces)
    code = [t for t, n in counts.items() if t not in piece_set and n >= args.min_count
            and repos[t] >= args.min_repos and len(t) <= 40 and not (t.isdigit() and len(t) > 4)]
    code.sort(key=lambda t: (-counts[t], t))
    room = max(0, args.size - len(pieces))
    words = pieces + code[:room]
    print(f"vocabulary: {len(pieces)} teacher pieces + {min(room, len(code))} of {len(code)} code tokens "
          f"(count >= {args.min_count}, >= {args.min_repos} repos) = {len(words)}", file=sys.stderr)
    covered = sum(n for t, n in counts.items() if t in set(words))
    print(f"corpus tokens covered whole: {covered / sum(counts.values()):.3f}", file=sys.stderr)
    STATIC.mkdir(parents=True, exist_ok=True)
    (STATIC / "vocab.txt").write_text("".join(f"{w}\n" for w in words), encoding="utf-8")


def vocab_words() -> list[str]:
    return (STATIC / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]


# ---------------------------------------------------------------------------------------------
# the teacher (the int8 ONNX files CodeQA ships, run as the product runs them)


class Teacher:
    def __init__(self, name: str, threads: int, max_tokens: int = 128) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        from codeqa.indexing.embeddings import TOKENIZER_FILE, LocalEmbedder, base_model, matcher_model

        model = {"base": base_model, "matcher": matcher_model}[name]()
        self.texts = LocalEmbedder(batch_size=32, threads=threads, max_tokens=max_tokens, model=model)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(str(model.checked_path()), options,
                                                    providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        self.cls, self.sep = self.tokenizer.token_to_id("[CLS]"), self.tokenizer.token_to_id("[SEP]")

    def embed_ids(self, sequences: list[list[int]], batch: int = 256) -> np.ndarray:
        """Mean-pooled last hidden state (not normalised) of id sequences, padded per batch."""
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        out = np.zeros((len(sequences), 384), dtype=np.float32)
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            width = max(len(sequences[i]) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                ids[r, :len(sequences[i])] = sequences[i]
                mask[r, :len(sequences[i])] = 1
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[:, :, None].astype(np.float32)
            out[rows] = (hidden * weights).sum(1) / weights.sum(1)
        return out

    def token_inputs(self, words: list[str], spelled: dict[str, str]) -> list[list[int]]:
        known = teacher_vocabulary()
        sequences = []
        for word in words:
            if word in known:
                sequences.append([self.cls, known[word], self.sep])
            else:
                sequences.append(self.tokenizer.encode(spelled.get(word, word)).ids[:32])
        return sequences


def pca(matrix: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centre, then project on the top `dims` principal axes (no whitening): (projected, mean, axes)."""
    mean = matrix.mean(0)
    centred = matrix - mean
    values, vectors = np.linalg.eigh(centred.T @ centred / (len(matrix) - 1))
    axes = vectors[:, np.argsort(values)[::-1][:dims]]
    print(f"PCA {matrix.shape[1]} -> {dims}: {values[np.argsort(values)[::-1][:dims]].sum() / values.sum():.3f} "
          "of the variance", file=sys.stderr)
    return centred @ axes, mean, axes


def sif_weights(words: list[str], counts: dict[str, int], coefficient: float) -> np.ndarray:
    """a / (a + p): frequent tokens count less; a token unseen in the corpus gets p of a count of 1."""
    total = sum(counts.values())
    probability = np.array([max(counts.get(w.removeprefix(CONTINUATION), 0), 1) / total for w in words])
    return coefficient / (coefficient + probability)


def distill(args: argparse.Namespace) -> None:
    words = vocab_words()
    stats = count_tokens()
    started = time.time()
    cached = STATIC / f"raw-{args.teacher}.npy"  # the teacher's token outputs, for this vocabulary
    if cached.exists() and len(np.load(cached, mmap_mode="r")) == len(words):
        raw = np.load(cached)
    else:
        teacher = Teacher(args.teacher, args.threads)
        raw = teacher.embed_ids(teacher.token_inputs(words, stats["spelled"]))
        np.save(cached, raw)
    projected, _mean, _axes = pca(raw, args.dims)
    weights = sif_weights(words, stats["counts"], args.sif)
    vectors = projected * weights[:, None]
    name = args.out or f"distill-{args.teacher}"
    save_model(name, vectors, words, {"stage": "distill", "teacher": args.teacher, "dims": args.dims,
                                      "sif": args.sif, "seconds": round(time.time() - started)})
    print(f"{name}: {len(words)} tokens x {args.dims} in {time.time() - started:.0f} s", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# 3. tokenlearn


def feature_texts(count: int, seed: int = 0) -> list[str]:
    """A fixed sample of the corpus: definitions and messages in the corpus's own proportion,
    at most `count`, each repository capped so no one repository dominates."""
    rows = corpus_texts()
    rng = random.Random(seed)
    rng.shuffle(rows)
    per_repo: Counter[str] = Counter()
    cap = max(1, count // max(1, len({r["repo"] for r in rows})) * 2)
    chosen = []
    for row in rows:
        if per_repo[row["repo"]] < cap and row["text"].strip():
            per_repo[row["repo"]] += 1
            chosen.append(row["text"])
        if len(chosen) >= count:
            break
    return chosen


def featurize(args: argparse.Namespace) -> None:
    """Teacher embeddings of `--texts` corpus texts, in chunks of 1,000 (a rerun skips done chunks)."""
    texts = feature_texts(args.texts)
    directory = FEATURES / args.teacher
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    teacher = Teacher(args.teacher, args.threads, args.max_tokens)
    for start in range(0, len(texts), 1000):
        chunk = directory / f"{start:07d}.npy"
        if chunk.exists():
            continue
        began = time.time()
        vectors = teacher.texts.embed(texts[start:start + 1000])
        np.save(chunk.with_suffix(".partial.npy"), vectors)
        chunk.with_suffix(".partial.npy").rename(chunk)
        print(f"featurize {args.teacher}: {start + 1000}/{len(texts)} ({1000 / (time.time() - began):.1f} texts/s)",
              file=sys.stderr, flush=True)


def load_features(teacher: str) -> tuple[list[str], np.ndarray]:
    directory = FEATURES / teacher
    texts = json.loads((directory / "texts.json").read_text(encoding="utf-8"))
    chunks = sorted(p for p in directory.glob("*.npy") if not p.name.endswith(".partial.npy"))
    vectors = np.concatenate([np.load(p) for p in chunks])
    return texts[:len(vectors)], vectors


def encode_all(vocabulary: Vocabulary, texts: list[str]) -> list[np.ndarray]:
    return [vocabulary.encode(text) for text in texts]


def bag(encoded: list[np.ndarray], rows: list[int]):
    """EmbeddingBag inputs (flat ids, offsets) for some texts; an empty text gets padding id 0's bag
    of nothing (offsets repeat), which EmbeddingBag sums to zero."""
    import torch

    ids = [encoded[r] for r in rows]
    offsets = np.cumsum([0] + [len(x) for x in ids[:-1]])
    flat = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int32)
    return torch.from_numpy(flat.astype(np.int64)), torch.from_numpy(offsets.astype(np.int64))


def tokenlearn(args: argparse.Namespace) -> None:
    """Fit token vectors w_t * e_t so that mean_t(w_t e_t) @ W + b predicts the teacher's
    PCA'd embedding of the text (MSE), as tokenlearn does; the result is the rows w_t e_t."""
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    vectors, words = load_model(args.init)
    texts, targets = load_features(args.teacher)
    targets, _mean, _axes = pca(targets, vectors.shape[1])
    vocabulary = Vocabulary(words)
    encoded = encode_all(vocabulary, texts)
    keep = [i for i, e in enumerate(encoded) if len(e)]
    rng = random.Random(args.seed)
    rng.shuffle(keep)
    held = keep[:max(500, len(keep) // 20)]
    train = keep[len(held):]
    norms = np.linalg.norm(vectors, axis=1)
    unit = vectors / np.maximum(norms, 1e-12)[:, None]
    embeddings = torch.nn.Parameter(torch.from_numpy(unit.astype(np.float32)))
    weights = torch.nn.Parameter(torch.from_numpy(norms.astype(np.float32)))
    out = torch.nn.Linear(vectors.shape[1], targets.shape[1])
    target = torch.from_numpy(targets.astype(np.float32))
    parameters = [embeddings, weights, *out.parameters()]
    optimizer = torch.optim.AdamW(parameters, lr=args.lr, weight_decay=0.0)

    def forward(rows: list[int]):
        flat, offsets = bag(encoded, rows)
        rows_w = weights[flat][:, None] * embeddings[flat]
        summed = torch.zeros(len(rows), embeddings.shape[1]).index_add_(
            0, torch.repeat_interleave(torch.arange(len(rows)), torch.from_numpy(
                np.array([len(encoded[r]) for r in rows], dtype=np.int64))), rows_w)
        lengths = torch.tensor([len(encoded[r]) for r in rows], dtype=torch.float32)[:, None]
        return out(summed / lengths)

    def held_loss() -> float:
        with torch.no_grad():
            losses = [torch.nn.functional.mse_loss(forward(held[s:s + 512]), target[held[s:s + 512]]).item()
                      for s in range(0, len(held), 512)]
        return float(np.mean(losses))

    directory = CHECKPOINTS / (args.out or f"tokenlearn-{args.teacher}")
    step, best, best_state, patience = 0, float("inf"), None, 0
    checkpoint = latest_checkpoint(directory)
    if checkpoint is not None:
        state = torch.load(checkpoint, weights_only=False)
        embeddings.data, weights.data = state["embeddings"], state["weights"]
        out.load_state_dict(state["out"])
        optimizer.load_state_dict(state["optimizer"])
        step, best, best_state, patience = state["step"], state["best"], state["best_state"], state["patience"]
        print(f"resumed from {checkpoint.name}", file=sys.stderr)
    steps_per_epoch = math.ceil(len(train) / args.batch_size)
    total = steps_per_epoch * args.epochs
    started = time.time()
    print(f"tokenlearn: {len(train)} texts, {len(held)} held, {total} steps; held loss at start {held_loss():.4f}",
          file=sys.stderr, flush=True)
    while step < total and patience < args.patience:
        epoch, index = divmod(step, steps_per_epoch)
        order = train[:]
        random.Random(args.seed + epoch).shuffle(order)
        rows = order[index * args.batch_size:(index + 1) * args.batch_size]
        loss = torch.nn.functional.mse_loss(forward(rows), target[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % args.eval_every == 0 or step == total:
            current = held_loss()
            if current < best - 1e-5:
                best, patience = current, 0
                best_state = {"embeddings": embeddings.detach().clone(), "weights": weights.detach().clone()}
            else:
                patience += 1
            print(f"step {step}/{total} loss {loss.item():.4f} held {current:.4f} best {best:.4f} "
                  f"({time.time() - started:.0f} s)", file=sys.stderr, flush=True)
            save_checkpoint(directory, step, {"embeddings": embeddings.data, "weights": weights.data,
                                              "out": out.state_dict(), "optimizer": optimizer.state_dict(),
                                              "step": step, "best": best, "best_state": best_state,
                                              "patience": patience})
    final = best_state or {"embeddings": embeddings.detach(), "weights": weights.detach()}
    result = (final["weights"][:, None] * final["embeddings"]).numpy()
    name = args.out or f"tokenlearn-{args.teacher}"
    save_model(name, result, words, {"stage": "tokenlearn", "init": args.init, "teacher": args.teacher,
                                     "texts": len(texts), "steps": step, "held_mse": best,
                                     "seconds": round(time.time() - started)})
    print(f"{name}: held MSE {best:.4f}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# 4. contrastive


def contrastive_examples(items: list[dict]) -> list[dict]:
    """One example per (query, changed definition): its item's unchanged candidates are its hard
    negatives; `others` are the candidates of the repository's other items (none with the path and
    qualified name of one of its own: another commit's copy of a gold definition is no negative)."""
    from training.evaluate_static import header

    by_repo: dict[str, list[str]] = {}
    for item in items:
        by_repo.setdefault(item["repo"], []).extend(item["candidates"])
    examples = []
    for item in items:
        negatives = [c for c, changed in zip(item["candidates"], item["changed"]) if not changed]
        own = {header(c) for c in item["candidates"]}
        others = [c for c in dict.fromkeys(by_repo[item["repo"]]) if header(c) not in own]
        for candidate, changed in zip(item["candidates"], item["changed"]):
            if changed:
                examples.append({"id": item["id"], "repo": item["repo"], "query": item["query"], "positive": candidate,
                                 "negatives": negatives, "others": others})
    return examples


def batches_of(examples: list[dict], size: int, seed: int, by_repo: bool = False) -> list[list[dict]]:
    """Shuffled batches with no query twice (a deferred example goes to a later batch). `by_repo`:
    each batch from one repository, so the in-batch negatives are definitions of the same code
    base (what a repository-wide search must tell apart), the batches' order shuffled."""
    if by_repo:
        rng = random.Random(seed)
        grouped: dict[str, list[dict]] = {}
        for example in examples:
            grouped.setdefault(example["repo"], []).append(example)
        result = [batch for group in grouped.values() for batch in batches_of(group, size, rng.randrange(1 << 30))]
        rng.shuffle(result)
        return result
    return batches(examples, size, seed)


def dev_scorer(items: list[dict]):
    """Dev score of an embed function: the mean of the file MRR and the repo MRR
    (`evaluate_static.py`'s tasks) on the dev items; also returns both."""
    from training.evaluate_static import metrics, repo_pools, vector_scores

    pools = repo_pools(items)

    def score(embed) -> tuple[float, float, float]:
        found = metrics(items, pools, *vector_scores(embed, items, pools))["all"]
        file, repo = float(np.mean(found["file MRR"])), float(np.mean(found["repo MRR"]))
        return (file + repo) / 2, file, repo
    return score


class StaticTrainer:
    """The rows being trained: row_t = exp(g_t) * (start_t + delta_t) @ M, each part optional
    (`--train` rows, weights, map). The text vector is the normalised sum of its rows, as
    `StaticEmbedder` computes it; `rows()` bakes the parts into one table for export."""

    def __init__(self, start: np.ndarray, train: set[str]) -> None:
        import torch

        self.start = torch.from_numpy(start.astype(np.float32))
        vocab, dims = self.start.shape
        self.delta = torch.nn.Parameter(torch.zeros(vocab, dims), requires_grad="rows" in train)
        self.gain = torch.nn.Parameter(torch.zeros(vocab), requires_grad="weights" in train)
        self.map = torch.nn.Parameter(torch.eye(dims), requires_grad="map" in train)
        self.parameters = [p for p in (self.delta, self.gain, self.map) if p.requires_grad]

    def encode(self, encoded: list[np.ndarray]):
        import torch

        lengths = torch.tensor([len(e) for e in encoded], dtype=torch.int64)
        flat = torch.from_numpy(np.concatenate(encoded).astype(np.int64)) if int(lengths.sum()) else \
            torch.zeros(0, dtype=torch.int64)
        used, inverse = torch.unique(flat, return_inverse=True)
        rows = (torch.exp(self.gain[used])[:, None] * (self.start[used] + self.delta[used])) @ self.map
        summed = torch.zeros(len(encoded), rows.shape[1]).index_add_(
            0, torch.repeat_interleave(torch.arange(len(encoded)), lengths), rows[inverse])
        return torch.nn.functional.normalize(summed, dim=-1)

    def penalty(self):
        return self.delta.pow(2).sum(1).mean() if self.delta.requires_grad else 0.0

    def rows(self) -> np.ndarray:
        import torch

        with torch.no_grad():
            return ((torch.exp(self.gain)[:, None] * (self.start + self.delta)) @ self.map).numpy()

    def state(self) -> dict:
        return {"delta": self.delta.data.clone(), "gain": self.gain.data.clone(), "map": self.map.data.clone()}

    def load(self, state: dict) -> None:
        self.delta.data, self.gain.data, self.map.data = state["delta"], state["gain"], state["map"]


def contrastive(args: argparse.Namespace) -> None:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    vectors, words = load_model(args.init)
    vocabulary = Vocabulary(words)
    train_items = load_items("train")
    dev_items = load_items("dev")
    examples = contrastive_examples(train_items)
    print(f"contrastive: {len(examples)} pairs from {len({i['repo'] for i in train_items})} train repositories; "
          f"dev {len(dev_items)} items of {len({i['repo'] for i in dev_items})}", file=sys.stderr, flush=True)
    trainer = StaticTrainer(vectors, set(args.train.split(",")))
    optimizer = torch.optim.Adam(trainer.parameters, lr=args.lr)
    cache: dict[str, np.ndarray] = {}

    def ids_of(text: str) -> np.ndarray:
        found = cache.get(text)
        if found is None:
            found = cache[text] = vocabulary.encode(text)
        return found

    score_dev = dev_scorer(dev_items)

    def dev_score() -> tuple[float, float, float]:
        current = trainer.rows()

        def embed(texts: list[str]) -> np.ndarray:
            out = np.zeros((len(texts), current.shape[1]), dtype=np.float32)
            for r, t in enumerate(texts):
                ids = ids_of(t)
                if len(ids):
                    summed = current[ids].sum(0)
                    norm = np.linalg.norm(summed)
                    out[r] = summed / norm if norm > 0 else 0
            return out
        return score_dev(embed)

    rng = random.Random(args.seed)
    directory = CHECKPOINTS / args.out
    epoch_batches, batches_epoch = batches_of(examples, args.batch_size, args.seed, args.by_repo), 0
    total = len(epoch_batches) * args.epochs
    best, file, repo = dev_score()
    step, best_state, patience = 0, trainer.state(), 0
    print(f"dev at start {best:.4f} (file MRR {file:.4f}, repo MRR {repo:.4f})", file=sys.stderr, flush=True)
    checkpoint = latest_checkpoint(directory)
    if checkpoint is not None:
        state = torch.load(checkpoint, weights_only=False)
        trainer.load(state["trainer"])
        optimizer.load_state_dict(state["optimizer"])
        step, best, best_state, patience = state["step"], state["best"], state["best_state"], state["patience"]
        rng.setstate(state["rng"])
        print(f"resumed from {checkpoint.name}", file=sys.stderr)
    started = time.time()
    while step < total and patience < args.patience:
        epoch, index = divmod(step, len(epoch_batches))
        if epoch != batches_epoch:  # each epoch its own order
            epoch_batches, batches_epoch = batches_of(examples, args.batch_size, args.seed + epoch, args.by_repo), epoch
        batch = epoch_batches[index % len(epoch_batches)]
        queries = trainer.encode([ids_of(e["query"]) for e in batch])
        if args.hard == "all":
            negatives = [n for e in batch for n in e["negatives"]]
        elif args.hard == "one":
            negatives = [rng.choice(e["negatives"]) for e in batch if e["negatives"]]
        else:
            negatives = []
        for example in batch:  # definitions elsewhere in the same repository
            others = example["others"]
            negatives += [others[i] for i in rng.sample(range(len(others)), min(args.repo_negatives, len(others)))]
        documents = trainer.encode([ids_of(t) for t in [e["positive"] for e in batch] + negatives])
        scores = queries @ documents.T * args.scale
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
        if args.anchor:
            loss = loss + args.anchor * trainer.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % args.eval_every == 0 or step == total:
            current, file, repo = dev_score()
            if current > best + 1e-4:
                best, best_state, patience = current, trainer.state(), 0
            else:
                patience += 1
            print(f"step {step}/{total} loss {loss.item():.4f} dev {current:.4f} (file {file:.4f}, repo {repo:.4f}) "
                  f"best {best:.4f} ({time.time() - started:.0f} s)", file=sys.stderr, flush=True)
            save_checkpoint(directory, step, {"trainer": trainer.state(), "optimizer": optimizer.state_dict(),
                                              "step": step, "best": best, "best_state": best_state,
                                              "patience": patience, "rng": rng.getstate()})
    trainer.load(best_state)
    save_model(args.out, trainer.rows(), words, {
        "stage": "contrastive", "init": args.init, "pairs": len(examples), "steps": step, "dev": best,
        "train": args.train, "lr": args.lr, "scale": args.scale, "batch_size": args.batch_size,
        "anchor": args.anchor, "hard": args.hard, "repo_negatives": args.repo_negatives, "by_repo": args.by_repo, "seconds": round(time.time() - started)})
    print(f"{args.out}: dev {best:.4f}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# export


def export(args: argparse.Namespace) -> None:
    """The model's vectors as float16 and its vocabulary into the shipped folder; prints the pins."""
    vectors, words = load_model(args.model)
    target = Path(args.to)
    target.mkdir(parents=True, exist_ok=True)
    np.save(target / VECTORS_FILE, vectors.astype(np.float16))
    (target / VOCAB_FILE).write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    for name in (VECTORS_FILE, VOCAB_FILE):
        data = (target / name).read_bytes()
        print(f"{name}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    exported = StaticEmbedder(StaticFiles(target)).embed(["def parse_http_response(raw): ...", "why does it crash?"])
    original = embedder_of(args.model).embed(["def parse_http_response(raw): ...", "why does it crash?"])
    print(f"cosine float16 vs float32: {np.sum(exported * original, axis=1)}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="stage", required=True)
    vocab = sub.add_parser("vocab")
    vocab.add_argument("--size", type=int, default=64_000)
    vocab.add_argument("--min-count", type=int, default=5)
    vocab.add_argument("--min-repos", type=int, default=2)
    dist = sub.add_parser("distill")
    dist.add_argument("--teacher", choices=("base", "matcher"), default="base")
    dist.add_argument("--dims", type=int, default=256)
    dist.add_argument("--sif", type=float, default=1e-2)
    dist.add_argument("--out", default="")
    feat = sub.add_parser("featurize")
    feat.add_argument("--teacher", choices=("base", "matcher"), default="base")
    feat.add_argument("--texts", type=int, default=40_000)
    feat.add_argument("--max-tokens", type=int, default=128)
    learn = sub.add_parser("tokenlearn")
    learn.add_argument("--init", required=True)
    learn.add_argument("--teacher", choices=("base", "matcher"), default="base")
    learn.add_argument("--out", default="")
    learn.add_argument("--epochs", type=int, default=10)
    learn.add_argument("--batch-size", type=int, default=256)
    learn.add_argument("--lr", type=float, default=1e-3)
    learn.add_argument("--eval-every", type=int, default=100)
    learn.add_argument("--patience", type=int, default=5)
    con = sub.add_parser("contrastive")
    con.add_argument("--init", required=True)
    con.add_argument("--out", required=True)
    con.add_argument("--epochs", type=int, default=5)
    con.add_argument("--batch-size", type=int, default=64)
    con.add_argument("--lr", type=float, default=1e-3)
    con.add_argument("--scale", type=float, default=20.0)
    con.add_argument("--hard", choices=("all", "one", "none"), default="all",
                     help="same-file hard negatives per pair: all of them, one drawn, or none (in-batch only)")
    con.add_argument("--train", default="weights,map",
                     help="what is trained, comma-separated: rows (each token's vector), weights (a gain per "
                          "token), map (one linear map of all rows)")
    con.add_argument("--by-repo", action="store_true", help="each batch from one repository")
    con.add_argument("--repo-negatives", type=int, default=0,
                     help="per pair, this many definitions of the repository's other mined fixes as negatives")
    con.add_argument("--anchor", type=float, default=0.0, help="L2 pull of each row towards its start")
    con.add_argument("--eval-every", type=int, default=50)
    con.add_argument("--patience", type=int, default=6)
    exp = sub.add_parser("export")
    exp.add_argument("--model", required=True)
    exp.add_argument("--to", default=str(MODEL_DIR))
    for stage in (vocab, dist, feat, learn, con, exp):
        stage.add_argument("--threads", type=int, default=2)
        stage.add_argument("--seed", type=int, default=43)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    {"vocab": build_vocab, "distill": distill, "featurize": featurize, "tokenlearn": tokenlearn,
     "contrastive": contrastive, "export": export}[args.stage](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
