"""The index as a whole: one database's registry, and a reader for each repo in it.

Datasette's shape: one object owns a database and its queries, and every face asks it. Search
(`Retriever`), the chat's commands (`CommandResolver`) and the MCP tools share one `Index`, so
a repo's tables are opened once per generation, whoever reads them.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from codeqa.core.config import Settings
from codeqa.core.records import RepoInfo
from codeqa.store import lease, registry
from codeqa.store.connection import connect
from codeqa.store.gate import read_indexed_file
from codeqa.store.reader import RepoReader

if TYPE_CHECKING:
    import lancedb


class Index:
    """Every indexed repo of one LanceDB database; safe to share between threads."""

    def __init__(self, db: lancedb.DBConnection, resident_rows: int = 0) -> None:
        self.db = db
        self.resident_rows = resident_rows  # a repo this small is searched from memory (store.resident)
        self._registry = registry.RegistryCache(db)
        self._lock = threading.Lock()
        self._readers: dict[str, RepoReader] = {}  # repo → the reader of its current generation

    @classmethod
    def connect(cls, settings: Settings) -> Index:
        """The index at `settings.database_uri`."""
        return cls(connect(settings), settings.resident_rows)

    def repos(self) -> list[RepoInfo]:
        """Every indexed repo, by name."""
        return self._registry.repos()

    def repo(self, name: str) -> RepoInfo:
        """One indexed repo; `UnknownRepoError` (404) suggests close names."""
        return self._registry.repo(name)

    def reader(self, repo: RepoInfo) -> RepoReader:
        """The reader of the repo's tables, one per generation: a re-index to new tables reads those."""
        with self._lock:
            reader = self._readers.get(repo.name)
            held = 0 < repo.stats.rows <= self.resident_rows
            if reader is None or reader.info.prefix != repo.prefix or reader.holds_rows != held:
                reader = self._readers[repo.name] = self._new_reader(repo, held)
            elif reader.info != repo:
                reader.renew(repo)  # an index run finished: what it wrote is read from now on
            return reader

    def _new_reader(self, repo: RepoInfo, held: bool) -> RepoReader:
        """A reader that holds the repo in memory (store.resident: numpy and pyarrow.compute are
        imported only then), or one that asks LanceDB. A repo that outgrows `resident_rows` is
        let go at its next search."""
        if held:
            from codeqa.store.resident import ResidentReader

            return ResidentReader(self.db, repo)
        return RepoReader(self.db, repo)

    def read_file(self, repo: RepoInfo, path: object) -> str:
        """The text of a file of the repo's index, as it was indexed; anything else is refused."""
        return read_indexed_file(self.reader(repo), path)

    def lock_holder(self, name: str) -> lease.LockHolder | None:
        """Who is (re-)indexing or removing the repo now, if anyone."""
        return lease.holder(self.db, name)
