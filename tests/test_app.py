"""The web app through Flask's test client: real Redis, real index, the real local LLM (via a recording proxy)."""

from __future__ import annotations

import json

import pytest
import redis

from codeqa.app import close_app, create_app
from codeqa.chat.chat_store import ChatStore
from conftest import http_server
from codeqa.web import MAX_MESSAGE_CHARS

pytestmark = pytest.mark.integration


def make_app(indexed_sample, llm_url: str, redis_url: str = "", **flask_config):
    settings, _ = indexed_sample
    app_settings = settings.__class__(
        data_dir=settings.data_dir, llm_base_url=llm_url, chat_model="local", hyde_model="local",
        redis_url=redis_url, history_ttl_seconds=flask_config.pop("ttl", 3600), llm_timeout=120.0,
        rerank=flask_config.pop("rerank", False), rerank_chat=flask_config.pop("rerank_chat", False))
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": app_settings,
                      "CODEQA_CHAT_BUDGET": {"answer_tokens": 24, "context_tokens": 600, "history_tokens": 300,
                                             "k": 4},
                      **flask_config})
    return app


@pytest.fixture
def app(indexed_sample, llm_proxy, redis_server):
    url, _ = llm_proxy
    app = make_app(indexed_sample, url, redis_server.url)
    yield app
    close_app(app)


@pytest.fixture
def client(app):
    return app.test_client()


def events(response) -> list[tuple[str, dict]]:
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/event-stream"
    out = []
    for frame in response.get_data(as_text=True).strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def chat(client, message: str, **extra):
    return events(client.post("/api/chat", json={"repo": "sample", "message": message, "hyde": False, **extra}))


def names(evts) -> list[str]:
    return [name for name, _ in evts]


def test_page_sets_a_signed_session_and_a_strict_csp(client):
    response = client.get("/")
    assert response.status_code == 200
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith("session=") and "HttpOnly" in cookie
    assert 'id="codeqa-config"' in response.get_data(as_text=True)


def test_repos_and_status(client):
    repos = client.get("/api/repos").get_json()["repos"]
    sample = next(r for r in repos if r["name"] == "sample")
    assert sample["methods"] > 0 and sample["languages"]["python"] == 7
    status = client.get("/api/status").get_json()
    assert status["llm"]["available"] is True and status["redis"]["ok"] is True
    assert set(status["rerank"]) == {"available", "reason"}


def test_codebase_question_streams_events_in_order_and_stores_state(client, app, redis_server):
    evts = chat(client, "@codebase how is an order CSV parsed?")
    order = names(evts)
    assert order[0] == "status" and order[-1] == "done"
    assert order.index("sources") < order.index("token")
    assert "error" not in order
    stages = [(d["stage"], d["state"]) for n, d in evts if n == "status"]
    assert stages[:3] == [("hyde", "skipped"), ("search", "start"), ("search", "done")]
    assert ("answer", "start") in stages and stages[-1] == ("answer", "done")
    sources = next(d for n, d in evts if n == "sources")
    assert sources["reused"] is False
    found = {(s["file_path"], s["qualified_name"]) for s in sources["results"]}
    assert {("shop/csv_parser.py", "Parser.parse"), ("shop/csv_parser.py", "Parser")} & found

    uid = _uid(client, app)
    r = redis.Redis.from_url(redis_server.url)
    assert r.llen(f"codeqa:{uid}:sample:history") == 2
    stored = json.loads(r.get(f"codeqa:{uid}:sample:context"))
    assert stored["query"] == "how is an order CSV parsed?" and stored["sources"] == sources["results"]
    assert 0 < r.ttl(f"codeqa:{uid}:sample:context") <= 3600


def _uid(client, app) -> str:
    with client.session_transaction() as session:
        return session["uid"]


def test_status_events_with_hyde_arrive_live(client):
    evts = chat(client, "@codebase where is the cart total computed?", hyde=True)
    stages = [(d["stage"], d["state"]) for n, d in evts if n == "status"]
    assert stages[:4] == [("hyde", "start"), ("hyde", "done"), ("search", "start"), ("search", "done")]
    assert next(d for n, d in evts if n == "status" and d["stage"] == "hyde" and d["state"] == "done")["ms"] > 0


def test_follow_up_reuses_context_and_sends_the_history_window(client, llm_proxy):
    _, proxy = llm_proxy
    first = chat(client, "@codebase what does make_demo_cart build?")
    first_answer = "".join(d["text"] for n, d in first if n == "token")
    follow = chat(client, "and which products does it add?")
    sources = next(d for n, d in follow if n == "sources")
    assert sources["reused"] is True
    assert "make_demo_cart" in {s["qualified_name"] for s in sources["results"]}
    sent = proxy.requests[-1]["messages"]
    assert sent[0]["role"] == "system" and "shop/models.py" in sent[0]["content"]
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user"]
    assert sent[1]["content"] == "@codebase what does make_demo_cart build?"
    assert sent[2]["content"] == first_answer
    assert sent[3]["content"] == "and which products does it add?"


def test_without_any_context_the_user_is_told_to_use_codebase(client, llm_proxy):
    _, proxy = llm_proxy
    evts = chat(client, "hello, what can you do?")
    notice = next(d for n, d in evts if n == "notice")
    assert notice["code"] == "no_context" and "@codebase" in notice["message"]
    assert "sources" not in names(evts)
    assert "@codebase" in proxy.requests[-1]["messages"][0]["content"]


def test_history_read_and_clear(client, redis_server, app):
    chat(client, "@codebase cart total")
    history = client.get("/api/history?repo=sample").get_json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"] and history[1]["sources"]
    assert client.delete("/api/history?repo=sample").get_json() == {"cleared": True}
    assert client.get("/api/history?repo=sample").get_json()["messages"] == []
    r = redis.Redis.from_url(redis_server.url)
    assert r.keys(f"codeqa:{_uid(client, app)}:*") == []


def test_history_is_bounded_and_expires(indexed_sample, llm_proxy, redis_server):
    store = ChatStore(redis.Redis.from_url(redis_server.url), ttl_seconds=120, max_messages=4)
    for turn in range(3):
        store.append("u1", "sample", {"role": "user", "content": f"q{turn}"},
                     {"role": "assistant", "content": f"a{turn}"})
    r = redis.Redis.from_url(redis_server.url)
    assert [json.loads(m)["content"] for m in r.lrange("codeqa:u1:sample:history", 0, -1)] == ["q1", "a1", "q2", "a2"]
    assert 0 < r.ttl("codeqa:u1:sample:history") <= 120


def test_users_are_isolated(app):
    alice, bob = app.test_client(), app.test_client()
    chat(alice, "@codebase cart total")
    assert len(alice.get("/api/history?repo=sample").get_json()["messages"]) == 2
    assert bob.get("/api/history?repo=sample").get_json()["messages"] == []
    follow = chat(bob, "and then?")
    assert "sources" not in names(follow)


def test_restart_keeps_sessions(indexed_sample, llm_proxy, redis_server):
    url, _ = llm_proxy
    first = make_app(indexed_sample, url, redis_server.url)
    client = first.test_client()
    chat(client, "@codebase cart total")
    cookie = client.get_cookie("session").value
    close_app(first)

    second = make_app(indexed_sample, url, redis_server.url)
    again = second.test_client()
    again.set_cookie("session", cookie)
    assert len(again.get("/api/history?repo=sample").get_json()["messages"]) == 2
    forged = second.test_client()
    forged.set_cookie("session", cookie[:-2] + ("AA" if not cookie.endswith("AA") else "BB"))
    assert forged.get("/api/history?repo=sample").get_json()["messages"] == []
    close_app(second)


def test_redis_down_shows_a_message_and_recovers(client, redis_server):
    chat(client, "@codebase cart total")
    redis_server.stop()
    evts = chat(client, "@codebase cart total")
    notice = next(d for n, d in evts if n == "notice")
    assert notice["code"] == "redis_unavailable" and "unavailable" in notice["message"]
    assert "sources" in names(evts) and "error" not in names(evts)
    history = client.get("/api/history?repo=sample")
    assert history.status_code == 503 and "unavailable" in history.get_json()["error"]
    redis_server.start()
    assert client.get("/api/history?repo=sample").status_code == 200
    assert "error" not in names(chat(client, "@codebase cart total"))


def test_llm_down_still_shows_sources(indexed_sample, redis_server):
    with http_server(lambda request: None) as (url, _):
        closed = url
    app = make_app(indexed_sample, closed, redis_server.url)
    evts = chat(app.test_client(), "@codebase how is an order CSV parsed?")
    order = names(evts)
    assert "sources" in order and order.index("sources") < order.index("error")
    error = next(d for n, d in evts if n == "error")
    assert error["code"] == "llm_unavailable" and "sources above" in error["message"]
    assert app.test_client().get("/api/status").get_json()["llm"]["available"] is False
    close_app(app)


@pytest.mark.parametrize("path, status", [
    ("../../etc/passwd", 400), ("/etc/passwd", 400), ("shop/../../../etc/passwd", 400),
    ("shop\\models.py", 400), ("shop/./models.py", 400), (".gitignore", 404), ("shop/missing.py", 404),
    ("%2e%2e/etc/passwd", 404),
])
def test_file_view_refuses_traversal(client, path, status):
    response = client.get("/api/file", query_string={"repo": "sample", "path": path, "start": 1, "end": 2})
    assert response.status_code == status and "error" in response.get_json()


def test_file_view_serves_indexed_files(client):
    data = client.get("/api/file", query_string={"repo": "sample", "path": "shop/models.py",
                                                 "start": 39, "end": 45}).get_json()
    assert data["first_line"] == 33 and data["lines"][39 - 33] == "    @log_calls"
    assert data["language"] == "python"
    assert client.get("/api/file", query_string={"repo": "nope", "path": "a.py"}).status_code == 404
    assert client.get("/api/file", query_string={"repo": "sample", "path": "shop/models.py",
                                                 "start": 5, "end": 2}).status_code == 400


def test_input_limits_answer_with_clear_4xx(client):
    too_long = client.post("/api/chat", json={"repo": "sample", "message": "x" * (MAX_MESSAGE_CHARS + 1)})
    assert too_long.status_code == 413 and "limit" in too_long.get_json()["error"]
    huge = client.post("/api/chat", data=json.dumps({"repo": "sample", "message": "y" * 70_000}),
                       content_type="application/json")
    assert huge.status_code == 413 and "too large" in huge.get_json()["error"]
    assert client.post("/api/chat", data="message=hi").status_code == 415
    assert client.post("/api/chat", json={"repo": "sample", "message": "  "}).status_code == 400
    assert client.post("/api/chat", json={"repo": "nope", "message": "hi"}).status_code == 404
    assert client.post("/api/search", json={"repo": "sample", "query": "cart", "k": 500}).status_code == 400


def test_search_api_has_the_cli_shape(client):
    data = client.post("/api/search", json={"repo": "sample", "query": "format a price", "k": 3}).get_json()
    assert {"id", "query", "expanded_query", "timings_ms", "rerank", "results"} <= set(data)
    assert len(data["results"]) == 3 and data["rerank"]["used"] is False
    assert (data["question_kind"], data["file_model"]) == ("how", "structure")  # "format a price" asks for a part


@pytest.mark.parametrize("rerank, rerank_chat", [(False, True), (True, False)])
def test_chat_and_search_start_from_their_own_rerank_settings(indexed_sample, llm_proxy, redis_server, rerank,
                                                              rerank_chat):
    url, _ = llm_proxy
    app = make_app(indexed_sample, url, redis_server.url, rerank=rerank, rerank_chat=rerank_chat)
    client = app.test_client()

    def rerank_status(evts):  # the stage's last word: done or skipped
        return [d for n, d in evts if n == "status" and d["stage"] == "rerank"][-1]

    chatted = rerank_status(chat(client, "@codebase cart total"))  # CODEQA_RERANK_CHAT
    assert chatted["state"] == ("done" if rerank_chat else "skipped")
    assert rerank_status(chat(client, "@codebase cart total", rerank=True))["state"] == "done"
    assert rerank_status(chat(client, "@codebase cart total", rerank=False))["detail"] == "switched off"
    searched = client.post("/api/search", json={"repo": "sample", "query": "cart total"}).get_json()  # CODEQA_RERANK
    assert searched["rerank"]["used"] is rerank
    context = client.post("/api/context", json={"repo": "sample", "message": "@codebase cart total"}).get_json()
    assert context["search"]["rerank"]["used"] is rerank_chat  # what the chat would see
    page = client.get("/").get_data(as_text=True)
    assert f'"defaults": {{"rerank": {str(rerank_chat).lower()}}}' in page  # the UI's toggle is the chat's
    close_app(app)


# --- @-commands, autocomplete and the context endpoint ---------------------------------------------

def complete(client, text: str, repo: str = "sample"):
    return client.get("/api/complete", query_string={"repo": repo, "text": text})


def test_complete_lists_commands_symbols_with_files_and_paths(client):
    commands = complete(client, "explain @").get_json()
    assert commands["target"] == {"kind": "command", "prefix": "", "start": 8}
    assert [i["value"] for i in commands["items"]] == ["@codebase ", "@definition ", "@references ", "@file ",
                                                      "@symbols-at "]
    symbols = complete(client, "@definition Cart.a").get_json()
    assert symbols["target"]["kind"] == "symbol" and symbols["target"]["start"] == 12
    assert {(i["value"], i["detail"]) for i in symbols["items"]} == {
        ("Cart.add", "method · shop/models.py:39"), ("Cart.add", "method · web/js/cart.js:26")}
    fuzzy = complete(client, "@references mkdemo").get_json()["items"]
    assert fuzzy[0]["value"] == "make_demo_cart"
    paths = complete(client, "@file shop/mo").get_json()["items"]
    assert [i["value"] for i in paths] == ["shop/models.py"]
    assert complete(client, "plain words").get_json() == {"target": None, "items": []}


def test_complete_refuses_bad_input(client):
    assert complete(client, "@", repo="nope").status_code == 404
    assert complete(client, "x" * 2000).status_code == 413


def test_context_endpoint_returns_resolved_commands_and_the_packed_context(client):
    data = client.post("/api/context", json={"repo": "sample", "budget": 700,
                                             "message": "@definition Cart.add @references Cart.add @file nope.py why?"}
                       ).get_json()
    assert [(c["label"], c["status"]) for c in data["commands"]] == [
        ("@definition Cart.add", "ok"), ("@references Cart.add", "ok"), ("@file nope.py", "not_found")]
    assert data["commands"][0]["results"][0]["file_path"] == "shop/models.py"
    assert data["question"] == "why?" and data["search"] is None
    context = data["context"]
    assert context["tokens"] <= context["budget"] == 700
    assert "40|    def add(self, product: Product, quantity: int = 1) -> None:" in context["text"]
    assert "nope.py is not an indexed file" in context["text"]
    assert all(not f["path"].startswith("/") for f in context["files"])
    assert client.post("/api/context", json={"repo": "sample", "message": "x", "budget": 0}).status_code == 400
    assert client.post("/api/context", json={"repo": "sample", "message": "@codebase"}).status_code == 400


def test_a_combined_command_question_streams_labelled_sources_and_stores_them(client, app, redis_server, llm_proxy):
    _, proxy = llm_proxy
    evts = chat(client, "@definition Cart.add @references Cart.add @definition Crat how do they interact?")
    order = names(evts)
    assert "error" not in order and order.index("sources") < order.index("token")
    notice = next(d for n, d in evts if n == "notice")
    assert notice["code"] == "not_found" and "Cart (shop/models.py:27)" in notice["message"]
    sources = next(d for n, d in evts if n == "sources")
    labels = {s["source"] for s in sources["results"]}
    assert labels == {"@definition Cart.add", "@references Cart.add"}
    assert [c["status"] for c in sources["commands"]] == ["ok", "ok", "not_found"]
    system = proxy.requests[-1]["messages"][0]["content"]
    assert "14|        cart.add(product)" in system and "no definition named Crat" in system
    stored = json.loads(redis.Redis.from_url(redis_server.url).get(f"codeqa:{_uid(client, app)}:sample:context"))
    assert stored["sources"] == sources["results"]
    follow = chat(client, "and what does add return?")
    assert next(d for n, d in follow if n == "sources")["reused"] is True


def test_summarise_a_3000_line_file_with_the_embedded_model(big_file_repo, llm_proxy, redis_server):
    url, proxy = llm_proxy
    settings = big_file_repo.__class__(data_dir=big_file_repo.data_dir, llm_base_url=url, chat_model="local",
                                       hyde_model="local", redis_url=redis_server.url, llm_timeout=300.0)
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": settings,
                      "CODEQA_CHAT_BUDGET": {"answer_tokens": 32}})  # context and history: the 4k defaults
    try:
        response = app.test_client().post("/api/chat", json={"repo": "big", "hyde": False,
                                                             "message": "@file lib/typing_copy.py summarise this file"})
        evts = events(response)
        assert "error" not in names(evts), evts
        assert "".join(d["text"] for n, d in evts if n == "token")
        sources = next(d for n, d in evts if n == "sources")
        assert sources["context"]["tokens"] <= sources["context"]["budget"] == 1800
        system = proxy.requests[-1]["messages"][0]["content"]
        assert "class Generic:" in system and "\n...\n" in system
    finally:
        close_app(app)
