"""Soak: two indexers and 20 searching clients against one live server, for a bounded time.

    python -m bench.soak_bench [--seconds 60] [--clients 20] [--json]

On a copy of the fixture repo: index it once, start `python app.py` (waitress, embedded Redis,
no LLM), then at the same time
- indexer A runs `preprocessing.py index --wait` again and again, editing the repo before each run;
- indexer B does the same with `--rebuild` (a new generation of tables, then the switch);
- `--clients` threads search without pause (`POST /api/search`, HyDE off).
When time is up it counts what matters: duplicate ids in every table (the repo's tables and the
registry), HTTP 500s, searches without an answer (connection errors, timeouts), and how the
index runs ended (0, or 75 when `--wait` ran out). `tests/test_soak.py` runs it for a shorter
time and requires all three counts to be 0. Talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from codeqa.core.servers import free_port, start_server

REPO = "soak"
QUERIES = ["how is the cart total computed", "parse an order CSV", "format a price for display",
           "add products to stock", "where is the ledger balanced", "Cart.add", "formatPrice",
           "what does make_demo_cart build", "inventory of a store", "apply a discount to an order"]


@dataclass
class Outcome:
    """What the soak saw."""

    seconds: float = 0.0
    searches: int = 0
    statuses: Counter = field(default_factory=Counter)
    unanswered: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    index_runs: dict[str, Counter] = field(default_factory=dict)
    duplicate_ids: dict[str, int] = field(default_factory=dict)
    notices: Counter = field(default_factory=Counter)

    def summary(self) -> dict:
        ordered = sorted(self.latencies_ms) or [0.0]
        return {"seconds": round(self.seconds, 1), "searches": self.searches,
                "answered": self.searches - len(self.unanswered), "statuses": dict(self.statuses),
                "http_500s": sum(n for status, n in self.statuses.items() if status >= 500),
                "unanswered": len(self.unanswered), "unanswered_examples": self.unanswered[:3],
                "search_p50_ms": round(statistics.median(ordered), 1),
                "search_p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
                "index_runs": {name: dict(codes) for name, codes in self.index_runs.items()},
                "duplicate_ids": self.duplicate_ids, "notices": dict(self.notices)}


def _env(data_dir: Path) -> dict:
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "CODEQA_LOCAL_LLM": "0", "LANCEDB_LOG": "error",
           "HF_HUB_OFFLINE": "1", "CODEQA_WRITE_BATCH": "4"}
    env.pop("REDIS_URL", None)
    env.pop("CODEQA_LANCEDB_URI", None)
    return env


def _index(repo: Path, env: dict, *extra: str) -> int:
    run = subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), "index", str(repo), "--name", REPO,
                          "--no-progress", "--wait", "300", *extra], env=env, capture_output=True, text=True)
    if run.returncode not in (0, 75):
        print(run.stderr, file=sys.stderr)
    return run.returncode


def _indexer(name: str, repo: Path, env: dict, until: float, outcome: Outcome, extra: tuple[str, ...]) -> None:
    codes = outcome.index_runs.setdefault(name, Counter())
    edit = 0
    while time.monotonic() < until:
        edit += 1
        (repo / "shop" / f"soak_{name}.py").write_text(
            f'def soak_{name}_{edit}(value: int) -> int:\n    """Edit {edit} of indexer {name}."""\n'
            f"    return value + {edit}\n")
        codes[_index(repo, env, *extra)] += 1


def _client(base: str, seed: int, until: float, outcome: Outcome, lock: threading.Lock) -> None:
    chooser = random.Random(seed)
    while time.monotonic() < until:
        body = json.dumps({"repo": REPO, "query": chooser.choice(QUERIES), "k": 5, "hyde": False}).encode()
        request = urllib.request.Request(base + "/api/search", data=body, headers={"Content-Type": "application/json"})
        started = time.perf_counter()
        status, problem, notices = 0, "", []
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status = response.status
                notices = json.loads(response.read()).get("notices", [])
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.read()
        except (urllib.error.URLError, OSError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        with lock:
            outcome.searches += 1
            if problem:
                outcome.unanswered.append(problem)
            else:
                outcome.statuses[status] += 1
                outcome.latencies_ms.append((time.perf_counter() - started) * 1000)
                outcome.notices.update("being re-indexed" if "re-indexed" in n else "other" for n in notices)


def _duplicates(data_dir: Path) -> dict[str, int]:
    """Rows whose key another row of the same table has, per table of the database."""
    import lancedb

    from codeqa.store.connection import table_names

    db = lancedb.connect(str(data_dir / "lancedb"))
    keys = {"methods": "id", "classes": "id", "modules": "id", "files": "file_path"}
    found: dict[str, int] = {}
    for table in sorted(table_names(db)):
        kind = table.rsplit("__", 1)[-1]
        key = keys.get(kind) or {"codeqa_repos": "name", "codeqa_locks": "name"}[table]
        values = db.open_table(table).to_arrow()[key].to_pylist()
        found[table if "__" not in table else f"{REPO}__{kind}"] = len(values) - len(set(values))
    return found


def soak(seconds: float, clients: int, work: Path) -> Outcome:
    """Run the soak in `work` (a fresh directory) and return what it saw."""
    repo = work / "repo"
    shutil.copytree(ROOT / "tests" / "fixtures" / "sample_repo", repo, symlinks=True)
    data_dir = work / "data"
    env = _env(data_dir)
    if _index(repo, env) != 0:
        raise RuntimeError("the first index run failed")
    port = free_port()
    app = start_server([sys.executable, str(ROOT / "app.py"), "--port", str(port), "--threads", "32"], env,
                       f"http://127.0.0.1:{port}/api/repos", timeout=300)
    outcome = Outcome()
    lock = threading.Lock()
    try:
        started = time.monotonic()
        until = started + seconds
        workers = [threading.Thread(target=_indexer, args=("A", repo, env, until, outcome, ())),
                   threading.Thread(target=_indexer, args=("B", repo, env, until, outcome, ("--rebuild",)))]
        workers += [threading.Thread(target=_client, args=(f"http://127.0.0.1:{port}", seed, until, outcome, lock))
                    for seed in range(clients)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        outcome.seconds = time.monotonic() - started
    finally:
        app.terminate()
        app.wait(timeout=60)
    outcome.duplicate_ids = _duplicates(data_dir)
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codeqa-soak-") as work:
        summary = soak(args.seconds, args.clients, Path(work)).summary()
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
    failed = summary["http_500s"] or summary["unanswered"] or any(summary["duplicate_ids"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
