"""The monorepo benchmark: ~1,000,000 definition rows indexed, searched and re-indexed on one box.

    python -m bench.monorepo_bench --mirror /work/.mirror           # build the tree, then every step
    python -m bench.monorepo_bench --mirror DIR --steps index search # some steps
    python -m bench.monorepo_bench --json bench/results/monorepo.json

No single public repository under the size a snapshot may have here holds a million
definitions, so the tree is a monorepo made of many: `bench/monorepo.tsv` pins each
repository at a commit (read from local bare mirrors, `<DIR>/<owner>+<name>/repo`, or cloned
from GitHub without `--mirror`) and puts it in a folder of its own under one root.

Steps, each in a child process (so its peak RSS is its own):
- `index`: `codeqa index` of the whole tree into a fresh data dir: rows, files, the run's stage
  timings (walk, plan, parse, write, references, optimize, embed), wall time to searchable and to
  done, peak RSS, table sizes on disk.
- `search`: `codeqa serve` on that index, N queries made from the index's own docstrings sent
  to `/api/search` (after 20 others, to warm it up) with rerank off and on: p50/p95 and the server's RSS after them.
- `reindex`: one file edited, `codeqa index` again: wall time.
Not a test; numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
PINS = Path(__file__).resolve().parent / "monorepo.tsv"
CACHE = ROOT / "bench" / ".cache" / "monorepo"
NAME = "monorepo"


def pins() -> list[tuple[str, str]]:
    """(owner/name, commit) of every repository in the tree."""
    rows = [line.split("\t") for line in PINS.read_text().splitlines() if line and not line.startswith("#")]
    return [(row[0], row[1]) for row in rows]


def build_tree(mirror: Path | None, tree: Path) -> int:
    """Each pinned repository's files at its commit under `tree/<owner>+<name>/`; returns how many
    repositories were added (those already there are kept). Blobs a snapshot lacks (snapshots
    leave out files of 4 MiB and more, which the indexer skips anyway) are left out."""
    added = 0
    for repo, commit in pins():
        folder = tree / repo.replace("/", "+")
        if folder.is_dir():
            continue
        partial = folder.with_name(folder.name + ".part")
        shutil.rmtree(partial, ignore_errors=True)
        _extract(_git_dir(repo, mirror), commit, partial)
        partial.rename(folder)
        added += 1
        print(f"  {repo}@{commit[:12]}", file=sys.stderr, flush=True)
    return added


def _extract(git_dir: Path, commit: str, into: Path) -> None:
    """The commit's regular files into `into`, read through one `git cat-file --batch`."""
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit],
                             capture_output=True, check=True).stdout.split(b"\0")
    entries = []
    for entry in filter(None, listing):
        meta, path = entry.split(b"\t", 1)
        mode, kind, blob = meta.split()
        if kind == b"blob" and mode in (b"100644", b"100755"):
            entries.append((blob, path.decode("utf-8", "surrogateescape")))
    batch = subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert batch.stdin is not None and batch.stdout is not None
    for blob, path in entries:
        batch.stdin.write(blob + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if header[-1] == b"missing":
            continue
        data = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)  # the newline after the object
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    batch.stdin.close()
    batch.wait()


def _git_dir(repo: str, mirror: Path | None) -> Path:
    if mirror is not None:
        found = mirror / repo.replace("/", "+") / "repo"
        return found / ".git" if (found / ".git").is_dir() else found
    clone = CACHE / "clones" / repo.replace("/", "+")
    if not clone.exists():
        subprocess.run(["git", "clone", "--bare", "--filter=blob:none", f"https://github.com/{repo}", str(clone)],
                       check=True)
    return clone


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, int, subprocess.CompletedProcess]:
    """Run a command; its wall seconds, its peak RSS (MB) and the completed process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KB; the largest child so far
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, max(peak, before) // 1024, done


def run_sampled(argv: list[str], env: dict[str, str]) -> tuple[float, dict, str]:
    """Run the indexer, sampling its memory every half second: wall seconds, the peak RSS (MB)
    of its main process and of it with its parse workers in each stage it reports (`stage: NAME`
    lines on stderr), and its stdout."""
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = time.perf_counter()
    stage = ["starting"]
    tail: list[str] = []

    def follow_stderr() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            print(line, end="", file=sys.stderr, flush=True)
            tail[:] = [*tail[-50:], line]
            if line.startswith("stage: "):
                stage[0] = line.removeprefix("stage: ").strip()

    reader = threading.Thread(target=follow_stderr, daemon=True)
    reader.start()
    peaks: dict[str, int] = {}
    process = psutil.Process(child.pid)
    while child.poll() is None:
        try:
            main_rss = process.memory_info().rss
            tree_rss = main_rss + sum(c.memory_info().rss for c in process.children(recursive=True))
        except psutil.Error:
            break
        for key, value in ((f"main, {stage[0]}", main_rss), (f"with workers, {stage[0]}", tree_rss)):
            peaks[key] = max(peaks.get(key, 0), value // (1024 * 1024))
        time.sleep(0.5)
    stdout = child.stdout.read() if child.stdout else ""
    child.wait()
    reader.join(timeout=10)
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed ({child.returncode}):\n{''.join(tail)[-3000:]}")
    return seconds, peaks, stdout


def step_index(tree: Path, data: Path, env: dict[str, str]) -> dict:
    shutil.rmtree(data, ignore_errors=True)
    code = ("import json, sys; from codeqa import Settings, index_repo; seen = []\n"
            "from codeqa.store.create_tables import RepoTables\n"
            "def stage(name, done, total):\n"
            "    if name not in seen: seen.append(name); print(f'stage: {name}', file=sys.stderr, flush=True)\n"
            "finish = RepoTables.finish\n"  # the indexes and compaction: a stage of its own here
            "def optimizing(tables): stage('optimizing', 0, 0); seen.remove('optimizing'); finish(tables)\n"
            "RepoTables.finish = optimizing\n"
            "r = index_repo(sys.argv[1], Settings.from_env(), name=sys.argv[2], progress=True, on_progress=stage)\n"
            "print(json.dumps({**r.stats().to_json(), 'too_deep': sum(r.too_deep.values())}))")
    seconds, peaks, stdout = run_sampled([sys.executable, "-c", code, str(tree), NAME], env)
    stats = json.loads(stdout.strip().splitlines()[-1])
    sizes = {path.name.split("__")[-1].removesuffix(".lance"): _megabytes(path)
             for path in (data / "lancedb").glob("*.lance") if "__" in path.name}
    return {"wall_s": round(seconds, 1), "peak_rss_mb": peaks, "rows": stats["rows"], "files": stats["files"],
            "methods": stats["methods"], "classes": stats["classes"], "references": stats["references"],
            "timings_s": stats["timings"], "table_mb": sizes, "lancedb_mb": _megabytes(data / "lancedb")}


def _megabytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) // (1024 * 1024)


def queries_from_index(env: dict[str, str], count: int) -> list[str]:
    """The first line of `count` docstrings of the index's functions (seeded): questions whose
    answer is known to be in the index, worded the way its authors word things."""
    code = ("import json, sys; from codeqa import Settings; from codeqa.store.index import Index; "
            "index = Index.connect(Settings.from_env()); reader = index.reader(index.repo(sys.argv[1])); "
            "rows = reader.table('methods').search().where(\"doc != ''\").select(['doc']).limit(20000).to_list(); "
            "print(json.dumps([r['doc'] for r in rows]))")
    _, _, done = run_child([sys.executable, "-c", code, NAME], env)
    docs = [doc.strip().splitlines()[0] for doc in json.loads(done.stdout) if len(doc.strip()) > 30]
    random.Random(7).shuffle(docs)
    return docs[:count]


WARM_UP = 20  # queries answered before the timed ones: a server's first reads fill the page cache


def step_search(env: dict[str, str], count: int) -> dict:
    asked = queries_from_index(env, count + WARM_UP)
    warm_up, questions = asked[:WARM_UP], asked[WARM_UP:]
    port = _free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port), "--threads", "4"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait(base)
        for question in warm_up:
            _post(base, "/api/search", {"repo": NAME, "query": question, "k": 10, "rerank": False})
        out = {}
        for rerank in (False, True):
            times = []
            for question in questions:
                started = time.perf_counter()
                _post(base, "/api/search", {"repo": NAME, "query": question, "k": 10, "rerank": rerank})
                times.append((time.perf_counter() - started) * 1000)
            out["rerank" if rerank else "no_rerank"] = _summary(times)
        out["server_rss_mb"] = psutil.Process(server.pid).memory_info().rss // (1024 * 1024)
        out["queries"] = len(questions)
        return out
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def step_reindex(tree: Path, env: dict[str, str]) -> dict:
    target = next(tree.rglob("*.py"))
    original = target.read_text()
    target.write_text(original + "\n# edited by the benchmark\n")
    try:
        code = ("import sys; from codeqa import Settings, index_repo; "
                "index_repo(sys.argv[1], Settings.from_env(), name=sys.argv[2], progress=False)")
        seconds, peak_mb, _ = run_child([sys.executable, "-c", code, str(tree), NAME], env)
        cli, _, _ = run_child([sys.executable, str(ROOT / "preprocessing.py"), "index", str(tree), "--name", NAME,
                               "--no-progress"], env)
    finally:
        target.write_text(original)
    return {"one_file_in_process_s": round(seconds, 2), "one_file_cli_s": round(cli, 2),
            "note": "the second (CLI) run re-indexes the same edit back: the file changed again"}


def _summary(times: list[float]) -> dict:
    ordered = sorted(times)
    return {"p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
            "max_ms": round(ordered[-1], 1)}


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(base: str) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/api/repos", timeout=5).read()
            return
        except OSError:
            time.sleep(1)
    raise SystemExit("the app did not start")


def _post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Origin": base})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=os.environ.get("CODEQA_EVAL_MIRROR") or None,
                        help="local bare mirrors at DIR/<owner>+<name>/repo (default: clone from GitHub)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the tree and the index go")
    parser.add_argument("--steps", nargs="+", default=["index", "search", "reindex"],
                        choices=["index", "search", "reindex"])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", type=Path, help="write the numbers here too")
    args = parser.parse_args()
    tree, data = args.cache / "tree", args.cache / "data"
    print(f"tree: {build_tree(args.mirror, tree)} repositories added under {tree}", file=sys.stderr)
    env = {**os.environ, "CODEQA_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "CODEQA_LOCAL_LLM": "0"}
    report: dict = {"repositories": len(pins()), "load_before": os.getloadavg()}
    if "index" in args.steps:
        report["index"] = step_index(tree, data, env)
        print(json.dumps(report["index"]), file=sys.stderr, flush=True)
    if "search" in args.steps:
        report["search"] = step_search(env, args.queries)
        print(json.dumps(report["search"]), file=sys.stderr, flush=True)
    if "reindex" in args.steps:
        report["reindex"] = step_reindex(tree, env)
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
