"""A row's derived columns: its BM25 texts, the text its vector is made from, and their hash.

The indexer calls `prepare_row` on every row it writes; search and the reranker call
`embedding_text` on rows they read, so a question meets exactly the text the index embedded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from codeqa.parsing.tokens import code_tokens, path_tokens

FILE_TEXT_CHARS = 300_000  # of a file's text in its whole-file BM25 text; longer files (rare: data, generated) are cut
EMBED_TEXT_CHARS = 2000
EMBED_LIST_CHARS = 300  # of a file row's imports, and of its defined names, in its embedded text
SEARCH_CODE_CHARS = 6000  # of a row's code in its BM25 text
# A class's BM25 text has its method signatures and only the head of its code: the methods'
# bodies have rows (and BM25 text) of their own.
CLASS_SEARCH_CODE_CHARS = 1500
# Of a definition's code a row keeps (its head, in whole lines; start_line/end_line still give
# the whole extent): far more than any prompt shows, and a bound on what one row can cost.
MAX_ROW_CODE_CHARS = 100_000
# What `embedding_text` reads of a row (plus its id and text hash, to write the vector back).
EMBEDDED_COLUMNS = (
    "id",
    "text_hash",
    "kind",
    "qualified_name",
    "file_path",
    "signature",
    "doc",
    "code",
    "imports",
    "top_level_names",
)


def embedding_text(row: Mapping[str, Any]) -> str:
    """What makes a row findable by meaning: where it is, what it is, its doc, then its code.

    A file row (whose qualified name is its path) says what the file imports and defines
    before its module-level code."""
    what = row["kind"] if row["qualified_name"] == row["file_path"] else f"{row['kind']} {row['qualified_name']}"
    header = f"{row['file_path']}\n{what}\n"
    if row.get("signature"):
        header += row["signature"] + "\n"
    if row.get("doc"):
        header += row["doc"][:600] + "\n"
    if row.get("imports"):
        header += "imports " + ", ".join(row["imports"])[:EMBED_LIST_CHARS] + "\n"
    if row.get("top_level_names"):
        header += "defines " + ", ".join(row["top_level_names"])[:EMBED_LIST_CHARS] + "\n"
    return (header + row.get("code", ""))[:EMBED_TEXT_CHARS]


def capped_code(code: str) -> str:
    """At most MAX_ROW_CODE_CHARS of `code`, cut after a whole line."""
    if len(code) <= MAX_ROW_CODE_CHARS:
        return code
    cut = code.rfind("\n", 0, MAX_ROW_CODE_CHARS)
    return code[: cut + 1] if cut > 0 else code[:MAX_ROW_CODE_CHARS]


def prepare_row(row: dict[str, Any]) -> dict[str, Any]:
    """Cap the code and add the derived columns (BM25 text fields, text hash, empty references)."""
    row = {**row, "code": capped_code(row["code"])}
    code_chars = CLASS_SEARCH_CODE_CHARS if row.get("method_signatures") else SEARCH_CODE_CHARS
    row["search_text"] = code_tokens(
        " ".join(
            [
                row["qualified_name"],
                row.get("signature", ""),
                row.get("doc", ""),
                *row.get("signatures", []),
                *row.get("method_signatures", []),
                *row.get("imports", []),
                *row.get("top_level_names", []),
                row["code"][:code_chars],
            ]
        )
    )
    row["name_text"] = " ".join(
        [
            code_tokens(row["name"]),
            code_tokens(row["qualified_name"]),
            row["name"].lower(),
            row["qualified_name"].lower(),
        ]
    )
    row["path_text"] = path_tokens(row["file_path"])
    row["text_hash"] = hashlib.sha256(embedding_text(row).encode()).hexdigest()
    row.setdefault("references", [])
    row.setdefault("reference_count", 0)
    row.setdefault("references_hash", "")
    row.setdefault("declaration", False)
    row.setdefault("signatures", [])
    return row


def file_text(file_path: str, text: str) -> str:
    """The whole-file BM25 text of a file row (`schema.FILE_TEXT_COLUMN`)."""
    return code_tokens(file_path + "\n" + text[:FILE_TEXT_CHARS])
