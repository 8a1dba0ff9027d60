"""Two app instances of a team deployment (README: "Deploying for a team"): separate processes
and data dirs, as on two machines, sharing Debian's redis-server, the index in moto's S3 server
and one secret key. A user's conversation lives in the shared Redis under the user's signed
session, so it continues on whichever instance a proxy sends the next request to.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from s3_loopback import BUCKET, start_s3
from team_loopback import NO_LLM, Client, start_app, start_redis

from conftest import SAMPLE_REPO, settings_for
from codeqa.core.servers import free_port

pytestmark = pytest.mark.integration

QUESTION = "@codebase where is make_demo_cart built?"


@pytest.fixture(scope="module")
def team(tmp_path_factory) -> Iterator[tuple[str, str, str]]:
    """The sample repo indexed into the bucket, and two running instances: (A's URL, B's URL,
    REDIS_URL)."""
    from codeqa.indexing.indexer import index_repo

    workdir = tmp_path_factory.mktemp("team")
    s3, aws = start_s3(free_port())
    redis_server, redis_url = start_redis(workdir)
    apps = []
    try:
        uri = f"s3://{BUCKET}/two-apps"
        with pytest.MonkeyPatch.context() as patch:
            for key, value in aws.items():
                patch.setenv(key, value)
            repo = shutil.copytree(SAMPLE_REPO, workdir / "sample")
            index_repo(repo, settings_for(workdir / "indexer", lancedb_uri=uri, local_llm=False), name="sample",
                       progress=False)
        env = {**aws, "CODEQA_LANCEDB_URI": uri, "REDIS_URL": redis_url, "CODEQA_SECRET_KEY": "one-team-secret",
               "CODEQA_LLM_BASE_URL": NO_LLM}
        apps = [start_app(workdir / name, env) for name in ("app-a", "app-b")]
        yield apps[0][1], apps[1][1], redis_url
    finally:
        for proc, _ in apps:
            proc.terminate()
            proc.wait(timeout=60)
        redis_server.kill()
        redis_server.wait()
        s3.terminate()
        s3.wait(timeout=60)


def test_a_conversation_started_on_one_instance_goes_on_on_the_other(team):
    import redis

    a, b, redis_url = team
    user = Client()
    first = user.chat(a, "sample", QUESTION)
    sources = next(data for name, data in first if name == "sources")
    assert any(s["qualified_name"] == "make_demo_cart" for s in sources["results"])
    assert first[-1][0] == "done"
    seen_on_b = user.history(b, "sample")
    assert [(m["role"], m["content"]) for m in seen_on_b][:1] == [("user", QUESTION)]
    assert len(seen_on_b) == 2 and seen_on_b[1]["sources"]

    # A follow-up without @codebase on B reuses the context A stored: B shows A's sources.
    follow_up = user.chat(b, "sample", "and who calls it?")
    reused = next(data for name, data in follow_up if name == "sources")
    assert reused["reused"] and [s["qualified_name"] for s in reused["results"]] == [
        s["qualified_name"] for s in sources["results"]
    ]
    assert [m["content"] for m in user.history(a, "sample") if m["role"] == "user"] == [QUESTION, "and who calls it?"]

    store = redis.Redis.from_url(redis_url)
    keys = sorted(key.decode() for key in store.scan_iter("codeqa:*"))
    assert len(keys) == 2 and keys[0].endswith(":sample:context") and keys[1].endswith(":sample:history")
    assert store.llen(keys[1]) == 4


def test_another_user_sees_none_of_it_and_both_instances_search_the_shared_index(team):
    a, b, _ = team
    stranger = Client()
    assert stranger.history(a, "sample") == [] and stranger.history(b, "sample") == []
    assert stranger.search(a, "sample", "make_demo_cart")[0] == stranger.search(b, "sample", "make_demo_cart")[0]
    assert stranger.search(b, "sample", "make_demo_cart")[0] == "make_demo_cart"
