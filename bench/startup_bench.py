"""Start-up, re-index and memory of each process, as a user meets them (the sample repo).

    python -m bench.startup_bench [--checkout DIR [DIR ...]] [--runs 5] [--json out.json]

From the shell prompt to the printed result, in fresh processes: `codeqa --help`, a CLI
search, a one-file re-index, and an MCP server from its start to its first `search_code`
answer (a real MCP client). Also the resident memory (peak RSS) of the indexer, of the MCP
server after that answer, and of the web app after one search through `/api/search`.
`--checkout` measures other checkouts of CodeQA (an older commit, say) with this Python, their
runs alternating: the flat layout before the `codeqa/` package is recognised, so before and
after come from one script and one stretch of time. Medians of `--runs` (peak RSS: the
largest). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent

from codeqa.core.servers import free_port, start_server
from tests.mcp_client import mcp_session

SAMPLE = ROOT / "tests" / "fixtures" / "sample_repo"
QUERY = "helper function that doubles the area"


def commands(checkout: Path) -> dict[str, list[str]]:
    """Each face's command in `checkout`: the `codeqa` package, or the flat modules before it."""
    py = sys.executable
    if (checkout / "codeqa" / "__main__.py").exists():
        return {"help": [py, "-m", "codeqa", "--help"], "index": [py, "-m", "codeqa", "index"],
                "search": [py, "-m", "codeqa", "search"], "mcp": [py, "-m", "codeqa", "mcp"],
                "serve": [py, str(checkout / "app.py")]}
    return {"help": [py, str(checkout / "codeqa.py"), "--help"], "index": [py, str(checkout / "preprocessing.py"), "index"],
            "search": [py, str(checkout / "retrieval.py"), "search"], "mcp": [py, str(checkout / "mcp_server.py")],
            "serve": [py, str(checkout / "app.py")]}


def timed(command: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, peak RSS in MB) of one fresh process, measured by GNU time."""
    report = tempfile.NamedTemporaryFile(suffix=".time")
    started = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, *command], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    return elapsed, int(Path(report.name).read_text().split()[-1]) // 1024


def rss_mb(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss // 2**20


class Face:
    """One checkout's processes on its own copy of the sample repo and its own index."""

    def __init__(self, checkout: Path) -> None:
        self.checkout = checkout
        self.cmd = commands(checkout)
        self.work = Path(tempfile.mkdtemp(prefix="codeqa-startup-"))
        self.repo = shutil.copytree(SAMPLE, self.work / "repo")
        self.data = self.work / "data"
        self.env = {**os.environ, "PYTHONPATH": str(checkout), "CODEQA_DATA_DIR": str(self.data),
                    "HF_HUB_OFFLINE": "1", "CODEQA_LOCAL_LLM": "0", "CODEQA_LLM_BASE_URL": "http://127.0.0.1:9/v1",
                    "LANCEDB_LOG": "error"}
        self.env.pop("REDIS_URL", None)
        self.runs: dict[str, list[float]] = {}

    def record(self, name: str, value: float) -> None:
        self.runs.setdefault(name, []).append(value)

    def index(self, first: bool, run: int = 0) -> None:
        if not first:  # one more function in one file: a one-file re-index
            edited = self.repo / "shop" / "models.py"
            edited.write_text(edited.read_text() + f"\n\ndef added_{run}():\n    return {run}\n")
        seconds, rss = timed([*self.cmd["index"], str(self.repo), "--name", "sample", "--no-progress"], self.env)
        self.record("first_index_s" if first else "one_file_reindex_s", seconds)
        self.record("indexer_peak_rss_mb", rss)

    def help_and_search(self) -> None:
        self.record("help_s", timed(self.cmd["help"], self.env)[0])
        seconds, rss = timed([*self.cmd["search"], "--repo", "sample", "--no-hyde", QUERY], self.env)
        self.record("cli_search_s", seconds)
        self.record("cli_search_peak_rss_mb", rss)

    def mcp(self) -> None:
        started = time.perf_counter()
        with mcp_session(self.data, self.work, command=(self.cmd["mcp"][0], self.cmd["mcp"][1:]),
                         env={"PYTHONPATH": str(self.checkout), "CODEQA_LOCAL_LLM": "0"}) as session:
            assert session.data("search_code", query=QUERY, repo="sample")["results"]
            self.record("mcp_start_to_first_answer_s", time.perf_counter() - started)
            server = [p for p in psutil.Process().children(recursive=True) if "mcp" in " ".join(p.cmdline())]
            self.record("mcp_server_rss_mb", rss_mb(server[0].pid))

    def web(self) -> None:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        started = time.perf_counter()
        app = start_server([*self.cmd["serve"], "--port", str(port)], self.env, base + "/api/repos", timeout=300)
        try:
            request = urllib.request.Request(base + "/api/search", method="POST",
                                             headers={"Content-Type": "application/json"},
                                             data=json.dumps({"repo": "sample", "query": QUERY, "hyde": False}).encode())
            urllib.request.urlopen(request, timeout=300).read()
            self.record("web_start_to_first_search_s", time.perf_counter() - started)
            self.record("web_app_rss_mb", rss_mb(app.pid))
        finally:
            app.terminate()
            app.wait(timeout=60)

    def summary(self) -> dict[str, object]:
        return {"checkout": str(self.checkout), **{
            name: (max(values) if name.endswith("_mb") else round(statistics.median(values), 2))
            for name, values in self.runs.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, nargs="+", default=[ROOT],
                        help="one or more checkouts; their runs alternate, so load on the box hits each alike")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    faces = [Face(path.resolve()) for path in args.checkout]
    try:
        for face in faces:
            face.index(first=True)
        for run in range(args.runs):
            for face in faces:
                face.help_and_search()
                face.index(first=False, run=run)
                face.mcp()
                face.web()
    finally:
        for face in faces:
            shutil.rmtree(face.work, ignore_errors=True)
    results = [face.summary() for face in faces]
    print(json.dumps(results, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
