"""Apply an index plan: a repository's files → rows, references and vectors in its tables.

Every run is incremental (Continue-style): `index_plan.plan_index` decides from sizes, mtimes
and content hashes which files to add, change and delete, then `index_repo` applies that plan
under the repository's lock; each step is idempotent, so rerunning after a crash repairs the
index. The CLI over this is `codeqa.preprocessing`.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import lancedb
import numpy as np
from tqdm import tqdm

from codeqa.core.config import Settings
from codeqa.core.errors import CodeQAError
from codeqa.core.records import FileParse, ManifestEntry, RepoInfo, RepoStats, SymbolInfo
from codeqa.indexing.embeddings import Embedder, EmbeddingError, get_embedder
from codeqa.indexing.index_plan import IndexPlan, plan_index, recorded_mtime
from codeqa.indexing.vectors import embedding_batches, reuse_vectors
from codeqa.parsing.doc_sections import split_sections
from codeqa.parsing.languages import (
    CONSTRUCTOR_CALLS,
    DOC_KIND,
    DOC_LANGUAGES,
    FILE_KIND,
    HEAD_CHARS,
    LANGUAGES,
    MODULE_KIND,
    MODULE_ROW_ROLES,
    OTHER_LANGUAGE,
    file_role,
    section_format,
    table_of,
)
from codeqa.parsing.module_code import chunks_with_rows, file_head, line_chunks
from codeqa.parsing.references import is_resolved, resolve_references
from codeqa.parsing.repo_files import RepoPathError, SourceFile, WalkReport, walk_repo
from codeqa.parsing.treesitter import ParsedFile, parse_source
from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.store.create_tables import RepoTables
from codeqa.store.errors import IndexStoreError, ModelMismatchError
from codeqa.store.lease import IndexBusyError, RepoLock
from codeqa.store.rows import file_text, prepare_row
from codeqa.store.schema import INDEX_VERSION, MAX_STORED_REFERENCES, ROW_TABLES

log = logging.getLogger("codeqa.index")

# Distinct texts embedded (and their vectors written) at a time: a few seconds of the local
# model on CPU, so progress moves and a crash loses little; shorter batches cost more merges.
VECTOR_BATCH = 512
# Off a terminal (a log file, `make run`, a service), a stage's progress is a line at every
# PROGRESS_STEP percent, or after PROGRESS_EVERY_S seconds without one, whichever comes first.
PROGRESS_STEP = 10
PROGRESS_EVERY_S = 10.0


class NothingToIndexError(CodeQAError):
    """The path holds no file CodeQA can index (the message counts what was skipped, and why)."""

    http_status = 400


@dataclass
class IndexReport:
    """What one run did; printed by the CLI and kept in the registry."""

    name: str
    root: str
    files_by_language: Counter = field(default_factory=Counter)
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    methods: int = 0
    classes: int = 0
    docs: int = 0
    modules: int = 0
    references: int = 0
    references_updated: int = 0
    embedded: int = 0  # distinct texts embedded
    rows: int = 0
    vectors_pending: int = 0
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: dict = field(default_factory=dict)
    non_utf8: int = 0
    bom_decoded: Counter = field(default_factory=Counter)  # utf-16/utf-32 files read this run
    syntax_errors: list[str] = field(default_factory=list)
    too_deep: Counter = field(default_factory=Counter)  # file → definitions nested beyond MAX_NESTING
    timings: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)  # for the user, printed before the summary

    def stats(self) -> RepoStats:
        return RepoStats(
            files_by_language=dict(self.files_by_language),
            files=sum(self.files_by_language.values()),
            methods=self.methods,
            classes=self.classes,
            docs=self.docs,
            modules=self.modules,
            references=self.references,
            added=self.added,
            changed=self.changed,
            deleted=self.deleted,
            unchanged=self.unchanged,
            embedded=self.embedded,
            rows=self.rows,
            vectors_pending=self.vectors_pending,
            skipped=dict(self.skipped),
            non_utf8=self.non_utf8,
            syntax_errors=len(self.syntax_errors),
            timings={k: round(v, 3) for k, v in self.timings.items()},
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


def _duration(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m`: short enough for a progress line."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """How far one stage of a run is (files parsed, rows embedded), on stderr: a bar on a
    terminal; elsewhere, where a bar's carriage returns would be one endless line or nothing,
    a line per PROGRESS_STEP percent or PROGRESS_EVERY_S seconds, with the rate and the time
    left, and one when the stage is done. `show=False` says nothing."""

    def __init__(self, desc: str, total: int, unit: str, show: bool | None) -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.enabled = show is not False and total > 0
        self.bar = tqdm(total=total, unit=unit, desc=desc) if self.enabled and sys.stderr.isatty() else None
        self.done = 0
        self.started = self.last_line = time.monotonic()
        self.last_step = 0

    def update(self, count: int) -> None:
        self.done += count
        if self.bar is not None:
            self.bar.update(count)
        elif self.enabled and self.done < self.total:
            now = time.monotonic()
            step = self.done * 100 // self.total // PROGRESS_STEP
            if step > self.last_step or now - self.last_line >= PROGRESS_EVERY_S:
                self.last_step, self.last_line = step, now
                self._line(now)

    def _line(self, now: float) -> None:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = f", about {_duration((self.total - self.done) / rate)} left" if rate > 0 else ""
        print(
            f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s ({self.done * 100 // self.total}%), "
            f"{rate:,.1f} {self.unit}s/s{left}",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.done:
            print(
                f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s done in "
                f"{_duration(time.monotonic() - self.started)}",
                file=sys.stderr,
                flush=True,
            )


@contextmanager
def _stage(report: IndexReport, name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        report.timings[name] = report.timings.get(name, 0.0) + time.perf_counter() - start


# --- Files → rows ---------------------------------------------------------------------------


def _row_id(file_path: str, kind: str, qualified_name: str, start_line: int) -> str:
    return hashlib.sha1(f"{file_path}\0{kind}\0{qualified_name}\0{start_line}".encode()).hexdigest()[:20]


@dataclass
class FileRows:
    """Everything one file contributes: its rows by table (`schema.ROW_TABLES`) and its
    manifest entry."""

    manifest: ManifestEntry
    rows: dict[str, list[dict]]
    too_deep: int = 0  # definitions nested too deep for rows of their own


def _base_row(repo: str, file: SourceFile, role: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "repo": repo,
        "file_path": file.path,
        "language": file.language,
        "role": role,
        "file_hash": file.sha256,
        "signature": "",
        "doc": "",
        "parent": None,
    }
    row.update(fields)
    row["id"] = _row_id(file.path, row["kind"], row["qualified_name"], row["start_line"])
    return row


def _code_rows(repo: str, file: SourceFile, role: str, parsed: ParsedFile) -> list[dict]:
    rows = []
    for d in parsed.definitions:
        row = _base_row(
            repo,
            file,
            role,
            kind=d.kind,
            name=d.name,
            qualified_name=d.qualified_name,
            signature=d.signature,
            doc=d.doc,
            code=d.code,
            start_line=d.start_line,
            end_line=d.end_line,
            parent=d.parent,
            declaration=d.declaration,
            signatures=list(d.signatures),
        )
        if table_of(d.kind) == "classes":
            row["method_signatures"] = list(d.method_signatures)
        rows.append(row)
    return rows


def _doc_rows(repo: str, file: SourceFile, role: str, max_chars: int = 2000) -> list[dict]:
    return [
        _base_row(
            repo,
            file,
            role,
            kind=DOC_KIND,
            name=s.title,
            qualified_name=s.qualified_name,
            code=s.text,
            start_line=s.start_line,
            end_line=s.end_line,
            method_signatures=[],
        )
        for s in split_sections(file.text, file.language, file.path.rsplit("/", 1)[-1], max_chars)
    ]


# A configuration or data file's sections grow rather than multiply past this count: a
# 1 MB generated YAML should not cost a thousand embeddings.
MAX_FORMAT_SECTIONS = 64


def _text_rows(repo: str, file: SourceFile, role: str) -> tuple[ParsedFile, list[dict]]:
    """What a file no grammar parses contributes besides its file row: docs and structured
    formats (YAML keys, SQL statements, Makefile targets, ...) their sections; any other text
    (JSON, CSS, a language without a grammar) line windows, kept as its module code so that
    the file row shows its head and a long file gets module rows, as code does."""
    parsed = ParsedFile(file.language, definitions=[], references=[], imports=[], imported_names=[], has_errors=False)
    if file.language in DOC_LANGUAGES:
        return parsed, _doc_rows(repo, file, role)
    parsed.module_code = line_chunks([line.rstrip("\r") for line in file.text.split("\n")])
    if section_format(file.language) is None:
        return parsed, []
    return parsed, _doc_rows(repo, file, role, max(2000, len(file.text) // MAX_FORMAT_SECTIONS))


def text_fallback_notice(languages_by_path: dict[str, str]) -> str | None:
    """What the run did with files no grammar or format knows, for the user: `12 files indexed
    as text: .nim (10), .v (2)`; None when there were none."""
    kinds = Counter(
        PurePosixPath(path).suffix.lower() or PurePosixPath(path).name
        for path, language in languages_by_path.items()
        if language == OTHER_LANGUAGE
    )
    if not kinds:
        return None
    shown = ", ".join(f"{kind} ({count})" for kind, count in kinds.most_common(8))
    more = ", ..." if len(kinds) > 8 else ""
    return f"{sum(kinds.values())} files indexed as text (no grammar for them): {shown}{more}"


def _module_rows(
    repo: str, file: SourceFile, role: str, parsed: ParsedFile, names: list[str], chunked: bool = True
) -> list[dict]:
    """The file row and module-code rows (for a long module body, unless `chunked` is False:
    sections cover it) of one file.

    An empty file (a package's `__init__.py`) has nothing to be found by: no row. Given one,
    its vector would be its path alone, which ranks near anything in a small repo."""
    if not file.text.strip():
        return []
    file_name = file.path.rsplit("/", 1)[-1]
    lines = file.text.count("\n") + (not file.text.endswith("\n"))
    whole = _base_row(
        repo,
        file,
        role,
        kind=FILE_KIND,
        name=file_name,
        qualified_name=file.path,
        doc=parsed.module_doc,
        code=file_head(parsed.module_code),
        start_line=1,
        end_line=max(1, lines),
        imports=list(parsed.imports),
        top_level_names=names,
        file_text=file_text(file.path, file.text),
    )
    chunks = [
        _base_row(
            repo,
            file,
            role,
            kind=MODULE_KIND,
            name=file_name,
            qualified_name=file.path,
            code=chunk.code,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            imports=[],
            top_level_names=[],
            file_text="",
        )
        for chunk in (chunks_with_rows(parsed.module_code) if chunked and role in MODULE_ROW_ROLES else ())
    ]
    return [whole] + chunks


def _dedupe_ids(rows: list[dict]) -> None:
    seen: Counter = Counter()
    for row in rows:
        seen[row["id"]] += 1
        if seen[row["id"]] > 1:
            row["id"] = f"{row['id']}-{seen[row['id']]}"


def file_rows(repo: str, file: SourceFile, mtime_ns: int) -> FileRows:
    """Parse one file into rows and its manifest entry (which records `mtime_ns`)."""
    role = file_role(file.path, file.text[:HEAD_CHARS])
    if file.language in LANGUAGES:
        parsed = parse_source(file.text, file.language, file.path)
        symbols = _code_rows(repo, file, role, parsed)
        names = parsed.top_level_names
    else:
        parsed, symbols = _text_rows(repo, file, role)
        names = list(dict.fromkeys(row["name"] for row in symbols))
    rows = symbols + _module_rows(repo, file, role, parsed, names, chunked=section_format(file.language) is None)
    _dedupe_ids(rows)
    infos = tuple(
        SymbolInfo(
            id=r["id"],
            file_path=file.path,
            language=file.language,
            kind=r["kind"],
            name=r["name"],
            qualified_name=r["qualified_name"],
            parent=r["parent"],
        )
        for r in symbols
        if r["kind"] != DOC_KIND and not r.get("declaration")
    )
    parse = FileParse(
        file.path,
        file.language,
        infos,
        tuple(parsed.references),
        tuple(parsed.imports),
        tuple(parsed.imported_names),
        tuple(parsed.bindings),
    )
    manifest = ManifestEntry(
        file_path=file.path,
        sha256=file.sha256,
        language=file.language,
        size=file.size,
        mtime_ns=mtime_ns,
        non_utf8=file.decoded_with_replacement,
        has_errors=parsed.has_errors,
        parsed=parse.to_json(),
    )
    by_table: dict[str, list[dict]] = {name: [] for name in ROW_TABLES}
    for row in rows:
        by_table[table_of(row["kind"])].append(prepare_row(row))
    return FileRows(manifest, by_table, parsed.too_deep)


# --- The run -----------------------------------------------------------------------------------


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


def _repo_root(root: str | Path) -> Path:
    """The repository folder a user named, resolved; a one-line error for anything else."""
    if not str(root).strip():
        raise RepoPathError("The repository path is empty: give the folder to index.")
    root_path = Path(root).expanduser()
    if not root_path.exists():
        raise RepoPathError(f"{root} does not exist.")
    if not root_path.is_dir():
        raise RepoPathError(f"{root} is not a directory.")
    resolved = root_path.resolve()
    try:
        str(resolved).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RepoPathError(f"{ascii(str(resolved))} is not a valid UTF-8 path: rename the folder.") from exc
    return resolved


def index_repo(
    root: str | Path,
    settings: Settings,
    name: str | None = None,
    rebuild: bool = False,
    progress: bool | None = None,
    db: lancedb.DBConnection | None = None,
    wait: float = 0.0,
    embedder: Embedder | None = None,
) -> IndexReport:
    """Bring the index of `root` up to date and return what was done (in `db`, else a new
    connection to the configured database; with `embedder`, else the configured model: the
    eval passes one that remembers vectors across commits).

    One run per repo at a time (`index_lock`): if another run holds the repo's lock, wait up to
    `wait` seconds for it, then `IndexBusyError`. Files parsed and rows embedded are reported
    on stderr as they go (`Progress`) unless `progress` is False."""
    db = db if db is not None else connect(settings)
    started = time.perf_counter()
    root_path = _repo_root(root)
    name = resolve_repo_name(db, root_path, name)
    with batch_gc(), RepoLock(db, name, "rebuild" if rebuild else "index").held(wait) as lock:
        if resolve_repo_name(db, root_path, name) != name:  # raises if another folder took the name meanwhile
            raise IndexBusyError(f"{name} was registered for another folder while this run waited; run it again.")
        return _index_locked(
            root_path, settings, name, rebuild, progress, db, lock, started, embedder or get_embedder(settings)
        )


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
) -> IndexReport:
    """The run itself, under the repo's lock."""
    report = IndexReport(name=name, root=str(root_path))
    existing = registry.find_repo(db, name)
    if existing:
        registry.drop_other_generations(db, existing)  # what an interrupted rebuild left
    walked_at = time.time_ns()
    with _stage(report, "walk"):
        walked = walk_repo(root_path, settings.max_file_bytes)
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
        manifest = previous.manifest() if previous else {}
        stored = previous.stored_file_paths() if previous else set()
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
    _write_files(repo, plan.to_write, settings.write_batch, report, progress, walked_at, lock)
    if plan.restat:
        with _stage(report, "write"):
            repo.update_manifest(plan.restat)
    with _stage(report, "delete"):
        repo.delete_files(plan.delete)
    with _stage(report, "references"):
        changed = None if interrupted else {f.path for f in plan.to_write} | set(plan.delete)
        report.references, report.references_updated = update_references(repo, changed, manifest)
    with _stage(report, "optimize"):
        repo.finish()

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
    if report.vectors_pending:
        try:
            fill_vectors(repo, info, embedder, report, progress, lock)
        except EmbeddingError as exc:
            raise EmbeddingError(
                f"{exc} ({name} is searchable meanwhile, by text and names and "
                f"{report.stats().embedded_percent}% of its vectors; run the index "
                "again to embed the rest.)"
            ) from exc
        with _stage(report, "optimize"):
            repo.finish()  # now with the vector index
    report.timings["total"] = time.perf_counter() - started
    lock.check()
    registry.save_repo(db, replace(info, stats=report.stats()))
    return report


def fill_vectors(
    repo: RepoTables, info: RepoInfo, embedder: Embedder, report: IndexReport, progress: bool | None, lock: RepoLock
) -> None:
    """Embed every row that has no vector yet (this run's new rows, or what an interrupted run
    left), writing each batch as soon as it is done and the count still waiting to the registry
    (the web app shows it; search ranks the waiting rows by their text meanwhile). A crash
    loses at most one batch: the next run finds the rest still without vectors."""
    bar = Progress("Embedding", report.vectors_pending, "row", progress)
    try:
        for table in repo.row_tables:
            for batch in embedding_batches(repo.rows_without_vectors(table), VECTOR_BATCH):
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
    todo: list[SourceFile],
    batch_size: int,
    report: IndexReport,
    progress: bool | None,
    walked_at: int,
    lock: RepoLock,
) -> None:
    """Parse and write the files that changed, a batch at a time (while the lock is ours).
    Rows whose text is unchanged keep their vector; the others get theirs in `fill_vectors`."""
    bar = Progress("Parsing", len(todo), "file", progress)
    try:
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            with _stage(report, "parse"):
                parsed = []
                for file in batch:
                    one = file_rows(report.name, file, recorded_mtime(file.mtime_ns, walked_at))
                    if one.manifest.has_errors:
                        report.syntax_errors.append(file.path)
                    if one.too_deep:
                        report.too_deep[file.path] = one.too_deep
                    parsed.append(one)
                    bar.update(1)
            rows = {name: [r for p in parsed for r in p.rows[name]] for name in ROW_TABLES}
            with _stage(report, "write"):
                reuse_vectors([r for t in rows.values() for r in t], repo.cached_vectors([f.path for f in batch]))
                lock.check()
                repo.replace_files([p.manifest for p in parsed], rows)
    finally:
        bar.close()


def _names_touched(entries: Iterable[ManifestEntry]) -> set[str]:
    """Names defined or used (incl. `Foo` of `Foo::new()`) in these files' parse results."""
    names: set[str] = set()
    for entry in entries:
        parse = entry.parse
        names.update(symbol.name for symbol in parse.symbols)
        for reference in parse.references:
            names.add(reference.name)
            if reference.qualifier and reference.name in CONSTRUCTOR_CALLS:
                names.add(reference.qualifier)
    return names


def update_references(repo: RepoTables, changed: set[str] | None, before: dict[str, ManifestEntry]) -> tuple[int, int]:
    """Re-resolve the references a change can affect; rewrite only rows whose uses changed.

    A definition's uses depend only on sites with its name, the definitions sharing that name
    and the citing files' imports — all unchanged unless its name is defined or used in a
    changed file (old or new version). So only those names are re-resolved; `changed=None`
    re-resolves everything (after an interrupted run). Returns (total uses, rows updated).
    """
    after = repo.manifest()
    files = [entry.parse for entry in after.values()]
    symbols = [symbol for parse in files for symbol in parse.symbols]
    targets = symbols
    if changed is not None:
        touched = _names_touched(
            [before[p] for p in changed if p in before] + [after[p] for p in changed if p in after]
        )
        targets = [s for s in symbols if s.name in touched]
        files = [
            replace(
                parse,
                references=tuple(
                    r
                    for r in parse.references
                    if r.name in touched or (r.name in CONSTRUCTOR_CALLS and r.qualifier in touched)
                ),
            )
            for parse in files
        ]
    uses = resolve_references(symbols, files)
    stored = repo.stored_reference_hashes()
    updates: dict[str, list[dict]] = {"methods": [], "classes": []}
    for symbol in targets:
        # Resolved uses first, then name matches (kept for readers, not counted as uses).
        found = sorted(uses.get(symbol.id, []), key=lambda u: not is_resolved(u.resolution))
        count = sum(is_resolved(u.resolution) for u in found)
        kept = [u.to_row() for u in found[:MAX_STORED_REFERENCES]]
        digest = (
            hashlib.sha1(json.dumps([count, len(found), kept], sort_keys=True).encode()).hexdigest() if found else ""
        )
        if stored.get(symbol.id, digest) != digest:
            table = table_of(symbol.kind)
            updates[table].append(
                {"id": symbol.id, "references": kept, "reference_count": count, "references_hash": digest}
            )
    for table, rows in updates.items():
        repo.update_references(table, rows)
    return repo.total_references(), sum(len(rows) for rows in updates.values())
