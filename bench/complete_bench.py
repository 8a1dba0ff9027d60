"""Autocomplete latency: GET /api/complete against `python app.py` on the Django sdist index.

    python -m bench.complete_bench [--symbols 150] [--paths 50] [--json out.json]

Requests are what the message box sends while someone types: `@`, then `@definition ` /
`@references ` followed by the first 1-8 characters of real symbol names (and of names with
one typo, which only the fuzzy matcher finds), and `@file ` followed by the start of real
paths or file names, over one kept-alive HTTP connection, as the browser would. Latency is
measured by the client, HTTP included. The first request of a repo loads its names and paths
into memory; that load is reported on its own.

The index is search_bench.py's (Django 5.2.8's whole sdist, ~45,000 rows). When that one has
not been built, an index of the same sdist is built with a stub embedding endpoint (a hash of
the text as the vector): parsing, rows and references are the indexer's own and
/api/complete never reads vectors, while embedding 45,000 rows on a shared 2-core box takes
an hour. The output says which index was used. Not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import random
import sys
import time
import urllib.parse
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCEDB_LOG", "error")

from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.core.config import Settings
from codeqa.core.servers import free_port, start_server
from bench.search_bench import DATA as SEARCH_DATA, REPO, summary

STUB_DATA = ROOT / "bench" / ".cache" / "complete-data"
STUB_DIM = 384


class HashEmbeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings endpoint whose vector is a hash of the text."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for index, text in enumerate(texts):
            vector = [0.0] * STUB_DIM
            digest = hashlib.sha1(text.encode()).digest()
            for k in range(4):
                vector[digest[k] * 256 % STUB_DIM + k] = 1.0
            data.append({"object": "embedding", "index": index, "embedding": vector})
        payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                              "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def stub_embeddings() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), HashEmbeddings)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def stub_settings(url: str) -> Settings:
    return Settings(data_dir=STUB_DATA, embedding_provider="openai", embedding_model="hash-384",
                    embedding_base_url=url, embedding_api_key="unused")


def indexed(settings: Settings) -> bool:
    """Whether a finished index run of the sdist is there (an interrupted one has no stats yet)."""
    return any(info.name == REPO and info.stats.files
               for info in registry.list_repos(connect(settings)))


def sample_requests(settings: Settings, symbols: int, paths: int) -> list[str]:
    """The `text` values a typing user sends, in a random but repeatable order."""
    from codeqa.chat.resolver import CommandResolver
    from codeqa.store.index import Index

    db = connect(settings)
    index = CommandResolver(Index(db)).symbol_index(registry.get_repo(db, REPO))
    rng = random.Random(11)
    texts = ["@", "how is this done? @", "@def", "@ref", "@fi", "@sym"]
    for entry in rng.sample(index.symbols, symbols):
        command = rng.choice(["@definition ", "@references "])
        typed = entry.qualified_name if rng.random() < 0.3 else entry.name
        texts += [command + typed[:n] for n in range(1, min(8, len(typed)) + 1)]
        if len(entry.name) > 4:  # a typo: a letter dropped, found only by the fuzzy matcher
            cut = rng.randrange(1, len(entry.name) - 1)
            texts.append(command + entry.name[:cut] + entry.name[cut + 1:])
    for path in rng.sample(index.paths, paths):
        typed = path if rng.random() < 0.5 else path.rsplit("/", 1)[-1]
        texts += ["@file " + typed[:n] for n in range(1, min(12, len(typed)) + 1, 2)]
    rng.shuffle(texts)
    return texts


def bench(port: int, texts: list[str]) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(text: str) -> float:
        query = urllib.parse.urlencode({"repo": REPO, "text": text})
        start = time.perf_counter()
        connection.request("GET", f"/api/complete?{query}")
        response = connection.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status != 200:
            raise RuntimeError(f"{text!r}: {response.status} {body[:200]!r}")
        return elapsed

    first = get("@definition a")  # loads the repo's names and paths
    by_kind: dict[str, list[float]] = {"command": [], "symbol": [], "path": []}
    for text in texts:
        kind = "path" if text.startswith("@file ") else "symbol" if " " in text.split("@")[-1] else "command"
        by_kind[kind].append(get(text))
    every = [ms for values in by_kind.values() for ms in values]
    return {"first_request_ms": round(first, 1), "all": summary(every),
            **{kind: summary(values) for kind, values in by_kind.items() if values}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--symbols", type=int, default=150, help="symbol names typed")
    parser.add_argument("--paths", type=int, default=50, help="paths typed")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    env = {"CODEQA_LOCAL_LLM": "0", "CODEQA_LLM_BASE_URL": "http://127.0.0.1:9/v1", "REDIS_URL": ""}
    real = Settings.from_env(data_dir=SEARCH_DATA, lancedb_uri="")
    with stub_embeddings() as url:
        if indexed(real):
            settings, which = real, "search_bench.py's index (all-MiniLM-L6-v2 vectors)"
        else:
            from index_bench import fetch_source
            from codeqa.indexing.indexer import index_repo

            settings, which = stub_settings(url), "Django 5.2.8 sdist indexed with stub (hash) vectors"
            index_repo(fetch_source("django==5.2.8"), settings, name=REPO, progress=True)
            env.update({"CODEQA_EMBEDDING_PROVIDER": "openai", "CODEQA_EMBEDDING_MODEL": "hash-384",
                        "CODEQA_EMBEDDING_BASE_URL": url})
        info = registry.get_repo(connect(settings), REPO)
        rows = info.stats.methods + info.stats.classes + info.stats.docs
        texts = sample_requests(settings, args.symbols, args.paths)
        port = free_port()
        env = {**os.environ, **env, "CODEQA_DATA_DIR": str(settings.data_dir)}
        proc = start_server([sys.executable, str(ROOT / "app.py"), "--port", str(port)], env,
                            f"http://127.0.0.1:{port}/api/repos", timeout=240)
        try:
            result = {"index": which, "rows": rows, "files": info.stats.files, "requests": len(texts),
                      **bench(port, texts)}
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
