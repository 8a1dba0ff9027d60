"""The indexing CLI: repo → rows → tables.

    python preprocessing.py index /path/to/repo [--name NAME]
    python preprocessing.py list
    python preprocessing.py remove NAME
    python preprocessing.py watch /path/to/repo [--name NAME]   # index, then re-index on changes

Every run is incremental (Continue-style): `index_plan.plan_index` decides from sizes, mtimes
and content hashes which files to add, change and delete, then the run applies that plan;
each step is idempotent, so rerunning after a crash repairs the index.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import logging
import sys
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator

import lancedb
import numpy as np
from tqdm import tqdm

import create_tables as tables_mod
from config import Settings
from create_tables import RepoTables
from doc_sections import split_sections
from embeddings import Embedder, EmbeddingError, get_embedder
from errors import CLI_ERRORS, CodeQAError, cli_exit
from index_lock import IndexBusyError, RepoLock
from index_plan import IndexPlan, plan_index, recorded_mtime
from languages import (CONSTRUCTOR_CALLS, DOC_KIND, DOC_LANGUAGES, FILE_KIND, HEAD_CHARS, MODULE_KIND,
                       MODULE_ROW_ROLES, file_role, table_of)
from module_code import chunks_with_rows, file_head
from records import FileParse, ManifestEntry, RepoInfo, RepoStats, SymbolInfo
from references import resolve_references
from repo_files import RepoPathError, SourceFile, WalkReport, walk_repo
from servers import yield_cpu
from services import Services
from treesitter import MAX_NESTING, ParsedFile, parse_source

log = logging.getLogger("codeqa.index")

# Distinct texts embedded (and their vectors written) at a time: a few seconds of the local
# model on CPU, so progress moves and a crash loses little; shorter batches cost more merges.
VECTOR_BATCH = 512


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
            methods=self.methods, classes=self.classes, docs=self.docs, modules=self.modules,
            references=self.references,
            added=self.added, changed=self.changed, deleted=self.deleted,
            unchanged=self.unchanged, embedded=self.embedded,
            rows=self.rows, vectors_pending=self.vectors_pending,
            skipped=dict(self.skipped), non_utf8=self.non_utf8,
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
    """Everything one file contributes: its rows by table (`create_tables.ROW_TABLES`) and its
    manifest entry."""

    manifest: ManifestEntry
    rows: dict[str, list[dict]]
    too_deep: int = 0  # definitions nested too deep for rows of their own


def _base_row(repo: str, file: SourceFile, role: str, **fields) -> dict:
    row = {"repo": repo, "file_path": file.path, "language": file.language, "role": role,
           "file_hash": file.sha256, "signature": "", "doc": "", "parent": None}
    row.update(fields)
    row["id"] = _row_id(file.path, row["kind"], row["qualified_name"], row["start_line"])
    return row


def _code_rows(repo: str, file: SourceFile, role: str, parsed: ParsedFile) -> list[dict]:
    rows = []
    for d in parsed.definitions:
        row = _base_row(repo, file, role, kind=d.kind, name=d.name, qualified_name=d.qualified_name,
                        signature=d.signature, doc=d.doc, code=d.code, start_line=d.start_line,
                        end_line=d.end_line, parent=d.parent)
        if table_of(d.kind) == "classes":
            row["method_signatures"] = list(d.method_signatures)
        rows.append(row)
    return rows


def _doc_rows(repo: str, file: SourceFile, role: str) -> list[dict]:
    return [_base_row(repo, file, role, kind=DOC_KIND, name=s.title, qualified_name=s.qualified_name,
                      code=s.text, start_line=s.start_line, end_line=s.end_line,
                      method_signatures=[])
            for s in split_sections(file.text, file.language, file.path.rsplit("/", 1)[-1])]


def _module_rows(repo: str, file: SourceFile, role: str, parsed: ParsedFile, names: list[str]) -> list[dict]:
    """The file row and module-code rows (for a long module body) of one file.

    An empty file (a package's `__init__.py`) has nothing to be found by: no row. Given one,
    its vector would be its path alone, which ranks near anything in a small repo."""
    if not file.text.strip():
        return []
    file_name = file.path.rsplit("/", 1)[-1]
    lines = file.text.count("\n") + (not file.text.endswith("\n"))
    whole = _base_row(repo, file, role, kind=FILE_KIND, name=file_name, qualified_name=file.path,
                      doc=parsed.module_doc, code=file_head(parsed.module_code), start_line=1,
                      end_line=max(1, lines), imports=list(parsed.imports), top_level_names=names,
                      file_text=tables_mod.file_text(file.path, file.text))
    chunks = [_base_row(repo, file, role, kind=MODULE_KIND, name=file_name, qualified_name=file.path,
                        code=chunk.code, start_line=chunk.start_line, end_line=chunk.end_line,
                        imports=[], top_level_names=[], file_text="")
              for chunk in (chunks_with_rows(parsed.module_code) if role in MODULE_ROW_ROLES else ())]
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
    if file.language in DOC_LANGUAGES:
        parsed = ParsedFile(file.language, definitions=[], references=[], imports=[], imported_names=[],
                            has_errors=False)
        symbols = _doc_rows(repo, file, role)
        names = list(dict.fromkeys(row["name"] for row in symbols))
    else:
        parsed = parse_source(file.text, file.language, file.path)
        symbols = _code_rows(repo, file, role, parsed)
        names = parsed.top_level_names
    rows = symbols + _module_rows(repo, file, role, parsed, names)
    _dedupe_ids(rows)
    infos = tuple(SymbolInfo(id=r["id"], file_path=file.path, language=file.language, kind=r["kind"],
                             name=r["name"], qualified_name=r["qualified_name"], parent=r["parent"])
                  for r in symbols if r["kind"] != DOC_KIND)
    parse = FileParse(file.path, file.language, infos, tuple(parsed.references), tuple(parsed.imports),
                      tuple(parsed.imported_names))
    manifest = ManifestEntry(file_path=file.path, sha256=file.sha256, language=file.language,
                             size=file.size, mtime_ns=mtime_ns, non_utf8=file.decoded_with_replacement,
                             has_errors=parsed.has_errors, parsed=parse.to_json())
    by_table: dict[str, list[dict]] = {name: [] for name in tables_mod.ROW_TABLES}
    for row in rows:
        by_table[table_of(row["kind"])].append(tables_mod.prepare_row(row))
    return FileRows(manifest, by_table, parsed.too_deep)


# --- The run -----------------------------------------------------------------------------------

def resolve_repo_name(db, root: Path, requested: str | None) -> str:
    """The name to index `root` under: the requested one, the one it already has, or its folder
    name, suffixed with a path hash when another repo already uses that folder name."""
    repos = {info.name: info for info in tables_mod.list_repos(db)}
    if requested is not None:
        taken = repos.get(tables_mod.check_repo_name(requested))
        if taken and taken.root != str(root):
            raise tables_mod.IndexStoreError(
                f"The name {requested!r} is already used for {taken.root}; pick another --name "
                f"or run `python preprocessing.py remove {requested}` first.")
        return requested
    for info in repos.values():
        if info.root == str(root):
            return info.name
    base = tables_mod.repo_name_from(root.name)
    if base not in repos:
        return base
    return f"{base}-{hashlib.sha1(str(root).encode()).hexdigest()[:6]}"


def _check_model(info: RepoInfo, embedder: Embedder) -> None:
    """Refuse to mix embedding models in one index: search would compare unlike vectors."""
    if info.embedding_model != embedder.model_id:
        raise tables_mod.ModelMismatchError(
            f"Repo {info.name!r} was indexed with {info.embedding_model} ({info.embedding_dim}-d) "
            f"but the configured model is {embedder.model_id}. Mixing models in one index would "
            "make search meaningless: switch the model back, or rerun with --rebuild.")


def _new_generation(db, name: str, root: Path, embedder: Embedder, register: bool) -> RepoTables:
    """Create a new generation of the repo's tables (this is where the model gets loaded); a new
    repo is registered at once, a rebuilt one only when its new tables are complete."""
    info = RepoInfo(name=name, root=str(root), prefix=tables_mod.new_generation_prefix(name),
                    embedding_model=embedder.model_id, embedding_dim=embedder.dim,
                    created_at=time.time(), indexed_at=0.0, index_version=tables_mod.INDEX_VERSION)
    if register:
        tables_mod.save_repo(db, info)
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


def index_repo(root: str | Path, settings: Settings, name: str | None = None,
               rebuild: bool = False, progress: bool | None = None,
               db: lancedb.DBConnection | None = None, wait: float = 0.0,
               embedder: Embedder | None = None) -> IndexReport:
    """Bring the index of `root` up to date and return what was done (in `db`, else a new
    connection to the configured database; with `embedder`, else the configured model: the
    eval passes one that remembers vectors across commits).

    One run per repo at a time (`index_lock`): if another run holds the repo's lock, wait up to
    `wait` seconds for it, then `IndexBusyError`."""
    db = db if db is not None else tables_mod.connect(settings)
    started = time.perf_counter()
    root_path = _repo_root(root)
    name = resolve_repo_name(db, root_path, name)
    with batch_gc(), RepoLock(db, name, "rebuild" if rebuild else "index").held(wait) as lock:
        if resolve_repo_name(db, root_path, name) != name:  # raises if another folder took the name meanwhile
            raise IndexBusyError(f"{name} was registered for another folder while this run waited; run it again.")
        return _index_locked(root_path, settings, name, rebuild, progress, db, lock, started,
                             embedder or get_embedder(settings))


def _index_locked(root_path: Path, settings: Settings, name: str, rebuild: bool, progress: bool | None,
                  db: lancedb.DBConnection, lock: RepoLock, started: float, embedder: Embedder) -> IndexReport:
    """The run itself, under the repo's lock."""
    report = IndexReport(name=name, root=str(root_path))
    existing = tables_mod.find_repo(db, name)
    if existing:
        tables_mod.drop_other_generations(db, existing)  # what an interrupted rebuild left
    walked_at = time.time_ns()
    with _stage(report, "walk"):
        walked = walk_repo(root_path, settings.max_file_bytes)
    if existing and not rebuild and existing.index_version != tables_mod.INDEX_VERSION:
        report.notices.append(f"{name} was indexed by another version of CodeQA (index format "
                              f"{existing.index_version}); re-indexing it from scratch.")
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
        tables_mod.save_repo(db, replace(repo.info, references_pending=True))
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
    tables_mod.save_repo(db, info)
    if staging:
        tables_mod.drop_other_generations(db, info)  # searches now use the new generation
    if report.vectors_pending:
        try:
            fill_vectors(repo, info, embedder, report, progress, lock)
        except EmbeddingError as exc:
            raise EmbeddingError(f"{exc} ({name} is searchable meanwhile, by text and names and "
                                 f"{report.stats().embedded_percent}% of its vectors; run the index "
                                 "again to embed the rest.)") from exc
        with _stage(report, "optimize"):
            repo.finish()  # now with the vector index
    report.timings["total"] = time.perf_counter() - started
    lock.check()
    tables_mod.save_repo(db, replace(info, stats=report.stats()))
    return report


def fill_vectors(repo: RepoTables, info: RepoInfo, embedder: Embedder, report: IndexReport,
                 progress: bool | None, lock: RepoLock) -> None:
    """Embed every row that has no vector yet (this run's new rows, or what an interrupted run
    left), writing each batch as soon as it is done and the count still waiting to the registry
    (the web app shows it; search ranks the waiting rows by their text meanwhile). A crash
    loses at most one batch: the next run finds the rest still without vectors."""
    bar = tqdm(total=report.vectors_pending, unit="row", desc="Embedding",
               disable=None if progress is None else not progress)
    try:
        for table in repo.row_tables:
            for batch in tables_mod.embedding_batches(repo.rows_without_vectors(table), VECTOR_BATCH):
                with _stage(report, "embed"):
                    vectors = embedder.embed(batch.texts)
                ids = [row_id for row_ids in batch.row_ids for row_id in row_ids]
                with _stage(report, "write"):
                    lock.check()
                    repo.store_vectors(table, ids, np.repeat(vectors, list(map(len, batch.row_ids)), axis=0))
                report.embedded += len(batch.texts)
                report.vectors_pending -= batch.rows
                tables_mod.save_repo(repo.db, replace(info, stats=report.stats()))
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


def _write_files(repo: RepoTables, todo: list[SourceFile], batch_size: int, report: IndexReport,
                 progress: bool | None, walked_at: int, lock: RepoLock) -> None:
    """Parse and write the files that changed, a batch at a time (while the lock is ours).
    Rows whose text is unchanged keep their vector; the others get theirs in `fill_vectors`."""
    bar = tqdm(total=len(todo), unit="file", desc="Parsing", disable=None if progress is None else not progress)
    try:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            with _stage(report, "parse"):
                parsed = []
                for file in batch:
                    rows = file_rows(report.name, file, recorded_mtime(file.mtime_ns, walked_at))
                    if rows.manifest.has_errors:
                        report.syntax_errors.append(file.path)
                    if rows.too_deep:
                        report.too_deep[file.path] = rows.too_deep
                    parsed.append(rows)
            rows = {name: [r for p in parsed for r in p.rows[name]] for name in tables_mod.ROW_TABLES}
            with _stage(report, "write"):
                tables_mod.reuse_vectors([r for t in rows.values() for r in t],
                                         repo.cached_vectors([f.path for f in batch]))
                lock.check()
                repo.replace_files([p.manifest for p in parsed], rows)
            bar.update(len(batch))
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


def update_references(repo: RepoTables, changed: set[str] | None,
                      before: dict[str, ManifestEntry]) -> tuple[int, int]:
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
        touched = _names_touched([before[p] for p in changed if p in before] +
                                 [after[p] for p in changed if p in after])
        targets = [s for s in symbols if s.name in touched]
        files = [replace(parse, references=tuple(
                     r for r in parse.references
                     if r.name in touched or (r.name in CONSTRUCTOR_CALLS and r.qualifier in touched)))
                 for parse in files]
    uses = resolve_references(symbols, files)
    stored = repo.stored_reference_hashes()
    updates: dict[str, list[dict]] = {"methods": [], "classes": []}
    for symbol in targets:
        found = uses.get(symbol.id, [])
        kept = [u.to_row() for u in found[:tables_mod.MAX_STORED_REFERENCES]]
        digest = hashlib.sha1(json.dumps([len(found), kept], sort_keys=True).encode()).hexdigest() if found else ""
        if stored.get(symbol.id, digest) != digest:
            table = table_of(symbol.kind)
            updates[table].append({"id": symbol.id, "references": kept,
                                   "reference_count": len(found), "references_hash": digest})
    for table, rows in updates.items():
        repo.update_references(table, rows)
    return repo.total_references(), sum(len(rows) for rows in updates.values())


# --- CLI ----------------------------------------------------------------------------------------

def _format_report(report: IndexReport) -> str:
    lines = [f"note: {notice}" for notice in report.notices]
    lines += [f"Indexed {report.name} ({report.root})",
             f"  files: {report.added} added, {report.changed} changed, {report.deleted} deleted, "
             f"{report.unchanged} unchanged"]
    if report.files_by_language:
        langs = ", ".join(f"{lang} {n}" for lang, n in sorted(report.files_by_language.items()))
        lines.append(f"  by language: {langs}")
    lines.append(f"  rows: {report.methods} methods, {report.classes} classes, {report.docs} doc sections, "
                 f"{sum(report.files_by_language.values())} files, {report.modules} module-code chunks; "
                 f"{report.references} references ({report.references_updated} rows updated); "
                 f"{report.embedded} texts embedded")
    if report.vectors_pending:
        lines.append(f"  {report.vectors_pending} of {report.rows} rows have no vector yet (found by their text "
                     "until the next run embeds them)")
    for reason, count in report.skipped.most_common():
        examples = ", ".join(report.skipped_examples.get(reason, [])[:3])
        lines.append(f"  skipped {count} {reason}" + (f" (e.g. {examples})" if examples else ""))
    if report.non_utf8:
        lines.append(f"  {report.non_utf8} files were not UTF-8 and were decoded with replacement characters")
    for encoding, count in sorted(report.bom_decoded.items()):
        lines.append(f"  {count} files were {encoding.upper()} (by their byte-order mark) and were decoded as such")
    if report.syntax_errors:
        lines.append(f"  {len(report.syntax_errors)} files have syntax errors (indexed what parsed), "
                     f"e.g. {', '.join(report.syntax_errors[:3])}")
    if report.too_deep:
        lines.append(f"  {sum(report.too_deep.values())} definitions nested more than {MAX_NESTING} deep are "
                     f"part of their enclosing definition's row, e.g. in {', '.join(list(report.too_deep)[:3])}")
    timings = ", ".join(f"{stage} {seconds:.2f}s" for stage, seconds in report.timings.items())
    lines.append(f"  time: {timings}")
    return "\n".join(lines)


def _format_repos(repos: list[RepoInfo]) -> str:
    if not repos:
        return "No repos indexed yet: python preprocessing.py index /path/to/repo"
    lines = []
    for info in repos:
        stats = info.stats
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.indexed_at)) if info.indexed_at else "never"
        lines.append(f"{info.name}\t{info.root}\n  {stats.files} files, {stats.methods} methods, "
                     f"{stats.classes} classes, {stats.docs} docs, "
                     f"{stats.references} references; model {info.embedding_model} "
                     f"({info.embedding_dim}-d); last indexed {when}"
                     + (f"; {stats.embedded_percent}% embedded" if stats.embedded_percent < 100 else ""))
    return "\n".join(lines)


def build_parser(prog: str = "preprocessing.py") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Index code repositories for CodeQA.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log per-file details")
    commands = parser.add_subparsers(dest="command", required=True)
    index = commands.add_parser("index", help="index a repo (first run: everything; later: only what changed)")
    index.add_argument("path", help="the repository's root directory")
    index.add_argument("--name", help="name to index it under (default: the folder name)")
    index.add_argument("--rebuild", action="store_true",
                       help="index from scratch into new tables, then switch to them (needed after "
                            "changing the embedding model); searches use the old index meanwhile")
    index.add_argument("--no-progress", action="store_true", help="no progress bar")
    watch = commands.add_parser("watch", help="index a repo, then keep its index fresh: re-index after "
                                "every burst of file changes until Ctrl-C")
    watch.add_argument("path", help="the repository's root directory")
    watch.add_argument("--name", help="name to index it under (default: the folder name)")
    watch.add_argument("--no-progress", action="store_true", help="no progress bar for the first run")
    commands.add_parser("list", help="list indexed repos")
    remove = commands.add_parser("remove", help="delete a repo's index")
    remove.add_argument("name")
    for command in (index, remove):
        command.add_argument("--wait", type=_seconds, default=0.0, metavar="SECONDS",
                             help="if another run is indexing this repo, wait up to this long for it "
                                  "(default: stop at once with exit status 75)")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to 86400, got {text!r}")
    return value


def _watch(args: argparse.Namespace, services: Services) -> None:
    """`watch`: the first run's full report, then one line per re-index."""
    from live_index import format_changes, format_run, watch_repo  # it builds on this module

    first = True

    def on_run(report: IndexReport) -> None:
        nonlocal first
        if first:
            print(_format_report(report))
            print(f"Watching {report.root} for changes (Ctrl-C to stop)", flush=True)
            first = False
        else:
            print(format_run(report), flush=True)

    watch_repo(args.path, services.settings, services.db, name=args.name,
               on_changes=lambda paths: print(format_changes(paths), flush=True), on_run=on_run,
               progress=False if args.no_progress else None)


def main(argv: list[str] | None = None, prog: str = "preprocessing.py") -> int:
    """The CLI (`codeqa` runs it with its own `prog`); returns the exit status."""
    args = build_parser(prog).parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        services = Services(Settings.from_env())
        if args.command in ("index", "watch"):
            yield_cpu(services.settings.background_niceness)  # searches of a running web app go first
        if args.command == "index":
            report = index_repo(args.path, services.settings, name=args.name, rebuild=args.rebuild,
                                progress=False if args.no_progress else None, db=services.db, wait=args.wait)
            print(_format_report(report))
        elif args.command == "watch":
            _watch(args, services)
        elif args.command == "list":
            print(_format_repos(services.repos()))
        else:
            with RepoLock(services.db, args.name, "remove").held(args.wait):
                info = tables_mod.remove_repo(services.db, args.name)
            print(f"Removed {info.name} ({info.root}).")
    except CLI_ERRORS as exc:
        return cli_exit(exc)
    except KeyboardInterrupt:
        print("interrupted: the index is consistent; rerun to finish", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
