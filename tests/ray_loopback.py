"""A Ray cluster on loopback, for the cluster tests and benchmark.

Ray's servers listen on every interface, so everything here runs inside network and PID
namespaces of its own (`in_namespaces`: `unshare`, as root): the only network there is loopback,
and every process it started dies with it. Nodes are real `ray start` processes (a head and
worker nodes, each its own raylet), each with the CPUs it is given, all on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_REPO = ROOT / "tests" / "fixtures" / "sample_repo"
BIN = Path(sys.executable).parent
STARTUP = 300  # seconds a node or server may take to start on a busy 2-core box
OBJECT_STORE_BYTES = 80_000_000  # Ray's minimum is 75 MB; the tasks' bytes and rows are small
# On a loaded 2-core box a process can go without CPU for a minute: Ray must not take a slow
# answer for a dead node, nor the driver give up on the head (a killed node refuses at once,
# so it is still found dead within seconds).
PATIENT_RAY = {"RAY_gcs_rpc_server_reconnect_timeout_s": "600", "RAY_health_check_timeout_ms": "60000"}


def in_namespaces(argv: list[str]) -> list[str]:
    """`argv` run in new network and PID namespaces with loopback up: nothing it starts can be
    reached from outside, or outlive it."""
    return ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--", "sh", "-c",
            'ip link set lo up && exec "$0" "$@"', *argv]


def tree(root: Path, generated: int = 40) -> Path:
    """The sample repo plus `generated` small modules that call each other: enough files for a
    run to use the cluster (`workers.POOL_MIN_FILES`), references across tasks' chunks."""
    shutil.copytree(SAMPLE_REPO, root)
    for i in range(generated):
        package = root / "gen" / f"pkg{i % 5}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"mod_{i}.py").write_text(
            f'"""Module {i}."""\n\nLIMIT_{i} = {i}\n\n\ndef helper_{i}(value):\n    """Scale a value."""\n'
            f"    return helper_{(i + 1) % generated}(value) * LIMIT_{i}\n\n\nclass Shape{i}:\n"
            f"    def area(self):\n        return helper_{i}(2)\n"
        )
    return root


class LoopbackCluster:
    """A head node and worker nodes started with `ray start --block` (each in a process group of
    its own, so one node can be killed whole)."""

    def __init__(self, workdir: Path, port: int) -> None:
        self.workdir = workdir
        # Ray's sockets live under its temp dir, and a unix socket's path has at most 107 bytes.
        self.temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
        self.address = f"127.0.0.1:{port}"
        self.nodes: list[subprocess.Popen] = []
        # The nodes' workers import CodeQA from this checkout, as the driver does.
        self.env = {**os.environ, **PATIENT_RAY, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
        os.environ.update(PATIENT_RAY)  # this process is the driver

    def _start(self, args: list[str], cpus: int) -> subprocess.Popen:
        log = (self.workdir / f"node{len(self.nodes)}.log").open("w")
        node = subprocess.Popen(
            [str(BIN / "ray"), "start", "--block", "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}",
             f"--object-store-memory={OBJECT_STORE_BYTES}", "--disable-usage-stats", *args],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.nodes.append(node)
        return node

    def start_head(self, cpus: int) -> subprocess.Popen:
        port = self.address.rsplit(":", 1)[1]
        return self._start(["--head", f"--port={port}", "--include-dashboard=false",
                            f"--temp-dir={self.temp_dir}"], cpus)

    def add_node(self, cpus: int) -> subprocess.Popen:
        return self._start([f"--address={self.address}"], cpus)

    def connect(self, nodes: int) -> None:
        """Join the cluster as CodeQA does (so later index runs reuse the connection) once
        `nodes` nodes are alive."""
        from codeqa.core.errors import CodeQAError
        from codeqa.indexing.cluster import connect

        deadline = time.monotonic() + STARTUP
        while True:
            try:
                ray = connect(self.address)
                break
            except CodeQAError:
                if time.monotonic() > deadline or self.nodes[0].poll() is not None:
                    log = (self.workdir / "node0.log").read_text()[-2000:]
                    raise RuntimeError(f"the head node did not start:\n{log}") from None
                time.sleep(1)
        while sum(node["Alive"] for node in ray.nodes()) < nodes:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster has not got {nodes} nodes: {ray.nodes()}")
            time.sleep(0.5)

    def worker_logs(self) -> dict[Path, int]:
        """Every worker's log and its size now (what `wait_for_task` reads after)."""
        return {log: log.stat().st_size for log in (self.temp_dir / "session_latest" / "logs").glob("worker-*.out")}

    def wait_for_task(self, node: subprocess.Popen, task: str, since: dict[Path, int]) -> None:
        """Until one of `node`'s workers has started a task of function `task` after `since`
        (`worker_logs`): Ray writes `:task_name:NAME` to a worker's log as it starts one."""
        import psutil

        marker = f":task_name:{task}\n".encode()
        deadline = time.monotonic() + STARTUP
        while time.monotonic() < deadline:
            pids = {child.pid for child in psutil.Process(node.pid).children(recursive=True)}
            for log in self.worker_logs():
                if int(log.stem.rsplit("-", 1)[1]) in pids and marker in log.read_bytes()[since.get(log, 0):]:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"no {task} task started on the node in {STARTUP} s")

    def remove_temp_dir(self) -> None:
        """Ray's logs and sockets, once every node is gone."""
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    @staticmethod
    def kill(node: subprocess.Popen) -> None:
        """Kill a node (its `ray start`, raylet and the rest of its process group) with SIGKILL."""
        with contextlib.suppress(ProcessLookupError):  # the group is gone already
            os.killpg(node.pid, signal.SIGKILL)
        node.wait()


def dump(path: Path, data: object) -> None:
    path.write_text(json.dumps(data))
