"""A bucket that refuses is one line and status 1 from `codeqa index`, not LanceDB's traceback:
one that does not exist, against moto's S3 server on loopback (moto checks no credentials, so
a refusal for them is tested through what the store's error text says, `refusal`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from s3_loopback import start_s3

from conftest import ROOT, SAMPLE_REPO
from codeqa.core.servers import free_port
from codeqa.store.connection import refusal

@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    server, env = start_s3(free_port())
    try:
        yield env
    finally:
        server.terminate()
        server.wait(timeout=60)


def index(env: dict[str, str], uri: str, data_dir) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), "index", str(SAMPLE_REPO), "--no-progress"],
                          env={**os.environ, **env, "CODEQA_LANCEDB_URI": uri, "CODEQA_DATA_DIR": str(data_dir),
                               "CODEQA_LOCAL_LLM": "0"}, capture_output=True, text=True, timeout=600)


@pytest.mark.integration
def test_a_bucket_that_does_not_exist_is_one_line(s3, tmp_path):
    run = index(s3, "s3://no-such-bucket/index", tmp_path)
    assert run.returncode == 1
    assert run.stderr == ("error: The index at s3://no-such-bucket/index can't be reached (NoSuchBucket: The "
                          "specified bucket does not exist): check CODEQA_LANCEDB_URI and the storage's settings "
                          "(AWS_*, GOOGLE_*, AZURE_*).\n")


@pytest.mark.unit
@pytest.mark.parametrize(("error", "said"), [
    ('status: 403, body: Some("<Error><Code>AccessDenied</Code><Message>Access Denied</Message>")',
     "AccessDenied: Access Denied"),
    ("inner: Status { status: 503, body: None }", "HTTP 503"),
    ("Invalid input, no such thing\nmore detail", "Invalid input, no such thing"),
])
def test_what_the_store_said_is_read_out_of_the_error(error, said):
    assert refusal(error) == said
