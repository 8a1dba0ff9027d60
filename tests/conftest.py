"""Shared fixtures: isolated data directories and an index of the sample repo built once."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from config import Settings  # noqa: E402
import llm  # noqa: E402

SAMPLE_REPO = ROOT / "tests" / "fixtures" / "sample_repo"


def settings_for(data_dir: Path, **overrides) -> Settings:
    """Settings that touch nothing outside `data_dir` and ignore the developer's `.env`."""
    return Settings(data_dir=data_dir, **overrides)


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
    from preprocessing import index_repo

    data_dir = tmp_path_factory.mktemp("indexed") / "data"
    settings = settings_for(data_dir)
    report = index_repo(SAMPLE_REPO, settings, name="sample", progress=False)
    return settings, report


# --- The embedded LLM server, shared by the whole session -------------------------------------


@pytest.fixture(scope="session")
def llm_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding the assembled model, written once per session."""
    data_dir = tmp_path_factory.mktemp("llm-data")
    llm.ensure_model_file(data_dir)
    return data_dir


@pytest.fixture(scope="session")
def embedded_settings(llm_data_dir: Path) -> Settings:
    return Settings(data_dir=llm_data_dir, llm_base_url="", local_llm=True, local_llm_threads=1)


@pytest.fixture(scope="session")
def embedded_server(embedded_settings: Settings) -> Iterator[llm.LocalLLMServer]:
    server = llm.LocalLLMServer(embedded_settings)
    server.base_url()
    yield server
    server.close()


@pytest.fixture
def embedded_client(embedded_settings: Settings, embedded_server: llm.LocalLLMServer) -> llm.LLMClient:
    return llm.LLMClient(embedded_settings, server=embedded_server)


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


@pytest.fixture(scope="session")
def colbert_checkpoint(tmp_path_factory) -> Path:
    """A tiny ColBERT with random weights and real model classes (the hub is unreachable here)."""
    from colbert_checkpoint import build_checkpoint

    return build_checkpoint(tmp_path_factory.mktemp("colbert") / "tiny-colbert")
