"""What a watcher's run spends walking the tree after a one-file save (parsing/repo_files.py).

    python -m bench.live_walk_bench [--root DIR] [--rounds 10] [--json out.json]

Each round appends a line to one file (in the folder holding the most files: the most a
folder's scan costs) and
walks the tree both ways, taking turns which goes first: whole (`walk_repo`, what every run did
before) and with a `LiveWalk` told the path that changed (what `codeqa watch` does now). The two
reports are compared (files with their metadata, skips in order). `--root` defaults to Django
5.2.8's sdist. The file is restored at the end. Not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from codeqa.parsing.repo_files import LiveWalk, WalkReport, walk_repo


def seen(report: WalkReport) -> tuple[list[tuple], list[tuple[str, str]]]:
    return [(f.path, f.language, f.size, f.mtime_ns) for f in report.files], report.skips


def folder_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def run(root: Path, rounds: int) -> dict:
    whole = walk_repo(root)
    folders = Counter(folder_of(f.path) for f in whole.files)
    edited = max(whole.files, key=lambda f: (folders[folder_of(f.path)], f.path.count("/")))
    path = root / edited.path
    original = path.read_bytes()
    live = LiveWalk(root)
    live.walk()
    timings: dict[str, list[float]] = {"whole": [], "live": []}
    try:
        for round_ in range(rounds):
            path.write_bytes(original + f"\n# round {round_}\n".encode())
            reports = {}
            for way in ("whole", "live") if round_ % 2 == 0 else ("live", "whole"):
                started = time.perf_counter()
                reports[way] = walk_repo(root) if way == "whole" else live.walk([edited.path])
                timings[way].append(time.perf_counter() - started)
            if seen(reports["whole"]) != seen(reports["live"]):
                raise SystemExit(f"round {round_}: the live walk differs from the whole walk")
    finally:
        path.write_bytes(original)
    return {
        "root": root.name,
        "files": len(whole.files),
        "folders": len(folders),
        "edited": edited.path,
        **{f"{way}_s": [round(t, 4) for t in times] for way, times in timings.items()},
        **{f"{way}_p50_s": round(statistics.median(times), 4) for way, times in timings.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.root is None:
        from bench.index_bench import fetch_source

        args.root = fetch_source("django==5.2.8")
    result = run(args.root.resolve(), args.rounds)
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
