"""Names a cloned repository chose, shown by every face: escape sequences, a newline and a
right-to-left override in file names are printed escaped (`errors.printable`) by the CLI's
index summary and search, MCP and the web API; and `@file` reaches dotfiles and names with
spaces, as autocomplete offers them. The real CLIs, index, MCP client and app."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from codeqa.app import close_app, create_app
from codeqa.core.config import Settings
from codeqa.core.errors import printable
from codeqa.indexing.indexer import index_repo
from mcp_client import mcp_session

pytestmark = pytest.mark.integration

RETITLE = "bad\x1b]0;PWNED\x07\x1b[2J.py"  # sets the terminal's title, then clears the screen
FORGED = "forged\nIndexed evil (/tmp/evil).py"  # a second "Indexed" line in the summary
SPOOFED = "evil\u202etxt.py"  # shows as evilyp.txt
RAW = ("\x1b", "\x07", "\u202e")
FILES = {
    RETITLE: "def broken(:\n    pass\n\ndef pwned_name():\n    return 1\n",
    FORGED: "def broken(:\n",
    SPOOFED: "def spoof_name():\n    return 'spoofed'\n",
    "ok.py": "def total():\n    return 1\n",
    ".eslintrc.js": "module.exports = { rules: { semi: 'error' } };\n",
    "docs/with space.py": "def spaced_out():\n    return 2\n",
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """(repo root, data dir): the repo not indexed yet (the CLI test indexes it first)."""
    base = tmp_path_factory.mktemp("hostile")
    root = base / "repo"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root, base / "data"


@pytest.fixture(scope="module")
def indexed(hostile):
    root, data_dir = hostile
    index_repo(root, Settings(data_dir=data_dir), name="hostile", progress=False)
    return root, data_dir


def codeqa(data_dir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codeqa", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CODEQA_DATA_DIR": str(data_dir), "CODEQA_LOCAL_LLM": "0"})


def test_the_index_summary_prints_hostile_file_names_escaped(hostile, tmp_path):
    root, _ = hostile
    result = codeqa(tmp_path / "data", "index", str(root), "--name", "hostile", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert not any(char in result.stdout for char in RAW)
    assert printable(RETITLE) in result.stdout and printable(FORGED) in result.stdout
    assert [line for line in result.stdout.splitlines() if line.startswith("Indexed ")] == [
        f"Indexed hostile ({root})"]


def test_search_prints_hostile_file_names_escaped(indexed):
    _, data_dir = indexed
    result = codeqa(data_dir, "search", "--repo", "hostile", "spoof_name pwned_name")
    assert result.returncode == 0, result.stderr
    assert not any(char in result.stdout for char in RAW)
    assert f"{printable(SPOOFED)}:1-2  function spoof_name" in result.stdout
    assert f"{printable(RETITLE)}:4-5  function pwned_name" in result.stdout


def test_mcp_prints_hostile_file_names_escaped(indexed, tmp_path):
    _, data_dir = indexed
    with mcp_session(data_dir, tmp_path) as mcp:
        texts = [mcp.text("search_code", query="spoof_name pwned_name", k=5), mcp.text("find_symbol", name="spoof_name"),
                 mcp.text("read_code", path=SPOOFED), mcp.error("read_code", path=RETITLE + ".gone")]
        data = mcp.data("find_symbol", name="spoof_name")
    for text in texts:
        assert not any(char in text for char in RAW), text
    assert f"{printable(SPOOFED)}:1-2  function spoof_name" in texts[0] and printable(SPOOFED) in texts[1]
    assert texts[3] == f"{printable(RETITLE)}.gone is not an indexed file of hostile."
    assert data["definitions"][0]["file_path"] == SPOOFED  # the data keeps the name as it is


@pytest.fixture
def client(indexed, redis_server):
    _, data_dir = indexed
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": Settings(data_dir=data_dir, local_llm=False,
                                                                   redis_url=redis_server.url)})
    yield app.test_client()
    close_app(app)


def test_the_web_api_shows_hostile_names_escaped_and_keeps_them_as_data(client):
    completed = client.get("/api/complete", query_string={"repo": "hostile", "text": "@file evil"}).get_json()
    item = next(i for i in completed["items"] if "evil" in i["value"])
    assert item["label"] == printable(SPOOFED) and item["value"] == SPOOFED  # shown escaped, inserted as is
    missing = client.get("/api/file", query_string={"repo": "hostile", "path": RETITLE + ".gone"}).get_json()
    assert missing["error"] == f"{printable(RETITLE)}.gone is not an indexed file of hostile."
    page = client.get("/").get_data(as_text=True)
    assert '"unsafe_text": "[' in page  # the pattern the page's script escapes names with


@pytest.mark.parametrize("message, path", [
    ("@file .eslintrc.js which rules?", ".eslintrc.js"),
    ('@file "docs/with space.py" what does it return?', "docs/with space.py"),
])
def test_file_reaches_dotfiles_and_names_with_spaces(client, message, path):
    context = client.post("/api/context", json={"repo": "hostile", "message": message}).get_json()
    command = context["commands"][0]
    assert command["status"] == "ok" and [r["file_path"] for r in command["results"]] == [path]


def test_autocomplete_offers_paths_the_file_command_reads_back(client):
    for typed, value in [("@file .esl", ".eslintrc.js"), ("@file with", '"docs/with space.py"'),
                         ('@file "docs/with sp', '"docs/with space.py"')]:
        items = client.get("/api/complete", query_string={"repo": "hostile", "text": typed}).get_json()["items"]
        assert items[0]["value"] == value, typed
