"""Indexing, a CLI search, a web chat turn and an MCP search never import torch & co.

The local embedder runs on onnxruntime; torch, transformers and sentence-transformers are the
train extra's (they are installed here, for the tests that compare with them, which is what
makes these tests able to fail). Each process runs with a `sitecustomize` probe that writes,
at exit, which of those modules it had imported.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_REPO
from mcp_client import NO_LLM, mcp_session
from codeqa.core.servers import free_port, start_server

HEAVY = ("torch", "transformers", "sentence_transformers")
PROBE = f"""import atexit, json, os, sys

def _write():
    heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
    with open(os.environ["CODEQA_MODULES_PROBE"], "a") as handle:
        handle.write(json.dumps({{"argv": sys.argv, "heavy": heavy}}) + "\\n")

atexit.register(_write)
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> tuple[dict[str, str], Path, Path]:
    """(environment, probe output, data dir) for processes that report their imports at exit."""
    work = tmp_path_factory.mktemp("lean")
    (work / "probe").mkdir()
    (work / "probe" / "sitecustomize.py").write_text(PROBE)
    out = work / "imports.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(work / "probe"), str(ROOT)]),
           "CODEQA_MODULES_PROBE": str(out), "CODEQA_DATA_DIR": str(work / "data"),
           "CODEQA_LLM_BASE_URL": NO_LLM, "CODEQA_CHAT_MODEL": "local", "HF_HUB_OFFLINE": "1"}
    env.pop("REDIS_URL", None)
    return env, out, work / "data"


def reports(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def codeqa(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codeqa", *args], env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.integration
def test_the_probe_sees_torch_when_a_process_imports_it(probed):
    env, out, _ = probed
    subprocess.run([sys.executable, "-c", "import torch"], env=env, check=True)
    assert reports(out)[-1]["heavy"] == ["torch"]
    out.unlink()


@pytest.mark.integration
def test_index_and_cli_search_import_no_torch(probed):
    env, out, _ = probed
    indexed = codeqa(env, "index", str(SAMPLE_REPO), "--name", "sample", "--no-progress")
    assert indexed.returncode == 0, indexed.stderr
    found = codeqa(env, "search", "--repo", "sample", "--json", "helper function that doubles the area")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"]
    runs = reports(out)
    assert [run["argv"][1:3] for run in runs] == [["index", str(SAMPLE_REPO)], ["search", "--repo"]]
    assert all(run["heavy"] == [] for run in runs), runs


@pytest.mark.integration
def test_a_web_chat_turn_imports_no_torch(probed):
    env, out, data_dir = probed
    if not (data_dir / "lancedb").exists() and codeqa(env, "list").stdout.startswith("No repos"):
        assert codeqa(env, "index", str(SAMPLE_REPO), "--name", "sample", "--no-progress").returncode == 0
    out.unlink(missing_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server([sys.executable, str(ROOT / "app.py"), "--port", str(port)], env, base + "/api/repos",
                          timeout=120)
    try:
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        opener.open(base + "/").read()
        request = urllib.request.Request(base + "/api/chat", method="POST", headers={"Content-Type": "application/json"},
                                         data=json.dumps({"repo": "sample", "message": "@codebase how is the cart total computed?",
                                                          "hyde": False}).encode())
        stream = opener.open(request, timeout=300).read().decode()
        assert "event: sources" in stream, stream[:2000]  # the search ran; the LLM is down on purpose
    finally:
        server.terminate()
        server.wait(timeout=60)
    runs = reports(out)
    assert runs and all(run["heavy"] == [] for run in runs), runs


@pytest.mark.integration
def test_an_mcp_search_imports_no_torch(probed, tmp_path):
    env, out, data_dir = probed
    if codeqa(env, "list").stdout.startswith("No repos"):
        assert codeqa(env, "index", str(SAMPLE_REPO), "--name", "sample", "--no-progress").returncode == 0
    out.unlink(missing_ok=True)
    with mcp_session(data_dir, tmp_path, env={"PYTHONPATH": env["PYTHONPATH"], "CODEQA_MODULES_PROBE": str(out)}) as mcp:
        assert mcp.data("search_code", query="cart total", repo="sample")["results"]
    runs = reports(out)
    assert runs and all(run["heavy"] == [] for run in runs), runs
