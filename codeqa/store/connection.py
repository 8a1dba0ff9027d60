"""Connecting to the index (a local folder or object storage) and opening its tables.

`lancedb` is imported when a connection is made (the quick way: `lancedb_import`), so listing
settings or printing help never pays for it.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from codeqa.core.config import Settings
from codeqa.store.lancedb_import import lancedb_module

if TYPE_CHECKING:
    import lancedb
    import pyarrow as pa

log = logging.getLogger("codeqa.index")

SETTLE_TRIES = 20  # a race between runs that start together is retried this many times,
SETTLE_SECONDS = 0.05  # this far apart, before it is taken for what a killed run left behind


def connect(settings: Settings) -> lancedb.DBConnection:
    """The LanceDB database at `settings.database_uri` (a folder, `s3://`, `gs://`, `az://`)."""
    return lancedb_module().connect(settings.database_uri)


def table_names(db: lancedb.DBConnection) -> set[str]:
    """Every table of the database (LanceDB lists them a page at a time)."""
    names: set[str] = set()
    token = None
    while True:
        page = db.list_tables(page_token=token)
        names.update(page.tables)
        token = page.page_token
        if not token:
            return names


def open_or_create_table(db: lancedb.DBConnection, name: str, schema: pa.Schema) -> Any:
    """Open table `name`, creating it empty if it is missing. A table that is listed but has no
    version yet is either being created by another run at this instant (it opens a moment later)
    or was left half-created by a run killed while creating it (it never will): once the settle
    time has passed, it is created again, empty, so a `kill -9` never breaks the next run."""
    for _ in range(SETTLE_TRIES):
        try:
            if name not in table_names(db):
                return db.create_table(name, schema=schema, exist_ok=True)
            return db.open_table(name)
        except (ValueError, OSError, RuntimeError):  # no version yet: being created, or never will be
            time.sleep(SETTLE_SECONDS)
    log.warning("table %s was left half-created by an interrupted run: creating it again", name)
    return db.create_table(name, schema=schema, mode="overwrite")
