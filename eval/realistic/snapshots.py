"""Per-commit index snapshots, so that re-running the eval only searches.

Each repository has one live index (`<cache>/index/v<N>/<owner>+<name>/`, N the index layout,
`schema.INDEX_VERSION`, so the snapshots of another layout stay as they were), moved
from one item's pre-fix commit to the next by the product's incremental indexer
(`indexer.index_repo`, embedding through the cache of `vector_cache.py`). After each
commit the live LanceDB directory is copied into
`<cache>/snapshots/v<N>/<owner>+<name>/<commit>/lancedb` with hard links: a copy costs inodes, not
bytes, for every file the next commits leave alone. That is safe because Lance never rewrites
a file in place: every write (rows, deletions, indexes, compaction, manifests) makes new files
and the live index only ever unlinks old ones (`test_realistic_snapshots.py` checks it).

Beside the tables each snapshot keeps `snapshot.json`: the indexed files (path, sha256,
language) and the index run's report. The files' texts go to one content store per repository
(`<cache>/texts/<owner>+<name>.sqlite`, by sha256), which is all the whole-file BM25 baseline
needs, so a rerun needs neither the checkouts nor the indexer.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

from codeqa.store import filters, registry, schema
from codeqa.store.connection import connect
from codeqa.core.config import Settings
from codeqa.indexing.embeddings import get_embedder
from codeqa.parsing.languages import DOC_KIND
from codeqa.indexing.indexer import index_repo
from codeqa.parsing.repo_files import SourceFile, walk_repo

from eval.realistic.vector_cache import CachingEmbedder, default_store

SNAPSHOT_FILE = "snapshot.json"
LAYOUT = f"v{schema.INDEX_VERSION}"


@dataclass(frozen=True)
class IndexedFile:
    path: str
    sha256: str
    language: str


@dataclass(frozen=True)
class Snapshot:
    """One repository's index as it was at one commit."""

    repo: str
    commit: str
    directory: Path
    files: list[IndexedFile]
    report: dict

    @property
    def index_name(self) -> str:
        return index_name(self.repo)

    def settings(self, base: Settings) -> Settings:
        """`base` (embedding model, search knobs) pointed at this snapshot's tables."""
        return replace(base, data_dir=self.directory, lancedb_uri=str(self.directory / "lancedb"))

    def symbol_rows(self, base: Settings, paths: list[str], columns: list[str], code_only: bool = False) -> list[dict]:
        """The rows of both symbol tables that lie in these files (docs sections left out if `code_only`)."""
        if not paths:
            return []
        db = connect(self.settings(base))
        info = registry.get_repo(db, self.index_name)
        where = filters.is_in("file_path", paths) + (f" AND kind != '{DOC_KIND}'" if code_only else "")
        rows: list[dict] = []
        for kind in ("methods", "classes"):
            table = registry.open_table(db, info, kind)
            rows += table.search().where(where).select(columns).limit(None).to_arrow().to_pylist()
        return rows


def index_name(repo: str) -> str:
    """The name a repository is indexed under: `owner+name`."""
    return repo.replace("/", "+")


class TextStore:
    """File texts by sha256, zlib-compressed in SQLite: one copy of each version of a file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS texts (sha256 TEXT PRIMARY KEY, text BLOB NOT NULL)")

    def add(self, files: list[SourceFile]) -> None:
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO texts VALUES (?, ?)",
                                 [(f.sha256, zlib.compress(f.text.encode("utf-8"), 6))
                                  for f in files])

    def get(self, sha256: str) -> str:
        row = self._db.execute("SELECT text FROM texts WHERE sha256 = ?", (sha256,)).fetchone()
        if row is None:
            raise KeyError(f"no text stored for {sha256}")
        return zlib.decompress(row[0]).decode("utf-8")

    def close(self) -> None:
        self._db.close()


class SnapshotStore:
    """The live indexes, their per-commit snapshots and the text stores under one cache dir."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self._embedder: CachingEmbedder | None = None

    def live_settings(self, repo: str, base: Settings) -> Settings:
        directory = self.cache / "index" / LAYOUT / index_name(repo)
        return replace(base, data_dir=directory, lancedb_uri=str(directory / "lancedb"))

    def snapshot_dir(self, repo: str, commit: str) -> Path:
        return self.cache / "snapshots" / LAYOUT / index_name(repo) / commit

    def embedder(self, base: Settings) -> CachingEmbedder:
        """The configured model behind the cache's vector store (opened on first use)."""
        if self._embedder is None:
            self._embedder = CachingEmbedder(get_embedder(base), default_store(self.cache))
        return self._embedder

    def texts(self, repo: str) -> TextStore:
        return TextStore(self.cache / "texts" / f"{index_name(repo)}.sqlite")

    def load(self, repo: str, commit: str) -> Snapshot | None:
        """The snapshot of `repo` at `commit`, None if it was never (completely) taken."""
        directory = self.snapshot_dir(repo, commit)
        meta = directory / SNAPSHOT_FILE
        if not meta.exists():
            return None
        raw = json.loads(meta.read_text(encoding="utf-8"))
        return Snapshot(repo, commit, directory, [IndexedFile(*f) for f in raw["files"]], raw["report"])

    def index(self, repo: str, commit: str, root: Path, base: Settings) -> Snapshot:
        """Bring the live index to the work tree at `root` (checked out at `commit`), then snapshot it."""
        settings = self.live_settings(repo, base)
        started = time.perf_counter()
        embedder = self.embedder(base)
        embedded_before = embedder.embedded
        report = index_repo(root, settings, name=index_name(repo), progress=False, embedder=embedder)
        seconds = time.perf_counter() - started
        sources = walk_repo(root, settings.max_file_bytes).read_all()
        texts = self.texts(repo)
        try:
            texts.add(sources)
        finally:
            texts.close()
        files = [IndexedFile(f.path, f.sha256, f.language) for f in sources]
        return self._take(repo, commit, Path(settings.database_uri), files,
                          {**report.stats().to_json(), "seconds": round(seconds, 2),
                           "model_embedded": embedder.embedded - embedded_before})

    def _take(self, repo: str, commit: str, live_db: Path, files: list[IndexedFile], report: dict) -> Snapshot:
        """Hard-link copy of the live tables; the metadata file, written last, marks it complete."""
        directory = self.snapshot_dir(repo, commit)
        if directory.exists():
            shutil.rmtree(directory)  # an earlier run died before finishing this snapshot
        partial = directory.with_name(directory.name + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        shutil.copytree(live_db, partial / "lancedb", copy_function=os.link)
        meta = {"repo": repo, "commit": commit, "files": [[f.path, f.sha256, f.language] for f in files],
                "report": report}
        (partial / SNAPSHOT_FILE).write_text(json.dumps(meta), encoding="utf-8")
        partial.rename(directory)
        return Snapshot(repo, commit, directory, files, report)
