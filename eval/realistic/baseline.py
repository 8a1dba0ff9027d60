"""The baseline every table is read against: plain BM25 over whole files.

A document is a file's path and its whole text, tokenized with the product's identifier-aware
`code_tokens` (each identifier whole and split on camelCase/snake_case); the
query is tokenized the same way, all of it. Okapi BM25 (bm25s, Lucene's variant, k1 = 1.5,
b = 0.75) over exactly the files CodeQA indexed at that commit, tests, docs and examples
included. Nothing else: no fields, no boosts, no test-file weight.

`bm25-files` is the baseline the targets are read against. `bm25-code` is the same over the
source-language files only (no Markdown, reST or text): long changelogs and docs that mention
everything are the first thing whole-file BM25 returns for many reports, and a reader should see
how much of the gap that explains.

The baseline has no functions of its own; its function ranking is derived: the files in
BM25 order, and within each file its symbols (CodeQA's rows for that file at that commit, docs
sections left out) ordered by a BM25 score of their own text against the query.
"""

from __future__ import annotations

import bm25s
import numpy as np

from codeqa.parsing.tokens import code_tokens
from codeqa.core.config import Settings
from codeqa.parsing.languages import DOC_LANGUAGES

from eval.realistic.snapshots import IndexedFile, Snapshot, TextStore

BASELINES = {"bm25-files": False, "bm25-code": True}  # name → code files only
K1, B = 1.5, 0.75
MAX_RANKED_FILES = 100
SYMBOL_FILES = 10  # files whose symbols make the derived function ranking


def tokens(text: str) -> list[str]:
    return code_tokens(text).split()


def bm25_scores(documents: list[list[str]], query: list[str]) -> np.ndarray:
    """BM25 score of every document for the query tokens."""
    model = bm25s.BM25(k1=K1, b=B)
    model.index(documents, show_progress=False)
    return model.get_scores(query)


def best_first(keys: list, scores: np.ndarray, limit: int) -> list:
    """Keys of the positively scored documents, best first; ties keep the given order."""
    order = np.argsort(-scores, kind="stable")
    return [keys[i] for i in order[:limit] if scores[i] > 0]


class WholeFileBM25:
    """Ranks a snapshot's files; file tokens are kept by content hash across commits."""

    def __init__(self, texts: TextStore) -> None:
        self._texts = texts
        self._tokens: dict[tuple[str, str], list[str]] = {}

    def _document(self, file: IndexedFile) -> list[str]:
        key = (file.path, file.sha256)
        if key not in self._tokens:
            self._tokens[key] = tokens(file.path + "\n" + self._texts.get(file.sha256))
        return self._tokens[key]

    def rank_files(self, snapshot: Snapshot, query: str, code_only: bool = False) -> list[str]:
        files = sorted((f for f in snapshot.files if not (code_only and f.language in DOC_LANGUAGES)),
                       key=lambda f: f.path)
        scores = bm25_scores([self._document(f) for f in files], tokens(query))
        return best_first([f.path for f in files], scores, MAX_RANKED_FILES)


def rank_symbols(snapshot: Snapshot, base: Settings, files: list[str], query: str) -> list[tuple[str, str]]:
    """(file, qualified name) of the top files' symbols: file order first, then BM25 within a file."""
    top = files[:SYMBOL_FILES]
    rows = snapshot.symbol_rows(base, top, ["file_path", "qualified_name", "start_line", "search_text"],
                                code_only=True)
    if not rows:
        return []
    rows.sort(key=lambda r: (r["file_path"], r["start_line"], r["qualified_name"]))
    scores = bm25_scores([r["search_text"].split() for r in rows], tokens(query))
    position = {path: rank for rank, path in enumerate(top)}
    order = sorted(range(len(rows)), key=lambda i: (position[rows[i]["file_path"]], -scores[i]))
    return [(rows[i]["file_path"], rows[i]["qualified_name"]) for i in order]
