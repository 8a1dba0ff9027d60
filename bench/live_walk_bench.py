"""What walking the tree again costs after a one-file save (parsing/repo_files.py).

    python -m bench.live_walk_bench [--root DIR] [--rounds 10] [--json out.json]

Each round appends a line to one file (in the folder holding the most files: the most a
folder's scan costs) and walks the tree three ways, taking turns which goes first: whole
(`walk_repo`, what every run did before), with a `LiveWalk` told the path that changed (what
`codeqa watch` does), and with another `LiveWalk` finding it by stats (`LiveWalk.refresh`, what
an MCP server's check before `search_code` on a folder does); then that one again with nothing
changed (the common case of that check). The reports are compared (files with their metadata,
skips in order). `--root` defaults to Django 5.2.8's sdist. The file is restored at the end.
Not a test.
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
    live, stats = LiveWalk(root), LiveWalk(root)
    live.walk()
    stats.walk()
    walks = {
        "whole": lambda: walk_repo(root),
        "live": lambda: live.walk([edited.path]),
        "refresh": stats.refresh,
    }
    timings: dict[str, list[float]] = {way: [] for way in (*walks, "refresh_unchanged")}
    try:
        for round_ in range(rounds):
            path.write_bytes(original + f"\n# round {round_}\n".encode())
            reports = {}
            for way in list(walks)[round_ % 3 :] + list(walks)[: round_ % 3]:
                started = time.perf_counter()
                reports[way] = walks[way]()
                timings[way].append(time.perf_counter() - started)
            started = time.perf_counter()
            reports["refresh_unchanged"] = stats.refresh()
            timings["refresh_unchanged"].append(time.perf_counter() - started)
            for way in ("live", "refresh", "refresh_unchanged"):
                if seen(reports["whole"]) != seen(reports[way]):
                    raise SystemExit(f"round {round_}: the {way} walk differs from the whole walk")
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
