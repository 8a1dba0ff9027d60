"""Re-indexing: only what changed is parsed and embedded; crashes never corrupt the index."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from codeqa.core.records import RepoInfo
from codeqa.store import create_tables, registry, schema
from codeqa.store.errors import UnknownRepoError
from codeqa.store.index import Index
from codeqa.store.connection import connect, table_names
from conftest import ROOT
from codeqa.indexing.indexer import index_repo

pytestmark = pytest.mark.integration

COMPARED = ("id", "file_path", "kind", "qualified_name", "start_line", "end_line", "signature",
            "doc", "code", "parent", "file_hash", "reference_count", "references")


def snapshot(settings, repo: str) -> dict[str, dict[str, dict]]:
    db = connect(settings)
    info = registry.get_repo(db, repo)
    out = {}
    for kind in schema.ROW_TABLES:
        rows = registry.open_table(db, info, kind).to_arrow().to_pylist()
        out[kind] = {r["id"]: r for r in rows}
        assert len(out[kind]) == len(rows), "duplicate row ids"
    return out


def assert_same_rows(left: dict, right: dict) -> None:
    for kind in schema.ROW_TABLES:
        assert left[kind].keys() == right[kind].keys()
        for row_id, row in left[kind].items():
            other = right[kind][row_id]
            assert {c: row[c] for c in COMPARED} == {c: other[c] for c in COMPARED}
            assert np.allclose(row["vector"], other["vector"], atol=1e-4)


@pytest.mark.parametrize("model", ["codeqa-static", "all-MiniLM-L6-v2"])
def test_modify_add_delete_rename(settings, sample_copy, model):
    """With either kind of model: the static one embeds a re-parsed file's rows as it parses
    them; a transformer re-embeds only the texts that changed (the others keep their vectors)."""
    settings = replace(settings, embedding_model=model)
    first = index_repo(sample_copy, settings, name="s", progress=False)
    before = snapshot(settings, "s")

    util = sample_copy / "shop" / "util.py"
    util.write_text(util.read_text().replace('logger.debug("calling %s", func.__name__)',
                                             'logger.info("calling %s", func.__name__)'))
    (sample_copy / "shop" / "discounts.py").write_text(
        'def discount(cents: int) -> int:\n    """Ten percent off."""\n    return cents * 9 // 10\n')
    (sample_copy / "web" / "js" / "format.js").unlink()
    (sample_copy / "c" / "ledger.c").rename(sample_copy / "c" / "books.c")

    second = index_repo(sample_copy, settings, name="s", progress=False)
    after = snapshot(settings, "s")
    assert (second.added, second.changed, second.deleted) == (2, 1, 2)
    assert second.unchanged == sum(first.files_by_language.values()) - 3

    def keys(snap, kind):
        return {(r["file_path"], r["qualified_name"], r["kind"], r["start_line"]) for r in snap[kind].values()}

    removed = keys(before, "methods") - keys(after, "methods")
    added = keys(after, "methods") - keys(before, "methods")
    assert {k[0] for k in removed} == {"web/js/format.js", "c/ledger.c"}
    assert {k[0] for k in added} == {"shop/discounts.py", "c/books.c"}
    assert {k[1:] for k in removed if k[0] == "c/ledger.c"} == {k[1:] for k in added if k[0] == "c/books.c"}
    assert ("shop/discounts.py", "discount", "function", 1) in added

    # Unchanged files keep their rows and vectors untouched; the edit re-embeds one symbol only.
    wrapper = [r for r in after["methods"].values()
               if r["file_path"] == "shop/util.py" and r["qualified_name"] == "log_calls.wrapper"][0]
    assert "logger.info" in wrapper["code"]
    changed_texts = {r["text_hash"] for r in after["methods"].values() if r["file_path"] == "shop/util.py"} - \
        {r["text_hash"] for r in before["methods"].values() if r["file_path"] == "shop/util.py"}
    new_rows = [r for snap in after.values() for r in snap.values()
                if r["file_path"] in {"shop/discounts.py", "c/books.c"}]
    if model == "codeqa-static":
        reparsed = {"shop/util.py", "shop/discounts.py", "c/books.c"}
        assert second.embedded == sum(r["file_path"] in reparsed for snap in after.values() for r in snap.values())
    else:
        assert second.embedded == len(changed_texts) + len({r["text_hash"] for r in new_rows})
    for kind in ("methods", "classes"):
        for row_id, row in before[kind].items():
            if row["file_path"] in {"shop/models.py", "java/com/shop/Inventory.java", "README.md"}:
                assert np.array_equal(after[kind][row_id]["vector"], row["vector"])

    # References follow the change: the deleted formatPrice is gone, callers of the renamed file moved.
    assert not any(r["file_path"] == "web/js/format.js" for r in after["methods"].values())
    third = index_repo(sample_copy, settings, name="s", progress=False)
    assert (third.added, third.changed, third.deleted, third.embedded, third.references_updated) == (0, 0, 0, 0, 0)
    assert_same_rows(after, snapshot(settings, "s"))


def test_incremental_equals_clean_index(settings, sample_copy, tmp_path):
    index_repo(sample_copy, settings, name="s", progress=False)
    models = sample_copy / "shop" / "models.py"
    models.write_text(models.read_text() + "\n\ndef empty_cart() -> Cart:\n    return Cart('nobody')\n")
    (sample_copy / "shop" / "json_parser.py").unlink()
    index_repo(sample_copy, settings, name="s", progress=False)

    clean = settings.__class__(data_dir=tmp_path / "clean")
    index_repo(sample_copy, clean, name="s", progress=False)
    assert_same_rows(snapshot(settings, "s"), snapshot(clean, "s"))
    cart = [r for r in snapshot(settings, "s")["classes"].values()
            if r["file_path"] == "shop/models.py" and r["qualified_name"] == "Cart"][0]
    assert any(u["caller"] == "empty_cart" for u in cart["references"])


DEMO_ADD = '    cart.add(Product("A1", "Apple", 50), 3)\n'
EMPTY_CART = "\n\ndef empty_cart() -> Cart:\n    return Cart('nobody')\n"
EMPTY_TOTAL = "\n\ndef empty_total():\n    return empty_cart().total()\n"
EDITS = {  # of shop/models.py: (the edit, whether stored uses are patched rather than re-resolved)
    "a use added": (lambda text: text.replace(DEMO_ADD, DEMO_ADD * 2), True),
    "a use removed": (lambda text: text.replace(DEMO_ADD, ""), True),
    "every line moved": (lambda text: "# A comment moves every definition (and its id) a line down.\n" + text, True),
    "a function added": (lambda text: text + "\n\ndef owner_of(cart):\n    return cart.add(Product())\n", True),
    "a result type added": (lambda text: text + EMPTY_CART, True),  # nothing calls it yet
    "a result type added and read": (lambda text: text + EMPTY_CART + EMPTY_TOTAL, False),
    "a base changed": (lambda text: text.replace("class Cart:", "class Cart(Product):"), False),
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edit_patches_stored_uses_as_a_clean_index_resolves_them(
    settings, sample_copy, tmp_path, monkeypatch, caplog, edit
):
    """A definition's uses are patched (the changed file's old uses out, its new ones in) where
    the edit kept the file's definitions and types, its lists cut short included; they equal a
    clean index's either way."""
    from codeqa.indexing import reference_updates

    monkeypatch.setattr(reference_updates, "MAX_STORED_REFERENCES", 2)  # most lists are cut
    change, patched = EDITS[edit]
    index_repo(sample_copy, settings, name="s", progress=False)
    models = sample_copy / "shop" / "models.py"
    models.write_text(change(models.read_text()))
    with caplog.at_level(logging.DEBUG, logger="codeqa.index"):
        run = index_repo(sample_copy, settings, name="s", progress=False)
    assert ("references: patched" in caplog.text) == patched
    assert run.references_updated > 0
    rows = snapshot(settings, "s")
    counts = [row["reference_count"] for kind in ("methods", "classes") for row in rows[kind].values()]
    assert run.references == sum(counts)

    clean = settings.__class__(data_dir=tmp_path / "clean")
    index_repo(sample_copy, clean, name="s", progress=False)
    assert_same_rows(rows, snapshot(clean, "s"))


def test_a_class_redefined_keeps_the_uses_that_name_it_by_its_path(settings, tmp_path):
    """`crate::a::Foo::new()` in another file uses `Foo`: re-resolving `Foo` after an edit of
    its file reads that file too, though it never writes `Foo` alone."""
    repo = tmp_path / "crate"
    (repo / "src").mkdir(parents=True)
    a, b = repo / "src" / "a.rs", repo / "src" / "b.rs"
    a.write_text("pub struct Foo;\nimpl Foo {\n    pub fn new() -> Foo { Foo }\n}\n")
    b.write_text("pub fn make() {\n    let _ = crate::a::Foo::new();\n}\n")
    index_repo(repo, settings, name="c", progress=False)
    a.write_text(a.read_text() + "pub mod other {\n    pub struct Foo;\n}\n")  # a second Foo
    index_repo(repo, settings, name="c", progress=False)

    clean = settings.__class__(data_dir=tmp_path / "clean")
    index_repo(repo, clean, name="c", progress=False)
    rows = snapshot(settings, "c")
    assert_same_rows(rows, snapshot(clean, "c"))
    structs = [r for r in rows["classes"].values() if r["kind"] == "struct"]
    from_b = [[(u["file_path"], u["kind"]) for u in r["references"] if u["file_path"] == "src/b.rs"] for r in structs]
    assert from_b == [[("src/b.rs", "new")]] * 2


def test_an_edited_files_definitions_keep_their_uses_until_the_run_resolves_them(settings, sample_copy, monkeypatch):
    """The rows of an edited file are written with the uses of the definitions they replace:
    a search during the run still sees them, and an edit that moved no use rewrites none."""
    from codeqa.indexing import indexer

    index_repo(sample_copy, settings, name="s", progress=False)
    models = sample_copy / "shop" / "models.py"

    def uses(snap):
        return {
            (r["qualified_name"], r["start_line"]): r["references"]
            for kind in ("methods", "classes")
            for r in snap[kind].values()
            if r["file_path"] == "shop/models.py"
        }

    before = uses(snapshot(settings, "s"))
    assert any(before.values())
    models.write_text(models.read_text() + "\n# A comment at the end moves no use.\n")
    assert index_repo(sample_copy, settings, name="s", progress=False).references_updated == 0

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    models.write_text(models.read_text() + "\n# Another one.\n")
    monkeypatch.setattr(indexer, "update_references", crash)
    with pytest.raises(KeyboardInterrupt):
        index_repo(sample_copy, settings, name="s", progress=False)
    assert uses(snapshot(settings, "s")) == before  # rows rewritten, references not yet resolved


def test_files_are_read_only_when_size_or_mtime_changed(settings, sample_copy):
    first = index_repo(sample_copy, settings, name="s", progress=False)
    files = sum(first.files_by_language.values())
    models = sample_copy / "shop" / "models.py"
    before = models.stat()
    models.write_text(models.read_text().replace("Cart", "Cbrt"))  # same size...
    os.utime(models, ns=(before.st_atime_ns, before.st_mtime_ns))  # ...and mtime: not read
    second = index_repo(sample_copy, settings, name="s", progress=False)
    assert (second.changed, second.unchanged) == (0, files)
    assert any(r["qualified_name"] == "Cart" for r in snapshot(settings, "s")["classes"].values())

    # A manifest without mtimes (written before they were kept) makes every file hashed once.
    db = connect(settings)
    registry.open_table(db, registry.get_repo(db, "s"), "files").update(values={"mtime_ns": 0})
    third = index_repo(sample_copy, settings, name="s", progress=False)
    assert (third.changed, third.unchanged) == (1, files - 1)
    assert any(r["qualified_name"] == "Cbrt" for r in snapshot(settings, "s")["classes"].values())
    manifest = create_tables.RepoTables(db, registry.get_repo(db, "s")).file_states()
    assert all(entry.mtime_ns for path, entry in manifest.items() if path != "shop/models.py")


def make_big_repo(root: Path, files: int = 120) -> None:
    for i in range(files):
        package = root / f"pkg{i % 6}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"mod{i}.py").write_text(
            f'"""Module {i}."""\n\n\nclass Handler{i}:\n    """Handles case {i}."""\n\n'
            f"    def handle(self, value: int) -> int:\n        return helper_{i}(value) + {i}\n\n\n"
            f"def helper_{i}(value: int) -> int:\n    \"\"\"Helper {i}.\"\"\"\n"
            f"    return Handler{(i + 1) % files}().handle(value) if value > {i} else value\n")


def run_cli(args: list[str], env: dict, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "preprocessing.py"), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def kill_after_writes(proc: subprocess.Popen, data_dir: Path, writes: int) -> bool:
    """SIGKILL an index run once it has written `writes` more data files, so the kill lands mid-run
    however fast the box is; False when the run finished first."""
    def written() -> int:
        return sum(1 for _ in data_dir.rglob("*.lance")) if data_dir.exists() else 0

    start = written()
    while proc.poll() is None:
        if written() >= start + writes:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.01)
    return False


def test_kill_9_mid_run_then_rerun_equals_clean_index(tmp_path):
    repo = tmp_path / "big"
    make_big_repo(repo)
    env = {**os.environ, "CODEQA_DATA_DIR": str(tmp_path / "killed"), "CODEQA_WRITE_BATCH": "4",
           "CODEQA_EMBEDDING_BATCH_SIZE": "8"}
    killed_mid_run = 0
    # The first kill lands while the first run creates its tables (lock, registry, rows).
    for writes in (1, 3, 6, 10):
        proc = run_cli(["index", str(repo), "--name", "big", "--no-progress"], env)
        killed_mid_run += kill_after_writes(proc, tmp_path / "killed", writes)
        # Edit between runs, as a developer would while an index run was interrupted.
        target = repo / "pkg1" / "mod1.py"
        target.write_text(target.read_text().replace("+ 1\n", f"+ {writes}\n"))
    assert killed_mid_run >= 1, "the indexer finished before any kill: make the repo bigger"
    final = run_cli(["index", str(repo), "--name", "big", "--no-progress"], env)
    out, err = final.communicate(timeout=600)
    assert final.returncode == 0, err

    killed_settings = settings_from_env(env)
    clean_env = {**env, "CODEQA_DATA_DIR": str(tmp_path / "clean")}
    clean = run_cli(["index", str(repo), "--name", "big", "--no-progress"], clean_env)
    assert clean.wait(timeout=600) == 0
    assert_same_rows(snapshot(killed_settings, "big"), snapshot(settings_from_env(clean_env), "big"))


def settings_from_env(env: dict):
    """The settings a CLI run with `env` uses: its data dir and, if it names one, its model."""
    from codeqa.core.config import Settings
    model = {"embedding_model": env["CODEQA_EMBEDDING_MODEL"]} if "CODEQA_EMBEDDING_MODEL" in env else {}
    return Settings(data_dir=Path(env["CODEQA_DATA_DIR"]), **model)


# --- Bad input, through the real CLI ---------------------------------------------------------

def cli(args: list[str], data_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, str(ROOT / "preprocessing.py"), *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_bad_input_is_skipped_counted_and_reported(tmp_path):
    repo = tmp_path / "messy"
    repo.mkdir()
    (repo / "good.py").write_text("def good():\n    return 1\n")
    (repo / "broken.py").write_text("def fine():\n    return 2\n\ndef broken(:\n    pass\n")
    (repo / "latin1.py").write_bytes('def caf\xe9():\n    """Caf\xe9 cr\xe8me."""\n    return 3\n'.encode("latin-1")
                                      .replace(b"caf\xe9()", b"cafe()"))
    (repo / "blob.bin.py").write_bytes(b"\x00\x01\x02" * 100)
    (repo / "huge.py").write_text("x = 1\n" * (5 * 1024 * 1024 // 6 + 1))
    (repo / "loop").symlink_to(repo, target_is_directory=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def secret():\n    return 4\n")
    (repo / "escape").symlink_to(outside, target_is_directory=True)

    result = cli(["index", str(repo), "--no-progress"], tmp_path / "data")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    for words in ("binary", "too_large", "symlink", "decoded with replacement", "syntax errors"):
        assert words in result.stdout, (words, result.stdout)

    rows = snapshot(settings_from_env({"CODEQA_DATA_DIR": str(tmp_path / "data")}), "messy")["methods"]
    names = {r["name"] for r in rows.values()}
    # tree-sitter recovers `broken` from the syntax error; the out-of-repo `secret` never appears.
    assert {"cafe", "fine", "good"} <= names and "secret" not in names
    assert next(r["doc"] for r in rows.values() if r["name"] == "cafe") == "Caf\ufffd cr\ufffdme."
    assert all(not r["file_path"].startswith(("escape/", "loop/")) for r in rows.values())


@pytest.mark.parametrize("setup, message", [
    (lambda root: None, "does not exist"),
    (lambda root: root.write_text("x"), "not a directory"),
    (lambda root: root.mkdir(), "Nothing indexable"),
    (lambda root: (root.mkdir(), (root / ".gitignore").write_text("*.py\n"),
                   (root / "a.py").write_text("def a(): pass\n")), "Nothing indexable"),
])
def test_cli_errors_are_one_line_and_non_zero(tmp_path, setup, message):
    root = tmp_path / "target"
    setup(root)
    result = cli(["index", str(root)], tmp_path / "data")
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_index_list_remove(tmp_path, sample_copy):
    data = tmp_path / "data"
    shutil.rmtree(sample_copy / "java")
    assert cli(["index", str(sample_copy), "--name", "shop", "--no-progress"], data).returncode == 0
    listed = cli(["list"], data)
    assert listed.returncode == 0 and "shop" in listed.stdout and "local:codeqa-static" in listed.stdout
    unknown = cli(["remove", "nope"], data)
    assert unknown.returncode == 1 and "Unknown repo 'nope'" in unknown.stderr
    assert cli(["remove", "shop"], data).returncode == 0
    assert "No repos indexed" in cli(["list"], data).stdout


def test_run_interrupted_before_references_is_repaired_by_the_next(settings, sample_copy, tmp_path, monkeypatch):
    from codeqa.indexing import indexer

    index_repo(sample_copy, settings, name="s", progress=False)
    models = sample_copy / "shop" / "models.py"
    models.write_text(models.read_text().replace("class Cart:", "class Basket:").replace("-> Cart:", "-> Basket:"))

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(indexer, "update_references", crash)
    with pytest.raises(KeyboardInterrupt):
        index_repo(sample_copy, settings, name="s", progress=False)
    monkeypatch.undo()
    # Nothing changed on disk since: only the pending flag tells this run to resolve everything.
    rerun = index_repo(sample_copy, settings, name="s", progress=False)
    assert (rerun.added, rerun.changed, rerun.deleted) == (0, 0, 0) and rerun.references_updated > 0

    clean = settings.__class__(data_dir=tmp_path / "clean")
    index_repo(sample_copy, clean, name="s", progress=False)
    assert_same_rows(snapshot(settings, "s"), snapshot(clean, "s"))


def test_first_run_killed_between_rows_and_manifest_leaves_no_duplicate(settings, sample_copy, tmp_path, monkeypatch):
    """A new generation's batches are appended (no merge): a run that dies after a batch's rows
    are in but before its manifest entries leaves rows no manifest lists; the next run replaces
    them, and the index equals a clean one row for row."""
    settings = replace(settings, write_batch=4)
    appended = create_tables.RepoTables.add_files
    batches = []

    def rows_then_crash(self, entries, rows):
        batches.append(len(entries))
        if len(batches) == 2:
            for name, table in zip(schema.ROW_TABLES, self.row_tables, strict=False):
                if rows.get(name):
                    table.add(pa.Table.from_pylist(rows[name], schema=table.schema), on_bad_vectors="null")
            raise KeyboardInterrupt
        appended(self, entries, rows)

    monkeypatch.setattr(create_tables.RepoTables, "add_files", rows_then_crash)
    with pytest.raises(KeyboardInterrupt):
        index_repo(sample_copy, settings, name="s", progress=False)
    monkeypatch.undo()
    rerun = index_repo(sample_copy, settings, name="s", progress=False)
    assert rerun.added > 0

    clean = replace(settings, data_dir=tmp_path / "clean")
    index_repo(sample_copy, clean, name="s", progress=False)
    assert_same_rows(snapshot(settings, "s"), snapshot(clean, "s"))


def test_a_registry_being_created_lists_no_repo(settings):
    """Another process's first index run has made the registry's directory but not written its
    first version: a reader listing repos at that instant sees none, not an error (this raced
    the test below, which polls the registry while the index run creates it)."""
    db = connect(settings)
    (settings.data_dir / "lancedb" / f"{schema.REGISTRY_TABLE}.lance").mkdir(parents=True)
    assert schema.REGISTRY_TABLE in table_names(db)
    assert registry.list_repos(db) == [] and registry.find_repo(db, "big") is None


def test_an_index_reads_the_registry_again_only_when_it_changes(settings):
    """`Index` keeps the registry's rows while the table's version stands (a search asks for its
    repo's row every time) and sees another connection's writes at once: a new repo, a changed
    row, a removed one, a registry deleted."""
    index = Index.connect(settings)
    assert index.repos() == []
    writer = connect(settings)
    one = RepoInfo(name="one", root="/nowhere", prefix=registry.new_generation_prefix("one"),
                   embedding_model="m", embedding_dim=4, created_at=0.0, indexed_at=1.0)
    registry.save_repo(writer, one)
    listed = index.repos()
    assert listed == [one]
    assert index.repo("one") is listed[0]  # the same object: the unchanged registry was not read again
    registry.save_repo(writer, replace(one, indexed_at=2.0))
    assert index.repo("one").indexed_at == 2.0
    registry.save_repo(writer, replace(one, name="two", prefix=registry.new_generation_prefix("two")))
    assert [info.name for info in index.repos()] == ["one", "two"]
    registry.remove_repo(writer, "two")
    assert [info.name for info in index.repos()] == ["one"]
    with pytest.raises(UnknownRepoError, match="Did you mean 'one'"):
        index.repo("onee")
    shutil.rmtree(settings.data_dir / "lancedb" / f"{schema.REGISTRY_TABLE}.lance")  # its table gone under it
    assert index.repos() == []


def test_searchable_before_its_vectors_and_a_killed_fill_resumes(tmp_path):
    """With a transformer model (the static one embeds as it parses): rows are searchable as
    soon as they are parsed; a `kill -9` while they are being embedded leaves a searchable index
    whose rows without vectors still rank, and the next run embeds only those."""
    from codeqa.app import close_app, create_app
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    repo = tmp_path / "big"
    make_big_repo(repo, files=150)
    env = {**os.environ, "CODEQA_DATA_DIR": str(tmp_path / "data"), "CODEQA_EMBEDDING_MODEL": "all-MiniLM-L6-v2"}
    settings = settings_from_env(env)
    retriever = Retriever(settings)
    retriever.embedder.embed(["load the model before the index run starts"])
    db = connect(settings)

    proc = run_cli(["index", str(repo), "--name", "big", "--no-progress"], env)
    try:
        partial = None
        while partial is None and proc.poll() is None:
            info = registry.find_repo(db, "big")
            if info and info.indexed_at and info.stats.vectors_pending >= 300:
                partial = info
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert partial is not None, "the run ended before it was seen searchable without its vectors"
    assert partial.stats.rows == 600 and partial.stats.embedded_percent <= 50

    tables = create_tables.RepoTables(db, registry.get_repo(db, "big"))
    rows, pending = tables.vector_counts()
    assert rows == 600 and pending > 0
    waiting = next(row for table in tables.row_tables for rows in tables.rows_without_vectors(table)
                   for row in rows if row["kind"] in ("class", "function"))
    result = retriever.search("big", waiting["doc"].rstrip("."), SearchOptions(k=5, hyde=False))
    assert waiting["qualified_name"] in [hit.qualified_name for hit in result.results[:3]], result.results[:3]
    assert any("have their vectors so far" in notice and "stopped" in notice for notice in result.notices), result.notices

    app = create_app({"TESTING": True, "CODEQA_SETTINGS": settings})
    try:
        [listed] = app.test_client().get("/api/repos").get_json()["repos"]
        assert listed["embedded_percent"] == registry.get_repo(db, "big").stats.embedded_percent < 100
    finally:
        close_app(app)

    rerun = index_repo(repo, settings, name="big", progress=False)
    assert (rerun.added, rerun.changed, rerun.deleted) == (0, 0, 0)
    assert 0 < rerun.embedded <= pending and rerun.vectors_pending == 0
    assert create_tables.RepoTables(db, registry.get_repo(db, "big")).vector_counts() == (600, 0)
    assert registry.get_repo(db, "big").stats.embedded_percent == 100
    assert not retriever.search("big", "helper", SearchOptions(k=3, hyde=False)).notices


def test_a_small_change_to_a_large_table_is_searchable_without_optimizing(settings, sample_copy, monkeypatch):
    """Rows a run adds outside the indexes are still found (searched flat beside them), so a
    small change to a large table skips the compaction and index rewrite that cost minutes at
    a million rows; past its share of the table, or in a small table, the run folds them in."""
    from codeqa.search.options import SearchOptions
    from codeqa.search.retrieval import Retriever

    def unindexed(table) -> int:
        return max(table.index_stats(ix.name).num_unindexed_rows for ix in table.list_indices())

    def methods():
        return create_tables.RepoTables(db, registry.get_repo(db, "s")).methods

    index_repo(sample_copy, settings, name="s", progress=False)
    db = connect(settings)
    assert unindexed(methods()) == 0

    monkeypatch.setattr(create_tables, "OPTIMIZE_ALWAYS_BELOW", 0)  # the sample's tables as if large
    (sample_copy / "shop" / "ledger.py").write_text(
        'def tally_zebra_quokkas(herd):\n    """Count the zebras and quokkas of a herd."""\n    return len(herd)\n')
    index_repo(sample_copy, settings, name="s", progress=False)
    assert unindexed(methods()) > 0
    found = Retriever(settings).search("s", "count zebras and quokkas", SearchOptions(k=5, hyde=False, rerank=False))
    assert "tally_zebra_quokkas" in [hit.qualified_name for hit in found.results]

    monkeypatch.setattr(create_tables, "OPTIMIZE_UNINDEXED_SHARE", 0.001)
    (sample_copy / "shop" / "ledger.py").write_text("def tally_herd(herd):\n    return len(herd)\n")
    index_repo(sample_copy, settings, name="s", progress=False)
    assert unindexed(methods()) == 0

    monkeypatch.setattr(create_tables, "OPTIMIZE_UNINDEXED_SHARE", 1.0)
    monkeypatch.setattr(create_tables, "OPTIMIZE_ALWAYS_BELOW", 100_000)
    (sample_copy / "shop" / "ledger.py").write_text("def tally_flock(flock):\n    return len(flock)\n")
    index_repo(sample_copy, settings, name="s", progress=False)
    assert unindexed(methods()) == 0


def test_uses_written_in_place_leave_a_large_table_indexed_by_id(settings, sample_copy, monkeypatch):
    """A run that moves uses writes the reference columns of existing rows in place, which
    LanceDB counts as leaving every row of their fragment outside the `id` index. The run
    indexes ids again, so a large table is not taken for unindexed and folded whole: only the
    edited file's rows wait outside the text indexes, as after any small change."""
    def unindexed(table, column: str) -> int:
        index = next(ix for ix in table.list_indices() if list(ix.columns) == [column])
        return table.index_stats(index.name).num_unindexed_rows

    index_repo(sample_copy, settings, name="s", progress=False)
    db = connect(settings)
    monkeypatch.setattr(create_tables, "OPTIMIZE_ALWAYS_BELOW", 0)  # the sample's tables as if large
    monkeypatch.setattr(create_tables, "OPTIMIZE_UNINDEXED_SHARE", 0.25)
    checkout = sample_copy / "shop" / "checkout.py"
    checkout.write_text(checkout.read_text().replace("    return cart.total()", "    cart.lines.clear()\n    return cart.total()"))
    report = index_repo(sample_copy, settings, name="s", progress=False)
    assert report.references_updated > 0  # rows of other files had their uses written in place
    methods = create_tables.RepoTables(db, registry.get_repo(db, "s")).methods
    assert unindexed(methods, "id") == 0
    assert 0 < unindexed(methods, "search_text") < 0.25 * methods.count_rows()  # checkout.py's rows: not folded


def test_a_run_without_folding_leaves_its_rows_for_fold_indexes(settings, sample_copy):
    """A watcher's runs skip folding new rows into the indexes (they are searched flat beside
    them) and fold once the tree is quiet: `fold_indexes` does it, under the repo's lock."""
    from codeqa.indexing.indexer import fold_indexes
    from codeqa.search.options import SearchOptions
    from codeqa.search.retrieval import Retriever

    def unindexed() -> int:
        tables = create_tables.RepoTables(db, registry.get_repo(db, "s"))
        return sum(t.index_stats(ix.name).num_unindexed_rows for t in tables.row_tables for ix in t.list_indices())

    index_repo(sample_copy, settings, name="s", progress=False)
    db = connect(settings)
    (sample_copy / "shop" / "ledger.py").write_text("def tally_herd(herd):\n    return len(herd)\n")
    index_repo(sample_copy, settings, name="s", progress=False, fold=False)
    assert unindexed() > 0
    found = Retriever(settings).search("s", "tally_herd", SearchOptions(k=3, hyde=False, rerank=False))
    assert found.results[0].qualified_name == "tally_herd"  # searchable meanwhile
    fold_indexes(settings, "s", db)
    assert unindexed() == 0


@pytest.mark.parametrize("walk", ["its own", "a watcher's"])
def test_a_kept_check_of_current_files_reads_the_manifest_only_when_something_changed(
    settings, sample_copy, monkeypatch, walk
):
    """`CurrentFilesCheck` (before each MCP `search_code` on a folder): the walk is kept and
    brought up to date by stats (its own, or a watcher's `PendingWalk`); with the files and the
    registry row as at the last yes, the answer is yes again without the manifest, and any
    change of either is looked at. A file too recent to trust by its stats is read every time."""
    from codeqa.indexing.indexer import CurrentFilesCheck, remove_repo
    from codeqa.indexing.live_index import PendingWalk

    old = time.time_ns() - 86_400 * 10**9
    for path in sample_copy.rglob("*"):
        os.utime(path, ns=(old, old), follow_symlinks=False)
    index_repo(sample_copy, settings, name="s", progress=False)
    db = connect(settings)
    reads: list[str] = []
    file_states = create_tables.RepoTables.file_states
    monkeypatch.setattr(
        create_tables.RepoTables, "file_states", lambda tables: reads.append("manifest") or file_states(tables)
    )
    check = CurrentFilesCheck(sample_copy.resolve(), settings.max_file_bytes)
    watcher = PendingWalk(sample_copy.resolve(), settings.max_file_bytes) if walk == "a watcher's" else None
    refresh = watcher.refresh if watcher is not None else None
    assert check.holds_current_files(db, "s", refresh) and reads == ["manifest"]
    assert check.holds_current_files(db, "s", refresh) and reads == ["manifest"]  # nothing changed
    util = sample_copy / "shop" / "util.py"
    util.write_text(util.read_text() + "\n\ndef fresh_helper():\n    return 1\n")
    assert not check.holds_current_files(db, "s", refresh) and len(reads) == 2
    index_repo(sample_copy, settings, name="s", progress=False)
    reads.clear()  # the run's own
    assert check.holds_current_files(db, "s", refresh) and reads == ["manifest"]  # a new registry row
    # Rewritten within the same tick of a coarse clock: the same size and mtime. Only reading
    # it tells, and it is too recent for the check to have stopped reading it.
    written = util.stat().st_mtime_ns
    util.write_text(util.read_text().replace("fresh_helper", "fresh_helpex"))
    os.utime(util, ns=(written, written))
    assert not check.holds_current_files(db, "s", refresh)
    remove_repo(db, "s")
    assert not check.holds_current_files(db, "s", refresh)
