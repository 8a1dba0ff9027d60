"""Indexing benchmark on a real source tree that pip can fetch offline (Django's sdist).

    python -m bench.index_bench [--package django==5.2.8] [--subdir django] [--path TREE] [--json out.json]
    python -m bench.index_bench --parse-path MIXED_TREE --parse-only   # parse speed of a mixed corpus

Reports parse + extract + references throughput (one core; per language too, with the share of
files that have syntax errors), the configured embedder's throughput in the indexer's batches
next to one call over the same texts, how long a full index run takes until the repo is
searchable and until every vector is in, its peak RSS, index size on disk, and the time to
re-index after one file changed. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from codeqa.indexing import indexer
from codeqa.indexing.file_rows import file_rows
from codeqa.core.config import Settings
from codeqa.core.records import RepoStats

CACHE = ROOT / "bench" / ".cache"


def fetch_source(spec: str) -> Path:
    """Download and unpack an sdist once; returns the unpacked directory."""
    CACHE.mkdir(parents=True, exist_ok=True)
    name = spec.replace("==", "-")
    unpacked = [p for p in CACHE.iterdir() if p.is_dir() and p.name.lower() == name.lower()]
    if unpacked:
        return unpacked[0]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    "-q", "-d", str(CACHE), spec], check=True)
    archive = next(p for p in CACHE.glob("*.tar.gz") if p.name.lower().startswith(name.lower()))
    with tarfile.open(archive) as tar:
        tar.extractall(CACHE, filter="data")
    return next(p for p in CACHE.iterdir() if p.is_dir() and p.name.lower() == name.lower())


def bench_parse(root: Path, repeat: int = 3) -> dict:
    """Walk + parse + extract + resolve references, one process, no embedding; best of `repeat`
    (the box's speed drifts with its neighbours' load)."""
    with indexer.batch_gc():
        return min((_parse_once(root) for _ in range(repeat)), key=lambda r: r["parse_extract_s"] + r["references_s"])


def _parse_once(root: Path) -> dict:
    """Every file but prose docs (code, and configuration and other text: their rows are built
    here too), timed as `file_rows.file_rows` builds its rows."""
    from codeqa.parsing.languages import DOC_LANGUAGES
    from codeqa.parsing.references import resolve_references
    from codeqa.parsing.repo_files import walk_repo

    code = [f for f in walk_repo(root).read_all() if f.language not in DOC_LANGUAGES]
    size = sum(f.size for f in code)
    by_language: dict[str, dict] = {}
    symbols, files = [], []
    for f in code:
        started = time.perf_counter()
        prepared = file_rows("bench", f, mtime_ns=0)  # as the indexer stores it
        stats = by_language.setdefault(f.language, {"files": 0, "bytes": 0, "s": 0.0, "syntax_errors": 0})
        stats["files"] += 1
        stats["bytes"] += f.size
        stats["s"] += time.perf_counter() - started
        stats["syntax_errors"] += prepared.manifest.has_errors
        symbols += prepared.manifest.parse.symbols
        files.append(prepared.manifest.parse)
    parse_s = sum(stats["s"] for stats in by_language.values())
    start = time.perf_counter()
    uses = resolve_references(symbols, files)
    refs_s = time.perf_counter() - start
    total = parse_s + refs_s
    return {"files": len(code), "mb": round(size / 1e6, 2), "symbols": len(symbols),
            "uses": sum(len(u) for u in uses.values()),
            "parse_extract_s": round(parse_s, 2), "references_s": round(refs_s, 2),
            "parse_mb_per_s": round(size / 1e6 / parse_s, 2),
            "files_per_s": round(len(code) / total, 1), "mb_per_s": round(size / 1e6 / total, 2),
            "by_language": {language: {"files": stats["files"], "mb": round(stats["bytes"] / 1e6, 3),
                                       "mb_per_s": round(stats["bytes"] / 1e6 / stats["s"], 2) if stats["s"] else None,
                                       "syntax_errors": stats["syntax_errors"]}
                            for language, stats in sorted(by_language.items(), key=lambda kv: -kv[1]["bytes"])}}


def bench_embedding(root: Path, sample: int) -> dict:
    """The configured embedder (CODEQA_EMBEDDING_MODEL; the static model by default): all the
    texts in one `embed` call, against the indexer's path, in its batches, on the same texts."""
    from codeqa.indexing.embeddings import get_embedder
    from codeqa.indexing.vectors import embedding_batches
    from codeqa.parsing.languages import DOC_LANGUAGES
    from codeqa.parsing.repo_files import walk_repo
    from codeqa.store.rows import embedding_text

    rows = []
    for f in walk_repo(root).read_all():
        if f.language in DOC_LANGUAGES:
            continue
        prepared = file_rows("bench", f, mtime_ns=0)
        rows += prepared.rows["methods"] + prepared.rows["classes"]
        if len(rows) >= sample:
            break
    rows = rows[:sample]
    texts = [embedding_text(r) for r in rows]
    embedder = get_embedder(Settings())
    embedder.embed(texts[:8])  # load and warm up
    raw_runs, our_runs = [], []
    for _ in range(2):  # alternate, keep the best of each: the box's load drifts
        start = time.perf_counter()
        embedder.embed(texts)
        raw_runs.append(time.perf_counter() - start)
        start = time.perf_counter()
        for batch in embedding_batches(rows, indexer.VECTOR_BATCH):  # as fill_vectors does
            embedder.embed(batch.texts)
        our_runs.append(time.perf_counter() - start)
    raw_s, ours_s = min(raw_runs), min(our_runs)
    return {"model": embedder.model_id, "texts": len(texts), "raw_encode_s": round(raw_s, 3),
            "raw_chunks_per_s": round(len(texts) / raw_s, 1), "indexer_chunks_per_s": round(len(texts) / ours_s, 1),
            "ratio": round(raw_s / ours_s, 3)}


def run_index(root: Path, data_dir: Path) -> tuple[float, RepoStats]:
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir)}
    start = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), "index", str(root), "--name", "bench",
                    "--no-progress"], env=env, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    from codeqa.store import registry
    from codeqa.store.connection import connect

    info = registry.get_repo(connect(Settings(data_dir=data_dir)), "bench")
    return elapsed, info.stats


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# A function to append to the tree's largest source file, so that one file changes (by suffix).
ADDED_FUNCTION = {".py": "\n\ndef bench_added_function():\n    return {n}\n",
                  ".rs": "\n\nfn bench_added_function() -> i32 {{\n    {n}\n}}\n",
                  ".go": "\n\nfunc benchAddedFunction() int {{\n\treturn {n}\n}}\n",
                  ".js": "\n\nfunction benchAddedFunction() {{\n  return {n};\n}}\n"}


def bench_full_and_reindex(root: Path, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = keep or Path(tmp) / "data"
        if keep and data_dir.exists():
            shutil.rmtree(data_dir)  # a full index from nothing
        full_s, stats = run_index(root, data_dir)
        peak_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        target = max((p for p in root.rglob("*") if p.suffix in ADDED_FUNCTION), key=lambda p: p.stat().st_size)
        original = target.read_text()
        try:
            target.write_text(original + ADDED_FUNCTION[target.suffix].format(n=42))
            reindex_s, restats = run_index(root, data_dir)
            from codeqa.indexing.indexer import index_repo
            start = time.perf_counter()
            target.write_text(original + ADDED_FUNCTION[target.suffix].format(n=43))
            index_repo(root, Settings(data_dir=data_dir), name="bench", progress=False)
            inproc_s = time.perf_counter() - start
        finally:
            target.write_text(original)
        return {"full_index_s": round(full_s, 1), "searchable_s": stats.timings["searchable"],
                "all_vectors_s": stats.timings["total"],
                "startup_s": round(full_s - stats.timings["total"], 1),  # interpreter, imports
                "symbols": stats.methods + stats.classes, "rows": stats.rows,
                "docs": stats.docs, "timings": stats.timings,
                "peak_rss_mb": round(peak_rss_mb), "index_mb": round(dir_size(data_dir) / 1e6, 1),
                "reindex_one_file_cli_s": round(reindex_s, 2),
                "reindex_one_file_in_process_s": round(inproc_s, 2),
                "reindex_timings": restats.timings, "changed_file": str(target.relative_to(root))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="django==5.2.8")
    parser.add_argument("--subdir", default="django", help="part of the tree to fully index")
    parser.add_argument("--embed-sample", type=int, default=1000)
    parser.add_argument("--skip-parse", action="store_true")
    parser.add_argument("--skip-full", action="store_true")
    parser.add_argument("--path", type=Path, help="fully index this tree instead of the package's --subdir "
                        "(parse and embedding speed are still measured on the package)")
    parser.add_argument("--parse-path", type=Path, metavar="TREE",
                        help="measure parse + extract speed on this tree (a mixed corpus) instead of the package")
    parser.add_argument("--parse-only", action="store_true", help="stop after the parse measurement")
    parser.add_argument("--keep", type=Path, metavar="DATA_DIR",
                        help="build the full index here and keep it (repo 'bench'), e.g. for load_bench.py")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    results: dict = {"package": args.package}
    if args.parse_only:
        results["parse"] = bench_parse(args.parse_path or fetch_source(args.package))
        print("parse:", json.dumps(results["parse"]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
        return
    source = fetch_source(args.package)
    if not args.skip_parse:
        results["parse"] = bench_parse(args.parse_path or source)
        print("parse:", json.dumps(results["parse"]), flush=True)
    results["embedding"] = bench_embedding(source / args.subdir, args.embed_sample)
    print("embedding:", json.dumps(results["embedding"]), flush=True)
    if not args.skip_full:
        results["index"] = index = bench_full_and_reindex(args.path or source / args.subdir, args.keep)
        print("index:", json.dumps(index), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
