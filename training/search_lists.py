"""The reranker's training lists as search hands them: a file's best definitions by the definition model.

    python -m training.search_lists --mirror /work/.mirror --repos sharkdp/fd psf/black ...
                                                  # resumable: a repository already done is skipped
    python -m training.search_lists --tokenize    # then train_reranker_listwise.py --groups ...

Search asks the reranker to reorder the best RERANK_PER_FILE definitions (by the definition
model) of each of the RERANK_FILES best files, by definition score plus logit
(`codeqa/search/rerank.py`). `rerank_groups.py`'s groups pair a changed definition with its
file's mined negatives instead: mostly easy ones, so a model trained on them ranks better alone
and no better beside the definition model (docs/retrieval.md, "Reranking"). Here each training
repository is indexed once, at the base commit of its middle record (by commit time; indexing
each record's own base commit would cost hours on 2 cores), every record of that repository
whose changed definitions are still there is searched as the product searches it, and the
lists the reranker would have read are kept with each definition's score. A record searched
at another commit than its own sees the code of that commit: its fix may be in it already.

Written per repository to `<out>/<owner>+<name>.jsonl.gz`, one line a list that holds a changed
definition and another: the question as the reranker reads it (`parsed.semantic`), the file,
and its definitions in the definition model's order (text as search reads it, score, changed).
`--tokenize` turns them into `train_reranker_listwise.py`'s npz files, each changed definition
first before its file's unchanged ones, with their scores as offsets (the trainer learns the
logit that, added to the score, puts the changed one first); the lists of
`sources.validation_repos()` go to the held-back file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from training.sources import MIRROR, check_allowed
from training.train_embedder import load_records

if TYPE_CHECKING:
    from codeqa.core.config import Settings
    from eval.realistic.corpus import Corpus
    from eval.realistic.snapshots import SnapshotStore

DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "search_lists"
DEFAULT_CACHE = DEFAULT_OUT.with_name("search_lists_cache")  # checkouts and index snapshots


class ListRecorder:
    """Stands in for the reranker's scoring and ordering during one search: keeps what the
    reranker would read and leaves the definition model's order as it was."""

    def __init__(self) -> None:
        self.question = ""
        self.files: list[tuple[str, list[dict]]] = []

    def install(self) -> None:
        from codeqa.search import rerank

        recorder = self

        def score(_self, query: str, documents: list[str]) -> list[float]:
            recorder.question = query
            return [0.0] * len(documents)

        def reorder(files, scores: dict[str, float]) -> None:
            from codeqa.store.rows import embedding_text

            recorder.files = [
                (file.path, [{"name": d.hit.qualified_name, "line": d.hit.start_line, "score": round(d.score, 4),
                              "text": embedding_text(d.hit.embedded_fields())}
                             for d in file.definitions if d.hit.id in scores])
                for file in files[: rerank.RERANK_FILES]
            ]

        rerank.CrossEncoderReranker.score = score
        rerank.rerank_definitions = reorder


def middle_commit(git_dir: Path, commits: list[str]) -> str:
    """The commit of the middle commit time among `commits`."""
    listing = subprocess.run(["git", "-C", str(git_dir), "show", "-s", "--format=%H %ct", *commits],
                             capture_output=True, text=True, check=True).stdout.split()
    times = sorted((int(listing[i + 1]), listing[i]) for i in range(0, len(listing), 2))
    return times[len(times) // 2][1]


def repo_lists(repo: str, records: list[dict], corpus: Corpus, store: SnapshotStore, settings: Settings,
               recorder: ListRecorder) -> tuple[list[dict], dict]:
    """Index `repo` once, search each record, keep the lists holding a changed definition."""
    from codeqa.search.options import SearchOptions
    from codeqa.search.retrieval import Retriever

    commit = middle_commit(corpus.git_dir(repo), [r["base_commit"] for r in records])
    snapshot = store.load(repo, commit)
    if snapshot is None:
        snapshot = store.index(repo, commit, corpus.checkout(repo, commit), settings)
    retriever = Retriever(snapshot.settings(settings))
    known = {(row["file_path"], row["qualified_name"]) for row in snapshot.symbol_rows(
        settings, sorted({f["path"] for r in records for f in r["files"]}), ["file_path", "qualified_name"])}
    lists, counts = [], defaultdict(int)
    for record in records:
        gold = {(f["path"], name) for f in record["files"] for name, *_ in f["positives"]} & known
        if not gold:
            counts["changed definitions not at this commit"] += 1
            continue
        recorder.question, recorder.files = "", []
        retriever.search(snapshot.index_name, record["query"], SearchOptions(k=10, hyde=False, rerank=True))
        found = False
        for path, definitions in recorder.files:
            changed = [(path, d["name"]) in gold for d in definitions]
            if any(changed):
                found = True
                if not all(changed):
                    for definition, is_changed in zip(definitions, changed, strict=True):
                        definition["changed"] = is_changed
                    lists.append({"id": record["id"], "repo": repo, "language": record["files"][0]["language"],
                                  "question": recorder.question, "file": path, "definitions": definitions})
        counts["searched"] += 1
        counts["a changed file among the reranked" if found else "no changed file among the reranked"] += 1
    return lists, {"commit": commit, "rows": snapshot.report.get("rows"), **counts, "lists": len(lists)}


def tokenize_lists(folder: Path) -> None:
    """`<folder>/*.jsonl.gz` as `lists.npz` (training) and `held_back.npz`, and how the
    definition model alone orders the held-back ones."""
    from training.rerank_groups import tokenize
    from training.sources import validation_repos

    held_back_repos = validation_repos()
    parts: dict[bool, tuple[list, list]] = {True: ([], []), False: ([], [])}
    for path in sorted(folder.glob("*.jsonl.gz")):
        for line in gzip.open(path, "rt", encoding="utf-8"):
            item = json.loads(line)
            unchanged = [d for d in item["definitions"] if not d["changed"]]
            lists, offsets = parts[item["repo"] in held_back_repos]
            for changed in (d for d in item["definitions"] if d["changed"]):
                group = [changed, *unchanged]
                lists.append((item["question"], [d["text"] for d in group], [True] + [False] * len(unchanged)))
                offsets.append([d["score"] for d in group])
    for held_back, name in ((False, "lists.npz"), (True, "held_back.npz")):
        tokenize(parts[held_back][0], folder / name, parts[held_back][1])
    ranks = [1 + sum(score >= row[0] for score in row[1:]) for row in parts[True][1]]  # ties against it
    print(json.dumps({"definition model alone, held back": {
        "hit@1": round(sum(r == 1 for r in ranks) / len(ranks), 4),
        "mrr": round(sum(1 / r for r in ranks) / len(ranks), 4), "items": len(ranks)}}), file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", nargs="+", default=[], help="training repositories (owner/name) to index")
    parser.add_argument("--tokenize", action="store_true", help="write the trainer's npz files from --out's lists")
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="bare mirrors <owner>+<name>/repo")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="checkouts and index snapshots")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="one .jsonl.gz a repository")
    parser.add_argument("--max-records", type=int, default=150, help="records searched a repository")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.tokenize:
        tokenize_lists(args.out)
        return 0
    check_allowed(args.repos)
    from codeqa.core.config import Settings
    from eval.realistic.corpus import Corpus, slug
    from eval.realistic.snapshots import SnapshotStore

    by_repo: dict[str, list[dict]] = defaultdict(list)
    for record in load_records():
        by_repo[record["repo"]].append(record)
    corpus, store, settings = Corpus(args.cache, args.mirror), SnapshotStore(args.cache), Settings.from_env()
    recorder = ListRecorder()
    recorder.install()
    args.out.mkdir(parents=True, exist_ok=True)
    for repo in args.repos:
        target = args.out / f"{slug(repo)}.jsonl.gz"
        if target.exists() or not by_repo.get(repo):
            continue
        started = time.time()
        try:
            lists, report = repo_lists(repo, by_repo[repo][: args.max_records], corpus, store, settings, recorder)
        except Exception as exc:  # one repository that cannot be indexed or searched: say so, go on
            print(json.dumps({"repo": repo, "failed": f"{type(exc).__name__}: {exc}"[:300]}), file=sys.stderr, flush=True)
            continue
        partial = target.with_suffix(".partial")
        with gzip.open(partial, "wt", encoding="utf-8") as out:
            out.writelines(json.dumps(item) + "\n" for item in lists)
        partial.rename(target)
        print(json.dumps({"repo": repo, **report, "seconds": round(time.time() - started)}), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
