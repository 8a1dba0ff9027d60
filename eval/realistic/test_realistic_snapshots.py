"""Per-commit snapshots stay exactly as taken while the live index moves on (real LanceDB and model)."""

from __future__ import annotations

import hashlib
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from codeqa.store import create_tables, registry
from codeqa.store.connection import connect
from codeqa.core.config import Settings
from codeqa.indexing.embeddings import get_embedder
from codeqa.search.retrieval import Retriever
from codeqa.search.options import SearchOptions

from eval.realistic.snapshots import SnapshotStore
from eval.realistic.vector_cache import default_store

pytestmark = pytest.mark.integration

SAMPLE_REPO = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "sample_repo"
REPO = "example/sample"
MARKER = "zebra_snapshot_marker"


def file_digests(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def names_found(settings: Settings, query: str) -> set[str]:
    result = Retriever(settings).search("example+sample", query, SearchOptions(hyde=False, rerank=False, k=20))
    return {hit.name for hit in result.results}


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\)")
def test_a_snapshot_survives_later_commits_and_cleanup(tmp_path: Path) -> None:
    base = Settings(data_dir=tmp_path / "unused")
    store = SnapshotStore(tmp_path / "cache")
    work = tmp_path / "work"
    shutil.copytree(SAMPLE_REPO / "shop", work / "shop")

    first = store.index(REPO, "c1", work, base)
    taken = file_digests(first.directory)
    assert any(name.endswith(".lance") or "/data/" in name for name in taken)

    (work / "shop" / "zebra.py").write_text(f"def {MARKER}():\n    return 'stripes'\n", encoding="utf-8")
    victim = next(p for p in sorted(work.rglob("*.py")) if p.name != "zebra.py")
    victim.unlink()
    second = store.index(REPO, "c2", work, base)
    # Make the live index drop every old version now, as it does ten minutes after a run.
    live = store.live_settings(REPO, base)
    db = connect(live)
    tables = create_tables.RepoTables(db, registry.get_repo(db, "example+sample"))
    for table in (*tables.symbol_tables, tables.files):
        table.optimize(cleanup_older_than=timedelta(0))

    assert file_digests(first.directory) == taken
    assert MARKER not in names_found(first.settings(base), MARKER)
    assert MARKER in names_found(second.settings(base), MARKER)
    victim_path = str(victim.relative_to(work))
    assert victim_path in {f.path for f in first.files}
    assert victim_path not in {f.path for f in second.files}
    assert store.load(REPO, "c1").files == first.files
    texts = store.texts(REPO)
    try:
        zebra = next(f for f in second.files if f.path.endswith("zebra.py"))
        assert MARKER in texts.get(zebra.sha256)
    finally:
        texts.close()


def test_a_text_is_embedded_once_even_across_caches(tmp_path: Path) -> None:
    """Vectors harvested from one cache's snapshot serve another cache's index run: the model
    embeds nothing the first run embedded, and the second index searches alike."""
    base = Settings(data_dir=tmp_path / "unused")
    work = tmp_path / "work"
    shutil.copytree(SAMPLE_REPO / "shop", work / "shop")
    first = SnapshotStore(tmp_path / "a").index(REPO, "c1", work, base)
    assert first.report["model_embedded"] > 0

    vectors = default_store(tmp_path / "b")
    try:
        assert vectors.harvest(first.directory / "lancedb", get_embedder(base)) == first.report["model_embedded"]
    finally:
        vectors.close()
    second = SnapshotStore(tmp_path / "b").index(REPO, "c1", work, base)
    assert second.report["model_embedded"] == 0 and second.report["embedded"] > 0
    query = "how is an order CSV turned into products?"
    assert names_found(second.settings(base), query) == names_found(first.settings(base), query)
