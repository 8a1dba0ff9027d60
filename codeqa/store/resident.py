"""A repo's row tables held in memory, answering search's reads as LanceDB answers them.

Why: a search asks about ten queries of LanceDB (each row table's BM25 and vector search, the
whole-file BM25, the best files' definitions), and each costs 5–15 ms on two cores, however few
rows it returns: ~75 ms of a search that needs ~15 ms of its own work. A repo of up to
`Settings.resident_rows` rows is therefore read once (Django's 57,861 rows: ~5 s, in the
background, and ~0.25 GB) and searched here, in numpy, from then on: p50 81 → 23 ms
(docs/benchmarks.md, "Searching from memory"). Each later version of a table (an index run's,
a watcher's after a save) is made from the copy of the version before: only the rows the run
wrote are read and tokenized (`ResidentTable.updated`; Django's after a one-file edit: 0.7 s
instead of 4.6 s read whole).

The answers are LanceDB's own, not an approximation of them: BM25 as lance scores a
`MultiMatchQuery` (each column's BM25 with k1 1.2 and b 0.75, times its boost; a row's score is
its best column's), over tokens made as the FTS indexes make them (`schema.STEMMED_COLUMNS`,
`schema.MAX_TOKEN_BYTES`: whitespace, lower case; Snowball English stems, then the stop words
below dropped; a column's statistics over the rows that hold a term), ties in the order of
the table's rows (the whole-file BM25's ties, identical files, may come in another order);
vectors by exact cosine similarity (LanceDB's HNSW index, above `schema.ANN_MIN_ROWS` rows,
finds ~0.98 of the same rows). `tests/test_store_resident.py` compares the two on real indexes.
The scores are those of a full-text index built anew over the rows as they are: once an index
run has folded new rows into LanceDB's indexes (LanceDB 0.40), its scores differ a little from
those (docs/retrieval.md, "Searching from memory").

`ResidentReader` is a `RepoReader` whose searches use the copy once it matches the table's
newest version, and LanceDB until then: the copy of a new version is built in the background
(`load` builds it at once), so no search waits for it. A finished index run is read at once
(`renew`); rows a run is still writing, within `VERSION_SECONDS`.
"""

from __future__ import annotations

import ctypes
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codeqa.parsing.languages import DOC_KIND, FILE_KIND
from codeqa.store import filters
from codeqa.store.filters import NO_VECTOR
from codeqa.store.reader import RepoReader, Row, Scope
from codeqa.store.schema import (
    FILE_TEXT_COLUMN,
    FTS_COLUMNS,
    MAX_TOKEN_BYTES,
    ROW_IDENTITY,
    ROW_TABLES,
    STEMMED_COLUMNS,
)

if TYPE_CHECKING:
    import lancedb

    from codeqa.core.records import RepoInfo

log = logging.getLogger(__name__)

# The columns a resident table holds: what search reads of a row (its identity, what ranking
# and the results show, `search_text` for the definitions' features, the vector).
HELD_COLUMNS = (
    *ROW_IDENTITY,
    *("role", "signature", "doc", "code", "parent", "references", "reference_count", "declaration", "signatures"),
    *("search_text", "vector"),
)
BM25_K1, BM25_B = 1.2, 0.75  # lance's
# The stop words lance drops from a stemmed column, after stemming (so "during", stemmed "dure",
# stays): NLTK's English list.
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be been
    being have has had having do does did doing a an the and but if or because as until while of
    at by for with about against between into through during before after above below to from up
    down in out on off over under again further then once here there when where why how all any
    both each few more most other some such no nor not only own same so than too very s t can will
    just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn
    didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn
    mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn
    wouldn't""".split()
)
MASKS_KEPT = 16  # scopes whose row masks a table keeps
WORDS_KEPT = 100_000  # query words whose terms a column remembers
# How long a table's newest version, once looked up, is taken as current: a lookup costs ~1 ms
# and a search makes eight reads. A finished index run is seen at once (`renew`); rows that a
# run is still writing, within this time.
VERSION_SECONDS = 0.5
# A row is rewritten only with a new file, text, lines or uses, or given its vector (the
# indexer's writes): a row whose key is unchanged is the row a copy holds. A new version whose
# changed rows are more than UPDATE_SHARE of a table's is read whole instead.
ROW_KEY = ("id", "file_hash", "text_hash", "references_hash", "start_line", "end_line")
UPDATE_SHARE = 0.25
READ_IDS_AT_ONCE = 2000  # ids in one `IN (...)` filter


# A build's temporaries peak at a few times its table's tokens: one table at a time per process.
_ONE_BUILD_AT_A_TIME = threading.Lock()


class Analyzer:
    """One FTS column's tokenizer: whitespace, lower case, long tokens dropped; for a stemmed
    column, Snowball English stems (PyStemmer, the Snowball project's C stemmers) without stop
    words. What each word becomes is remembered."""

    def __init__(self, stemmed: bool) -> None:
        self.stemmed = stemmed
        self._terms: dict[str, str | None] = {}
        if stemmed:
            import Stemmer

            self._stemmer = Stemmer.Stemmer("english")

    def index_terms(self, words: list[str]) -> list[str | None]:
        """The term each distinct lower-cased word is indexed as (None: the index drops it)."""
        stems = self._stemmer.stemWords(words) if self.stemmed else words
        return [
            None if not word or len(word.encode()) >= MAX_TOKEN_BYTES or (self.stemmed and stem in STOP_WORDS) else stem
            for word, stem in zip(words, stems, strict=True)
        ]

    def terms(self, text: str) -> list[str]:
        """A query's terms, as the index makes them (its words remembered: queries repeat words)."""
        words = text.lower().split()
        if len(self._terms) > WORDS_KEPT:
            self._terms = {}
        new = [word for word in dict.fromkeys(words) if word not in self._terms]
        self._terms.update(zip(new, self.index_terms(new), strict=True))
        return [term for word in words if (term := self._terms[word]) is not None]


class Postings:
    """BM25 over one text column: for each term, the rows holding it and how often.

    Held as one entry per (term, row) that holds it, grouped by term: `row` and `count`, a
    term's entries from `start[term]` to `start[term + 1]` (its rows in any order)."""

    def __init__(
        self,
        analyzer: Analyzer,
        term_ids: dict[str, int],
        terms: np.ndarray,
        rows: np.ndarray,
        counts: np.ndarray,
        lengths: np.ndarray,
    ) -> None:
        """Entries by term (`terms` ascending); `lengths`: each row's indexed tokens."""
        self.analyzer = analyzer
        self.term_ids = term_ids
        self.rows = len(lengths)
        self.lengths = lengths
        # lance's statistics count the rows that hold a term: a file's empty `file_text` is no document
        self.documents = int(np.count_nonzero(lengths))
        mean_length = float(lengths.sum()) / self.documents if self.documents else 1.0
        self.norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths / mean_length)  # each row's length term
        self.row = rows.astype(np.int32)
        self.count = counts.astype(np.float32)
        self.start = np.searchsorted(terms, np.arange(len(term_ids) + 1))

    @classmethod
    def of(cls, texts: pa.ChunkedArray | pa.Array, analyzer: Analyzer) -> Postings:
        """The postings of a column's texts, row by row."""
        term_ids: dict[str, int] = {}
        terms, rows, counts = _entries(texts, analyzer, term_ids, np.arange(len(texts)), len(texts))
        lengths = np.bincount(rows, weights=counts, minlength=len(texts)).astype(np.float32)
        return cls(analyzer, term_ids, terms, rows, counts, lengths)

    def updated(self, moved: np.ndarray, texts: pa.Array, positions: np.ndarray) -> Postings:
        """These postings for a new version of the column: old row `i` is row `moved[i]` now
        (-1: gone), and the rows at `positions` are new and hold `texts`: only these are
        tokenized. The statistics come out as a build of the new version's would make them;
        only the terms' numbers differ (a term no row holds any more keeps its own). Searches go
        on reading these postings meanwhile: the new ones share nothing mutable with them."""
        rows = int(np.count_nonzero(moved >= 0)) + len(positions)
        analyzer = Analyzer(self.analyzer.stemmed)
        term_ids = dict(self.term_ids)
        new_terms, new_rows, new_counts = _entries(texts, analyzer, term_ids, positions, rows)
        old_rows = moved[self.row]
        kept = old_rows >= 0
        old_terms = np.repeat(np.arange(len(self.start) - 1), np.diff(self.start))[kept]
        at = np.searchsorted(old_terms, new_terms, side="right")  # each new entry among its term's
        lengths = np.zeros(rows, dtype=np.float32)
        lengths[moved[moved >= 0]] = self.lengths[moved >= 0]
        lengths[positions] = np.bincount(new_rows, weights=new_counts, minlength=rows)[positions]
        return Postings(
            analyzer,
            term_ids,
            np.insert(old_terms, at, new_terms),
            np.insert(old_rows[kept], at, new_rows),
            np.insert(self.count[kept], at, new_counts),
            lengths,
        )

    def add_scores(self, text: str, boost: float, into: np.ndarray) -> None:
        """Each row's BM25 for `text` (its terms as the column's index makes them), times
        `boost`, kept in `into` where it is higher than what is there."""
        scores = np.zeros(self.rows, dtype=np.float32)
        for term in self.analyzer.terms(text):
            index = self.term_ids.get(term)
            if index is None:
                continue
            lo, hi = self.start[index], self.start[index + 1]
            if lo == hi:
                continue
            rows, counts = self.row[lo:hi], self.count[lo:hi]
            idf = math.log(1 + (self.documents - (hi - lo) + 0.5) / (hi - lo + 0.5))
            scores[rows] += idf * counts * (BM25_K1 + 1) / (counts + self.norm[rows])
        np.maximum(into, boost * scores, out=into)


def _entries(
    texts: pa.ChunkedArray | pa.Array, analyzer: Analyzer, term_ids: dict[str, int], positions: np.ndarray, rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(term, row, count) of each term a text holds, by term, then row: the text at index `i`
    is row `positions[i]` of `rows`. New terms are numbered in `term_ids`."""
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    words = pc.utf8_split_whitespace(pc.utf8_lower(texts.fill_null("")))  # "" splits into [""]: dropped below
    encoded = pc.dictionary_encode(words.flatten())
    word_terms = np.array(
        [
            -1 if term is None else term_ids.setdefault(term, len(term_ids))
            for term in analyzer.index_terms(encoded.dictionary.to_pylist())
        ],
        dtype=np.int64,
    )
    terms = word_terms[encoded.indices.to_numpy()] if len(encoded) else np.empty(0, dtype=np.int64)
    row_of = np.repeat(np.asarray(positions, dtype=np.int64), np.diff(words.offsets.to_numpy()))
    kept = terms >= 0
    keys, counts = np.unique(terms[kept] * max(rows, 1) + row_of[kept], return_counts=True)
    return keys // max(rows, 1), keys % max(rows, 1), counts


class ResidentTable:
    """One row table at one version: its held columns, vectors and postings, and each row's key
    (`ROW_KEY`), by which a later version's copy is made from this one (`updated`)."""

    def __init__(
        self, version: tuple[str, int], rows: pa.Table, postings: dict[str, Postings], keys: pa.Array, rows_read: int
    ) -> None:
        self.version = version
        self.rows = rows
        self.postings = postings
        self.keys = keys
        self.rows_read = rows_read  # from LanceDB, to make this copy
        column = rows.column("vector")
        vectors = column.chunk(0) if column.num_chunks else pa.array([], column.type)
        self.has_vector = ~vectors.is_null().to_numpy(zero_copy_only=False)
        width = vectors.type.list_size
        self.vectors = vectors.values.to_numpy(zero_copy_only=False).reshape(len(vectors), width)
        norms = np.linalg.norm(self.vectors, axis=1)
        self.inverse_norms = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        self.implementation = ~rows.column("declaration").fill_null(False).to_numpy(zero_copy_only=False)
        self.kinds = rows.column("kind").to_numpy(zero_copy_only=False)
        self.by_id = {row_id: position for position, row_id in enumerate(rows.column("id").to_pylist())}
        self.by_name = _positions_by(rows.column("name").to_pylist())
        self.by_qualified_name = _positions_by(rows.column("qualified_name").to_pylist())
        self.by_file: dict[str, np.ndarray] = {}
        paths = rows.column("file_path").to_numpy(zero_copy_only=False)
        order = np.argsort(paths, kind="stable")
        cuts = np.flatnonzero(paths[order][1:] != paths[order][:-1]) + 1
        for group in np.split(order, cuts) if len(order) else []:
            self.by_file[paths[group[0]]] = group
        self._masks: OrderedDict[tuple[Scope, bool], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def read(cls, table: Any, version: tuple[str, int]) -> ResidentTable:
        """The copy of `table` (a handle pinned at `version`), read whole."""
        keys = _row_keys(table)
        rows = table.search().select(list(HELD_COLUMNS)).limit(None).to_arrow().combine_chunks()
        _check_order(rows.column("id"), keys.column("id"), "the rows")
        # Each text column is read on its own and let go once its postings are built (a whole
        # file's tokens are most of a table's bytes). Versions are pinned: the rows line up.
        postings: dict[str, Postings] = {}
        for column in _text_columns(table):
            read = table.search().select(["id", column]).limit(None).to_arrow()
            _check_order(read.column("id"), keys.column("id"), column)
            postings[column] = Postings.of(read.column(column), Analyzer(column in STEMMED_COLUMNS))
            del read
            _release_freed_memory()
        return cls(version, rows, postings, keys.column("key").combine_chunks(), rows.num_rows)

    def updated(self, table: Any, version: tuple[str, int]) -> ResidentTable | None:
        """The copy of a later version of this table (`table`, pinned there), made from this one:
        only the rows whose key is new are read, and only their texts tokenized. None when so
        much changed that reading it whole costs less (`UPDATE_SHARE`).

        Rows come in the new version's order, as a copy read whole would hold them (ties are
        broken by it), with the same postings statistics: the two answer alike
        (tests/test_store_resident.py)."""
        keys = _row_keys(table)
        source = pc.index_in(keys.column("key"), value_set=self.keys).fill_null(-1).to_numpy(zero_copy_only=False)
        added = np.flatnonzero(source < 0)
        if len(added) > UPDATE_SHARE * len(source):
            return None
        texts = _text_columns(table)
        columns = list(dict.fromkeys([*HELD_COLUMNS, *texts]))
        fetched = _rows_with_ids(table, keys.column("id").take(pa.array(added)), columns)
        take = source.copy()
        take[added] = self.rows.num_rows + np.arange(len(added))
        combined = pa.concat_tables([self.rows, fetched.select(list(HELD_COLUMNS))])
        rows = combined.take(pa.array(take, type=pa.int64())).combine_chunks()  # in the keys' order: by construction
        kept = np.flatnonzero(source >= 0)
        moved = np.full(self.rows.num_rows, -1, dtype=np.int64)
        moved[source[kept]] = kept
        postings = {
            column: held.updated(moved, fetched.column(column), added) for column, held in self.postings.items()
        }
        return ResidentTable(version, rows, postings, keys.column("key").combine_chunks(), len(added))

    def mask(self, scope: Scope, implementations_only: bool) -> np.ndarray:
        """The rows in `scope` (and not declarations, when asked), as a boolean array."""
        key = (scope, implementations_only)
        with self._lock:
            found = self._masks.get(key)
        if found is not None:
            return found
        mask = self.implementation.copy() if implementations_only else np.ones(self.rows.num_rows, dtype=bool)
        if scope.language:
            mask &= pc.equal(self.rows.column("language"), scope.language.lower()).to_numpy(zero_copy_only=False)
        if scope.role:
            mask &= pc.equal(self.rows.column("role"), scope.role.lower()).to_numpy(zero_copy_only=False)
        if scope.prefix:
            mask &= pc.starts_with(self.rows.column("file_path"), scope.prefix).to_numpy(zero_copy_only=False)
        with self._lock:
            self._masks[key] = mask
            while len(self._masks) > MASKS_KEPT:
                self._masks.popitem(last=False)
        return mask

    def bm25(self, text: str, columns: Sequence[str], boosts: Sequence[float]) -> np.ndarray:
        scores = np.zeros(self.rows.num_rows, dtype=np.float32)
        for column, boost in zip(columns, boosts, strict=True):
            self.postings[column].add_scores(text, boost, scores)
        return scores

    def cosine(self, vector: Sequence[float] | np.ndarray) -> np.ndarray:
        query = np.asarray(vector, dtype=np.float32)
        length = float(np.linalg.norm(query))
        return (self.vectors @ query) * self.inverse_norms / (length or 1.0)

    def rows_at(self, positions: np.ndarray, columns: Sequence[str]) -> list[Row]:
        return self.rows.select(list(columns)).take(pa.array(positions, type=pa.int64())).to_pylist()


def _positions_by(values: list[str]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for position, value in enumerate(values):
        found.setdefault(value, []).append(position)
    return found


def _copy_at(held: ResidentTable | None, table: Any, version: tuple[str, int]) -> ResidentTable:
    """The copy of `table` (pinned at `version`): `held` brought up to it where that is a copy
    of an earlier version of the same table, else one read whole."""
    if held is not None and held.version[0] == version[0]:
        updated = held.updated(table, version)
        if updated is not None:
            return updated
    return ResidentTable.read(table, version)


def _text_columns(table: Any) -> list[str]:
    return [*FTS_COLUMNS, *((FILE_TEXT_COLUMN,) if FILE_TEXT_COLUMN in table.schema.names else ())]


def _row_keys(table: Any) -> pa.Table:
    """Each row's id and key (its `ROW_KEY` columns and whether it has a vector, joined), in the
    table's order."""
    read = table.search().select({**{c: c for c in ROW_KEY}, "no_vector": NO_VECTOR}).limit(None).to_arrow()
    parts = [read.column(column).cast(pa.string()) for column in (*ROW_KEY, "no_vector")]
    key = pc.binary_join_element_wise(*parts, "\x1f", null_handling="replace", null_replacement="")
    return pa.table({"id": read.column("id"), "key": key})


def _rows_with_ids(table: Any, ids: pa.Array, columns: list[str]) -> pa.Table:
    """The rows with these ids, in their order."""
    wanted = ids.to_pylist()
    parts = [
        table.search().where(filters.is_in("id", wanted[start : start + READ_IDS_AT_ONCE])).select(columns)
        for start in range(0, len(wanted), READ_IDS_AT_ONCE)
    ]
    found = pa.concat_tables([part.limit(None).to_arrow() for part in parts]) if parts else _empty(table, columns)
    at = pc.index_in(ids, value_set=found.column("id"))
    if at.null_count or found.num_rows != len(ids):
        raise RuntimeError("rows changed while they were read")
    return found.take(at)


def _empty(table: Any, columns: list[str]) -> pa.Table:
    return table.schema.empty_table().select(columns)


def _check_order(found: pa.ChunkedArray, expected: pa.ChunkedArray, what: str) -> None:
    if not found.equals(expected):
        raise RuntimeError(f"{what} were read in another order than the rows' keys")


def _release_freed_memory() -> None:
    """Give freed memory back to the system. A build's temporaries (every token of a table,
    several times over, in Arrow's pool and the C heap) are freed by then, but both allocators
    keep such pages for reuse: a process searching Django's held copy grew by ~1.0 GB without
    this, ~0.3 GB with it. Where the C library is not glibc, only Arrow's pool is asked."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def best(scores: np.ndarray, eligible: np.ndarray, limit: int) -> np.ndarray:
    """Positions of the `limit` best eligible rows, best first, ties in row order (as LanceDB)."""
    candidates = np.flatnonzero(eligible)
    if len(candidates) > limit > 0:
        cutoff = np.partition(scores[candidates], len(candidates) - limit)[len(candidates) - limit]
        candidates = candidates[scores[candidates] >= cutoff]
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:limit]


class ResidentReader(RepoReader):
    """A `RepoReader` whose searches and reads by file, id and name come from memory, for each
    table whose copy is at its newest version (`store.index.Index` makes one for a small repo)."""

    holds_rows = True

    def __init__(self, db: lancedb.DBConnection, info: RepoInfo) -> None:
        super().__init__(db, info)
        self._resident: dict[str, ResidentTable] = {}
        self._building: set[str] = set()
        self._build_lock = threading.Lock()
        self._versions: dict[str, tuple[float, tuple[str, int]]] = {}  # kind → (when looked up, version)

    def renew(self, info: RepoInfo) -> None:
        """An index run finished: look the tables' versions up again, at once."""
        with self._build_lock:
            self.info = info
            self._versions.clear()

    def load(self, kinds: Sequence[str]) -> None:
        """Build the copies of these tables now, at their newest versions (for the first search
        of a process that will search many times, and for tests)."""
        for kind in kinds:
            version = self.version(kind)
            with self._build_lock:
                held = self._resident.get(kind)
            if held is None or held.version != version:
                self._build(kind, version)

    def version(self, kind: str) -> tuple[str, int]:
        """The table's newest version, as looked up at most `VERSION_SECONDS` ago."""
        now = time.monotonic()
        with self._build_lock:
            seen = self._versions.get(kind)
        if seen is not None and now - seen[0] < VERSION_SECONDS:
            return seen[1]
        version = super().version(kind)
        with self._build_lock:
            self._versions[kind] = (now, version)
        return version

    def in_memory(self) -> bool:
        return all([self._current(kind) is not None for kind in ROW_TABLES])  # a list: each call starts its build

    def _current(self, kind: str) -> ResidentTable | None:
        """The copy of table `kind` if it is at the table's newest version; else None, and a copy
        of that version is being built in the background."""
        version = self.version(kind)
        with self._build_lock:
            table = self._resident.get(kind)
            if table is not None and table.version == version:
                return table
            if kind in self._building:
                return None
            self._building.add(kind)
        threading.Thread(target=self._build, args=(kind, version, True), name=f"resident-{kind}").start()
        return None

    def _build(self, kind: str, version: tuple[str, int], background: bool = False) -> None:
        started = time.perf_counter()
        with self._build_lock:
            held = self._resident.get(kind)
        try:
            with _ONE_BUILD_AT_A_TIME:
                pinned = self.db.open_table(version[0])  # its own handle, at `version`: searches move the shared one
                pinned.checkout(version[1])
                table = _copy_at(held, pinned, version)
        except Exception:  # the copy is an optimisation: LanceDB keeps answering without it
            log.exception("Could not hold %s of %s in memory; searching it in LanceDB", kind, self.info.name)
            table = None
        with self._build_lock:
            if table is not None:
                self._resident[kind] = table
            if background:
                self._building.discard(kind)
        _release_freed_memory()
        if table is not None:
            log.info(
                "%s: %s held in memory (%d rows, %d of them read, %.2f s)",
                self.info.name,
                kind,
                table.rows.num_rows,
                table.rows_read,
                time.perf_counter() - started,
            )

    def _held(self, kind: str, columns: Sequence[str]) -> ResidentTable | None:
        """The copy of table `kind`, if it is current and holds `columns`; else None: ask LanceDB."""
        return self._current(kind) if set(columns) <= set(HELD_COLUMNS) else None

    def text_search(
        self,
        kind: str,
        keywords: str,
        scope: Scope,
        columns: Sequence[str],
        limit: int,
        boosts: Sequence[float],
        implementations_only: bool = False,
    ) -> list[Row]:
        table = self._held(kind, columns)
        if table is None:
            return super().text_search(kind, keywords, scope, columns, limit, boosts, implementations_only)
        scores = table.bm25(keywords, FTS_COLUMNS, boosts)
        positions = best(scores, table.mask(scope, implementations_only) & (scores > 0), limit)
        rows = table.rows_at(positions, columns)
        for row, position in zip(rows, positions, strict=True):
            row["_score"] = float(scores[position])
            row["_no_vector"] = not table.has_vector[position]
        return rows

    def vector_search(
        self,
        kind: str,
        vector: Sequence[float] | np.ndarray,
        scope: Scope,
        columns: Sequence[str],
        limit: int,
        ef: int,
        implementations_only: bool = False,
    ) -> list[Row]:
        table = self._held(kind, columns)
        if table is None:
            return super().vector_search(kind, vector, scope, columns, limit, ef, implementations_only)
        similarity = table.cosine(vector)
        positions = best(similarity, table.mask(scope, implementations_only) & table.has_vector, limit)
        rows = table.rows_at(positions, columns)
        for row, position in zip(rows, positions, strict=True):
            row["_distance"] = float(1.0 - similarity[position])
        return rows

    def file_text_search(self, terms: Sequence[str], scope: Scope, limit: int) -> list[Row]:
        table = self._held("modules", ())
        if table is None:
            return super().file_text_search(terms, scope, limit)
        scores = table.bm25(" ".join(terms), (FILE_TEXT_COLUMN,), (1.0,))
        eligible = table.mask(scope, False) & (table.kinds == FILE_KIND) & (scores > 0)
        positions = best(scores, eligible, limit)
        rows = table.rows_at(positions, ["file_path", "role", "language"])
        for row, position in zip(rows, positions, strict=True):
            row["_score"] = float(scores[position])
        return rows

    def rows_by_ids(
        self, kind: str, ids: Sequence[str], columns: Sequence[str], paths: Sequence[str] | None = None
    ) -> list[Row]:
        table = self._held(kind, columns)
        if table is None:
            return super().rows_by_ids(kind, ids, columns, paths)
        found = sorted({table.by_id[row_id] for row_id in ids if row_id in table.by_id})
        return table.rows_at(np.array(found, dtype=np.int64), columns)

    def rows_named(
        self, kind: str, names: Sequence[str], tails: Sequence[str], scope: Scope, columns: Sequence[str], limit: int
    ) -> list[Row]:
        table = self._held(kind, columns)
        if table is None:
            return super().rows_named(kind, names, tails, scope, columns, limit)
        found = {p for name in names for p in table.by_qualified_name.get(name, []) + table.by_name.get(name, [])}
        found |= {p for tail in tails for p in table.by_name.get(tail, []) if table.kinds[p] != DOC_KIND}
        return self._in_scope(table, found, scope, False, columns, limit)

    def implementations_of(
        self, kind: str, qualified_names: Sequence[str], scope: Scope, columns: Sequence[str], limit: int
    ) -> list[Row]:
        table = self._held(kind, columns)
        if table is None:
            return super().implementations_of(kind, qualified_names, scope, columns, limit)
        found = {p for name in qualified_names for p in table.by_qualified_name.get(name, [])}
        return self._in_scope(table, found, scope, True, columns, limit)

    def file_rows_named(
        self, paths: Sequence[str], stem: str | None, scope: Scope, columns: Sequence[str], limit: int
    ) -> list[Row]:
        table = self._held("modules", columns)
        if table is None:
            return super().file_rows_named(paths, stem, scope, columns, limit)
        file_paths, names = table.rows.column("file_path"), table.rows.column("name")
        named = np.zeros(table.rows.num_rows, dtype=bool)
        for path in paths:
            named |= pc.or_(pc.equal(file_paths, path), pc.ends_with(file_paths, "/" + path)).to_numpy()
        if stem:
            named |= pc.starts_with(names, stem + ".").to_numpy()
        found = set(np.flatnonzero(named & (table.kinds == FILE_KIND)).tolist())
        return self._in_scope(table, found, scope, False, columns, limit)

    @staticmethod
    def _in_scope(
        table: ResidentTable,
        found: set[int],
        scope: Scope,
        implementations_only: bool,
        columns: Sequence[str],
        limit: int,
    ) -> list[Row]:
        """The rows at `found` that are in scope, in the table's order, as a filtered read returns them."""
        mask = table.mask(scope, implementations_only)
        return table.rows_at(np.array(sorted(p for p in found if mask[p])[:limit], dtype=np.int64), columns)

    def rows_in_files(self, kind: str, paths: Sequence[str], columns: Sequence[str], limit: int) -> pa.Table:
        table = self._held(kind, columns)
        if table is None:
            return super().rows_in_files(kind, paths, columns, limit)
        found = [table.by_file[path] for path in dict.fromkeys(paths) if path in table.by_file]
        positions = np.sort(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)
        positions = positions[~np.isin(table.kinds[positions], [DOC_KIND, FILE_KIND])][:limit]
        return table.rows.take(pa.array(positions, type=pa.int64())).select(list(columns))
