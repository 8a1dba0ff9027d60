"""20 simulated users doing search and chat against the production server (waitress).

    python -m bench.load_bench [--users 20] [--seconds 90] [--data-dir DIR --repo NAME]

Starts `python app.py` on a loopback port with the embedded Redis and LLM, then each user
(own cookie session) loops: four searches, then one @codebase chat read as a stream, pausing
between actions as a person reading would (`--think`, 0 for none). Users arrive spread over
the first `--ramp` seconds (default: one think time), as people do; `--ramp 0` starts all of
them in the same instant, a burst that measures how long the server takes to drain 20
simultaneous searches. Reports search latency p50/p95, chat time to first token p50/p95 and
the error count. Bounded in time and requests; talks to 127.0.0.1 only. Not a test.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from codeqa.core.servers import free_port, start_server

QUESTIONS = ["how are database migrations applied", "where is the CSRF token checked",
             "how does the template engine find templates", "where are URL patterns resolved",
             "how is a model saved to the database", "where are session cookies signed",
             "how does the ORM build a SQL query", "where are middleware hooks called"]


def start_app(data_dir: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "CODEQA_ANSWER_TOKENS": "32",
           "CODEQA_CONTEXT_TOKENS": "600", "LANCEDB_LOG": "error", "HF_HUB_OFFLINE": "1"}
    return start_server([sys.executable, str(ROOT / "app.py"), "--port", str(port), "--threads", "32"], env,
                        f"http://127.0.0.1:{port}/api/repos", timeout=180)


class User:
    def __init__(self, base: str, repo: str, seed: int) -> None:
        self.base = base
        self.repo = repo
        self.random = random.Random(seed)
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.search_ms: list[float] = []
        self.search_at: list[float] = []  # when each search started (time.perf_counter())
        self.first_token_ms: list[float] = []
        self.errors: list[str] = []

    def post(self, path: str, body: dict):
        request = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        return self.opener.open(request, timeout=600)

    def search(self) -> None:
        started = time.perf_counter()
        try:
            self.post("/api/search", {"repo": self.repo, "query": self.random.choice(QUESTIONS), "k": 10}).read()
            self.search_ms.append((time.perf_counter() - started) * 1000)
            self.search_at.append(started)
        except (urllib.error.URLError, OSError) as exc:
            self.errors.append(f"search: {exc}")

    def chat(self) -> None:
        started = time.perf_counter()
        try:
            response = self.post("/api/chat", {"repo": self.repo, "hyde": False,
                                               "message": "@codebase " + self.random.choice(QUESTIONS)})
            first_token = None
            for raw in response:
                event = raw.decode().rstrip("\n").removeprefix("event: ")
                if event == "token" and first_token is None:
                    first_token = (time.perf_counter() - started) * 1000
                    self.first_token_ms.append(first_token)
                elif event == "error":
                    self.errors.append("chat: error event")
        except (urllib.error.URLError, OSError) as exc:
            self.errors.append(f"chat: {exc}")

    def pause(self, think: float) -> None:
        """A person reads between actions: think/2 to 3*think/2 seconds."""
        time.sleep(self.random.uniform(think / 2, think * 1.5))

    def run(self, until: float, rounds: int, think: float, arrive_after: float) -> None:
        time.sleep(arrive_after)
        for _ in range(rounds):
            if time.time() > until:
                return
            for _ in range(4):
                self.search()
                self.pause(think)
            self.chat()
            self.pause(think)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--think", type=float, default=2.0, help="mean pause between a user's actions (s); 0 = none")
    parser.add_argument("--ramp", type=float, help="users arrive evenly over this many seconds "
                        "(default: --think; 0 = all at once)")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "bench" / ".cache" / "search-data")
    parser.add_argument("--repo", default="django-sdist")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    port = free_port()
    server = start_app(args.data_dir, port)
    try:
        base = f"http://127.0.0.1:{port}"
        warm = User(base, args.repo, -1)  # first queries load the indexes: measure steady state
        for _ in range(3):
            warm.search()
        users = [User(base, args.repo, seed) for seed in range(args.users)]
        until = time.time() + args.seconds
        ramp = args.think if args.ramp is None else args.ramp
        threads = [threading.Thread(target=u.run, args=(until, args.rounds, args.think, ramp * i / len(users)))
                   for i, u in enumerate(users)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
    searches = [ms for u in users for ms in u.search_ms]
    first_tokens = [ms for u in users for ms in u.first_token_ms]
    errors = [e for u in users for e in u.errors]
    results = {"cold_first_search_ms": round(warm.search_ms[0], 1) if warm.search_ms else None,
               "users": args.users, "think_s": args.think, "ramp_s": ramp, "seconds": round(elapsed, 1), "searches": len(searches),
               "search_p50_ms": round(percentile(searches, 0.5), 1),
               "search_p95_ms": round(percentile(searches, 0.95), 1),
               "chats": len(first_tokens), "first_token_p50_ms": round(percentile(first_tokens, 0.5)),
               "first_token_p95_ms": round(percentile(first_tokens, 0.95)),
               "search_mean_ms": round(statistics.mean(searches), 1) if searches else None,
               "errors": len(errors), "error_examples": errors[:5],
               "search_timeline": sorted([round(at - started, 2), round(ms)] for u in users
                                         for at, ms in zip(u.search_at, u.search_ms))}
    print(json.dumps({k: v for k, v in results.items() if k != "search_timeline"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
