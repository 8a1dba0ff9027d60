"""The command line shared by benches that time a number of rounds: `--rounds`, `--json`; the
result printed as one JSON line. `run_rounds` for those that index a copy of a tree in a
temporary folder; `rounds_parser` and `report` for those that need arguments of their own."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path


def rounds_parser(doc: str, default_rounds: int) -> argparse.ArgumentParser:
    """A parser with `--rounds` and `--json`, described by the first paragraph of `doc`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=default_rounds)
    parser.add_argument("--json", type=Path)
    return parser


def report(result: dict, json_path: Path | None) -> None:
    """Print `result` as one JSON line, and write it to `json_path` when given."""
    print(json.dumps(result))
    if json_path:
        json_path.write_text(json.dumps(result, indent=1) + "\n")


def run_rounds(doc: str, run: Callable[[int, Path], dict], default_rounds: int, prefix: str) -> None:
    args = rounds_parser(doc, default_rounds).parse_args()
    with tempfile.TemporaryDirectory(prefix=prefix) as work:
        result = run(args.rounds, Path(work))
    report(result, args.json)
