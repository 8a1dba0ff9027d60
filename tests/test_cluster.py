"""Index runs on a Ray cluster (`codeqa index --cluster`, indexing/cluster.py): real `ray start`
nodes on loopback (a head and a worker node, each its own raylet) and moto's S3 server, in
namespaces of their own (tests/ray_loopback.py says why); the run's rows are read back from the
bucket and compared with a run on this box alone: same ids, lines, hashes, references, vectors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from ray_loopback import in_namespaces

from codeqa.core.servers import free_port
from codeqa.indexing import cluster
from codeqa.indexing.cluster import ClusterError

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "cluster_scenarios.py"


def run_scenario(name: str, out: Path) -> dict:
    """A scenario of tests/cluster_scenarios.py, in its namespaces: what it wrote."""
    done = subprocess.run(in_namespaces([sys.executable, str(SCENARIOS), name, str(out)]), capture_output=True,
                          text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((out / "result.json").read_text())


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> dict:
    return run_scenario("split_and_lose_a_node", tmp_path_factory.mktemp("split"))


def ids_by_file(index: dict) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for table in index["tables"].values():
        for row in table:
            found[row[1]].add(row[0])
    return found


@pytest.mark.integration
def test_a_two_node_cluster_writes_what_one_box_writes(split):
    single, clustered = split["single"], split["cluster"]
    assert split["reports"]["cluster"] == split["reports"]["single"]
    assert len(single["files"]) == 72 and sum(map(len, single["tables"].values())) > 300
    assert all(row[-1] is not None for table in single["tables"].values() for row in table)  # every row embedded
    for kind, rows in single["tables"].items():
        assert clustered["tables"][kind] == rows, kind  # ids, lines, hashes, reference counts, vectors
    assert clustered["files"] == single["files"] and clustered["indexed"]
    assert clustered["parses"] == single["parses"] and any(b not in (None, "", "[]") for _, _, b in single["parses"])


@pytest.mark.integration
def test_a_run_that_loses_its_worker_node_still_writes_the_same_index(split):
    """The worker node is killed (SIGKILL, its raylet and workers) while one of its workers
    embeds: Ray reruns the lost task on the head, and the index is the one-box index."""
    assert split["worker_killed"]
    assert split["lost_node"] == split["single"]
    assert split["reports"]["lost_node"] == split["reports"]["single"]


@pytest.mark.integration
def test_a_run_left_without_cpus_fails_in_one_line_and_the_next_run_finishes(tmp_path):
    """The only node with a CPU dies mid-run: `codeqa index --cluster` stops with one line and
    status 1; what it wrote is whole files only (each with all its rows), the repo is not yet
    searchable (its first run did not finish), and the next run, with a new node, finishes it.
    The model is the default, inline one: the nodes' parse tasks give the rows their vectors."""
    result = run_scenario("no_cpu_left", tmp_path)
    status, stderr = result["failed"]
    assert status == 1 and stderr.count("\n") == 1
    assert stderr.startswith("error: Indexing stopped: no node with a CPU is left in the Ray cluster at 127.0.0.1:")
    assert "run the index again" in stderr
    partial, single = result["after_failure"], result["single"]
    assert not partial["indexed"]
    written, expected = ids_by_file(partial), ids_by_file(single)
    assert 0 < len(written) < len(expected)
    assert all(written[path] == expected[path] for path in written)
    manifest = dict(partial["files"])
    assert set(manifest) == set(written) and all(manifest[p] == sha for p, sha in single["files"] if p in manifest)
    assert result["finished"] == [0, ""]
    assert result["rerun"] == single
    assert all(row[-1] is not None for table in single["tables"].values() for row in table)  # embedded inline


@pytest.mark.unit
def test_an_address_nothing_answers_at_is_one_line():
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(ClusterError, match=rf"^No Ray cluster answers at {address} \(Connection refused\): start one"):
        cluster.connect(address)


@pytest.mark.unit
@pytest.mark.parametrize("address", ["head-node", "head:port", "ray://head", ":6379", "head:70000"])
def test_an_address_without_a_port_is_refused_with_its_form(address):
    with pytest.raises(ClusterError, match="is not a Ray cluster address: give the head node's HOST:PORT"):
        cluster.connect(address)


@pytest.mark.unit
def test_without_ray_installed_the_cluster_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ClusterError, match=r"needs Ray: pip install 'codeqa\[cluster\]'"):
        cluster.connect("127.0.0.1:6379")


@pytest.mark.integration
def test_the_cli_says_in_one_line_when_no_cluster_answers(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "CODEQA_DATA_DIR": str(tmp_path / "data"), "CODEQA_LOCAL_LLM": "0",
           "HOME": str(tmp_path)}
    address = f"127.0.0.1:{free_port()}"
    run = subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), "index", str(ROOT / "tests/fixtures/sample_repo"),
                          "--cluster", address, "--no-progress"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert run.stderr == f"error: No Ray cluster answers at {address} (Connection refused): start one with " \
                         "`ray start --head`, or fix --cluster / CODEQA_CLUSTER.\n"


@pytest.mark.unit
def test_a_task_parses_the_bytes_it_is_sent_and_never_opens_the_path(tmp_path):
    """A node need not see the driver's disk: the task parses the shipped bytes (the file is gone
    from this disk by then), says "unreadable" for a file the driver could not read, and refuses
    to run other code than the driver's."""
    from codeqa.parsing.repo_files import read_bytes, walk_repo

    (tmp_path / "shop.py").write_text("def total(cart):\n    return sum(cart)\n")
    walked = walk_repo(tmp_path)
    planned = walked.read(walked.files[0]).without_text()
    data = read_bytes(planned, 1_000_000)
    (tmp_path / "shop.py").unlink()
    parsed, unreadable = cluster.parse_shipped("shop", 1_000_000, 0, None, cluster.code_fingerprint(),
                                               [(planned, data), (planned, None)])
    assert [row["qualified_name"] for row in parsed.rows["methods"]] == ["total"]
    assert parsed.manifest.sha256 == planned.sha256 and unreadable == "unreadable"
    with pytest.raises(ClusterError, match="runs other CodeQA code than the indexer"):
        cluster.parse_shipped("shop", 1_000_000, 0, None, "0" * 16, [(planned, data)])
