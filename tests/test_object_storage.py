"""The index on object storage: `CODEQA_LANCEDB_URI=s3://bucket/prefix` against a real
S3-compatible server (moto's, on loopback), as a team would run it: one indexer writes the
shared index, app instances in other processes read it, and an update reaches them without a
restart. Configuration is the environment's AWS variables, as in production.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_REPO, settings_for
from mcp_client import NO_LLM
from codeqa.core.servers import free_port, start_server

pytestmark = pytest.mark.integration

BUCKET = "codeqa-team"
URI = f"s3://{BUCKET}/index"
STARTUP = 300  # seconds a server may take to start on a busy 2-core box


@pytest.fixture(scope="module")
def s3(tmp_path_factory) -> Iterator[dict[str, str]]:
    """A moto S3 server on a loopback port with one bucket; yields the environment that points
    CodeQA (and boto3) at it, set in this process too while the module runs."""
    import boto3

    port = free_port()
    server = start_server([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                          os.environ, f"http://127.0.0.1:{port}/moto-api/", timeout=STARTUP)
    env = {"AWS_ACCESS_KEY_ID": "codeqa", "AWS_SECRET_ACCESS_KEY": "codeqa-secret", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT": f"http://127.0.0.1:{port}", "AWS_ALLOW_HTTP": "true", "CODEQA_LANCEDB_URI": URI}
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT"], region_name=env["AWS_REGION"],
                 aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                 aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket=BUCKET)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        try:
            yield env
        finally:
            server.terminate()
            server.wait(timeout=60)


def bucket_keys(env: dict[str, str]) -> list[str]:
    import boto3

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT"], region_name=env["AWS_REGION"])
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


@pytest.fixture(scope="module")
def team(s3, tmp_path_factory):
    """The sample repo indexed into the bucket: (settings of the indexer's machine, its repo copy)."""
    from codeqa.indexing.indexer import index_repo

    repo = shutil.copytree(SAMPLE_REPO, tmp_path_factory.mktemp("team") / "sample")
    settings = settings_for(tmp_path_factory.mktemp("indexer") / "data", lancedb_uri=URI)
    report = index_repo(repo, settings, name="sample", progress=False)
    # 105 methods: the C header's prototypes, the C++ class's in-class declarations and the
    # TypeScript interface methods are rows of their own, marked as declarations
    assert (report.added, report.methods, report.classes) == (32, 105, 56)
    return settings, repo


def test_the_index_lives_in_the_bucket_and_is_searchable(s3, team):
    from codeqa.search.options import SearchOptions
    from codeqa.services import Services

    settings, _ = team
    keys = bucket_keys(s3)
    assert any(key.startswith("index/codeqa_repos.lance/") for key in keys)
    assert any("__methods.lance/data/" in key for key in keys) and any("__methods.lance/_indices/" in key for key in keys)
    assert not (settings.data_dir / "lancedb").exists()
    reader = Services(settings_for(Path("/nonexistent"), lancedb_uri=URI, llm_base_url=NO_LLM, local_llm=False))
    try:
        assert [repo.name for repo in reader.repos()] == ["sample"]
        found = reader.retriever.search("sample", "where is make_demo_cart built?", SearchOptions(k=3, hyde=False))
        assert (found.results[0].qualified_name, found.results[0].start_line) == ("make_demo_cart", 59)
        definitions = reader.commands.definitions(reader.repo("sample"), "Cart.add")
        assert [(d["file_path"], d["reference_count"]) for d in definitions] == [("shop/models.py", 3),
                                                                                  ("web/js/cart.js", 1)]
    finally:
        reader.close()


def test_an_incremental_update_reaches_a_running_app_instance(s3, team, redis_server, tmp_path):
    """One app instance of a team deployment (its own machine's data dir, the shared index on
    S3, an external Redis, an LLM endpoint) serves search; the indexer updates the index; the
    running instance answers from the new version."""
    from codeqa.indexing.indexer import index_repo

    settings, repo = team
    port = free_port()
    env = {**os.environ, **s3, "CODEQA_DATA_DIR": str(tmp_path / "app-data"), "REDIS_URL": redis_server.url,
           "CODEQA_LLM_BASE_URL": NO_LLM, "CODEQA_SECRET_KEY": "team-secret", "HF_HUB_OFFLINE": "1"}
    app = start_server([sys.executable, str(ROOT / "app.py"), "--port", str(port)], env,
                       f"http://127.0.0.1:{port}/api/repos", timeout=STARTUP)
    try:
        def search(query: str) -> list[str]:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/api/search", method="POST",
                                             data=json.dumps({"repo": "sample", "query": query, "k": 3}).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=STARTUP) as response:
                return [hit["qualified_name"] for hit in json.load(response)["results"]]

        assert "restock_shelves" not in search("restock_shelves")
        with (repo / "shop" / "util.py").open("a") as handle:
            handle.write("\n\ndef restock_shelves(store):\n    return store\n")
        report = index_repo(repo, settings, name="sample", progress=False)
        # util.py's rows are embedded as it is re-parsed (the static model), no other file's.
        assert (report.added, report.changed, report.unchanged, report.embedded) == (0, 1, 31, 6)
        assert search("restock_shelves")[0] == "restock_shelves"
    finally:
        app.terminate()
        app.wait(timeout=60)


def test_a_second_machine_indexing_nothing_new_changes_nothing(s3, team, tmp_path):
    """Another machine (another data dir, another process) runs the index on the same repo and
    bucket: the manifest in the bucket says nothing changed."""
    _, repo = team
    env = {**os.environ, **s3, "CODEQA_DATA_DIR": str(tmp_path / "other-machine"), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), "index", str(repo), "--name", "sample",
                          "--no-progress"], env=env, capture_output=True, text=True, timeout=STARTUP)
    assert run.returncode == 0, run.stderr
    assert "files: 0 added, 0 changed, 0 deleted, 32 unchanged" in run.stdout
    assert "0 texts embedded" in run.stdout


def test_a_run_on_another_machine_waits_for_the_lock_kept_in_the_bucket(s3, team, tmp_path):
    """The lease lives in the bucket, so it holds across machines: while this process holds it,
    an index run from another machine (process, data dir) stops with exit 75 and names us."""
    from codeqa.store.connection import connect
    from codeqa.store.lease import RepoLock, holder

    settings, repo = team
    db = connect(settings)
    env = {**os.environ, **s3, "CODEQA_DATA_DIR": str(tmp_path / "other-machine"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(ROOT / "preprocessing.py"), "index", str(repo), "--name", "sample",
               "--no-progress"]
    with RepoLock(db, "sample", "index").held(wait=0):
        assert holder(connect(settings), "sample").pid == os.getpid()
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=STARTUP)
    assert run.returncode == 75, run.stderr
    assert f"sample is being indexed by another run (pid {os.getpid()}" in run.stderr
    assert holder(db, "sample") is None
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=STARTUP)
    assert run.returncode == 0, run.stderr


def test_remove_deletes_the_repos_tables_from_the_bucket(s3, team):
    from codeqa.store.connection import connect
    from codeqa.store.registry import get_repo, remove_repo

    settings, _ = team
    db = connect(settings)
    prefix = get_repo(db, "sample").prefix
    remove_repo(db, "sample")
    assert not [key for key in bucket_keys(s3) if key.startswith(f"index/{prefix}__")]
