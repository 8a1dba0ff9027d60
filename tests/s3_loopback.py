"""moto's S3-compatible server on a loopback port, for tests and benchmarks that run outside
pytest's fixtures (in namespaces of their own, or as a bench script)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codeqa.core.servers import start_server

BUCKET = "codeqa-team"
STARTUP = 300  # seconds a server may take to start on a busy 2-core box


def start_s3(port: int) -> tuple[subprocess.Popen, dict[str, str]]:
    """moto's S3 server on 127.0.0.1:`port` with one bucket (`BUCKET`); the environment that points
    LanceDB (and boto3) at it, as a deployment sets it (README: "Deploying for a team")."""
    import boto3

    server = start_server([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                          os.environ, f"http://127.0.0.1:{port}/moto-api/", timeout=STARTUP)
    env = {"AWS_ACCESS_KEY_ID": "codeqa", "AWS_SECRET_ACCESS_KEY": "codeqa-secret", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT": f"http://127.0.0.1:{port}", "AWS_ALLOW_HTTP": "true"}
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT"], region_name=env["AWS_REGION"],
                 aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                 aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket=BUCKET)
    return server, env
