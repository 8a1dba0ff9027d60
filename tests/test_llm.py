"""LLM client tests against real servers: the embedded llama.cpp model and tiny stdlib HTTP servers."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import psutil
import pytest

import llm
from config import Settings
from conftest import http_server

PROMPT = [{"role": "user", "content": "Write a Python function that adds two numbers."}]
Handler = Callable[[BaseHTTPRequestHandler], None]


def remote_settings(base_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {"llm_base_url": base_url, "chat_model": "m", "llm_timeout": 5.0}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def reply_json(status: int, body: object) -> Handler:
    def handle(request: BaseHTTPRequestHandler) -> None:
        payload = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)

    return handle


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- embedded model -----------------------------------------------------------------------


@pytest.mark.integration
def test_complete_returns_text(embedded_client: llm.LLMClient) -> None:
    answer = embedded_client.complete("chat", PROMPT, max_tokens=16)
    assert answer.strip()


@pytest.mark.integration
def test_stream_yields_several_deltas(embedded_client: llm.LLMClient) -> None:
    deltas = list(embedded_client.stream("hyde", PROMPT, max_tokens=16))
    assert len(deltas) > 1
    assert "".join(deltas).strip()


@pytest.mark.integration
def test_status_reports_running_embedded_model(
    embedded_client: llm.LLMClient, embedded_server: llm.LocalLLMServer
) -> None:
    status = embedded_client.status()
    assert status.available and status.embedded
    assert status.base_url == embedded_server.base_url()
    assert status.models == {"hyde": llm.EMBEDDED_MODEL_NAME, "chat": llm.EMBEDDED_MODEL_NAME}


@pytest.mark.integration
def test_assembled_model_matches_pinned_checksum(llm_data_dir: Path) -> None:
    model = llm_data_dir / "models" / llm.MODEL_FILE_NAME
    llm.verify_file(model, llm.MODEL_SIZE, llm.MODEL_SHA256)
    assert [p.name for p in model.parent.iterdir()] == [llm.MODEL_FILE_NAME]


@pytest.mark.integration
def test_second_server_adopts_running_one_and_leaves_it_running(
    embedded_settings: Settings, embedded_server: llm.LocalLLMServer
) -> None:
    other = llm.LocalLLMServer(embedded_settings)
    assert other.base_url() == embedded_server.base_url()
    assert other.pid == embedded_server.pid and not other.owned
    other.close()
    assert embedded_server.pid is not None and psutil.pid_exists(embedded_server.pid)
    assert embedded_server.running_url() == embedded_server.base_url()


def llama_servers_under(data_dir: Path) -> list[psutil.Process]:
    """Our children that run llama_cpp.server on a model inside `data_dir`."""
    return [
        child
        for child in psutil.Process().children()
        if "llama_cpp.server" in child.cmdline() and any(str(data_dir) in a for a in child.cmdline())
    ]


@pytest.mark.integration
def test_concurrent_first_calls_start_one_server_and_close_stops_it(
    tmp_path: Path, llm_data_dir: Path
) -> None:
    (tmp_path / "models").mkdir()
    name = llm.MODEL_FILE_NAME
    os.link(llm_data_dir / "models" / name, tmp_path / "models" / name)  # no 491 MB copy
    settings = Settings(data_dir=tmp_path, llm_base_url="", local_llm=True)
    client = llm.LLMClient(settings)
    assert client.server is not None
    urls: list[str] = []
    threads = [threading.Thread(target=lambda: urls.append(client.server.base_url())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(urls) == 4 and len(set(urls)) == 1
    assert [p.pid for p in llama_servers_under(tmp_path)] == [client.server.pid]
    assert client.complete("chat", PROMPT, max_tokens=4)
    pid = client.server.pid
    assert pid is not None and client.server.owned
    assert (tmp_path / "run" / "llm-server.json").is_file()
    client.close()
    assert not psutil.pid_exists(pid)
    assert not (tmp_path / "run" / "llm-server.json").exists()
    assert (tmp_path / "logs" / "llama-server.log").stat().st_size > 0


# --- model file verification (small files, no extra 491 MB writes) --------------------------


def write_parts(tmp_path: Path) -> tuple[list[Path], bytes]:
    chunks = [b"first part ", b"second part ", b"third"]
    parts = []
    for index, chunk in enumerate(chunks):
        part = tmp_path / f"part{index}.bin"
        part.write_bytes(chunk)
        parts.append(part)
    return parts, b"".join(chunks)


@pytest.mark.unit
def test_assemble_writes_verified_file(tmp_path: Path) -> None:
    parts, whole = write_parts(tmp_path)
    target = tmp_path / "models" / "model.gguf"
    llm.assemble_file(parts, target, len(whole), hashlib.sha256(whole).hexdigest())
    assert target.read_bytes() == whole
    assert [p.name for p in target.parent.iterdir()] == ["model.gguf"]


@pytest.mark.unit
def test_assemble_rejects_wrong_checksum_and_leaves_nothing(tmp_path: Path) -> None:
    parts, whole = write_parts(tmp_path)
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(llm.ModelFileError, match="sha256"):
        llm.assemble_file(parts, target, len(whole), "0" * 64)
    assert list(target.parent.iterdir()) == []


@pytest.mark.unit
def test_verify_rejects_wrong_size(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"truncated")
    with pytest.raises(llm.ModelFileError, match="expected 100 bytes"):
        llm.verify_file(path, 100, hashlib.sha256(b"truncated").hexdigest())


@pytest.mark.unit
def test_model_parts_are_found_in_installed_packages() -> None:
    parts = llm.model_part_paths()
    assert len(parts) == 6
    assert sum(p.stat().st_size for p in parts) == llm.MODEL_SIZE


# --- failures from remote endpoints ---------------------------------------------------------


@pytest.mark.unit
def test_unreachable_endpoint_is_reported_after_retries() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    client = llm.LLMClient(remote_settings(url), retries=2, backoff=0.01)
    with pytest.raises(llm.LLMUnavailable) as caught:
        client.complete("chat", PROMPT, max_tokens=16)
    message = str(caught.value)
    assert url in message and "unreachable" in message and "after 3 attempts" in message
    assert "\n" not in message


@pytest.mark.unit
def test_server_errors_are_retried_a_bounded_number_of_times() -> None:
    with http_server(reply_json(503, {"error": {"message": "overloaded"}})) as (url, seen):
        client = llm.LLMClient(remote_settings(url), retries=2, backoff=0.01)
        with pytest.raises(llm.LLMUnavailable, match="HTTP 503"):
            client.complete("chat", PROMPT, max_tokens=16)
    assert len(seen) == 3


@pytest.mark.unit
def test_client_errors_are_not_retried() -> None:
    with http_server(reply_json(401, {"error": {"message": "bad key"}})) as (url, seen):
        client = llm.LLMClient(remote_settings(url), retries=2, backoff=0.01)
        with pytest.raises(llm.LLMUnavailable, match="HTTP 401"):
            client.complete("chat", PROMPT, max_tokens=16)
    assert len(seen) == 1


@pytest.mark.unit
def test_silent_endpoint_times_out() -> None:
    release = threading.Event()
    with http_server(lambda request: release.wait(10)) as (url, seen):
        client = llm.LLMClient(remote_settings(url, llm_timeout=0.3), retries=1, backoff=0.01)
        try:
            with pytest.raises(llm.LLMUnavailable, match="timeout"):
                client.complete("chat", PROMPT, max_tokens=16)
        finally:
            release.set()
    assert len(seen) == 2


def sse_then_drop(request: BaseHTTPRequestHandler) -> None:
    """Send one streamed delta in a chunked body, then close without the final chunk."""
    event = {
        "id": "1", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": {"content": "partial"}, "finish_reason": None}],
    }  # fmt: skip
    data = f"data: {json.dumps(event)}\n\n".encode()
    request.send_response(200)
    request.send_header("Content-Type", "text/event-stream")
    request.send_header("Transfer-Encoding", "chunked")
    request.end_headers()
    request.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    request.wfile.flush()
    request.close_connection = True


@pytest.mark.unit
def test_stream_dropped_midway_keeps_partial_text_and_raises() -> None:
    with http_server(sse_then_drop) as (url, _):
        client = llm.LLMClient(remote_settings(url), retries=0)
        received: list[str] = []
        with pytest.raises(llm.LLMUnavailable, match="cut off"):
            for delta in client.stream("chat", PROMPT, max_tokens=16):
                received.append(delta)
    assert received == ["partial"]


@pytest.mark.unit
def test_no_llm_configured() -> None:
    client = llm.LLMClient(Settings(llm_base_url="", local_llm=False))
    with pytest.raises(llm.LLMUnavailable, match="CODEQA_LLM_BASE_URL"):
        client.complete("chat", PROMPT, max_tokens=16)
    status = client.status()
    assert not status.available and "CODEQA_LLM_BASE_URL" in status.reason


# --- model names -----------------------------------------------------------------------------


@pytest.mark.unit
def test_roles_fall_back_to_the_other_model() -> None:
    only_chat = llm.LLMClient(remote_settings("http://127.0.0.1:1/v1", chat_model="big"))
    only_hyde = llm.LLMClient(remote_settings("http://127.0.0.1:1/v1", chat_model="", hyde_model="small"))
    assert only_chat.model_for("hyde") == "big"
    assert only_hyde.model_for("chat") == "small"
    with pytest.raises(ValueError, match="unknown LLM role"):
        only_chat.model_for("summarise")


@pytest.mark.unit
def test_model_is_discovered_when_none_is_configured() -> None:
    listing = {"object": "list", "data": [{"id": "served-model", "object": "model", "created": 0, "owned_by": "x"}]}
    with http_server(reply_json(200, listing)) as (url, _):
        client = llm.LLMClient(remote_settings(url, chat_model=""))
        assert client.model_for("chat") == "served-model"
        status = client.status()
    assert status.available and not status.embedded
    assert status.models == {"hyde": "served-model", "chat": "served-model"}
