"""Index runs on a Ray cluster on loopback, writing to moto's S3 server; run by tests/test_cluster.py
inside namespaces of their own (`ray_loopback.in_namespaces`), as

    python tests/cluster_scenarios.py SCENARIO OUT_DIR

Each scenario writes `OUT_DIR/result.json`: the rows of every index it made (read back from the
bucket: ids, lines, hashes, vectors) and what each run reported; the test asserts on them.
Faults are injected at a chosen point of a run: a node is killed with SIGKILL as soon as one of
its workers starts an embedding task (so that task is lost with it), or once the first batch of
parsed files is back (so later batches are in flight on it).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from ray_loopback import LoopbackCluster, dump, tree  # noqa: E402
from s3_loopback import BUCKET, start_s3  # noqa: E402

from codeqa.core.config import Settings  # noqa: E402
from codeqa.core.servers import free_port  # noqa: E402
from codeqa.indexing import cluster  # noqa: E402
from codeqa.indexing.indexer import index_repo  # noqa: E402
from codeqa.store import registry  # noqa: E402
from codeqa.store.connection import connect  # noqa: E402
from codeqa.store.schema import ROW_TABLES  # noqa: E402

COLUMNS = ["id", "file_path", "kind", "qualified_name", "start_line", "end_line", "text_hash", "references_hash",
           "reference_count", "vector"]
WRITE_BATCH = 32  # files per write: several batches, each of two tasks


TRANSFORMER = "all-MiniLM-L6-v2"  # not inline: its vectors are filled by embedding tasks (`ClusterEmbedder`)
STATIC = "codeqa-static"  # the default, inline: the parse tasks embed the rows they make


def settings(out: Path, prefix: str, address: str = "", model: str = TRANSFORMER) -> Settings:
    return Settings(data_dir=out / prefix, lancedb_uri=f"s3://{BUCKET}/{prefix}", local_llm=False,
                    write_batch=WRITE_BATCH, cluster=address, embedding_model=model)


def rows(config: Settings, name: str = "tree") -> dict:
    """Every row of the repo's tables, by table, its manifest (path → content hash) and each file's
    parse results (symbols, references, bindings: what reference resolution reads)."""
    db = connect(config)
    info = registry.get_repo(db, name)
    tables = {kind: sorted(([row[c] for c in COLUMNS] for row in registry.open_table(db, info, kind)
                            .search().select(COLUMNS).limit(None).to_list()), key=lambda r: r[0])
              for kind in ROW_TABLES}
    for table in tables.values():
        for row in table:
            row[-1] = None if row[-1] is None else [float(x) for x in row[-1]]
    files = registry.open_table(db, info, "files").search().select(["file_path", "sha256", "parsed", "bindings"]) \
        .limit(None).to_list()
    return {"tables": tables, "files": sorted((f["file_path"], f["sha256"]) for f in files),
            "parses": sorted((f["file_path"], f["parsed"], f["bindings"]) for f in files),
            "indexed": bool(info.indexed_at)}


def counts(report) -> list[int]:
    return [report.added, report.methods, report.classes, report.modules, report.references, report.vectors_pending]


def kill_after_first_batch(node) -> None:
    """Kill `node` as soon as the driver has the first batch's rows (later ones are in flight)."""
    collect = cluster.RayParsers._collect

    def collect_then_kill(self, refs, done):
        result = collect(self, refs, done)
        if node.poll() is None:
            LoopbackCluster.kill(node)
        return result

    cluster.RayParsers._collect = collect_then_kill  # type: ignore[method-assign]


def kill_once_it_embeds(nodes: LoopbackCluster, node) -> threading.Thread:
    """Kill `node` as soon as one of its workers starts embedding (from now on; a task of
    seconds): the task is surely lost with it, and must be rerun elsewhere for the run to finish."""
    since = nodes.worker_logs()

    def watch() -> None:
        nodes.wait_for_task(node, "embed_texts", since)
        LoopbackCluster.kill(node)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def split_and_lose_a_node(out: Path, nodes: LoopbackCluster) -> dict:
    """A head and one worker node, one CPU each: the tree indexed on the cluster equals the one
    indexed on this box; then a run whose worker node is killed mid-task still finishes, equal too."""
    nodes.start_head(cpus=1)
    worker = nodes.add_node(cpus=1)
    nodes.connect(2)
    repo = tree(out / "tree")
    single = index_repo(repo, settings(out, "single"), name="tree", progress=False)
    split = index_repo(repo, settings(out, "cluster", nodes.address), name="tree", progress=False)
    killer = kill_once_it_embeds(nodes, worker)
    lost = index_repo(repo, settings(out, "lost-node", nodes.address), name="tree", progress=False)
    killer.join(timeout=1)
    return {"single": rows(settings(out, "single")), "cluster": rows(settings(out, "cluster")),
            "lost_node": rows(settings(out, "lost-node")), "worker_killed": worker.poll() is not None,
            "reports": {"single": counts(single), "cluster": counts(split), "lost_node": counts(lost)}}


def cli(args: list[str]) -> tuple[int, str]:
    """`codeqa index` in this process (so a fault can be injected): its exit status and stderr."""
    from codeqa.preprocessing import main

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        status = main(args, prog="codeqa")
    return status, stderr.getvalue()


def no_cpu_left(out: Path, nodes: LoopbackCluster) -> dict:
    """The head has no CPU and the only worker node dies mid-run: `codeqa index --cluster` fails
    with one line and leaves a consistent index; the next run (a new node joined) finishes it.
    With the default model (static, inline): its vectors are made in the parse tasks."""
    nodes.start_head(cpus=0)
    worker = nodes.add_node(cpus=1)
    nodes.connect(2)
    repo = tree(out / "tree")
    os.environ.update({"CODEQA_DATA_DIR": str(out / "cli"), "CODEQA_LANCEDB_URI": f"s3://{BUCKET}/cli",
                       "CODEQA_LOCAL_LLM": "0", "CODEQA_WRITE_BATCH": str(WRITE_BATCH),
                       "CODEQA_EMBEDDING_MODEL": STATIC})
    kill_after_first_batch(worker)
    failed = cli(["index", str(repo), "--name", "tree", "--no-progress", "--cluster", nodes.address])
    after_failure = rows(settings(out, "cli", model=STATIC))
    nodes.add_node(cpus=1)
    nodes.connect(2)
    finished = cli(["index", str(repo), "--name", "tree", "--no-progress", "--cluster", nodes.address])
    index_repo(repo, settings(out, "single", model=STATIC), name="tree", progress=False)
    return {"failed": failed, "after_failure": after_failure, "finished": finished,
            "rerun": rows(settings(out, "cli", model=STATIC)),
            "single": rows(settings(out, "single", model=STATIC))}


SCENARIOS = {"split_and_lose_a_node": split_and_lose_a_node, "no_cpu_left": no_cpu_left}


def main() -> None:
    scenario, out = SCENARIOS[sys.argv[1]], Path(sys.argv[2])
    server, env = start_s3(free_port())
    os.environ.update(env)
    nodes = LoopbackCluster(out, free_port())
    try:
        dump(out / "result.json", scenario(out, nodes))
    finally:
        server.terminate()
        for node in nodes.nodes:
            LoopbackCluster.kill(node)
        nodes.remove_temp_dir()


if __name__ == "__main__":
    main()
