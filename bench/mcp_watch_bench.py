"""How soon an MCP server with `--watch` can search a save (indexing/jobs.py).

    python -m bench.mcp_watch_bench [--root DIR --data DIR --name NAME --file PATH] [--rounds 4] [--json out.json]

The server's index jobs run in this process, with a real file watcher, on an indexed tree
(default: a copy of Django 5.2.8's whole sdist, indexed afresh into a temporary folder). Each
round appends a line to one file and times the save until the refresh it starts is searchable,
two ways taking turns: its new rows folded into the indexes in the run (what the server did
before), and left to the watcher, which folds them once the tree is quiet (what it does now).
Between rounds the watcher's fold is waited for.
Not a test.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

from bench.rounds import report, rounds_parser
from codeqa.core.config import Settings
from codeqa.indexing.indexer import index_repo
from codeqa.indexing.jobs import IndexJobs, _Job
from codeqa.store.connection import connect

EDITED = "django/db/models/query.py"


class Jobs(IndexJobs):
    """The server's jobs, whose refreshes fold in the run while `fold_in_run` (the server before)."""

    fold_in_run = False

    def _folds_in_run(self, job: _Job) -> bool:
        return self.fold_in_run or super()._folds_in_run(job)


def job_id(jobs: IndexJobs, name: str) -> int:
    status = jobs.status(name)
    return status.id if status is not None else 0


def searchable_after(jobs: IndexJobs, name: str, last: int, ended: bool = False) -> bool:
    """Whether a job after job `last` has made its run searchable (and, with `ended`, ended)."""
    status = jobs.status(name)
    return status is not None and status.id != last and status.searchable_runs >= 1 and not (ended and status.active)


def until(done, every: float = 0.02) -> None:
    while not done():
        time.sleep(every)


def run(root: Path, settings: Settings, name: str, edited: str, rounds: int) -> dict:
    jobs = Jobs(settings, connect(settings), watch=True)
    ways = {"fold in run": True, "fold when quiet": False}
    timings: dict[str, list[float]] = {way: [] for way in ways}
    folds: list[float] = []
    path = root / edited
    try:
        jobs.start(root, name, "index")  # nothing to do; then it watches
        until(lambda: jobs.tree(name) is not None, 0.2)
        time.sleep(3)  # the watch in place
        for round_ in range(rounds):
            for way in list(ways)[round_ % 2 :] + list(ways)[: round_ % 2]:
                jobs.fold_in_run = ways[way]
                last = job_id(jobs, name)
                path.write_text(path.read_text() + f"\n# {way} {round_}\n")
                started = time.perf_counter()
                until(partial(searchable_after, jobs, name, last))
                timings[way].append(time.perf_counter() - started)
                until(partial(searchable_after, jobs, name, last, ended=True))
                ended = time.perf_counter()
                until(lambda: name not in jobs._unfolded, 0.1)  # the watcher's fold, when left to it
                if not ways[way]:
                    folds.append(time.perf_counter() - ended)
                time.sleep(1)
    finally:
        jobs.close()
    return {
        "root": root.name,
        "edited": edited,
        **{f"{way}_s": [round(t, 3) for t in times] for way, times in timings.items()},
        **{f"{way}_p50_s": round(statistics.median(times), 3) for way, times in timings.items()},
        "fold_when_quiet_after_run_s": [round(t, 2) for t in folds],
    }


def main() -> None:
    parser = rounds_parser(__doc__ or "", 4)
    parser.add_argument("--root", type=Path, help="an indexed tree (with --data, --name, --file)")
    parser.add_argument("--data", type=Path)
    parser.add_argument("--name")
    parser.add_argument("--file", default=EDITED, help="the file to append to, relative to the root")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codeqa-mcp-watch-") as work:
        if args.root is None:
            from bench.index_bench import fetch_source

            args.root, args.data, args.name = Path(work) / "django", Path(work) / "data", "django-sdist"
            shutil.copytree(fetch_source("django==5.2.8"), args.root, symlinks=True)
            index_repo(args.root, Settings.from_env(data_dir=args.data), name=args.name, progress=False)
        result = run(args.root.resolve(), Settings.from_env(data_dir=args.data), args.name, args.file, args.rounds)
    report(result, args.json)


if __name__ == "__main__":
    main()
