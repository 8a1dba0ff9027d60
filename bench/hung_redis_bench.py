"""A hung Redis against the production server: how long page loads wait with redis-server stopped.

    python -m bench.hung_redis_bench [--loads 5] [--data-dir DIR --repo NAME]

Indexes the sample repo into a temporary data directory (unless given one), starts `python
app.py` (waitress) with its embedded Redis, loads the conversation once, then stops the
redis-server with SIGSTOP and, in three rounds, makes `--loads` page loads (`GET /`) at once,
each with its own session, and times them, with `/api/status` and `/api/history` beside them:
the stall's first requests (each waits for Redis once), requests during the quiet period that
follows (they skip Redis), and requests once it is over (one tries Redis again for all). Then
SIGCONT, and the conversation must be back. Reports each request's seconds and the slowest;
the issue's bar is 3 s for a page load. Talks to 127.0.0.1 only. Not a test.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from codeqa.chat.chat_store import QUIET_SECONDS
from codeqa.core.servers import free_port, start_server

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "fixtures" / "sample_repo"


def timed_get(url: str) -> tuple[float, int]:
    """Seconds a GET took, and its status, with a fresh cookie session (a new visitor)."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    started = time.perf_counter()
    try:
        with opener.open(url, timeout=120) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    return time.perf_counter() - started, status


def at_once(urls: list[str]) -> list[tuple[str, float, int]]:
    """Each URL fetched from its own thread, all started together."""
    results: list[tuple[str, float, int]] = []
    threads = [threading.Thread(target=lambda u=url: results.append((u, *timed_get(u)))) for url in urls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def report(title: str, base: str, results: list[tuple[str, float, int]]) -> float:
    print(f"{title}:")
    for url, seconds, status in sorted(results, key=lambda r: r[1]):
        print(f"  {url.removeprefix(base):32} {status}  {seconds:6.2f} s")
    pages = [seconds for url, seconds, _ in results if url.endswith("/")]
    print(f"  slowest page load {max(pages):.2f} s")
    return max(pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=5, help="page loads at once in each round")
    parser.add_argument("--data-dir", type=Path, help="an indexed data directory (default: index the sample repo)")
    parser.add_argument("--repo", default="sample")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codeqa-hung-redis-") as scratch:
        data_dir = args.data_dir or Path(scratch) / "data"
        env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
        if args.data_dir is None:
            subprocess.run([sys.executable, "-m", "codeqa", "index", str(SAMPLE), "--name", args.repo,
                            "--no-progress"], env=env, check=True, stdout=subprocess.DEVNULL)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server([sys.executable, str(ROOT / "app.py"), "--port", str(port)], env,
                              f"{base}/api/repos", timeout=180)
        try:
            run_rounds(base, args.repo, data_dir, args.loads)
        finally:
            server.terminate()
            server.wait(30)


def run_rounds(base: str, repo: str, data_dir: Path, loads: int) -> None:
    urls = [f"{base}/"] * loads + [f"{base}/api/status", f"{base}/api/history?repo={repo}"]
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    _, status = timed_get(urls[-1])
    assert status == 200, f"the conversation did not load ({status})"
    redis_pid = json.loads((data_dir / "redis" / "server.json").read_text())["pid"]
    os.kill(redis_pid, signal.SIGSTOP)
    try:
        worst = report("Redis stopped: the first requests", base, at_once(urls))
        worst = max(worst, report("during the quiet period", base, at_once(urls)))
        time.sleep(QUIET_SECONDS)
        worst = max(worst, report(f"after the {QUIET_SECONDS:g} s quiet period", base, at_once(urls)))
    finally:
        os.kill(redis_pid, signal.SIGCONT)
    time.sleep(QUIET_SECONDS)
    _, status = timed_get(urls[-1])
    print(f"Redis continued: history {status}; slowest page load while stopped {worst:.2f} s (bar: 3 s)")


if __name__ == "__main__":
    main()
