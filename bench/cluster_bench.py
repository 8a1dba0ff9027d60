"""What a Ray cluster costs on one box: the loopback cluster (a head and a worker node, one CPU
each) against this box's own process pool (two processes), on Django 5.2.8's whole sdist.

    python -m bench.cluster_bench [--package django==5.2.8] [--texts 2000] [--json out.json]

It re-runs itself inside network and PID namespaces (tests/ray_loopback.py: Ray listens on every
interface; there the only one is loopback), with moto's S3 server as the index's store. Two
measurements, each on the same two cores, so they show the cluster's overhead, not a gain:
- the index run until searchable (walk, parse, write, references, full-text indexes), once on
  this box and once on the cluster, both writing to the bucket; vectors come from a stub endpoint
  (a hash of the text: `complete_bench.HashEmbeddings`) so that the model does not drown the rest;
- parsing alone: files per second through this box's pool and through the cluster's tasks (the
  driver reading and shipping every file's bytes), twice each, alternated;
- embedding `--texts` of the index's rows with the local transformer (int8 all-MiniLM-L6-v2): this
  process on both cores, and the cluster's nodes (`cluster.ClusterEmbedder`), texts per second.
Not a test: numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from ray_loopback import LoopbackCluster, in_namespaces  # noqa: E402
from s3_loopback import BUCKET, start_s3  # noqa: E402

from bench.complete_bench import stub_embeddings  # noqa: E402
from bench.index_bench import fetch_source  # noqa: E402
from codeqa.core.config import Settings  # noqa: E402
from codeqa.core.servers import free_port  # noqa: E402

INSIDE = "CODEQA_CLUSTER_BENCH_INSIDE"


def settings(data: Path, prefix: str, stub: str, address: str = "") -> Settings:
    return Settings(data_dir=data / prefix, lancedb_uri=f"s3://{BUCKET}/{prefix}", local_llm=False,
                    embedding_provider="openai", embedding_model="hash-384", embedding_base_url=stub,
                    embedding_api_key="unused", index_processes=2, cluster=address)


def index_once(root: Path, config: Settings) -> dict:
    from codeqa.indexing.indexer import index_repo

    started = time.perf_counter()
    report = index_repo(root, config, name="django", progress=False)
    timings = {k: round(v, 1) for k, v in report.timings.items()}
    return {"files": report.added, "rows": report.rows, "wall_s": round(time.perf_counter() - started, 1),
            "searchable_s": timings["searchable"], "parse_wait_s": timings.get("parse", 0.0),
            "write_s": timings.get("write", 0.0), "references_s": timings.get("references", 0.0)}


def row_texts(config: Settings, count: int) -> list[str]:
    """`count` embedding texts of the index's rows, spread over its tables."""
    from codeqa.store import registry
    from codeqa.store.connection import connect
    from codeqa.store.rows import embedding_text

    db = connect(config)
    info = registry.get_repo(db, "django")
    rows = [row for kind in ("methods", "classes", "modules")
            for row in registry.open_table(db, info, kind).search().limit(count).to_list()]
    return [embedding_text(row) for row in rows[::max(1, len(rows) // count)][:count]]


def parse_rate(root: Path, config: Settings) -> float:
    """Files per second through the run's `ParsePool` alone (no writer waiting in between): this
    box's pool, or the cluster's tasks with the driver reading and shipping the bytes."""
    from codeqa.indexing.executors import open_parsers
    from codeqa.parsing.repo_files import walk_repo

    walked = walk_repo(root, config.max_file_bytes)
    files = [read.without_text() for read in (walked.read(found) for found in walked.files) if read is not None]
    batches = [files[start : start + config.write_batch] for start in range(0, len(files), config.write_batch)]
    started = time.perf_counter()
    with open_parsers("django", config, time.time_ns(), len(files), None) as pool:
        parsed = sum(len(batch) for batch in pool.batches(batches, lambda n: None))
    return round(parsed / (time.perf_counter() - started), 1)


def embed_rate(embedder, texts: list[str]) -> float:
    embedder.embed(texts[:32])  # the model loaded (on every node, for the cluster: first tasks)
    started = time.perf_counter()
    embedder.embed(texts)
    return round(len(texts) / (time.perf_counter() - started), 1)


def inside(args: argparse.Namespace) -> dict:
    root = fetch_source(args.package)
    data = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    server, env = start_s3(free_port())
    os.environ.update(env)
    nodes = LoopbackCluster(data, free_port())
    try:
        nodes.start_head(cpus=1)
        nodes.add_node(cpus=1)
        started = time.perf_counter()
        nodes.connect(2)
        result: dict = {"cluster_start_s": round(time.perf_counter() - started, 1), "load_before": os.getloadavg()}
        measure(args, root, data, nodes, result)
        result["load_after"] = os.getloadavg()
        result["driver_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        return result
    finally:
        server.terminate()
        for node in nodes.nodes:
            LoopbackCluster.kill(node)
        nodes.remove_temp_dir()
        shutil.rmtree(data, ignore_errors=True)


def measure(args: argparse.Namespace, root: Path, data: Path, nodes: LoopbackCluster, result: dict) -> None:
    from codeqa.indexing.cluster import ClusterEmbedder
    from codeqa.indexing.embeddings import get_embedder

    here = Settings(data_dir=data / "parse", local_llm=False, index_processes=2)
    for run in range(2):  # alternated: the box's load drifts
        result[f"parse_single_files_per_s_{run}"] = parse_rate(root, here)
        result[f"parse_cluster_files_per_s_{run}"] = parse_rate(root, replace(here, cluster=nodes.address))
    if args.parse_only:
        return
    with stub_embeddings() as stub:
        result["single"] = index_once(root, settings(data, "single", stub))
        result["cluster"] = index_once(root, settings(data, "cluster", stub, nodes.address))
        texts = row_texts(settings(data, "single", stub), args.texts)
    # the local transformer (the default static model embeds inline, in the parse tasks)
    local = Settings(data_dir=data / "embed", local_llm=False, cluster=nodes.address,
                     embedding_model="all-MiniLM-L6-v2")
    result["embed_texts"] = len(texts)
    result["embed_single_per_s"] = embed_rate(get_embedder(local), texts)
    result["embed_cluster_per_s"] = embed_rate(ClusterEmbedder(local, get_embedder(local)), texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="django==5.2.8")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--parse-only", action="store_true", help="measure the parse pools alone (minutes, not an hour)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if os.environ.get(INSIDE):
        result = inside(args)
        print(json.dumps(result, indent=1))
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))
        return
    fetch_source(args.package)  # pip needs the network namespace this process has
    os.execvpe("unshare", in_namespaces([sys.executable, "-m", "bench.cluster_bench", *sys.argv[1:]]),
               {**os.environ, INSIDE: "1"})


if __name__ == "__main__":
    main()
