"""Vectors by (embedding model, text), kept across commits, repositories and index layouts.

    python -m eval.realistic.vector_cache harvest            # every snapshot under the cache
    python -m eval.realistic.vector_cache harvest DIR ...    # LanceDB directories or folders of them
    python -m eval.realistic.vector_cache stats

Indexing the eval's ~460 commits is almost all embedding time, yet most texts were embedded
before: by an earlier commit, or by snapshots of an earlier index layout whose rows are the
same. The harness indexes through a `CachingEmbedder`, which asks this store first and adds
every new vector to it, so each distinct text is embedded once, ever.

A key is (model, sha256 of the exact text embedded). The model part is the embedder's
`model_id`, plus the local model's `max_tokens` (CODEQA_EMBEDDING_MAX_TOKENS): the same text
cut at another length is another vector, while the index records only the `model_id`. So a
harvest files vectors under the configured embedder: harvest a cache with the max tokens its
snapshots were indexed with. The indexer stores the same sha256 as every row's `text_hash`
(`prepare_row` hashes `embedding_text(row)`, which is what `indexer.fill_vectors`
embeds), so the vectors of existing snapshots can be harvested without their texts.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
from pathlib import Path
from typing import Iterable, Sequence

import lancedb
import numpy as np


from codeqa.store import registry, schema
from codeqa.store.rows import prepare_row
from codeqa.core.config import Settings
from codeqa.indexing.embeddings import Embedder, LocalEmbedder, get_embedder

STORE_FILE = "vectors.sqlite"
_LOOKUP_CHUNK = 500  # hashes per SQL lookup (SQLite's variable limit is far above)


def model_key(embedder: Embedder) -> str:
    """What must match for a stored vector to be reused: the model and how much text it reads
    (the local model's `max_tokens`; an endpoint's model id says it all)."""
    return embedder.model_id + (f"@{embedder.max_tokens}" if isinstance(embedder, LocalEmbedder) else "")


def text_hash(text: str) -> str:
    """The key of a text: sha256, as the indexer's `text_hash` column."""
    return hashlib.sha256(text.encode()).hexdigest()


class VectorCache:
    """float32 vectors in one SQLite file, by (model key, text hash)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")  # a harvest and an index run may share it
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text_hash TEXT NOT NULL, "
                         "vector BLOB NOT NULL, PRIMARY KEY (model, text_hash)) WITHOUT ROWID")

    def get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), _LOOKUP_CHUNK):
            chunk = unique[start:start + _LOOKUP_CHUNK]
            marks = ", ".join("?" * len(chunk))
            for key, blob in self._db.execute(
                    f"SELECT text_hash, vector FROM vectors WHERE model = ? AND text_hash IN ({marks})",
                    [model, *chunk]):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def known(self, model: str, hashes: Iterable[str]) -> set[str]:
        """Which of these hashes already have a vector (reads no vectors)."""
        unique = list(dict.fromkeys(hashes))
        known: set[str] = set()
        for start in range(0, len(unique), _LOOKUP_CHUNK):
            chunk = unique[start:start + _LOOKUP_CHUNK]
            marks = ", ".join("?" * len(chunk))
            known.update(key for (key,) in self._db.execute(
                f"SELECT text_hash FROM vectors WHERE model = ? AND text_hash IN ({marks})", [model, *chunk]))
        return known

    def put(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)",
                                 [(model, key, np.asarray(vector, dtype=np.float32).tobytes())
                                  for key, vector in vectors.items()])

    def count(self, model: str) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0]

    def counts(self) -> dict[str, int]:
        return dict(self._db.execute("SELECT model, COUNT(*) FROM vectors GROUP BY model").fetchall())

    def harvest(self, lancedb_dir: Path, embedder: Embedder) -> int:
        """Add the vectors of every row of every repo in a LanceDB directory that `embedder`'s
        model indexed, filed under `model_key(embedder)`; returns how many were new. The
        registry names the model but not its max tokens, so the caller vouches for those."""
        db = lancedb.connect(str(lancedb_dir))
        model = model_key(embedder)
        added = 0
        for info in registry.list_repos(db):
            if info.embedding_model != embedder.model_id:
                continue
            for kind in schema.ROW_TABLES:
                try:
                    table = registry.open_table(db, info, kind)
                except (ValueError, FileNotFoundError):  # a layout without this table
                    continue
                hashes = table.search().select(["text_hash"]).limit(None).to_arrow()["text_hash"].to_pylist()
                if not set(hashes) - self.known(model, hashes):
                    continue
                rows = table.search().select(["text_hash", "vector"]).limit(None).to_arrow()
                vectors = dict(zip(rows["text_hash"].to_pylist(), rows["vector"].to_numpy(zero_copy_only=False)))
                before = self.count(model)
                self.put(model, vectors)
                added += self.count(model) - before
        return added

    def close(self) -> None:
        self._db.close()


class CachingEmbedder:
    """An `Embedder` that asks the cache first and embeds (and stores) only what it lacks."""

    def __init__(self, inner: Embedder, cache: VectorCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        # The cache lives in this process: worker processes could not share what they embed.
        self.inline = False
        self.key = model_key(inner)
        self.reused = 0
        self.embedded = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        hashes = [text_hash(text) for text in texts]
        found = self.cache.get(self.key, hashes)
        todo = {key: text for key, text in zip(hashes, texts) if key not in found}
        if todo:
            fresh = dict(zip(todo, self.inner.embed(list(todo.values()))))
            self.cache.put(self.key, fresh)
            found.update(fresh)
        self.embedded += len(todo)
        self.reused += len(texts) - len(todo)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[key] for key in hashes]).astype(np.float32, copy=False)


def default_store(cache: Path) -> VectorCache:
    return VectorCache(cache / STORE_FILE)


def lancedb_dirs(paths: Iterable[Path]) -> list[Path]:
    """Every LanceDB directory at or under these paths (a snapshot keeps one in `lancedb/`)."""
    found: list[Path] = []
    for path in paths:
        if (path / f"{schema.REGISTRY_TABLE}.lance").exists():
            found.append(path)
        else:
            found += sorted(p.parent for p in path.rglob(f"{schema.REGISTRY_TABLE}.lance"))
    return found


def main(argv: list[str] | None = None) -> int:
    from eval.realistic.corpus import default_cache

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="the eval cache (default: $CODEQA_EVAL_CACHE)")
    commands = parser.add_subparsers(dest="command", required=True)
    harvest = commands.add_parser("harvest", help="add the vectors of existing indexes")
    harvest.add_argument("dirs", nargs="*", type=Path, help="default: every snapshot under the cache")
    commands.add_parser("stats", help="vectors per model")
    args = parser.parse_args(argv)
    cache = args.cache or default_cache()
    store = default_store(cache)
    try:
        if args.command == "harvest":
            embedder = get_embedder(Settings.from_env())
            print(f"filing vectors under {model_key(embedder)}", flush=True)
            for directory in lancedb_dirs(args.dirs or [cache / "snapshots"]):
                print(f"{directory}: {store.harvest(directory, embedder)} new vectors", flush=True)
        for model, count in store.counts().items():
            print(f"{model}: {count} vectors")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
