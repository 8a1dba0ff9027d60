"""The texts the static embedder learns from, read from the bare mirrors; resumable per repository.

    nice -n 10 python -m training.static_data items  --jobs 2    # every pair's query and candidates
    nice -n 10 python -m training.static_data corpus --jobs 2    # definitions and commit messages

Two kinds of shard under `data/static/`, one per repository, each written whole or not at all
(a rerun skips the repositories already done):

- `items/<owner>+<name>.jsonl.gz`: one line per mined item (`pairs.jsonl.gz`), in the format
  `evaluate_embedder.py` measures on: the embedded query (`train_embedder.embedded_query`), every
  candidate definition of the fix's gold files (the changed ones and the mined same-file
  negatives) as the index embeds it (`train_embedder.definition_texts`), and which are changed.
  The held-back repositories' shards are the validation set; the others are trained on.
- `corpus/<owner>+<name>.jsonl.gz`: unlabelled text of the TRAIN repositories only (never a
  held-back or an excluded one): up to `--defs` definitions of source files at the repository's
  pinned anchor commit (`repos.tsv`), as the index embeds them, and up to `--messages` commit
  messages of its first-parent history, as search embeds a question. For the vocabulary, the
  word weights and the teacher featurisation (`train_static.py`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
from multiprocessing import Pool
from pathlib import Path

from training.sources import MIRROR, check_allowed, load_sources, validation_repos
from training.train_embedder import DATA, FileTexts, definition_texts, embedded_query, gold_candidates, load_records

STATIC = DATA / "static"
ITEMS = STATIC / "items"
CORPUS = STATIC / "corpus"
MAX_FILE_BYTES = 1_000_000


def shard(directory: Path, repo: str) -> Path:
    return directory / f"{repo.replace('/', '+')}.jsonl.gz"


def write_shard(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with gzip.open(partial, "wt", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    partial.rename(path)


def read_shards(directory: Path, repos: set[str] | frozenset[str] | None = None) -> list[dict]:
    rows = []
    for path in sorted(directory.glob("*.jsonl.gz")):
        repo = path.name[:-len(".jsonl.gz")].replace("+", "/", 1)
        if repos is None or repo in repos:
            rows.extend(json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8") if line.strip())
    return rows


def item_rows(mirror: Path, records: list[dict]) -> list[dict]:
    """`evaluate_embedder.build_validation`'s rows, for any repository's records."""
    texts = FileTexts(mirror)
    rows = []
    for record in records:
        candidates, changed = gold_candidates(texts, record)
        if any(changed):
            rows.append({"id": record["id"], "repo": record["repo"], "kind": record["query_type"],
                         "language": record["files"][0]["language"], "query": embedded_query(record["query"]),
                         "candidates": candidates, "changed": changed})
    return rows


def _items_of_repo(job: tuple[Path, str, list[dict]]) -> str:
    mirror, repo, records = job
    write_shard(shard(ITEMS, repo), item_rows(mirror, records))
    return repo


def git(mirror: Path, repo: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(mirror / repo.replace("/", "+") / "repo"), *args],
                          capture_output=True, check=True).stdout


def corpus_rows(mirror: Path, repo: str, anchor: str, max_defs: int, max_messages: int, seed: int = 0) -> list[dict]:
    """Definitions of source files at `anchor` (files in a seeded random order, until `max_defs`)
    and the newest `max_messages` first-parent commit messages (merges left out)."""
    from codeqa.parsing.languages import code_language, file_role, language_from_content, needs_content

    rng = random.Random(f"{seed}:{repo}")
    listing = [line.split("\t", 1) for line in git(mirror, repo, "ls-tree", "-r", "-l", anchor)
               .decode("utf-8", "replace").splitlines() if "\t" in line]
    files = [(path, int(meta.split()[3])) for meta, path in listing
             if meta.split()[1] == "blob" and meta.split()[3].isdigit() and code_language(path)
             and file_role(path) == "source"]
    rng.shuffle(files)
    rows: list[dict] = []
    defs = 0
    for path, size in files:
        if defs >= max_defs:
            break
        if size > MAX_FILE_BYTES:
            continue
        source = git(mirror, repo, "show", f"{anchor}:{path}").decode("utf-8", "replace")
        language = code_language(path)
        if needs_content(path):
            language = language_from_content(path, source[:2000])
        if file_role(path, source[:2000]) != "source":
            continue
        try:
            texts = definition_texts(source, language, path)
        except Exception as exc:  # a grammar the parser lacks for a shared extension
            print(f"{repo}:{path}: {exc}", file=sys.stderr)
            continue
        for text in texts.values():
            rows.append({"kind": "definition", "language": language, "text": text})
            defs += 1
    log = git(mirror, repo, "log", "--first-parent", "--no-merges", f"-{max_messages}", "--format=%B%x00", anchor)
    for message in log.decode("utf-8", "replace").split("\x00"):
        message = message.strip()
        if len(message) >= 20:
            rows.append({"kind": "message", "language": "", "text": embedded_query(message)})
    return rows


def _corpus_of_repo(job: tuple[Path, str, str, int, int]) -> str:
    mirror, repo, anchor, max_defs, max_messages = job
    write_shard(shard(CORPUS, repo), corpus_rows(mirror, repo, anchor, max_defs, max_messages))
    return repo


def run_jobs(function, jobs: list, processes: int) -> None:
    if processes <= 1:
        for job in jobs:
            print(f"done {function(job)}", file=sys.stderr, flush=True)
        return
    with Pool(processes) as pool:
        for repo in pool.imap_unordered(function, jobs):
            print(f"done {repo}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("items", "corpus"))
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="bare mirrors <owner>+<name>/repo")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--defs", type=int, default=3000, help="corpus: definitions per repository")
    parser.add_argument("--messages", type=int, default=1500, help="corpus: commit messages per repository")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.stage == "items":
        by_repo: dict[str, list[dict]] = {}
        for record in load_records():  # check_allowed inside
            by_repo.setdefault(record["repo"], []).append(record)
        jobs = [(args.mirror, repo, records) for repo, records in sorted(by_repo.items(), key=lambda kv: -len(kv[1]))
                if not shard(ITEMS, repo).exists()]
        run_jobs(_items_of_repo, jobs, args.jobs)
    else:
        held_back = validation_repos()
        sources = [s for s in load_sources() if s.repo not in held_back]
        check_allowed([s.repo for s in sources])
        jobs = [(args.mirror, s.repo, s.anchor, args.defs, args.messages) for s in sources
                if not shard(CORPUS, s.repo).exists() and (args.mirror / s.repo.replace("/", "+") / "repo").is_dir()]
        run_jobs(_corpus_of_repo, jobs, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
