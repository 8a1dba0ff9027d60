"""Search from memory, two checkouts of CodeQA paired: before and after a change, on one index.

    python -m bench.search_pair_bench --before ../old-checkout [--after .] [--rounds 2]
        [--data-dir DIR --repo NAME]

On a box whose speed drifts (a shared VM: the same search bench read a quarter apart in runs
minutes apart), two runs one after the other do not compare. Here both checkouts answer side by side: each in a
process of its own that holds the repo in memory, the same docstring queries in blocks of 10
that alternate between them (one process runs at a time, which goes first alternating too).
HyDE and rerank off, as `search_bench.py`'s plain search. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 10
WARM_UP = 10


def serve(data_dir: Path, repo: str, queries: int) -> None:
    """The worker: hold the repo, then answer each stdin line `start end` with those queries'
    total times (ms) as one JSON list."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LANCEDB_LOG", "error")
    from bench.search_bench import docstring_queries, hold_in_memory
    from codeqa.core.config import Settings
    from codeqa.search.options import SearchOptions
    from codeqa.search.retrieval import Retriever

    settings = Settings.from_env(data_dir=data_dir, lancedb_uri="")
    questions = docstring_queries(settings, queries, repo)
    retriever = Retriever(settings, threads=1)
    hold_in_memory(retriever, repo)
    options = SearchOptions(k=10, hyde=False, rerank=False)
    for question in questions[:WARM_UP]:
        retriever.search(repo, question, options)
    print(json.dumps({"queries": len(questions)}), flush=True)
    for line in sys.stdin:
        start, end = map(int, line.split())
        print(json.dumps([retriever.search(repo, q, options).timings_ms["total"] for q in questions[start:end]]),
              flush=True)


def main() -> None:
    from bench.search_bench import DATA, REPO, summary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the code before the change")
    parser.add_argument("--after", type=Path, default=ROOT, help="a checkout of the code after it (default: this one)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--data-dir", type=Path, default=DATA, help="an index both can read (default: search_bench's)")
    parser.add_argument("--repo", default=REPO)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.data_dir, args.repo, args.queries)
        return
    workers = {}
    for side, checkout in (("before", args.before.resolve()), ("after", args.after.resolve())):
        # This file runs as the worker of both; `codeqa` (and `bench.search_bench`) come from the checkout.
        command = [sys.executable, __file__, "--serve", "--before", ".",
                   "--data-dir", str(args.data_dir.resolve()), "--repo", args.repo, "--queries", str(args.queries)]
        workers[side] = subprocess.Popen(command, cwd=checkout, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, env={**os.environ, "PYTHONPATH": str(checkout)})
    available = min(json.loads(worker.stdout.readline())["queries"] for worker in workers.values())
    times: dict[str, list[float]] = {side: [] for side in workers}
    for round_ in range(args.rounds):
        for number, start in enumerate(range(WARM_UP, available, BLOCK)):
            order = ["before", "after"] if (number + round_) % 2 == 0 else ["after", "before"]
            for side in order:
                workers[side].stdin.write(f"{start} {min(start + BLOCK, available)}\n")
                workers[side].stdin.flush()
                times[side] += json.loads(workers[side].stdout.readline())
    for worker in workers.values():
        worker.stdin.close()
        worker.wait()
    result = {side: summary(values) for side, values in times.items()}
    result["p50_ratio"] = round(result["after"]["p50_ms"] / result["before"]["p50_ms"], 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
