"""How soon a repo held in memory is searched from memory again after an edit (store/resident.py).

    python -m bench.resident_bench [--rounds 6] [--json out.json]

Django 5.2.8's whole sdist (~57,900 rows: the most that `CODEQA_RESIDENT_ROWS` holds by
default) is copied and indexed into a temporary folder, then held in memory as the web app and
the MCP server hold a repo. Each round one file gets a new function and is indexed again (as
`codeqa watch` would after a save), and the tables' copies are made at the new version both
ways, taking turns which goes first: from the copies held before the edit (what a server does
now: only the rows the run changed are read) and read whole (what it did before, and does for a
repo it did not hold). The two are compared row by row. Not a test.
"""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path

from bench.rounds import run_rounds
from codeqa.core.config import Settings
from codeqa.indexing.indexer import index_repo
from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.store.resident import ResidentReader
from codeqa.store.schema import ROW_TABLES

REPO = "django-sdist"
EDITED = "django/db/models/query.py"


def load_timed(reader: ResidentReader) -> tuple[float, dict[str, int]]:
    """Seconds to bring every table's copy to the newest version, and the rows each read."""
    started = time.perf_counter()
    reader.load(ROW_TABLES)
    return time.perf_counter() - started, {kind: reader._resident[kind].rows_read for kind in ROW_TABLES}


def run(rounds: int, work: Path) -> dict:
    from bench.index_bench import fetch_source

    source = work / "django"
    shutil.copytree(fetch_source("django==5.2.8"), source, symlinks=True)
    settings = Settings.from_env(data_dir=work / "data")
    report = index_repo(source, settings, name=REPO, progress=False)
    db = connect(settings)
    held = ResidentReader(db, registry.get_repo(db, REPO))
    first, _ = load_timed(held)
    updated: list[float] = []
    whole: list[float] = []
    read: list[int] = []
    reindex: list[float] = []
    for round_ in range(rounds):
        path = source / EDITED
        path.write_text(path.read_text() + f"\n\ndef bench_added_{round_}(queryset):\n    return queryset.none()\n")
        reindex.append(index_repo(source, settings, name=REPO, progress=False).timings["total"])
        info = registry.get_repo(db, REPO)
        held.renew(info)
        fresh = ResidentReader(db, info)
        for way in (("updated", "whole") if round_ % 2 == 0 else ("whole", "updated")):
            if way == "updated":
                seconds, rows_read = load_timed(held)
                updated.append(seconds)
                read.append(sum(rows_read.values()))
            else:
                whole.append(load_timed(fresh)[0])
        for kind in ROW_TABLES:
            if not held._resident[kind].rows.equals(fresh._resident[kind].rows):
                raise SystemExit(f"round {round_}: {kind} differs from the copy read whole")
        print(f"round {round_}: updated {updated[-1]:.2f} s ({read[-1]} rows read), whole {whole[-1]:.2f} s")
    return {
        "rows": report.rows,
        "first_load_s": round(first, 2),
        "reindex_s": [round(s, 2) for s in reindex],
        "updated_s": [round(s, 3) for s in updated],
        "whole_s": [round(s, 3) for s in whole],
        "updated_p50_s": round(statistics.median(updated), 3),
        "whole_p50_s": round(statistics.median(whole), 3),
        "rows_read_p50": statistics.median(read),
    }


if __name__ == "__main__":
    run_rounds(__doc__ or "", run, 6, "codeqa-resident-bench-")
