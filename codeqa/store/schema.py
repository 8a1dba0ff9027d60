"""The index's tables, their columns and the layout version: what every reader and writer agrees on.

Per repo there are four tables, namespaced by a prefix derived from the repo name
(`registry.table_prefix`): `<prefix>__methods` (functions, methods, constructors, macros),
`<prefix>__classes` (class-likes, constants and variables, docs sections as kind `doc`),
`<prefix>__modules` (one `file` row per indexed file and `module` rows of long module-level
code) and `<prefix>__files`, the manifest of what the others hold. Every row of the first three
carries its file's `role` (source, test, example, ...; `languages.file_role`). A registry table
`codeqa_repos` lists repos with their embedding model and the layout (`INDEX_VERSION`) they were
written with; `codeqa_locks` holds the lease of each repo's index run (`lease.py`).
"""

from __future__ import annotations

import pyarrow as pa

# The layout of a repo's tables and what the parser puts in them. A repo written with another
# version is re-indexed from scratch by the next index run and refused by search until then.
# 2: role column, modules table, constants/variables/macros and member-assigned functions.
# 3: vectors from the int8 ONNX embedder (cosine 0.9995 to the torch vectors of 2, yet not
#    the same: a search must never compare the two); 23 languages, every other text file as
#    file rows and sections, `.h`/`.m` decided per file.
# 4: one row per overload set (`signatures`), declarations marked (`declaration`): C/C++
#    prototypes and in-class method declarations are rows now.
# 5: a file's bindings kept apart from its other parse results (column `bindings`), so a run learns
#    the repo's types without reading every reference; rows parsed on every core.
# 6: vectors from the static code model (`codeqa-static`, 256-d) by default, written with their
#    rows as they are parsed.
INDEX_VERSION = 6
ROW_TABLES = ("methods", "classes", "modules")  # tables of searchable rows, with vectors
SYMBOL_TABLES = ("methods", "classes")  # tables of definitions (and docs sections): references point at them
TABLE_KINDS = (*ROW_TABLES, "files")
REGISTRY_TABLE = "codeqa_repos"
LOCK_TABLE = "codeqa_locks"
FTS_COLUMNS = ("search_text", "name_text", "path_text")
# Whole-file BM25: `file_text` holds the identifier-aware tokens of a file's path and text (as
# the eval's plain BM25 baseline tokenizes them), indexed without stemming or stop words.
FILE_TEXT_COLUMN = "file_text"
# How each full-text column is tokenized: on whitespace (the texts are tokenized when written),
# lower-cased, tokens of 64 bytes or more dropped; `search_text`, the prose-like column, is also
# stemmed (Snowball English) and its stop words dropped. The FTS indexes are built with this, and
# `store.resident` tokenizes as they do.
STEMMED_COLUMNS = ("search_text",)
MAX_TOKEN_BYTES = 64
MAX_STORED_REFERENCES = 50  # uses kept with a definition's row; more are resolved again when asked
# Above this many rows a table gets an HNSW vector index: flat search of 30,000 rows took
# ~30 ms, HNSW ~5 ms at recall@30 0.99 (Django, 384-d).
ANN_MIN_ROWS = 10_000

# The columns that say which definition a row is and where: every read of rows starts from them.
ROW_IDENTITY = ("id", "kind", "name", "qualified_name", "file_path", "start_line", "end_line", "language")

REFERENCE_TYPE = pa.struct(
    [
        ("file_path", pa.string()),
        ("line", pa.int32()),
        ("column", pa.int32()),
        ("text", pa.string()),
        ("kind", pa.string()),
        ("resolution", pa.string()),
        ("caller", pa.string()),
    ]
)

# Field metadata naming a column a table's (unenforced) primary key, as
# `Table.set_unenforced_primary_key` writes it: LanceDB then checks concurrent merge-inserts
# on it for inserted keys (without it, two of them inserting one key both succeed).
PRIMARY_KEY_METADATA = "lance-schema:unenforced-primary-key:position"


def key_field(name: str) -> pa.Field:
    """A table's key column: a non-null string declared its primary key."""
    return pa.field(name, pa.string(), nullable=False, metadata={PRIMARY_KEY_METADATA: "1"})


def has_primary_key(schema: pa.Schema, column: str) -> bool:
    """Whether `column` is declared the primary key (tables from before it was are not)."""
    metadata = schema.field(column).metadata or {}
    return PRIMARY_KEY_METADATA.encode() in metadata


def row_schema(dim: int, table: str) -> pa.Schema:
    """The columns of a table of searchable rows (`ROW_TABLES`).

    All three share the symbol columns, so search reads them alike. The classes table adds
    `method_signatures`. `declaration` marks a signature whose body is in another file or
    nowhere (a prototype, an abstract or interface method; search groups it with its
    implementation where there is one) and `signatures` lists an overload set's signatures
    (empty for a single one). The modules table adds, per `file` row: `imports` (module paths as
    written), `top_level_names` (qualified names of the file's top-level definitions) and
    `file_text` (whole-file BM25 text, FTS-indexed on its own); `module` rows leave those empty.
    Rows of the modules table have `qualified_name` = `file_path` and `name` = the file name;
    a `file` row spans the whole file (line 1 to its last line), a `module` row its chunk.
    """
    fields: list[pa.Field | tuple[str, pa.DataType]] = [
        key_field("id"),
        ("repo", pa.string()),
        ("file_path", pa.string()),
        ("language", pa.string()),
        ("role", pa.string()),  # languages.ROLES
        ("kind", pa.string()),
        ("name", pa.string()),
        ("qualified_name", pa.string()),
        ("signature", pa.string()),
        ("doc", pa.string()),
        ("code", pa.string()),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("parent", pa.string()),
        ("file_hash", pa.string()),
        ("text_hash", pa.string()),
        ("search_text", pa.string()),
        ("name_text", pa.string()),
        ("path_text", pa.string()),
        ("references", pa.list_(REFERENCE_TYPE)),
        ("reference_count", pa.int32()),
        ("references_hash", pa.string()),
        ("declaration", pa.bool_()),
        ("signatures", pa.list_(pa.string())),
    ]
    if table == "classes":
        fields.append(("method_signatures", pa.list_(pa.string())))
    elif table == "modules":
        fields += [
            ("imports", pa.list_(pa.string())),
            ("top_level_names", pa.list_(pa.string())),
            (FILE_TEXT_COLUMN, pa.string()),
        ]
    fields.append(("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


FILES_SCHEMA = pa.schema(
    [  # one row per records.ManifestEntry
        key_field("file_path"),
        ("sha256", pa.string()),
        ("language", pa.string()),
        ("size", pa.int64()),
        ("mtime_ns", pa.int64()),  # added after the first release: older tables get it as 0
        ("non_utf8", pa.bool_()),
        ("has_errors", pa.bool_()),
        ("parsed", pa.string()),  # records.FileParse JSON: symbols, references, imports
        ("bindings", pa.string()),  # records.FileParse.bindings_json(): what names hold, classes' bases
    ]
)

REGISTRY_SCHEMA = pa.schema(
    [  # one row per records.RepoInfo
        key_field("name"),
        ("root", pa.string()),
        ("prefix", pa.string()),
        ("embedding_model", pa.string()),
        ("embedding_dim", pa.int32()),
        ("created_at", pa.float64()),
        ("indexed_at", pa.float64()),
        ("stats", pa.string()),  # records.RepoStats JSON: summary of the last run
        ("index_version", pa.int32()),  # INDEX_VERSION the tables were written with; added in 2
    ]
)

LOCK_SCHEMA = pa.schema(
    [  # one row per repo whose index run holds the lease (lease.py)
        key_field("name"),  # the repo's name
        ("owner", pa.string()),  # a random id per lock holder
        ("purpose", pa.string()),  # index | rebuild | remove
        ("host", pa.string()),
        ("pid", pa.int64()),
        ("process_started", pa.float64()),  # the holder's process start time: tells a reused pid apart
        ("acquired_at", pa.float64()),
        ("heartbeat_at", pa.float64()),
        ("beat", pa.int64()),  # bumped by every heartbeat: what a takeover matches on
    ]
)
