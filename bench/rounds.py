"""The command line shared by benches that index a copy of a tree in a temporary folder and time
a number of rounds: `--rounds`, `--json`; the result printed as one JSON line."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path


def run_rounds(doc: str, run: Callable[[int, Path], dict], default_rounds: int, prefix: str) -> None:
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=default_rounds)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix=prefix) as work:
        result = run(args.rounds, Path(work))
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
