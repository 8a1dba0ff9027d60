"""Hostile requests against the real app and index: every malformed field gets a clear 4xx,
nothing a client sees names a path on the server, and the file view serves only the files
the index recorded, byte for byte."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from codeqa.app import close_app, create_app
from conftest import ROOT, SAMPLE_REPO, RedisServer, settings_for
from codeqa.indexing.indexer import index_repo

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(test client, settings, repo root): a private copy of the sample repo indexed as `shop`."""
    base = tmp_path_factory.mktemp("api")
    repo = base / "shop_repo"
    shutil.copytree(SAMPLE_REPO, repo, symlinks=True)
    redis = RedisServer(base)
    redis.start()
    settings = settings_for(base / "data", local_llm=False, redis_url=redis.url)
    index_repo(repo, settings, name="shop", progress=False)
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": settings})
    yield app.test_client(), settings, repo
    close_app(app)
    redis.stop()


def post_raw(client, route: str, body: str):
    return client.post(route, data=body, content_type="application/json")


BAD_SEARCHES = [  # (the JSON body after "repo" and "query", the words the error must contain)
    ('"lang": 5', "lang must be one of"),
    ('"lang": ["python"]', "lang must be one of"),
    ('"lang": "klingon"', "lang must be one of"),
    ('"path": 123', "path must be"),
    ('"path": {}', "path must be"),
    ('"path": "' + "a/" * 600 + '"', "path must be"),
    ('"k": 1e400', "k must be a whole number from 1 to 50"),
    ('"k": Infinity', "k must be a whole number"),
    ('"k": NaN', "k must be a whole number"),
    ('"k": "10"', "k must be a whole number"),
    ('"k": true', "k must be a whole number"),
    ('"k": 3.5', "k must be a whole number"),
    ('"k": 0', "k must be a whole number"),
    ('"k": 51', "k must be a whole number"),
    ('"hyde": "false"', "'hyde' must be true or false"),
    ('"rerank": "no"', "'rerank' must be true or false"),
]


@pytest.mark.parametrize("fields, words", BAD_SEARCHES)
def test_search_refuses_malformed_fields_with_a_400(served, fields, words):
    client, _, _ = served
    response = post_raw(client, "/api/search", '{"repo": "shop", "query": "cart total", ' + fields + "}")
    assert response.status_code == 400 and words in response.get_json()["error"], response.get_json()


@pytest.mark.parametrize("route, field", [("/api/search", "query"), ("/api/chat", "message")])
def test_a_lone_surrogate_is_refused(served, route, field):
    client, _, _ = served
    response = post_raw(client, route, '{"repo": "shop", "' + field + '": "cart \\ud800 total", "hyde": false}')
    assert response.status_code == 400 and "lone surrogate" in response.get_json()["error"]


def test_a_30000_deep_json_body_is_refused(served):
    client, _, _ = served
    body = '{"repo": "shop", "query": ' + "[" * 30_000 + "]" * 30_000 + "}"
    response = post_raw(client, "/api/search", body)
    assert response.status_code == 400 and response.get_json() == {"error": "The JSON body is nested too deeply."}


def test_hyde_false_as_a_boolean_still_searches(served):
    client, _, _ = served
    response = client.post("/api/search", json={"repo": "shop", "query": "cart total", "k": 3, "hyde": False,
                                                "lang": "", "path": None})
    assert response.status_code == 200 and response.get_json()["hyde"] == {"used": False, "reason": "switched off"}


def test_unknown_repos_are_named_not_listed(served):
    client, _, _ = served
    typo = client.post("/api/search", json={"repo": "shpo", "query": "cart"})
    assert typo.status_code == 404 and typo.get_json()["error"] == "Unknown repo 'shpo'. Did you mean 'shop'?"
    other = client.post("/api/search", json={"repo": "zzz", "query": "cart"})
    assert other.get_json()["error"] == "Unknown repo 'zzz'."
    huge = client.post("/api/search", json={"repo": "x" * 10_000, "query": "cart"})
    assert huge.status_code == 404 and len(huge.get_json()["error"]) < 100


def server_paths(settings, repo: Path) -> list[str]:
    return [str(settings.data_dir), str(repo), str(Path.home()), str(ROOT)]


def test_repos_status_and_errors_name_no_server_path(served):
    client, settings, repo = served
    repos = client.get("/api/repos").get_data(as_text=True)
    status = client.get("/api/status").get_data(as_text=True)
    searched = client.post("/api/search", json={"repo": "shop", "query": "cart", "rerank": True}).get_data(as_text=True)
    assert '"root"' not in repos
    assert "codeqa-reranker" in status and "codeqa-reranker" in searched  # the reranker is named...
    for text in (repos, status, searched):
        assert not any(path in text for path in server_paths(settings, repo)), text  # ...not where it lies


def test_an_index_broken_behind_the_apps_back_answers_without_paths(served, tmp_path):
    _, settings, repo = served
    from codeqa.store import registry, schema
    from codeqa.store.connection import connect

    # An app that reads LanceDB on every search: one holding the repo in memory (store.resident)
    # would answer from its copy, never reading the broken table.
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": replace(settings, resident_rows=0)})
    db = connect(settings)
    info = registry.get_repo(db, "shop")
    table_dir = Path(settings.database_uri) / f"{registry.table_name(info, 'classes')}.lance"
    moved = tmp_path / "moved"
    shutil.move(table_dir / "data", moved)
    try:
        response = app.test_client().post("/api/search", json={"repo": "shop", "query": "cart total"})
        assert response.status_code == 500
        assert response.get_json() == {"error": "Internal error: the server log has the details."}
    finally:
        shutil.move(moved, table_dir / "data")
        close_app(app)


def view(client, path: str):
    return client.get("/api/file", query_string={"repo": "shop", "path": path, "start": 1, "end": 3})


def test_the_file_view_serves_only_files_as_they_were_indexed(served):
    client, _, repo = served
    models = repo / "shop" / "models.py"
    assert view(client, "shop/models.py").status_code == 200
    secret = repo / ".env.local"
    secret.write_text("API_TOKEN=hunter2\n")  # in the repo, never indexed
    original = models.read_bytes()
    try:
        models.unlink()
        models.symlink_to(secret)  # an indexed path swapped for a link to a secret
        swapped = view(client, "shop/models.py")
        assert swapped.status_code == 404 and "hunter2" not in swapped.get_data(as_text=True)

        models.unlink()
        models.write_bytes(original.replace(b"class Cart", b"class Kart"))
        changed = view(client, "shop/models.py")
        assert changed.status_code == 409 and "changed since shop was indexed" in changed.get_json()["error"]

        models.write_bytes(original)
        (repo / "shop").rename(repo / "shop_real")
        (repo / "shop").symlink_to(repo / "shop_real", target_is_directory=True)  # same bytes, via a link
        assert view(client, "shop/models.py").status_code == 404
    finally:
        if (repo / "shop").is_symlink():
            (repo / "shop").unlink()
            (repo / "shop_real").rename(repo / "shop")
        models.write_bytes(original)
        secret.unlink()
    assert view(client, "shop/models.py").status_code == 200


# --- The CLIs refuse bad input in one line ---------------------------------------------------------

def run(script: str, *args: str, data_dir: Path) -> subprocess.CompletedProcess:
    command = [str(ROOT / script)] if script.endswith(".py") else ["-m", script]
    return subprocess.run([sys.executable, *command, *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CODEQA_DATA_DIR": str(data_dir)})


@pytest.mark.parametrize("script, args, words", [
    ("preprocessing.py", ["index", ""], "The repository path is empty"),
    ("preprocessing.py", ["index", str(SAMPLE_REPO), "--name", "x" * 101], "Invalid repo name"),
    ("preprocessing.py", ["index", str(SAMPLE_REPO), "--name", "a/../b"], "Invalid repo name"),
    ("preprocessing.py", ["index", str(SAMPLE_REPO), "--name=-rf"], "Invalid repo name"),
    ("codeqa", ["search", "--repo", "shop", "--k", "0", "cart"], "k must be a whole number from 1 to 50"),
    ("codeqa", ["search", "--repo", "shop", "--k", "-3", "cart"], "k must be a whole number from 1 to 50"),
    ("codeqa", ["search", "--repo", "shop", "--k", "100000", "cart"], "k must be a whole number from 1 to 50"),
    ("codeqa", ["search", "--repo", "nope", "cart"], "Unknown repo 'nope'."),
])
def test_the_clis_refuse_bad_input_in_one_line(served, script, args, words):
    _, settings, _ = served
    result = run(script, *args, data_dir=settings.data_dir)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# --- Line numbers, path filters, autocomplete: each field says what it takes ------------------------

@pytest.mark.parametrize("query, message", [
    ({"start": "99999999999999999999999"}, "'start' must be a line number from 1 to 10,000,000."),
    ({"start": "0"}, "'start' must be a line number from 1 to 10,000,000."),
    ({"start": " 7"}, "'start' must be a line number from 1 to 10,000,000."),
    ({"start": "1_0"}, "'start' must be a line number from 1 to 10,000,000."),
    ({"start": "\u0667"}, "'start' must be a line number from 1 to 10,000,000."),  # an Arabic-Indic 7
    ({"start": "5", "end": "99999999"}, "'end' must be a line number from 1 to 10,000,000."),
    ({"start": "65"}, "'start' is past the end of the file (64 lines)."),
])
def test_the_file_view_refuses_line_numbers_without_echoing_them(served, query, message):
    client, _, _ = served
    response = client.get("/api/file", query_string={"repo": "shop", "path": "shop/models.py", **query})
    assert response.status_code == 400 and response.get_json() == {"error": message}


@pytest.mark.parametrize("path", ["../", "..", "shop/../../", "/etc", "/"])
def test_a_search_path_outside_the_repo_is_refused_not_ignored(served, path):
    client, _, _ = served
    response = client.post("/api/search", json={"repo": "shop", "query": "cart total", "path": path})
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("path must be a folder or file path inside the repo")


def test_autocomplete_and_history_need_a_repo(served):
    client, _, _ = served
    for route in ("/api/complete?text=@def", "/api/history", "/api/file?path=shop/models.py"):
        response = client.get(route)
        assert response.status_code == 400 and response.get_json() == {"error": "Choose a repository (the 'repo' field)."}


def test_a_repo_whose_first_index_run_is_still_writing_is_not_called_embedded(served):
    client, settings, _ = served
    from codeqa.core.records import RepoInfo
    from codeqa.store import registry, schema
    from codeqa.store.connection import connect

    db = connect(settings)
    # What the indexer registers as a new repo's run starts, before any row is written.
    starting = RepoInfo(name="starting", root="/nowhere/starting", prefix=registry.new_generation_prefix("starting"),
                        embedding_model="m", embedding_dim=384, created_at=1.0, indexed_at=0.0,
                        index_version=schema.INDEX_VERSION)
    registry.save_repo(db, starting)
    try:
        repos = {repo["name"]: repo for repo in client.get("/api/repos").get_json()["repos"]}
        assert repos["starting"]["embedded_percent"] == 0 and repos["starting"]["methods"] == 0
        assert repos["shop"]["embedded_percent"] == 100
    finally:
        registry.remove_repo(db, "starting")


def test_the_clis_refuse_a_search_path_outside_the_repo_in_one_line(served):
    _, settings, _ = served
    result = run("codeqa", "search", "--repo", "shop", "--path", "../", "cart", data_dir=settings.data_dir)
    assert result.returncode == 1 and result.stderr.startswith("error: path must be a folder or file path inside")
