"""The web app's front door: it answers only its own host names (no DNS rebinding), and takes a
chat or a change only from its own page, as JSON. Through Flask's test client here, and from
real pages in Chromium (`test_front_door_browser.py`)."""

from __future__ import annotations

import json

import pytest
import redis

from codeqa.app import close_app, create_app
from codeqa.core.config import Settings
from codeqa.core.errors import ConfigError

pytestmark = pytest.mark.integration

SEARCH = {"repo": "sample", "query": "cart total", "k": 3}


def make_app(indexed_sample, redis_url: str, host: str = "", **overrides):
    settings, _ = indexed_sample
    app_settings = Settings(data_dir=settings.data_dir, local_llm=False, redis_url=redis_url, **overrides)
    return create_app({"TESTING": True, "CODEQA_SETTINGS": app_settings, "CODEQA_HOST": host})


@pytest.fixture
def app(indexed_sample, redis_server):
    app = make_app(indexed_sample, redis_server.url)
    yield app
    close_app(app)


@pytest.mark.parametrize("route", ["/", "/api/repos", "/api/status", "/api/history?repo=sample",
                                   "/api/file?repo=sample&path=shop/models.py", "/static/app.js"])
@pytest.mark.parametrize("host", ["evil.example", "evil.example:5000", "127.0.0.1.nip.io", "localhost.evil.example"])
def test_a_host_name_the_app_does_not_serve_gets_421(app, route, host):
    response = app.test_client().get(route, base_url=f"http://{host}")
    assert response.status_code == 421
    body = response.get_data(as_text=True)
    assert "CODEQA_ALLOWED_HOSTS" in body and "sample" not in body and "Cart" not in body


@pytest.mark.parametrize("host", ["127.0.0.1:5000", "localhost:8080", "LOCALHOST", "[::1]:5000", "127.0.0.1"])
def test_the_loopback_names_are_served(app, host):
    assert app.test_client().get("/api/repos", base_url=f"http://{host}").status_code == 200


def test_configured_hosts_and_the_bound_address_are_served(indexed_sample, redis_server):
    app = make_app(indexed_sample, redis_server.url, host="192.168.7.9", allowed_hosts=("codeqa.lan",))
    try:
        client = app.test_client()
        for host in ("192.168.7.9:5000", "codeqa.lan", "CodeQA.lan:443", "127.0.0.1:5000"):
            assert client.get("/api/repos", base_url=f"http://{host}").status_code == 200, host
        assert client.get("/api/repos", base_url="http://192.168.7.10:5000").status_code == 421
    finally:
        close_app(app)


def test_every_interface_is_not_a_host_name(indexed_sample, redis_server):
    app = make_app(indexed_sample, redis_server.url, host="0.0.0.0")
    try:
        assert app.test_client().get("/api/repos", base_url="http://0.0.0.0:5000").status_code == 421
    finally:
        close_app(app)


@pytest.mark.parametrize("headers", [
    {"Origin": "https://evil.example"},
    {"Origin": "http://127.0.0.1:8000"},  # another local server: another origin
    {"Origin": "null"},  # a sandboxed frame, a file:// page
    {"Referer": "https://evil.example/page.html"},
])
def test_a_chat_from_another_origin_gets_403(app, headers):
    response = app.test_client().post("/api/chat", json={"repo": "sample", "message": "@codebase cart"},
                                      headers=headers, base_url="http://127.0.0.1:5000")
    assert response.status_code == 403 and "CODEQA_ALLOWED_ORIGINS" in response.get_json()["error"]


def test_clearing_history_from_another_origin_is_refused_and_clears_nothing(app, redis_server):
    client = app.test_client()
    assert client.get("/", base_url="http://127.0.0.1:5000").status_code == 200  # the session cookie
    with client.session_transaction(base_url="http://127.0.0.1:5000") as session:
        uid = session["uid"]
    store = redis.Redis.from_url(redis_server.url)
    store.rpush(f"codeqa:{uid}:sample:history", json.dumps({"role": "user", "content": "keep me"}))
    refused = client.delete("/api/history?repo=sample", headers={"Origin": "http://evil.example:5000"},
                            base_url="http://127.0.0.1:5000")
    assert refused.status_code == 403 and store.llen(f"codeqa:{uid}:sample:history") == 1
    own = client.delete("/api/history?repo=sample", headers={"Origin": "http://127.0.0.1:5000"},
                        base_url="http://127.0.0.1:5000")
    assert own.status_code == 200 and store.llen(f"codeqa:{uid}:sample:history") == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_post_that_is_not_json_gets_415_even_from_the_apps_own_page(app, content_type):
    response = app.test_client().post("/api/chat", data=json.dumps({"repo": "sample", "message": "hi"}),
                                      content_type=content_type, headers={"Origin": "http://127.0.0.1:5000"},
                                      base_url="http://127.0.0.1:5000")
    assert response.status_code == 415


@pytest.mark.parametrize("headers", [
    {"Origin": "http://127.0.0.1:5000"},  # the app's own page
    {"Referer": "http://127.0.0.1:5000/"},  # a browser that sent no Origin
    {},  # not a browser: curl, a script
])
def test_the_apps_own_page_and_non_browser_clients_may_post(app, headers):
    response = app.test_client().post("/api/search", json=SEARCH, headers=headers, base_url="http://127.0.0.1:5000")
    assert response.status_code == 200 and response.get_json()["results"]


def test_a_reverse_proxys_public_origin_is_allowed_when_configured(indexed_sample, redis_server):
    # nginx passing on its public Host and terminating TLS: the browser's Origin is https://...
    app = make_app(indexed_sample, redis_server.url, allowed_hosts=("codeqa.example.com",),
                   allowed_origins=("https://codeqa.example.com",))
    try:
        client = app.test_client()
        headers = {"Origin": "https://codeqa.example.com"}
        assert client.post("/api/search", json=SEARCH, headers=headers,
                           base_url="http://codeqa.example.com").status_code == 200
        assert client.post("/api/search", json=SEARCH, headers={"Origin": "https://evil.example"},
                           base_url="http://codeqa.example.com").status_code == 403
    finally:
        close_app(app)


def test_allowed_hosts_and_origins_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEQA_ALLOWED_HOSTS", " CodeQA.lan, ,box.local ")
    monkeypatch.setenv("CODEQA_ALLOWED_ORIGINS", "https://codeqa.example.com,http://box.local:5000")
    settings = Settings.from_env()
    assert settings.allowed_hosts == ("codeqa.lan", "box.local")
    assert settings.allowed_origins == ("https://codeqa.example.com", "http://box.local:5000")
    monkeypatch.setenv("CODEQA_ALLOWED_ORIGINS", "https://codeqa.example.com/app")
    with pytest.raises(ConfigError, match="CODEQA_ALLOWED_ORIGINS takes origins like"):
        Settings.from_env()
