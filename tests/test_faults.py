"""Services that misbehave under the real app: LLM endpoints written with the standard library
that answer HTML, break their stream or hang; Redis stopped or killed; the app itself killed.
The chat always ends with `error` (when something failed) and `done`, shows its sources, and
never stores a cut-off answer as a complete one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler

import psutil
import pytest

from codeqa.app import close_app, create_app
from conftest import ROOT, http_server
from codeqa.core.servers import answers, free_port, wait_until_ready

pytestmark = pytest.mark.integration


def chunk(text: str | None, finish: str | None = None) -> bytes:
    event = {"id": "1", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}]}
    return f"data: {json.dumps(event)}\n\n".encode()


def send(request: BaseHTTPRequestHandler, body: bytes, content_type: str, length: bool = True) -> None:
    request.send_response(200)
    request.send_header("Content-Type", content_type)
    if length:
        request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)
    request.wfile.flush()


def models_or(stream_body: bytes, length: bool = True):
    """An OpenAI-style endpoint: its model list, and `stream_body` for any chat completion."""
    def handle(request: BaseHTTPRequestHandler) -> None:
        if request.path.endswith("/models"):
            send(request, json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode(),
                 "application/json")
        else:
            send(request, stream_body, "text/event-stream", length)
            request.close_connection = True
    return handle


GOOD_STREAM = chunk("The total ") + chunk("is computed in Cart.total.") + chunk(None, "stop") + b"data: [DONE]\n\n"


def html(request: BaseHTTPRequestHandler) -> None:
    send(request, b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>", "text/html")


def app_for(indexed_sample, llm_url: str, redis_url: str, **overrides):
    settings, _ = indexed_sample
    app_settings = settings.__class__(data_dir=overrides.pop("data_dir", settings.data_dir),
                                      lancedb_uri=settings.database_uri, llm_base_url=llm_url,
                                      chat_model="m", hyde_model="m", redis_url=redis_url, **overrides)
    return create_app({"TESTING": True, "CODEQA_SETTINGS": app_settings,
                       "CODEQA_CHAT_BUDGET": {"answer_tokens": 24, "context_tokens": 600, "k": 4}})


def chat(client, message: str = "@codebase how is the cart total computed?", hyde: bool = False):
    response = client.post("/api/chat", json={"repo": "sample", "message": message, "hyde": hyde})
    assert response.status_code == 200
    events = []
    for frame in response.get_data(as_text=True).strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def names(events) -> list[str]:
    return [name for name, _ in events]


def history(client) -> list[dict]:
    return client.get("/api/history?repo=sample").get_json()["messages"]


def test_an_llm_url_that_serves_a_web_page_is_reported_not_a_500(indexed_sample, redis_server):
    with http_server(html) as (url, _):
        app = app_for(indexed_sample, url, redis_server.url)
        client = app.test_client()
        try:
            assert client.get("/").status_code == 200
            status = client.get("/api/status")
            assert status.status_code == 200
            llm_status = status.get_json()["llm"]
            assert llm_status["available"] is False and "OpenAI API format" in llm_status["reason"]
            assert "ends in /v1" in llm_status["reason"]
            searched = client.post("/api/search", json={"repo": "sample", "query": "cart total", "hyde": True})
            assert searched.status_code == 200 and searched.get_json()["hyde"]["used"] is False
            assert searched.get_json()["results"]
            events = chat(client)
            assert names(events)[-2:] == ["status", "done"] and "error" in names(events)
        finally:
            close_app(app)


@pytest.mark.parametrize("body, length", [
    (chunk("Half an ans") + b"data: {this is not json\n\n", True),  # a malformed event
    (chunk("Half an ans"), False),  # the connection closes before the LLM finished
])
def test_a_broken_stream_ends_with_error_and_done_and_is_stored_as_cut_off(indexed_sample, redis_server, body,
                                                                           length):
    with http_server(models_or(body, length)) as (url, _):
        app = app_for(indexed_sample, url, redis_server.url)
        client = app.test_client()
        try:
            events = chat(client)
            order = names(events)
            assert "sources" in order and order[-1] == "done"
            error = next(data for name, data in events if name == "error")
            assert error["code"] == "llm_unavailable" and "cut off" in error["message"]
            assert "".join(data["text"] for name, data in events if name == "token") == "Half an ans"
            stored = history(client)
            assert stored[-1]["content"] == "Half an ans" and stored[-1]["truncated"] is True
        finally:
            close_app(app)


def test_a_hanging_llm_costs_one_timeout_then_a_message(indexed_sample, redis_server):
    release = threading.Event()
    with http_server(lambda request: release.wait(60)) as (url, seen):
        app = app_for(indexed_sample, url, redis_server.url, llm_timeout=1.0)
        try:
            events = chat(app.test_client())
            error = next(data for name, data in events if name == "error")
            assert "did not answer within 1 s (timeout)" in error["message"] and names(events)[-1] == "done"
            assert len(seen) == 1  # one attempt used the whole budget (it was one per retry: 3 waits)
        finally:
            release.set()
            close_app(app)


def test_with_redis_down_the_sources_still_come_and_the_message_is_true(indexed_sample, redis_server):
    with http_server(models_or(GOOD_STREAM)) as (url, _):
        app = app_for(indexed_sample, url, redis_server.url)
        client = app.test_client()
        try:
            chat(client)
            redis_server.stop()
            events = chat(client)
            order = names(events)
            assert "error" not in order and "sources" in order and "token" in order and order[-1] == "done"
            notices = [data for name, data in events if name == "notice" and data["code"] == "redis_unavailable"]
            assert "until it is reachable again" in notices[0]["message"]
            assert notices[-1]["message"] == "This answer was not saved."
            redis_server.start()
            back = chat(client)  # other notices (an answer citing nothing) are not Redis's business
            assert "error" not in names(back) and not [data for name, data in back
                                                       if name == "notice" and data["code"] == "redis_unavailable"]
        finally:
            close_app(app)


def test_the_embedded_redis_is_started_again_when_it_dies(indexed_sample, tmp_path):
    with http_server(models_or(GOOD_STREAM)) as (url, _):
        app = app_for(indexed_sample, url, "", data_dir=tmp_path / "data")
        client = app.test_client()
        try:
            chat(client)
            store = app.extensions["codeqa"].store
            first = store._embedded.pid  # the turn is in its append-only file (in the page cache at least)
            os.kill(first, signal.SIGKILL)
            events = chat(client)
            assert "error" not in names(events) and not [data for name, data in events
                                                         if name == "notice" and data["code"] == "redis_unavailable"]
            assert store._embedded.pid not in (None, first)
            assert len(history(client)) == 4  # the turn from before the kill, and this one
            assert client.get("/api/status").get_json()["redis"]["ok"] is True
        finally:
            close_app(app)


def test_killing_the_app_takes_its_embedded_redis_with_it(indexed_sample, tmp_path):
    settings, _ = indexed_sample
    port = free_port()
    env = {**os.environ, "CODEQA_DATA_DIR": str(tmp_path / "data"), "CODEQA_LANCEDB_URI": settings.database_uri,
           "CODEQA_LOCAL_LLM": "0", "CODEQA_PORT": str(port)}
    env.pop("REDIS_URL", None)
    app = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until_ready(app, lambda: answers(f"http://127.0.0.1:{port}/api/repos"), 300) is None
        servers = [p for p in psutil.Process(app.pid).children(recursive=True) if p.name() == "redis-server"]
        assert len(servers) == 1
        os.kill(app.pid, signal.SIGKILL)
        app.wait()
        gone, alive = psutil.wait_procs(servers, timeout=30)
        assert not alive, "the embedded redis-server outlived the app"
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
