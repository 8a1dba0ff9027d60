"""What the MCP server's check before each `search_code` on a folder costs (indexing/indexer.py).

    python -m bench.current_check_bench [--rounds 10] [--json out.json]

Django 5.2.8's whole sdist is copied and indexed into a temporary folder. Each round asks
whether the index holds the files as they are now three ways, taking turns which goes first:
`holds_current_files` with a whole walk (what the server did before), and a kept
`CurrentFilesCheck` (what it does now: the walk brought up to date by stats, the manifest read
only when the walk or the registry row changed since the last yes), both with nothing changed;
then, after a line appended to a file, the kept check again (it must say no; the file is
restored and the check asked once more so the next round starts from a yes). Not a test.
"""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path

from bench.rounds import run_rounds
from codeqa.core.config import Settings
from codeqa.indexing.indexer import CurrentFilesCheck, holds_current_files, index_repo
from codeqa.store.connection import connect

REPO = "django-sdist"
EDITED = "django/db/models/query.py"


def run(rounds: int, work: Path) -> dict:
    from bench.index_bench import fetch_source

    source = work / "django"
    shutil.copytree(fetch_source("django==5.2.8"), source, symlinks=True)
    settings = Settings.from_env(data_dir=work / "data")
    index_repo(source, settings, name=REPO, progress=False)
    db = connect(settings)
    check = CurrentFilesCheck(source.resolve(), settings.max_file_bytes)
    started = time.perf_counter()
    assert check.holds_current_files(db, REPO)
    first = time.perf_counter() - started
    ways = {
        "whole_walk": lambda: holds_current_files(source, settings, db, REPO),
        "kept": lambda: check.holds_current_files(db, REPO),
    }
    timings: dict[str, list[float]] = {way: [] for way in (*ways, "kept_after_edit")}
    path = source / EDITED
    original = path.read_bytes()
    for round_ in range(rounds):
        for way in list(ways)[round_ % 2 :] + list(ways)[: round_ % 2]:
            started = time.perf_counter()
            if not ways[way]():
                raise SystemExit(f"round {round_}: {way} found a change where there was none")
            timings[way].append(time.perf_counter() - started)
        path.write_bytes(original + f"\n# round {round_}\n".encode())
        started = time.perf_counter()
        if check.holds_current_files(db, REPO):
            raise SystemExit(f"round {round_}: the kept check missed an edit")
        timings["kept_after_edit"].append(time.perf_counter() - started)
        path.write_bytes(original)
        time.sleep(2.1)  # past RACY_NS, so the restored file's stats are trusted again
        if not check.holds_current_files(db, REPO):
            raise SystemExit(f"round {round_}: the kept check found a change after the file was restored")
    return {
        "repo": REPO,
        "first_kept_check_s": round(first, 4),
        **{f"{way}_s": [round(t, 4) for t in times] for way, times in timings.items()},
        **{f"{way}_p50_s": round(statistics.median(times), 4) for way, times in timings.items()},
    }


if __name__ == "__main__":
    run_rounds(__doc__ or "", run, 10, "codeqa-check-")
