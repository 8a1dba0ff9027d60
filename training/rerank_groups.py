"""The reranker's listwise training data: each changed definition beside its file's other definitions.

    python -m training.rerank_groups --mirror /work/.mirror --processes 2    # texts, then tokens

Search asks the reranker one thing: order the best definitions *of one file* (it never moves a
file, `codeqa/search/rerank.py`). So a training group is a query, one definition its fix changed
and the mined negatives of the same file (up to eight, `mine_pairs.py`), and the loss is
cross-entropy over the group (`train_reranker_listwise.py`). The other changed definitions of
that file are no negatives of it. Files without a negative teach nothing here and are left out,
as are the held-back repositories of `training.sources.validation_repos()`.

Two steps, each skipped when its file exists:
1. `groups.jsonl.gz`: the texts, read at each record's base commit from the bare mirrors and
   made as the index makes them (`train_embedder.definition_texts`, `embedded_query`).
2. `groups.npz`: the same pairs tokenised as search tokenises them
   (`CrossEncoderReranker.encode`: the question's first 64 tokens, then the definition, 256 in
   all), so the trainer needs no tokenizer and the GPU machine none of this package's
   dependencies. `--validation` tokenises `evaluate_embedder.py`'s held-back items likewise.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

from training.sources import MIRROR, check_allowed, validation_repos
from training.train_embedder import DATA, FileTexts, embedded_query, load_records
from training.train_reranker_listwise import GROUP_TOKENS, VALIDATION_TOKENS

GROUPS = DATA / "groups.jsonl.gz"
MAX_NEGATIVES = 8


def record_groups(texts: FileTexts, record: dict) -> list[dict]:
    """A record's groups: per gold file, each changed definition the parser still finds at its
    line with that file's negatives (shuffled by the record's id, at most MAX_NEGATIVES)."""
    rng = random.Random(record["id"])
    query = embedded_query(record["query"])
    groups = []
    for gold in record["files"]:
        by_key = texts.get(record["repo"], record["base_commit"], gold["path"], gold["language"])
        negatives = [by_key[(name, start)] for name, _kind, start, _end in gold["negatives"] if (name, start) in by_key]
        rng.shuffle(negatives)
        if not negatives:
            continue
        for name, _kind, start, _end in gold["positives"]:
            if (name, start) in by_key:
                groups.append({"id": record["id"], "repo": record["repo"], "language": gold["language"],
                               "query": query, "positive": by_key[(name, start)],
                               "negatives": negatives[:MAX_NEGATIVES]})
    texts.clear()
    return groups


def _repo_groups(job: tuple[Path, list[dict]]) -> list[dict]:
    mirror, records = job
    texts = FileTexts(mirror)
    return [group for record in records for group in record_groups(texts, record)]


def build_groups(mirror: Path, out: Path, processes: int) -> None:
    """Every training record's groups, one repository a job; records whose repository has no
    mirror here are counted and skipped."""
    held_back = validation_repos()
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for record in load_records():
        if record["repo"] not in held_back:
            by_repo[record["repo"]].append(record)
    present = {repo: records for repo, records in by_repo.items()
               if (mirror / repo.replace("/", "+") / "repo").is_dir()}
    absent = sorted(set(by_repo) - set(present))
    check_allowed(sorted(present))
    partial = out.with_suffix(".partial")
    written = 0
    with gzip.open(partial, "wt", encoding="utf-8") as sink, Pool(processes) as pool:
        jobs = [(mirror, records) for _repo, records in sorted(present.items(), key=lambda item: -len(item[1]))]
        for done, groups in enumerate(pool.imap_unordered(_repo_groups, jobs), 1):
            for group in groups:
                sink.write(json.dumps(group, ensure_ascii=False) + "\n")
            written += len(groups)
            print(f"groups: {done}/{len(jobs)} repositories, {written} groups", file=sys.stderr, flush=True)
    partial.rename(out)
    print(f"{written} groups of {len(present)} repositories -> {out}; no mirror here for {len(absent)} "
          f"({sum(len(by_repo[r]) for r in absent)} records)", file=sys.stderr)


def tokenize(lists: list[tuple[str, list[str], list[bool]]], out: Path, offsets: list[list[float]] | None = None) -> None:
    """(query, documents, which are changed) lists as one npz: every pair's token ids back to
    back (uint16: the vocabulary has 30,522), each pair's start, length, question length (its
    segment 0) and label, and each list's first pair; with `offsets`, each pair's score before
    the reranker's logit is added (`search_lists.py`: the definition model's)."""
    import numpy as np

    from codeqa.search.rerank import CrossEncoderReranker

    reranker = CrossEncoderReranker("codeqa-reranker")
    ids: list[int] = []
    starts, lengths, questions, labels, lists_at = [], [], [], [], []
    for query, documents, changed in lists:
        lists_at.append(len(starts))
        labels.extend(changed)
        for encoding in reranker.encode(query, documents):
            starts.append(len(ids))
            lengths.append(len(encoding.ids))
            questions.append(encoding.type_ids.count(0))
            ids.extend(encoding.ids)
    lists_at.append(len(starts))
    extra = {"offsets": np.asarray([x for row in offsets for x in row], dtype=np.float32)} if offsets else {}
    np.savez_compressed(out, **extra, ids=np.asarray(ids, dtype=np.uint16), starts=np.asarray(starts, dtype=np.int64),
                        lengths=np.asarray(lengths, dtype=np.int16), questions=np.asarray(questions, dtype=np.int16),
                        labels=np.asarray(labels, dtype=np.bool_), lists=np.asarray(lists_at, dtype=np.int64))
    print(f"{len(lists)} lists, {len(starts)} pairs, {len(ids)} tokens -> {out}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="bare mirrors <owner>+<name>/repo")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--validation", action="store_true",
                        help="also tokenise evaluate_embedder.py's held-back items (validation.jsonl.gz)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not GROUPS.exists():
        build_groups(args.mirror, GROUPS, args.processes)
    if not GROUP_TOKENS.exists():
        groups = [json.loads(line) for line in gzip.open(GROUPS, "rt", encoding="utf-8")]
        tokenize([(g["query"], [g["positive"], *g["negatives"]], [True] + [False] * len(g["negatives"]))
                  for g in groups], GROUP_TOKENS)
    if args.validation and not VALIDATION_TOKENS.exists():
        from training.evaluate_embedder import VALIDATION

        items = [json.loads(line) for line in gzip.open(VALIDATION, "rt", encoding="utf-8")]
        tokenize([(item["query"], item["candidates"], item["changed"]) for item in items], VALIDATION_TOKENS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
