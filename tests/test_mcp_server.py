"""The MCP server through the SDK's own stdio client, as an agent runs it (a real subprocess,
real LanceDB, the real embedding model), on the sample repo's index; no LLM is reachable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

from conftest import ROOT
from mcp_client import mcp_session
from codeqa.mcp_server import CodeTools
from codeqa.core.records import RepoInfo
from codeqa.search.options import SEARCH_LANGUAGES

TOOLS = {"search_code", "find_symbol", "find_references", "read_code", "list_repos"}
INDEX_TOOLS = {"index_repository", "index_status", "refresh_repository", "remove_repository"}


@pytest.fixture(scope="module")
def mcp(indexed_sample, tmp_path_factory):
    settings, _ = indexed_sample
    with mcp_session(settings.data_dir, tmp_path_factory.mktemp("elsewhere")) as session:
        yield session


@pytest.mark.integration
def test_tools_are_listed_read_only_with_descriptions_and_schemas(mcp):
    tools = {tool.name: tool for tool in mcp.tools()}
    assert set(tools) == TOOLS | INDEX_TOOLS
    for tool in tools.values():
        assert len(tool.description) > 80 and tool.output_schema["type"] == "object"
    assert {name for name, tool in tools.items() if tool.annotations.read_only_hint} == TOOLS | {"index_status"}
    assert {name for name, tool in tools.items() if tool.annotations.destructive_hint} == {"remove_repository"}
    assert tools["search_code"].input_schema["required"] == ["query"]
    assert tools["search_code"].input_schema["properties"]["k"]["maximum"] == 50
    assert tools["read_code"].input_schema["required"] == ["path"]
    assert tools["find_symbol"].input_schema["properties"]["name"]["maxLength"] == 1_000  # told, not just enforced


@pytest.mark.integration
def test_search_code_ranks_symbols_with_locations_and_uses_without_an_llm(mcp):
    found = mcp.data("search_code", query="where is make_demo_cart built?", k=5)
    assert found["repo"] == "sample" and found["notices"] == [] and len(found["results"]) == 5
    top = found["results"][0]
    assert (top["qualified_name"], top["location"], top["kind"], top["exact_match"]) == (
        "make_demo_cart", "shop/models.py:59-64", "function", True)
    assert top["signature"].startswith("def make_demo_cart() -> Cart")
    cart = next(hit for hit in found["results"] if hit["qualified_name"] == "Cart" and hit["language"] == "python")
    assert cart["reference_count"] >= 3 and cart["references"][0]["file_path"] == "shop/checkout.py"
    text = mcp.text("search_code", query="where is make_demo_cart built?", k=5)
    assert "1. shop/models.py:59-64  function make_demo_cart" in text and f"id {top['id']}" in text


@pytest.mark.integration
def test_search_code_filters_by_language_and_path(mcp):
    go = mcp.data("search_code", query="store inventory items", lang="go", k=5)["results"]
    assert go and {hit["language"] for hit in go} == {"go"}
    web = mcp.data("search_code", query="cart", path="web/", k=5)["results"]
    assert web and all(hit["file_path"].startswith("web/") for hit in web)
    assert "No text files are indexed" in mcp.text("search_code", query="cart", lang="text")
    refused = mcp.call("search_code", query="cart", lang="cobol")
    assert refused.is_error and refused.content[0].text == f"lang must be one of {', '.join(SEARCH_LANGUAGES)}."


@pytest.mark.integration
def test_find_symbol_gives_every_definition_with_its_numbered_code(mcp):
    found = mcp.data("find_symbol", name="Cart.add")
    assert [(d["qualified_name"], d["location"]) for d in found["definitions"]] == [
        ("Cart.add", "shop/models.py:39-45"), ("Cart.add", "web/js/cart.js:26-29")]
    python = found["definitions"][0]
    assert python["code"].splitlines()[:2] == ["    @log_calls",
                                               "    def add(self, product: Product, quantity: int = 1) -> None:"]
    assert python["reference_count"] == 3 and not python["code_truncated"]
    text = mcp.text("find_symbol", name="Cart.add")
    assert "shop/models.py:39-45  method Cart.add" in text
    assert "40      def add(self, product: Product, quantity: int = 1) -> None:" in text


@pytest.mark.integration
def test_find_symbol_suggests_near_names_for_an_unknown_one(mcp):
    found = mcp.data("find_symbol", name="Crat")
    assert found["definitions"] == [] and found["suggestions"][0] == "Cart (shop/models.py:27)"
    assert "Did you mean: Cart (shop/models.py:27)" in mcp.text("find_symbol", name="Crat")


@pytest.mark.integration
def test_find_references_lists_every_use_most_relevant_first(mcp):
    found = mcp.data("find_references", symbol="Cart.add")
    assert found["total"] == 4
    assert [(u["location"], u["caller"]) for u in found["uses"]] == [
        ("shop/checkout.py:14:14", "checkout"), ("shop/models.py:62:10", "make_demo_cart"),
        ("web/js/cart.js:61:8", "demo"), ("shop/models.py:63:10", "make_demo_cart")]
    assert found["uses"][0]["text"] == "cart.add(product)"
    assert "shop/checkout.py:14:14  cart.add(product)  [in checkout]" in mcp.text("find_references", symbol="Cart.add")


@pytest.mark.integration
def test_find_references_by_symbol_id_picks_one_definition(mcp):
    javascript = mcp.data("find_symbol", name="Cart.add")["definitions"][1]
    found = mcp.data("find_references", symbol=javascript["id"])
    assert [d["location"] for d in found["definitions"]] == ["web/js/cart.js:26-29"]
    assert [u["location"] for u in found["uses"]] == ["web/js/cart.js:61:8"]
    limited = mcp.data("find_references", symbol="Cart.add", limit=1)
    assert limited["total"] == 4 and len(limited["uses"]) == 1


@pytest.mark.integration
def test_read_code_returns_numbered_lines_of_an_indexed_file(mcp):
    lines = (ROOT / "tests/fixtures/sample_repo/shop/models.py").read_text().splitlines()
    found = mcp.data("read_code", path="shop/models.py", start=39, end=45)
    assert found["lines"] == lines[38:45] and (found["start"], found["end"], found["total_lines"]) == (39, 45, 64)
    assert mcp.data("read_code", path="shop/models.py", start=60, end=500)["end"] == 64
    assert mcp.text("read_code", path="shop/checkout.py").startswith("shop/checkout.py lines 1-15 of 15 (python):\n 1  ")
    absolute = mcp.data("read_code", path=str(ROOT / "tests/fixtures/sample_repo/shop/models.py"), start=39, end=39)
    assert (absolute["path"], absolute["lines"]) == ("shop/models.py", [lines[38]])


@pytest.mark.integration
@pytest.mark.parametrize("arguments, message", [
    ({"path": "../etc/passwd"}, "Invalid path: use a path relative to the repository, as in the sources."),
    ({"path": "/etc/passwd"}, "Invalid path: use a path relative to the repository, as in the sources."),
    ({"path": ".gitignore"}, ".gitignore is not an indexed file of sample."),
    ({"path": "shop/models.py", "start": 65}, "shop/models.py has 64 lines."),
    ({"path": "shop/models.py", "start": 9, "end": 3}, "end must not be before start."),
])
def test_read_code_is_confined_to_indexed_files_like_the_web_view(mcp, arguments, message):
    assert mcp.error("read_code", **arguments) == message


@pytest.mark.integration
def test_errors_carry_the_clis_one_line_message(mcp, indexed_sample):
    settings, _ = indexed_sample
    cli = subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), "remove", "nope"], capture_output=True,
                         text=True, env={"CODEQA_DATA_DIR": str(settings.data_dir), "PATH": "/usr/bin:/bin"})
    assert cli.returncode == 1
    message = cli.stderr.strip().removeprefix("error: ")
    assert message == "Unknown repo 'nope'."
    for tool, arguments in [("search_code", {"query": "cart"}), ("find_symbol", {"name": "Cart"}),
                            ("find_references", {"symbol": "Cart"}), ("read_code", {"path": "shop/models.py"})]:
        assert mcp.error(tool, repo="nope", **arguments) == message
    assert mcp.error("search_code", query="   ") == "The query is empty."


@pytest.mark.integration
def test_list_repos_names_the_default(mcp):
    found = mcp.data("list_repos")
    assert found["default"] == "sample" and [r["name"] for r in found["repos"]] == ["sample"]
    assert found["repos"][0]["files"] == 32 and found["repos"][0]["languages"]["python"] == 7
    assert mcp.text("list_repos").startswith("sample  (default): ")


def _repo(name: str, root: str) -> RepoInfo:
    return RepoInfo(name=name, root=root, prefix=name, embedding_model="m", embedding_dim=1, created_at=0,
                    indexed_at=0)


@pytest.mark.unit
@pytest.mark.parametrize("default_repo, workdir, expected", [
    (None, "/work/app/src", "app"),  # the repo holding the working directory, the innermost one
    (None, "/work/app/vendor/lib/x", "lib"),
    (None, "/elsewhere", None),  # several repos and none holds it: the caller must say
    ("lib", "/work/app", "lib"),  # --repo wins
])
def test_the_default_repo_is_the_one_asked_for_or_the_projects(default_repo, workdir, expected):
    repos = [_repo("app", "/work/app"), _repo("lib", "/work/app/vendor/lib")]
    chosen = CodeTools(None, default_repo, Path(workdir)).default(repos)  # type: ignore[arg-type]
    assert (chosen.name if chosen else None) == expected
    assert CodeTools(None, None, Path("/elsewhere")).default(repos[:1]).name == "app"  # type: ignore[arg-type]


@pytest.mark.integration
@pytest.mark.parametrize("tool, arguments, message", [
    ("search_code", {}, "query is required: a question, a task, or a bug report / error message / stack trace as "
                        "is (up to 20,000 characters)."),
    ("search_code", {"query": 5}, "query must be a string of at most 20,000 characters."),
    ("search_code", {"query": "cart", "k": 500}, "k must be a whole number from 1 to 50."),
    ("search_code", {"query": "cart", "k": -1}, "k must be a whole number from 1 to 50."),
    ("search_code", {"query": "cart", "k": "10"}, "k must be a whole number from 1 to 50."),  # as the web API says
    ("search_code", {"query": "cart", "k": True}, "k must be a whole number from 1 to 50."),
    ("search_code", {"query": "cart", "k": 2.5}, "k must be a whole number from 1 to 50."),
    ("search_code", {"query": "cart", "lang": 3}, "lang must be a string, or left out."),
    ("search_code", {"query": "cart", "top_k": 3}, "search_code has no argument 'top_k'; it takes query, repo, k, "
                                                   "lang, path."),
    ("search_code", {"query": "cart", "path": "../"}, "path must be a folder or file path inside the repo, relative "
                                                      "to its root (no '..', not absolute), e.g. src/api/."),
    ("search_code", {"query": "cart", "path": "/etc"}, "path must be a folder or file path inside the repo, "
                                                       "relative to its root (no '..', not absolute), e.g. src/api/."),
    ("find_symbol", {"name": ""}, "name must be a symbol name such as parse or Cart.add, not empty."),
    ("find_symbol", {"name": "   "}, "name must be a symbol name such as parse or Cart.add, not empty."),
    ("find_symbol", {"name": None}, "name must be a string of at most 1,000 characters."),
    ("find_references", {"symbol": ""}, "symbol must be a symbol name such as parse or Cart.add, not empty."),
    ("find_references", {"symbol": "Cart", "limit": 0}, "limit must be a whole number from 1 to 2,000."),
    ("read_code", {"path": None}, "path must be a string of at most 1,000 characters."),
    ("read_code", {"path": "shop/models.py", "start": "3"}, "start must be a whole number of at least 1."),
    ("read_code", {"path": "shop/models.py", "end": 0}, "end must be a whole number of at least 1, or left out."),
    ("list_repos", {"verbose": True}, "list_repos has no argument 'verbose'; it takes no arguments."),
    # Every string argument is capped, and the message never sends the value back.
    ("find_symbol", {"name": "x" * 100_000}, "name has 100,000 characters; the limit is 1,000."),
    ("find_references", {"symbol": "Cart" * 25_000}, "symbol has 100,000 characters; the limit is 1,000."),
    ("search_code", {"query": "x" * 20_001}, "query has 20,001 characters; the limit is 20,000."),
    ("search_code", {"query": "cart", "lang": "x" * 5_000}, "lang has 5,000 characters; the limit is 1,000."),
    ("search_code", {"query": "cart", "path": "a/" * 501}, "path has 1,002 characters; the limit is 1,000."),
    ("read_code", {"path": "a/" * 501}, "path has 1,002 characters; the limit is 1,000."),
    ("find_symbol", {"name": "Cart", "repo": "r" * 4097}, "repo has 4,097 characters; the limit is 4,096."),
])
def test_bad_arguments_get_one_line_saying_what_is_allowed(mcp, tool, arguments, message):
    assert mcp.error(tool, **arguments) == message


class RawServer:
    """`codeqa mcp` spoken to in raw bytes on its stdin, initialized as a client would (the SDK's
    client can't send a lone surrogate: its writer fails to encode one)."""

    def __init__(self, data_dir: Path, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codeqa", "mcp"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"CODEQA_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
                 "PATH": "/usr/bin:/bin"})
        initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        assert "result" in self.request(1, "initialize", initialize)[-1]
        self.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def write(self, line: bytes) -> None:
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def request(self, request_id: int, method: str, params: dict | None = None) -> list[dict]:
        """Send a request; every line the server wrote until its answer, that answer last."""
        self.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}).encode())
        lines = []
        while not lines or lines[-1].get("id") != request_id:
            line = self.proc.stdout.readline()
            assert line, "the server closed its stdout"
            lines.append(json.loads(line))
        return lines

    def answers_to(self, raw: bytes, next_id: int) -> list[dict]:
        """What the server wrote for a raw line: all it answered before the request sent after it."""
        self.write(raw)
        return self.request(next_id, "ping")[:-1]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture
def raw_server(tmp_path):
    server = RawServer(tmp_path / "data", tmp_path)
    try:
        yield server
    finally:
        server.close()


def error(request_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


@pytest.mark.integration
@pytest.mark.parametrize("raw, answer", [
    (b"not json", error(None, PARSE_ERROR, "Parse error: the line is not JSON.")),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call"', error(None, PARSE_ERROR,
                                                                   "Parse error: the line is not JSON.")),
    (b"\xff\xfe\x00 not UTF-8", error(None, PARSE_ERROR, "Parse error: the line is not JSON.")),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "search_code", '
     b'"arguments": {"query": "\\ud800"}}}',
     error(7, INVALID_PARAMS, "Invalid params: the 'query' argument is not valid Unicode text (it holds a lone "
                              "surrogate).")),
    (b'{"jsonrpc": "2.0", "id": "r-7", "method": "tools/call", "params": {"name": "read_code", '
     b'"arguments": {"path": "a\\udfffb.py"}}}',
     error("r-7", INVALID_PARAMS, "Invalid params: the 'path' argument is not valid Unicode text (it holds a lone "
                                  "surrogate).")),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "x", "params": {"n": ' + b"[" * 300 + b"]" * 300 + b"}}",
     error(7, INVALID_REQUEST, "Invalid request: the server can't read its JSON (nested too deeply?).")),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "x", "params": {"n": ' + b"[" * 950 + b'"\\ud800"' + b"]" * 950
     + b"}}", error(7, INVALID_PARAMS, "Invalid params: the request is not valid Unicode text (it holds a lone "
                                       "surrogate).")),
    (b"[1, 2]", error(None, INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object.")),
    (b'{"jsonrpc": "2.0", "id": 7}', error(7, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request or "
                                                                "notification.")),
])
def test_every_line_the_sdk_cannot_read_gets_one_json_rpc_error_line(raw_server, raw, answer):
    assert raw_server.answers_to(raw, 100) == [answer]
    assert raw_server.answers_to(raw, 101) == [answer]  # and the server reads on


@pytest.mark.integration
def test_a_notification_the_sdk_cannot_read_is_not_answered(raw_server):
    notification = b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "\\ud800"}}'
    assert raw_server.answers_to(notification, 100) == []
    assert raw_server.answers_to(b"", 101) == []  # nor a blank line
