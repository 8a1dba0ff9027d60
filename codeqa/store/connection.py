"""Connecting to the index (a local folder or object storage) and opening its tables.

`lancedb` is imported when a connection is made (the quick way: `lancedb_import`), so listing
settings or printing help never pays for it.
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

from codeqa.core.config import Settings
from codeqa.store.errors import IndexStoreError
from codeqa.store.lancedb_import import lancedb_module

if TYPE_CHECKING:
    import lancedb
    import pyarrow as pa

log = logging.getLogger("codeqa.index")

SETTLE_TRIES = 20  # a race between runs that start together is retried this many times,
SETTLE_SECONDS = 0.05  # this far apart, before it is taken for what a killed run left behind


def connect(settings: Settings) -> lancedb.DBConnection:
    """The LanceDB database at `settings.database_uri` (a folder, `s3://`, `gs://`, `az://`); a
    store that refuses (no such bucket, wrong credentials) is one line, not LanceDB's page."""
    uri = settings.database_uri
    try:
        return lancedb_module().connect(uri)
    except (ValueError, OSError, RuntimeError) as exc:
        if "://" not in uri:
            raise  # a local folder: the disk's own errors say what is wrong (`core.errors`)
        raise IndexStoreError(
            f"The index at {uri} can't be reached ({refusal(str(exc))}): check CODEQA_LANCEDB_URI and the "
            "storage's settings (AWS_*, GOOGLE_*, AZURE_*)."
        ) from exc


def refusal(error: str) -> str:
    """What object storage said, out of LanceDB's error text: the service's code and message
    (`NoSuchBucket: The specified bucket does not exist`), else its HTTP status, else the first line."""
    said = re.search(r"<Code>([^<]+)</Code>\s*<Message>([^<]*)</Message>", error)
    if said:
        return f"{said.group(1)}: {said.group(2)}"
    status = re.search(r"status: (\d{3})", error)
    return f"HTTP {status.group(1)}" if status else error.strip().splitlines()[0][:200]


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
