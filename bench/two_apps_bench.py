"""Two app instances serving one team (README: "Deploying for a team"): a load test across both.

    python -m bench.two_apps_bench [--clients 8] [--rounds 10] [--path TREE]

Starts what a team runs, on loopback: Debian's redis-server (`make redis`), moto's S3 server
holding the index (the sample repo, or `--path TREE`, indexed into the bucket first), and two
`python app.py` instances with their own data dirs sharing Redis, the bucket and the secret key.
Each client (its own session cookie) does `--rounds` rounds, each on the other instance than the
last: a search, an @codebase chat turn (read to its end; no LLM answers, so it measures the
search, the context and Redis), then it reads its history on the other instance and checks it
holds every turn so far. Reports p50/p95 per kind of request and the error count (a failed
request, or a history missing a turn). Bounded in rounds; talks to 127.0.0.1 only. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from s3_loopback import BUCKET, start_s3  # noqa: E402
from team_loopback import NO_LLM, Client, start_app, start_redis  # noqa: E402

from codeqa.core.config import Settings  # noqa: E402
from codeqa.core.servers import free_port  # noqa: E402

QUESTIONS = ["where is make_demo_cart built?", "how is an order parsed?", "where are carts totalled?",
             "how is a product added to a cart?", "where is the checkout done?"]


def client_loop(number: int, apps: list[str], repo: str, rounds: int, timings: dict, errors: list[str]) -> None:
    client = Client()
    for turn in range(rounds):
        here, there = apps[(number + turn) % 2], apps[(number + turn + 1) % 2]
        question = QUESTIONS[(number + turn) % len(QUESTIONS)]
        try:
            for kind, call in (("search", lambda: client.search(here, repo, question)),
                               ("chat", lambda: client.chat(here, repo, f"@codebase {question}")),
                               ("history", lambda: client.history(there, repo))):
                started = time.perf_counter()
                result = call()
                timings[kind].append((time.perf_counter() - started) * 1000)
            if sum(m["role"] == "user" for m in result) != turn + 1:
                errors.append(f"client {number}: the history on {there} lacks turn {turn + 1}")
        except Exception as exc:  # noqa: BLE001 - every failure is counted, the run goes on
            errors.append(f"client {number}: {type(exc).__name__}: {exc}")


def percentiles(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)}


def main() -> None:
    from codeqa.indexing.indexer import index_repo

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--path", type=Path, default=ROOT / "tests" / "fixtures" / "sample_repo")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="two-apps-"))
    s3, aws = start_s3(free_port())
    redis_server, redis_url = start_redis(workdir)
    apps = []
    try:
        uri = f"s3://{BUCKET}/bench"
        os.environ.update(aws)
        started = time.perf_counter()
        report = index_repo(args.path, Settings(data_dir=workdir / "indexer", lancedb_uri=uri, local_llm=False),
                            name="bench", progress=False)
        indexed_s = time.perf_counter() - started
        env = {**aws, "CODEQA_LANCEDB_URI": uri, "REDIS_URL": redis_url, "CODEQA_SECRET_KEY": "bench-secret",
               "CODEQA_LLM_BASE_URL": NO_LLM}
        apps = [start_app(workdir / name, env) for name in ("app-a", "app-b")]
        timings: dict[str, list[float]] = {"search": [], "chat": [], "history": []}
        errors: list[str] = []
        threads = [threading.Thread(target=client_loop, args=(n, [a[1] for a in apps], "bench", args.rounds,
                                                              timings, errors)) for n in range(args.clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        result = {"rows": report.rows, "indexed_s": round(indexed_s, 1), "clients": args.clients,
                  "rounds": args.rounds, "wall_s": round(time.perf_counter() - started, 1),
                  **{kind: percentiles(values) for kind, values in timings.items() if values},
                  "errors": len(errors), "error_examples": errors[:5], "load": os.getloadavg()}
        print(json.dumps(result, indent=1))
    finally:
        for proc, _ in apps:
            proc.terminate()
            proc.wait(timeout=60)
        redis_server.kill()
        s3.terminate()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
