"""Start-up, re-index and memory of each process, as a user meets them (the sample repo).

    python bench/startup_bench.py [--checkout DIR] [--runs 5] [--json out.json]

From the shell prompt to the printed result, in fresh processes: `codeqa --help`, a CLI
search, a one-file re-index, and an MCP server from its start to its first `search_code`
answer (a real MCP client). Also the resident memory (peak RSS) of the indexer, of the MCP
server after that answer, and of the web app after one search through `/api/search`.
`--checkout` measures another checkout of CodeQA (an older commit, say) with this Python:
the flat layout before the `codeqa/` package is recognised, so before and after come from one
script. Medians of `--runs`. Not a test.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from codeqa.core.servers import free_port, start_server  # noqa: E402
from mcp_client import mcp_session  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    cmd = commands(checkout)
    work = Path(tempfile.mkdtemp(prefix="codeqa-startup-"))
    repo = shutil.copytree(SAMPLE, work / "repo")
    data = work / "data"
    env = {**os.environ, "PYTHONPATH": str(checkout), "CODEQA_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1",
           "CODEQA_LOCAL_LLM": "0", "CODEQA_LLM_BASE_URL": "http://127.0.0.1:9/v1", "LANCEDB_LOG": "error"}
    env.pop("REDIS_URL", None)
    results: dict[str, object] = {"checkout": str(checkout)}
    try:
        first = timed([*cmd["index"], str(repo), "--name", "sample", "--no-progress"], env)
        results["first_index_s"], results["indexer_peak_rss_mb"] = round(first[0], 2), first[1]
        help_s = [timed(cmd["help"], env)[0] for _ in range(args.runs)]
        search = [timed([*cmd["search"], "--repo", "sample", "--no-hyde", QUERY], env) for _ in range(args.runs)]
        edited = repo / "shop" / "models.py"
        reindex = []
        for run in range(args.runs):
            edited.write_text(edited.read_text() + f"\n\ndef added_{run}():\n    return {run}\n")
            reindex.append(timed([*cmd["index"], str(repo), "--name", "sample", "--no-progress"], env))
        results.update({
            "help_s": round(statistics.median(help_s), 2),
            "cli_search_s": round(statistics.median(s for s, _ in search), 2),
            "cli_search_peak_rss_mb": max(m for _, m in search),
            "one_file_reindex_s": round(statistics.median(s for s, _ in reindex), 2),
            "one_file_reindex_peak_rss_mb": max(m for _, m in reindex),
        })
        mcp_s, mcp_rss = [], []
        for _ in range(args.runs):
            started = time.perf_counter()
            with mcp_session(data, work, command=(cmd["mcp"][0], cmd["mcp"][1:]),
                             env={"PYTHONPATH": str(checkout), "CODEQA_LOCAL_LLM": "0"}) as mcp:
                assert mcp.data("search_code", query=QUERY, repo="sample")["results"]
                mcp_s.append(time.perf_counter() - started)
                server = [p for p in psutil.Process().children(recursive=True) if "mcp" in " ".join(p.cmdline())]
                mcp_rss.append(rss_mb(server[0].pid))
        results["mcp_start_to_first_answer_s"] = round(statistics.median(mcp_s), 2)
        results["mcp_server_rss_mb"] = max(mcp_rss)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        started = time.perf_counter()
        app = start_server([*cmd["serve"], "--port", str(port)], env, base + "/api/repos", timeout=300)
        try:
            request = urllib.request.Request(base + "/api/search", method="POST", headers={"Content-Type": "application/json"},
                                             data=json.dumps({"repo": "sample", "query": QUERY, "hyde": False}).encode())
            urllib.request.urlopen(request, timeout=300).read()
            results["web_start_to_first_search_s"] = round(time.perf_counter() - started, 2)
            results["web_app_rss_mb"] = rss_mb(app.pid)
        finally:
            app.terminate()
            app.wait(timeout=60)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
