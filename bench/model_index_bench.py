"""A full index with each embedding model, in turn, on the same tree: wall time and peak RSS.

    python -m bench.model_index_bench [--package django==5.2.8] [--subdir django] [--path TREE]
                                      [--models codeqa-static all-MiniLM-L6-v2] [--rounds 1] [--json out.json]

Each run is `codeqa index` from nothing in a fresh interpreter (`CODEQA_EMBEDDING_MODEL` set per
run), as a user runs it: the wall time until every vector is in, the index's own stage times, and
the run's peak RSS (`wait4`, the CLI process and its parse workers, the largest of them). The
models run alternately, round after round, so a box whose load drifts weighs on each alike; the
ratios are of the best run of each. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.index_bench import fetch_source
from codeqa.core.config import Settings
from codeqa.store import registry
from codeqa.store.connection import connect

ROOT = Path(__file__).resolve().parent.parent


def index_once(tree: Path, model: str, data_dir: Path) -> dict:
    """One full index run of `tree` with `model`, from an empty data folder."""
    shutil.rmtree(data_dir, ignore_errors=True)
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "CODEQA_EMBEDDING_MODEL": model, "CODEQA_LOCAL_LLM": "0"}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, str(ROOT / "preprocessing.py"), "index", str(tree), "--name", "bench",
                              "--no-progress"], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"index run with {model} failed (exit {child.returncode})")
    stats = registry.get_repo(connect(Settings(data_dir=data_dir)), "bench").stats
    return {"model": model, "wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "rows": stats.rows, "files": stats.files, "timings": stats.timings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="django==5.2.8")
    parser.add_argument("--subdir", default="django", help="the part of the sdist to index")
    parser.add_argument("--path", type=Path, help="index this tree instead of the package's --subdir")
    parser.add_argument("--models", nargs="+", default=["codeqa-static", "all-MiniLM-L6-v2"])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tree = args.path or fetch_source(args.package) / args.subdir
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for round_number in range(args.rounds):
            for model in args.models:
                run = {"round": round_number + 1, **index_once(tree, model, Path(tmp) / "data")}
                runs.append(run)
                print(json.dumps(run), flush=True)
    best = {m: min((r for r in runs if r["model"] == m), key=lambda r: r["wall_s"]) for m in args.models}
    first = args.models[0]
    print(f"\n{tree.name}: {best[first]['files']} files, {best[first]['rows']} rows; best of {args.rounds}\n")
    print("| model | wall s | peak RSS MB | × the first model's wall |\n|---|---:|---:|---:|")
    for model, run in best.items():
        print(f"| {model} | {run['wall_s']} | {run['peak_rss_mb']} | {run['wall_s'] / best[first]['wall_s']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"tree": str(tree), "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
