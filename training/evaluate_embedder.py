"""Measure the matcher on the training data's held-back repositories, beside BM25 and the base model.

    python -m training.evaluate_embedder --mirror /work/.mirror                       # base vs BM25
    python -m training.evaluate_embedder --checkpoint training/data/checkpoints/step-536.pt
    python -m training.evaluate_embedder --onnx training/data/export/model.onnx    # the shipped form
    python -m training.evaluate_embedder --reranker codeqa-reranker --no-base      # the cross-encoder

The task is the one the matcher is for once a file is found: among the definitions of a fix's
gold files (the ones it changed and up to 8 others per file, as mined), rank the changed ones
first. The repositories are `sources.validation_repos()`, which `train_embedder.py` never
trains on. Each definition's text is what the index embeds (`train_embedder.definition_texts`).

Per item: hit@1 (a changed definition ranks first) and MRR (1 / rank of the first changed one).
Reported per language (of the item's first gold file) and per query kind (issue report or
commit message), with BM25 over the same candidates (the realistic eval's, identifier-aware) and
the unchanged base model from the same run. The candidate texts are cached in
`data/validation.jsonl.gz` so that later runs only embed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable

import numpy as np


from training.sources import MIRROR, validation_repos
from training.train_embedder import DATA, FileTexts, embedded_query, gold_candidates, load_model, load_records

VALIDATION = DATA / "validation.jsonl.gz"
Scorer = Callable[[list[dict]], list[np.ndarray]]  # items -> each item's candidate scores


def build_validation(mirror: Path, out: Path) -> None:
    """One line per held-back item: query, kind, language, candidate texts and which are changed."""
    held_back = validation_repos()
    texts = FileTexts(mirror)
    written = 0
    partial = out.with_suffix(".partial")
    with gzip.open(partial, "wt", encoding="utf-8") as handle:
        for record in load_records():
            if record["repo"] not in held_back:
                continue
            candidates, changed = gold_candidates(texts, record)
            if any(changed) and not all(changed):
                handle.write(json.dumps({"id": record["id"], "repo": record["repo"], "kind": record["query_type"],
                                         "language": record["files"][0]["language"],
                                         "query": embedded_query(record["query"]),
                                         "candidates": candidates, "changed": changed}, ensure_ascii=False) + "\n")
                written += 1
    partial.rename(out)
    print(f"{written} validation items from {len(held_back)} repositories -> {out}", file=sys.stderr)


def first_per_repo(items: list[dict], count: int) -> list[dict]:
    """Each repository's first `count` items: a sample that still spans every language."""
    taken: Counter[str] = Counter()
    kept = []
    for item in items:
        taken[item["repo"]] += 1
        if taken[item["repo"]] <= count:
            kept.append(item)
    return kept


def bm25_scorer() -> Scorer:
    """The realistic eval's BM25 (its parameters and identifier-aware tokens) over each item's candidates."""
    from eval.realistic.baseline import bm25_scores, tokens

    def score(items: list[dict]) -> list[np.ndarray]:
        scores = []
        for item in items:
            query = tokens(item["query"])
            if not query:  # nothing BM25 can match: every candidate ties
                scores.append(np.zeros(len(item["candidates"])))
                continue
            scores.append(np.asarray(bm25_scores([tokens(c) for c in item["candidates"]], query)))
        return scores
    return score


def vector_scorer(embed: Callable[[list[str]], np.ndarray]) -> Scorer:
    """Cosines, every text of every item embedded in one call (batched by length)."""
    def score(items: list[dict]) -> list[np.ndarray]:
        texts = [text for item in items for text in (item["query"], *item["candidates"])]
        vectors = embed(texts)
        scores, at = [], 0
        for item in items:
            query, candidates = vectors[at], vectors[at + 1:at + 1 + len(item["candidates"])]
            scores.append(candidates @ query)
            at += 1 + len(item["candidates"])
        return scores
    return score


def torch_embed(checkpoint: Path | None, max_tokens: int, threads: int) -> Callable[[list[str]], np.ndarray]:
    """The base all-MiniLM-L6-v2 (or a train_embedder.py checkpoint of it) in torch, fp32."""
    import torch

    torch.set_num_threads(threads)
    model = load_model(max_tokens, checkpoint)
    model.eval()
    return lambda texts: model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                      show_progress_bar=False)


def onnx_embed(model_file: Path, max_tokens: int) -> Callable[[list[str]], np.ndarray]:
    """An ONNX export run the way the product runs its local model."""
    from codeqa.indexing.embeddings import LocalEmbedder, local_model

    embedder = LocalEmbedder(model=local_model(str(model_file)), max_tokens=max_tokens)
    return lambda texts: np.asarray(embedder.embed(texts))


def reranker_scorer(model: str, threads: int) -> Scorer:
    """A cross-encoder (the shipped `codeqa-reranker` or an export's folder) as search runs it."""
    from codeqa.search.rerank import CrossEncoderReranker

    reranker = CrossEncoderReranker(model, max_documents=10_000, threads=threads)
    if not reranker.status().available:
        raise SystemExit(reranker.status().reason)
    return lambda items: [np.asarray(reranker.score(item["query"], item["candidates"])) for item in items]


def rank_metrics(scores: np.ndarray, changed: list[bool]) -> tuple[float, float]:
    """hit@1 and reciprocal rank of the first changed candidate (ties broken against it)."""
    order = np.lexsort((np.asarray(changed), -scores))  # among equal scores, unchanged first
    first = next(rank for rank, index in enumerate(order, 1) if changed[index])
    return float(first == 1), 1.0 / first


def evaluate(items: list[dict], scorers: dict[str, Scorer]) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """scorer -> group ("all", a language, "(issue)"/"(commit)") -> per-item (hit@1, RR)."""
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for name, scorer in scorers.items():
        results[name] = defaultdict(list)
        for item, scores in zip(items, scorer(items)):
            metrics = rank_metrics(scores, item["changed"])
            for group in ("all", item["language"], f"({item['kind']})"):
                results[name][group].append(metrics)
        print(f"scored {name}", file=sys.stderr, flush=True)
    return results


def table(results: dict[str, dict[str, list[tuple[float, float]]]]) -> str:
    names = list(results)
    groups = sorted(next(iter(results.values())), key=lambda g: (g != "all", g.startswith("("), g))
    lines = ["| group | n | " + " | ".join(f"{n} hit@1 / MRR" for n in names) + " |",
             "|---|---:|" + "---|" * len(names)]
    for group in groups:
        cells = []
        for name in names:
            rows = results[name][group]
            cells.append(f"{np.mean([h for h, _ in rows]):.3f} / {np.mean([r for _, r in rows]):.3f}")
        lines.append(f"| {group} | {len(results[names[0]][group])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="bare mirrors <owner>+<name>/repo")
    parser.add_argument("--checkpoint", type=Path, action="append", default=[],
                        help="a train_embedder.py checkpoint to score (repeatable)")
    parser.add_argument("--onnx", type=Path, action="append", default=[], help="an ONNX export to score (repeatable)")
    parser.add_argument("--reranker", action="append", default=[],
                        help="a cross-encoder to score: codeqa-reranker or an export's folder (repeatable)")
    parser.add_argument("--no-base", action="store_true", help="leave the unchanged base model out")
    parser.add_argument("--per-repo", type=int, default=0, help="the first N items of each repository only")
    parser.add_argument("--max-tokens", type=int, default=128, help="tokens read per text (the product's default)")
    parser.add_argument("--threads", type=int, default=2)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not VALIDATION.exists():
        build_validation(args.mirror, VALIDATION)
    items = [json.loads(line) for line in gzip.open(VALIDATION, "rt", encoding="utf-8")]
    if args.per_repo:
        items = first_per_repo(items, args.per_repo)
    scorers: dict[str, Scorer] = {"BM25": bm25_scorer()}
    if not args.no_base:
        scorers["base"] = vector_scorer(torch_embed(None, args.max_tokens, args.threads))
    for checkpoint in args.checkpoint:
        scorers[checkpoint.stem] = vector_scorer(torch_embed(checkpoint, args.max_tokens, args.threads))
    for model_file in args.onnx:
        scorers[f"onnx:{model_file.parent.name}"] = vector_scorer(onnx_embed(model_file, args.max_tokens))
    for model in args.reranker:
        scorers[f"reranker:{Path(model).name}"] = reranker_scorer(model, args.threads)
    print(f"{len(items)} items from {len({i['repo'] for i in items})} held-back repositories; "
          f"{sum(len(i['candidates']) for i in items)} candidates")
    print(table(evaluate(items, scorers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
