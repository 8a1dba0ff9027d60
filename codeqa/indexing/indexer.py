"""Apply an index plan: a repository's files → rows, references and vectors in its tables.

Every run is incremental (Continue-style): `index_plan.plan_index` decides from sizes, mtimes
and content hashes which files to add, change and delete, then `index_repo` applies that plan
under the repository's lock; each step is idempotent, so rerunning after a crash repairs the
index. The CLI over this is `codeqa.preprocessing`.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codeqa.core.config import Settings
from codeqa.core.errors import CodeQAError
from codeqa.core.records import RepoInfo, RepoStats
from codeqa.indexing.embeddings import Embedder, EmbeddingError
from codeqa.indexing.executors import index_embedder, open_parsers
from codeqa.indexing.file_rows import FileRows, text_fallback_notice
from codeqa.indexing.index_plan import IndexPlan, plan_index
from codeqa.indexing.progress import Progress, StageListener
from codeqa.indexing.reference_updates import ChangedFiles, carry_uses, update_references
from codeqa.indexing.vectors import embedding_batches, reuse_vectors
from codeqa.parsing.repo_files import RACY_NS, FoundFile, LiveWalk, ReadFile, WalkReport, repo_root, walk_repo
from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.store.create_tables import RepoTables
from codeqa.store.errors import IndexStoreError, ModelMismatchError
from codeqa.store.lease import IndexBusyError, RepoLock
from codeqa.store.schema import INDEX_VERSION, ROW_TABLES, SYMBOL_TABLES

if TYPE_CHECKING:
    import lancedb

log = logging.getLogger("codeqa.index")

# Distinct texts embedded (and their vectors written) at a time: a few seconds of the local
# model on CPU, so progress moves and a crash loses little; shorter batches cost more merges.
VECTOR_BATCH = 512

# What a run tells `on_progress(stage, done, total)`, in order: the lock is taken and the walk
# begins ("walking"), changed files are parsed and written (files), references are resolved,
# the index is searchable ("searchable": rows with their vector, of all rows), rows are
# embedded (rows). Parsing is reported even with nothing to parse (a total of 0); embedding only
# when rows wait for their vectors. The listener may raise to stop the run between two steps (a cancelled job).
RunListener = Callable[[str, int, int], None]
WALKING, PARSING, REFERENCES, SEARCHABLE, EMBEDDING = "walking", "parsing", "references", "searchable", "embedding"


def _no_listener(stage: str, done: int, total: int) -> None:
    """The default listener: nobody is listening."""


class NothingToIndexError(CodeQAError):
    """The path holds no file CodeQA can index (the message counts what was skipped, and why)."""

    http_status = 400


@dataclass(kw_only=True)
class IndexReport(RepoStats):
    """What one run did: the counters the registry keeps (`RepoStats`, of which this is one) and
    what only this run's summary shows."""

    name: str
    root: str
    files_by_language: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    references_updated: int = 0
    skipped_examples: dict[str, list[str]] = field(default_factory=dict)
    bom_decoded: Counter[str] = field(default_factory=Counter)  # utf-16/utf-32 files read this run
    syntax_error_files: list[str] = field(default_factory=list)
    too_deep: Counter[str] = field(default_factory=Counter)  # file → definitions nested beyond MAX_NESTING
    notices: list[str] = field(default_factory=list)  # for the user, printed before the summary

    def stats(self) -> RepoStats:
        """The counters as the registry keeps them."""
        counters = {f.name: getattr(self, f.name) for f in fields(RepoStats)}
        return RepoStats(
            **{
                **counters,
                "files_by_language": dict(self.files_by_language),
                "files": sum(self.files_by_language.values()),
                "skipped": dict(self.skipped),
                "syntax_errors": len(self.syntax_error_files),
                "timings": {k: round(v, 3) for k, v in self.timings.items()},
            }
        )


@contextmanager
def batch_gc() -> Iterator[None]:
    """Collect garbage less often while indexing.

    A run allocates millions of small objects that live until it ends; the default thresholds
    rescan them again and again (~30% of parse + references time on Django's source).
    """
    previous = gc.get_threshold()
    gc.freeze()  # what exists now (modules, the model) is never garbage
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


@contextmanager
def _stage(report: IndexReport, name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        report.timings[name] = report.timings.get(name, 0.0) + time.perf_counter() - start


# --- The run -----------------------------------------------------------------------------------


# A run that changes more files than this (and a fifth of the repo) re-resolves every name.
FULL_RESOLUTION_FILES = 2000


def resolve_repo_name(db, root: Path, requested: str | None) -> str:
    """The name to index `root` under: the requested one, the one it already has, or its folder
    name, suffixed with a path hash when another repo already uses that folder name."""
    repos = {info.name: info for info in registry.list_repos(db)}
    if requested is not None:
        taken = repos.get(registry.check_repo_name(requested))
        if taken and taken.root != str(root):
            raise IndexStoreError(
                f"The name {requested!r} is already used for {taken.root}; pick another --name "
                f"or run `python preprocessing.py remove {requested}` first."
            )
        return requested
    for info in repos.values():
        if info.root == str(root):
            return info.name
    base = registry.repo_name_from(root.name)
    if base not in repos:
        return base
    return f"{base}-{hashlib.sha1(str(root).encode()).hexdigest()[:6]}"


def _check_model(info: RepoInfo, embedder: Embedder) -> None:
    """Refuse to mix embedding models in one index: search would compare unlike vectors."""
    if info.embedding_model != embedder.model_id:
        raise ModelMismatchError(
            f"Repo {info.name!r} was indexed with {info.embedding_model} ({info.embedding_dim}-d) "
            f"but the configured model is {embedder.model_id}. Mixing models in one index would "
            "make search meaningless: switch the model back, or rerun with --rebuild."
        )


def _new_generation(db, name: str, root: Path, embedder: Embedder, register: bool) -> RepoTables:
    """Create a new generation of the repo's tables (this is where the model gets loaded); a new
    repo is registered at once, a rebuilt one only when its new tables are complete."""
    info = RepoInfo(
        name=name,
        root=str(root),
        prefix=registry.new_generation_prefix(name),
        embedding_model=embedder.model_id,
        embedding_dim=embedder.dim,
        created_at=time.time(),
        indexed_at=0.0,
        index_version=INDEX_VERSION,
    )
    if register:
        registry.save_repo(db, info)
    return RepoTables(db, info)


def index_repo(
    root: str | Path,
    settings: Settings,
    name: str | None = None,
    rebuild: bool = False,
    progress: bool | None = None,
    db: lancedb.DBConnection | None = None,
    wait: float = 0.0,
    embedder: Embedder | None = None,
    on_progress: RunListener = _no_listener,
    walk: Callable[[], WalkReport] | None = None,
    fold: bool = True,
) -> IndexReport:
    """Bring the index of `root` up to date and return what was done (in `db`, else a new
    connection to the configured database; with `embedder`, else the configured model: the
    eval passes one that remembers vectors across commits; with `walk`, else a whole walk of
    `root`: a watcher passes its `LiveWalk`, told which paths changed). Without `fold`, the
    new rows are left outside the indexes the tables have (searched flat beside them) for
    `fold_indexes` to fold in later: a watcher does so once the tree is quiet.

    One run per repo at a time (`index_lock`): if another run holds the repo's lock, wait up to
    `wait` seconds for it, then `IndexBusyError`. Files parsed and rows embedded are reported
    on stderr as they go (`Progress`) unless `progress` is False, and to `on_progress` always
    (`RunListener`)."""
    db = db if db is not None else connect(settings)
    started = time.perf_counter()
    root_path = repo_root(root)
    name = resolve_repo_name(db, root_path, name)
    with batch_gc(), RepoLock(db, name, "rebuild" if rebuild else "index").held(wait) as lock:
        if resolve_repo_name(db, root_path, name) != name:  # raises if another folder took the name meanwhile
            raise IndexBusyError(f"{name} was registered for another folder while this run waited; run it again.")
        on_progress(WALKING, 0, 0)
        return _index_locked(
            root_path,
            settings,
            name,
            rebuild,
            progress,
            db,
            lock,
            started,
            embedder or index_embedder(settings),
            on_progress,
            walk or partial(walk_repo, root_path, settings.max_file_bytes),
            fold,
        )


def fold_indexes(settings: Settings, name: str, db: lancedb.DBConnection | None = None, wait: float = 0.0) -> float:
    """Fold into a repo's indexes the rows that runs without `fold` left outside them, under
    the repo's lock (waiting up to `wait` seconds for it): the seconds it took."""
    db = db if db is not None else connect(settings)
    started = time.perf_counter()
    with RepoLock(db, name, "index").held(wait):
        RepoTables(db, registry.get_repo(db, name)).finish()
    return time.perf_counter() - started


def holds_current_files(root: str | Path, settings: Settings, db: lancedb.DBConnection, name: str) -> bool:
    """Whether the index of `name` holds the files of `root` as they are now, so that an index
    run would write no row (it may still have vectors to embed): the same walk and plan as a
    run (sizes and mtimes, content hashes where those differ), but read-only and without the
    lock. A repo whose last run was interrupted before its references were resolved does not."""
    info = registry.find_repo(db, name)
    return _holds_files(db, info, lambda: walk_repo(repo_root(root), settings.max_file_bytes))


def _holds_files(db: lancedb.DBConnection, info: RepoInfo | None, walk: Callable[[], WalkReport]) -> bool:
    """`holds_current_files` for a registry row, its folder walked by `walk`."""
    if info is None or not info.indexed_at or info.index_version != INDEX_VERSION or info.references_pending:
        return False
    walked_at = time.time_ns()
    walked = walk()
    tables = RepoTables(db, info)
    # Not pending: the last run finished writing, so no rows lack a manifest entry (see _index_locked).
    plan = plan_index(walked.files, tables.file_states(), set(), walked.read, walked_at)
    return not plan.writes


class CurrentFilesCheck:
    """`holds_current_files` for one folder, asked again and again (an MCP server asks before each
    `search_code` on a folder): its walk is kept and brought up to date by stats
    (`LiveWalk.refresh`), and when the walk and the repo's registry row are what they were at
    the last yes, the answer is yes again without reading the manifest (which only a run, and
    so a new registry row, changes) nor any file (unless one was too recent to trust). One
    check at a time."""

    def __init__(self, root: Path, max_file_bytes: int) -> None:
        self.root = root
        self._max_file_bytes = max_file_bytes
        self._tree: LiveWalk | None = None  # its own walk, when no watcher's serves
        self._yes: tuple[RepoInfo | None, list[FoundFile], list[tuple[str, str]]] | None = None
        self._lock = threading.Lock()

    def holds_current_files(
        self, db: lancedb.DBConnection, name: str, refresh: Callable[[], WalkReport] | None = None
    ) -> bool:
        """`refresh`: the folder's walk by stats kept elsewhere (a watcher's, `PendingWalk`),
        else the check keeps its own."""
        with self._lock:
            if refresh is not None:
                self._tree = None  # a watcher's walk serves: one walk of the folder is enough
            else:
                self._tree = self._tree or LiveWalk(self.root, self._max_file_bytes)
                refresh = self._tree.refresh
            walked = refresh()
            info = registry.find_repo(db, name)
            seen = (info, walked.files, list(walked.skips))  # reading adds skips to the report
            if seen == self._yes:
                return True
            checked_at = time.time_ns()
            current = _holds_files(db, info, lambda: walked)
            # A file too recent for its stats to be trusted (`RACY_NS`) could change again
            # without them changing: only the plan, which reads it, can tell.
            settled = all(checked_at - file.mtime_ns > RACY_NS for file in walked.files)
            self._yes = seen if current and settled and info is not None else None
            return current


def remove_repo(db: lancedb.DBConnection, name: str, wait: float = 0.0) -> RepoInfo:
    """Delete a repo's index, under its lock so no index run is writing it meanwhile (wait up to
    `wait` seconds for one, then `IndexBusyError`); returns what was removed."""
    with RepoLock(db, name, "remove").held(wait):
        return registry.remove_repo(db, name)


def _index_locked(
    root_path: Path,
    settings: Settings,
    name: str,
    rebuild: bool,
    progress: bool | None,
    db: lancedb.DBConnection,
    lock: RepoLock,
    started: float,
    embedder: Embedder,
    on_progress: RunListener,
    walk: Callable[[], WalkReport],
    fold: bool,
) -> IndexReport:
    """The run itself, under the repo's lock."""
    report = IndexReport(name=name, root=str(root_path))
    existing = registry.find_repo(db, name)
    if existing:
        registry.drop_other_generations(db, existing)  # what an interrupted rebuild left
    walked_at = time.time_ns()
    with _stage(report, "walk"):
        walked = walk()
    if existing and not rebuild and existing.index_version != INDEX_VERSION:
        report.notices.append(
            f"{name} was indexed by another version of CodeQA (index format "
            f"{existing.index_version}, now {INDEX_VERSION}: new embedder or "
            "layout); re-indexing it from scratch."
        )
        rebuild = True
    previous = None
    if existing and not rebuild:
        _check_model(existing, embedder)
        previous = RepoTables(db, existing)

    with _stage(report, "plan"):
        manifest = previous.file_states() if previous else {}
        # Rows without a manifest entry are left only by a run that stopped after writing rows,
        # and every run that writes flags the repo `references_pending` first: only then look.
        pending = previous is not None and previous.info.references_pending
        stored = previous.stored_file_paths() if previous and pending else set()
        plan = plan_index(walked.files, manifest, stored, walked.read, walked_at)
    _report_plan(report, plan, walked)
    notice = text_fallback_notice({file.path: file.language for file in plan.to_write})
    if notice:
        report.notices.append(notice)
    if not plan.current and existing is None:
        reasons = ", ".join(f"{n} {r}" for r, n in walked.skipped.most_common()) or "no files"
        raise NothingToIndexError(f"Nothing indexable in {root_path} ({reasons}).")

    # A rebuild fills a new generation of tables while searches keep using the old one.
    staging = previous is None and existing is not None
    with _stage(report, "open"):
        repo = previous or _new_generation(db, name, root_path, embedder, register=not staging)

    # Until this run's references are resolved, a crash must make the next run resolve them all.
    interrupted = repo.info.references_pending
    if plan.writes and not staging:
        registry.save_repo(db, replace(repo.info, references_pending=True))
    # What the changed files used to define and use, and their definitions' uses, read before
    # they are replaced: what this run's references start from. Past a share of the repo, every
    # name is re-resolved instead.
    changed = {f.path for f in plan.to_write} | set(plan.delete)
    only_touched = not interrupted and len(changed) <= max(FULL_RESOLUTION_FILES, len(manifest) // 5)
    before = ChangedFiles.read(repo, changed, manifest) if only_touched else None
    _write_files(
        repo,
        plan.to_write,
        embedder,
        settings,
        report,
        progress,
        walked_at,
        lock,
        partial(on_progress, PARSING),
        new_tables=previous is None,
        before=before,
    )
    if plan.restat:
        with _stage(report, "write"):
            repo.record_states(plan.restat)
    with _stage(report, "delete"):
        repo.delete_files(plan.delete)
    on_progress(REFERENCES, 0, 0)
    with _stage(report, "references"):
        report.references, report.references_updated = update_references(repo, before)
    with _stage(report, "optimize"):
        repo.finish(fold)

    # Searchable now: by text, names, paths and references, and by meaning where rows kept
    # their vectors. The vectors of new and changed rows come next, in this run.
    counts = repo.counts()
    report.methods, report.classes, report.docs = counts["methods"], counts["classes"], counts["docs"]
    report.modules = counts["modules"]
    report.rows, report.vectors_pending = repo.vector_counts()
    report.timings["searchable"] = time.perf_counter() - started
    lock.check()
    info = replace(repo.info, indexed_at=time.time(), stats=report.stats(), references_pending=False)
    registry.save_repo(db, info)
    if staging:
        registry.drop_other_generations(db, info)  # searches now use the new generation
    on_progress(SEARCHABLE, report.rows - report.vectors_pending, report.rows)
    if report.vectors_pending:
        try:
            fill_vectors(repo, info, embedder, report, progress, lock, partial(on_progress, EMBEDDING))
        except EmbeddingError as exc:
            raise EmbeddingError(
                f"{exc} ({name} is searchable meanwhile, by text and names and "
                f"{report.stats().embedded_percent}% of its vectors; run the index "
                "again to embed the rest.)"
            ) from exc
        with _stage(report, "optimize"):
            repo.finish(fold)  # now with the vector index
    report.timings["total"] = time.perf_counter() - started
    lock.check()
    registry.save_repo(db, replace(info, stats=report.stats()))
    return report


def fill_vectors(
    repo: RepoTables,
    info: RepoInfo,
    embedder: Embedder,
    report: IndexReport,
    progress: bool | None,
    lock: RepoLock,
    listener: StageListener | None = None,
) -> None:
    """Embed every row that has no vector yet (this run's new rows, or what an interrupted run
    left), writing each batch as soon as it is done and the count still waiting to the registry
    (the web app shows it; search ranks the waiting rows by their text meanwhile). A crash
    loses at most one batch: the next run finds the rest still without vectors."""
    bar = Progress("Embedding", report.vectors_pending, "row", progress, listener)
    try:
        for table in repo.row_tables:
            for batch in (
                batch for rows in repo.rows_without_vectors(table) for batch in embedding_batches(rows, VECTOR_BATCH)
            ):
                with _stage(report, "embed"):
                    vectors = embedder.embed(batch.texts)
                ids = [row_id for row_ids in batch.row_ids for row_id in row_ids]
                with _stage(report, "write"):
                    lock.check()
                    repo.store_vectors(table, ids, np.repeat(vectors, list(map(len, batch.row_ids)), axis=0))
                report.embedded += len(batch.texts)
                report.vectors_pending -= batch.rows
                registry.save_repo(repo.db, replace(info, stats=report.stats()))
                bar.update(batch.rows)
    finally:
        bar.close()


def _report_plan(report: IndexReport, plan: IndexPlan, walked: WalkReport) -> None:
    """What the plan says about the repo's files, and what the walk (reads included) skipped."""
    report.files_by_language = Counter(f.language for f in plan.current)
    report.skipped, report.skipped_examples = walked.skipped, walked.skipped_examples
    report.non_utf8 = plan.non_utf8
    report.bom_decoded = walked.bom_decoded
    report.added, report.changed = len(plan.add), len(plan.change)
    report.deleted = plan.deleted_from_manifest
    report.unchanged = len(plan.unchanged)


def _write_files(
    repo: RepoTables,
    todo: list[ReadFile],
    embedder: Embedder,
    settings: Settings,
    report: IndexReport,
    progress: bool | None,
    walked_at: int,
    lock: RepoLock,
    listener: StageListener,
    new_tables: bool,
    before: ChangedFiles | None,
) -> None:
    """Parse and write the files that changed, a batch at a time (while the lock is ours), the
    parsing on every core, or a cluster's (`executors.open_parsers`). Rows whose text is
    unchanged keep their vector; the others get theirs in `fill_vectors`; definitions still
    there keep their uses (`before`) until the references stage. Into `new_tables` (this run's
    new generation) each batch is appended: no file has rows there yet."""
    bar = Progress("Parsing", len(todo), "file", progress, listener)
    size = settings.write_batch
    batches = [todo[start : start + size] for start in range(0, len(todo), size)]
    parsers = open_parsers(report.name, settings, walked_at, len(todo), embedder if embedder.inline else None)
    try:
        with parsers:
            parsed_batches = parsers.batches(batches, bar.update)
            for batch in batches:
                with _stage(report, "parse"):  # the time the writer waits for the parsers
                    results = next(parsed_batches)
                parsed = [one for one in results if isinstance(one, FileRows)]
                for file, one in zip(batch, results, strict=True):
                    if isinstance(one, str):
                        report.skipped[one] += 1  # changed or gone since the plan was made
                        continue
                    if one.manifest.has_errors:
                        report.syntax_error_files.append(file.path)
                    if one.too_deep:
                        report.too_deep[file.path] = one.too_deep
                if embedder.inline:
                    report.embedded += sum(len(rows) for one in parsed for rows in one.rows.values())
                with _stage(report, "write"):
                    _write_batch(repo, parsed, lock, before, embedded=embedder.inline, new_files=new_tables)
    finally:
        bar.close()


def _write_batch(
    repo: RepoTables,
    parsed: list[FileRows],
    lock: RepoLock,
    before: ChangedFiles | None,
    embedded: bool,
    new_files: bool,
) -> None:
    """One atomic write of a batch's rows; rows not `embedded` while parsed keep the vectors the
    rows they replace had for the same text (the rest get theirs in `fill_vectors`)."""
    rows = {name: [r for p in parsed for r in p.rows[name]] for name in ROW_TABLES}
    carry_uses(before, [p.manifest.parse for p in parsed], [r for name in SYMBOL_TABLES for r in rows[name]])
    if not embedded and not new_files:
        paths = [p.manifest.file_path for p in parsed]
        reuse_vectors([r for t in rows.values() for r in t], repo.cached_vectors(paths))
    lock.check()
    if new_files:
        repo.add_files([p.manifest for p in parsed], rows)
    else:
        repo.replace_files([p.manifest for p in parsed], rows)
