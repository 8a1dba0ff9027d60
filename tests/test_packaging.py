"""`pip install .` in a fresh virtualenv gives one package, `codeqa`, and working `codeqa` commands.

What the integration test does, to stay offline and take seconds rather than the ~10 minutes a
real install takes (PyTorch, compiling llama.cpp):
- it copies the checkout's files (no .git, .venv, tests) to a temporary folder and creates a
  fresh venv (without pip) whose only link to the test run's environment is one `.pth` file:
  the test's site-packages (holding every pinned dependency, and setuptools) are visible to it;
- the test run's pip, pointed at the fresh venv (`pip --python VENV/bin/python install
  --no-index`, pip's configuration files ignored), resolves every pin of requirements.txt
  against those installed packages (a missing or differently pinned one fails: there is no
  index to fetch it from), then installs the wheel that `pip wheel` built from the copy with
  the pinned setuptools: the package, its data (queries, ranking models, the embedder's
  tokenizer, templates, static) and the `codeqa` command;
- the commands run from a folder outside the checkout, so the modules, queries, templates
  and assets they use are the installed ones (the test checks where they were imported from).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_REPO
from mcp_client import NO_LLM, mcp_session
from codeqa.core.servers import free_port, start_server
from test_live_index import DEADLINE, Watcher


@pytest.mark.unit
def test_codeqa_lists_its_commands_and_refuses_unknown_ones(capsys):
    from codeqa.cli import COMMANDS, main

    assert main(["--help"]) == 0
    usage = capsys.readouterr().out
    assert all(f"\n  {name} " in usage for name in COMMANDS)
    assert main(["frobnicate"]) == 2 and "unknown command 'frobnicate'" in capsys.readouterr().err


def _pip(*args: str) -> None:
    run = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True,
                         env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of this checkout (offline, with the pinned setuptools)."""
    work = tmp_path_factory.mktemp("build")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", ".pytest_cache", "build", "*.egg-info", "data", "test-artifacts"))
    _pip("wheel", "--no-index", "--no-build-isolation", "--no-deps", "--quiet", "--wheel-dir", str(work / "dist"),
         str(source))
    return next((work / "dist").glob("codeqa-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The bin folder of a fresh venv with that wheel installed."""
    venv = tmp_path_factory.mktemp("install") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (Path(sysconfig.get_path("purelib", vars={"base": str(venv)})) / "test-dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n")
    python = str(venv / "bin" / "python")
    # Every pin of requirements.txt is met by what is installed (there is no index to fetch from) ...
    _pip("--python", python, "install", "--no-index", "--quiet", "-r", str(ROOT / "requirements.txt"))
    # ... and the wheel goes in as itself: the test run's own editable install of this checkout is
    # visible through the .pth, and pip would otherwise take it for "already satisfied".
    _pip("--python", python, "install", "--no-index", "--no-deps", "--force-reinstall", "--quiet", str(wheel))
    return venv / "bin"


@pytest.mark.integration
def test_the_wheel_holds_only_the_codeqa_package_and_its_data(wheel):
    import codeqa

    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"codeqa", f"codeqa-{codeqa.__version__}.dist-info"}
    data = {name for name in names if not name.endswith(".py") and name.startswith("codeqa/")}
    shipped = {str(path.relative_to(ROOT)) for folder in ("parsing/queries", "search/models", "indexing/models", "templates", "static")
               for path in (ROOT / "codeqa" / folder).rglob("*") if path.is_file()}
    assert shipped and shipped <= data
    entry_points = zipfile.ZipFile(wheel).read(f"codeqa-{codeqa.__version__}.dist-info/entry_points.txt").decode()
    assert "codeqa = codeqa.cli:main" in entry_points


def _env(data_dir: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "HF_HUB_OFFLINE": "1",
            "CODEQA_DATA_DIR": str(data_dir), "CODEQA_LLM_BASE_URL": NO_LLM}


def _run(bin_dir: Path, cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "codeqa"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=DEADLINE)


@pytest.mark.integration
def test_pip_install_gives_working_codeqa_commands(installed, tmp_path):
    data_dir, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo = shutil.copytree(SAMPLE_REPO, tmp_path / "repo")
    env = _env(data_dir)
    where = subprocess.run([str(installed / "python"), "-c", "import codeqa; from codeqa.parsing import treesitter; "
                            "print(codeqa.__file__); print(treesitter.QUERIES_DIR); print(codeqa.Services.__module__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr
    where = where.stdout.split()
    assert all(path.startswith(str(installed.parent)) for path in where[:2]), where
    assert where[2] == "codeqa.services"
    assert "  mcp " in subprocess.run([str(installed / "python"), "-m", "codeqa", "--help"], cwd=elsewhere, env=env,
                                      capture_output=True, text=True).stdout

    assert "  mcp " in _run(installed, elsewhere, env, "--help").stdout
    indexed = _run(installed, elsewhere, env, "index", str(repo), "--name", "sample", "--no-progress")
    assert indexed.returncode == 0, indexed.stderr
    assert "files: 32 added" in indexed.stdout
    assert _run(installed, elsewhere, env, "list").stdout.startswith(f"sample\t{repo}")

    found = _run(installed, elsewhere, env, "search", "--repo", "sample", "--no-hyde", "--json", "make_demo_cart")
    assert json.loads(found.stdout)["results"][0]["qualified_name"] == "make_demo_cart", found.stderr

    with mcp_session(data_dir, elsewhere, command=(str(installed / "codeqa"), ["mcp"])) as mcp:
        assert mcp.data("find_symbol", name="make_demo_cart")["definitions"][0]["location"] == "shop/models.py:59-64"

    port = free_port()
    server = start_server([str(installed / "codeqa"), "serve", "--port", str(port)], env,
                          f"http://127.0.0.1:{port}/api/status", timeout=DEADLINE)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as page:
            assert "<script type=\"application/json\"" in page.read().decode()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/app.js") as script:
            assert script.status == 200
    finally:
        server.terminate()
        server.wait(timeout=60)

    watcher = Watcher(repo, data_dir, "sample", command=[str(installed / "codeqa"), "watch"], cwd=elsewhere)
    try:
        watcher.wait_for(lambda: any(line.startswith("Watching ") for line in watcher.lines), "watch")
        assert "files: 0 added, 0 changed, 0 deleted, 32 unchanged" in watcher.output()
    finally:
        watcher.stop()

    removed = _run(installed, elsewhere, env, "remove", "sample")
    assert removed.stdout.startswith("Removed sample") and _run(installed, elsewhere, env, "list").stdout.startswith(
        "No repos indexed yet")
