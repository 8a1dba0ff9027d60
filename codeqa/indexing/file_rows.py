"""One file → its rows (definitions, docs sections, file and module-code rows) and its manifest entry.

What the parser found becomes the rows of the three row tables (`store.schema.ROW_TABLES`), each
with its file's role and an id stable across runs (file, kind, qualified name, first line), plus
the file's manifest entry, which keeps the parse results that reference resolution reads.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from codeqa.core.records import FileParse, ManifestEntry, SymbolInfo
from codeqa.indexing.embeddings import Embedder
from codeqa.indexing.index_plan import recorded_mtime
from codeqa.parsing.doc_sections import split_sections
from codeqa.parsing.languages import (
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
from codeqa.parsing.repo_files import ReadFile, SourceFile, read_source
from codeqa.parsing.treesitter import ParsedFile, parse_source
from codeqa.store.rows import embedding_text, file_text, prepare_row
from codeqa.store.schema import ROW_TABLES


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
        bindings=parse.bindings_json(),
    )
    by_table: dict[str, list[dict]] = {name: [] for name in ROW_TABLES}
    for row in rows:
        by_table[table_of(row["kind"])].append(prepare_row(row))
    return FileRows(manifest, by_table, parsed.too_deep)


def parse_file(
    repo: str, planned: ReadFile, max_file_bytes: int, walked_at_ns: int, embedder: Embedder | None = None
) -> FileRows | str:
    """Read a planned file again and parse it into rows, with their vectors when `embedder` is
    given (an inline one: `Embedder.inline`); the reason it is skipped when its content now
    rules it out (it changed or went away since the plan was made). Runs in a worker process."""
    source = read_source(planned, max_file_bytes)
    if isinstance(source, str):
        return source
    parsed = file_rows(repo, source, recorded_mtime(source.mtime_ns, walked_at_ns))
    if embedder is not None:
        rows = [row for table in parsed.rows.values() for row in table]
        for row, vector in zip(rows, embedder.embed([embedding_text(row) for row in rows]), strict=True):
            row["vector"] = vector
    return parsed
