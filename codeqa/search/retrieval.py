"""Question → ranked code (methods, classes, files and module-level code) → context: the
search half of CodeQA.

    Retriever(settings).search("repo", "how are carts totalled?", SearchOptions(k=10))

(`codeqa search` and `codeqa context` are the CLI over it, in `codeqa.cli`.)

Pipeline: HyDE (the LLM writes the code it expects) → hybrid search → HyDE with the real
code found (the question rewritten with the codebase's names) → hybrid search over a
candidate pool → files ranked by their evidence → the best files' definitions weighed → optional
cross-encoder rerank of those definitions → exact-name matches on top. Every stage can be
switched off and reports its time; without an LLM, search still runs and says so.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterator, get_args

os.environ.setdefault("LANCEDB_LOG", "error")  # lance warns on every hybrid query otherwise; read at import
import lancedb
import numpy as np
from lancedb.query import MatchQuery, MultiMatchQuery

from codeqa.indexing import create_tables
from codeqa.indexing import index_lock
from codeqa.llm import prompts
from codeqa.core.config import Settings
from codeqa.indexing.create_tables import sql_like_escape, sql_quote
from codeqa.indexing.embeddings import get_embedder
from codeqa.core.errors import CodeQAError, LLMUnavailable, is_valid_unicode, repo_path_prefix
from codeqa.parsing.references import is_resolved
from codeqa.parsing.languages import (DOC_KIND, DOC_LANGUAGES, FILE_KIND, INDEXED_EXTENSIONS, LANGUAGES,
                                      OTHER_LANGUAGE, ROLES, TEXT_FORMATS)
from codeqa.search.overloads import Signed, declared_names, group_declarations
from codeqa.search.ranking import (DEFINITION_FILES, FileHit, LinearRanker, default_symbol_ranker,
                                   definition_features, file_model_name, file_probability, file_ranker_for,
                                   hits_in_file_order, rank_definitions, rank_files)
from codeqa.search.question_kind import QuestionKind, question_kind
from codeqa.search.structure import STRUCTURE_FEATURES, RepoLayout
from codeqa.search.twins import group_twins

if TYPE_CHECKING:
    from codeqa.llm.client import LLMClient

MAX_QUERY_CHARS = 20_000
MAX_K = 50  # results one search may return (the CLI, the API and the chat alike)
MAX_PATH_PREFIX = 1_000
HOLDER_CACHE_SECONDS = 2.0  # how stale "being re-indexed" may be, to keep a lock read off most searches
EMBED_QUERY_CHARS = 1_200  # what the embedder sees of a long query: its opening (title, prose)
MAX_KEYWORDS = 64  # BM25 terms taken from a query
MAX_EXACT = 5  # rows an exact mention may lift to the top
MAX_EXACT_ROWS = 50  # rows read per table to choose those from
FTS_BOOSTS = [1.0, 2.0, 1.0]  # of create_tables.FTS_COLUMNS, in order
SELECT = ["id", "kind", "name", "qualified_name", "file_path", "start_line", "end_line", "language",
          "role", "signature", "doc", "code", "parent", "references", "reference_count", "declaration",
          "signatures"]
FIRST_PASS = 5  # rows of each table, shown to HyDE step 2
ANN_EF = 100  # HNSW search breadth where a table has a vector index (recall@30 0.99 on Django)
# Tests restate the code they test; unless the question is about tests, they rank a bit lower.
# Measured on the eval: file hit@5 0.741 → 0.793, MRR 0.450 → 0.486 (0.6 scored the same).
TEST_FILE_WEIGHT = 0.8
LAYOUTS_KEPT = 8  # repositories' structures kept in memory (a few MB each at most)
FILE_BM25_POOL = 50  # files whole-file BM25 ranks, as evidence for the file ranking (ranking.py)
MAX_FILE_TERMS = 400  # distinct query terms whole-file BM25 matches (a long report has ~300)
# Where a file's definitions and module-level code are (docs sections and file rows left out).
DEFINITION_TABLES = create_tables.ROW_TABLES
MAX_DEFINITIONS = 1_000  # rows read per table for the best files' definitions
DEFINITION_CACHE_FILES = 1_000  # files whose light rows (~2 KB each) a retriever keeps for later searches
DEFINITION_COLUMNS = ["id", "kind", "name", "qualified_name", "file_path", "start_line", "end_line", "language",
                      "role", "reference_count", "declaration", "search_text", "vector"]
RRF_K = 60  # reciprocal-rank fusion of a report's query vectors (LanceDB's own constant)
_TEST_WORDS = re.compile(r"\btests?\b|\bspecs?\b|pytest|unittest", re.IGNORECASE)
# A question asking for prose rather than code (ranking's `prose_asked`, an offset to the role's penalty).
_PROSE_WORDS = re.compile(
    r"\b(?:docs|documentation|readme|tutorials?|changelog)\b"  # "where are the docs for ..."
    r"|\b(?:an?|some|the|any)\s+(?:examples?|samples?|demos?)\b"  # "show me an example", not "for example"
    r"|\b(?:examples?|samples?)\s+(?:of|for|that|showing|using)\b",
    re.IGNORECASE)


Progress = Callable[[str, str, "float | None", str], None]
LightRow = tuple[dict, np.ndarray | None, list[str]]  # a definition's columns, its vector, its search tokens


def _silent(stage: str, state: str, ms: float | None, detail: str) -> None:
    """The default progress listener: nobody is listening."""


class QueryError(CodeQAError, ValueError):
    """The query itself is unusable (empty, too long); the message says why."""

    http_status = 400


# every language a row can carry: code, docs, text formats (yaml, sql, ...) and `other` text
SEARCH_LANGUAGES = (*sorted(LANGUAGES), *sorted(DOC_LANGUAGES), *sorted(TEXT_FORMATS), OTHER_LANGUAGE)


def check_query(query: object) -> str:
    """The query's text, stripped; `QueryError` when it is not text a search can use."""
    if not isinstance(query, str) or not query.strip():
        raise QueryError("The query is empty.")
    text = query.strip()
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"The query has {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,}.")
    if not is_valid_unicode(text):
        raise QueryError("The query is not valid Unicode text (it holds a lone surrogate).")
    return text


def check_options(options: "SearchOptions") -> None:
    """Refuse options no search can honour, with the same one-line message for every face."""
    k = options.k
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise QueryError(f"k must be a whole number from 1 to {MAX_K}.")
    if options.pool is not None and (not isinstance(options.pool, int) or isinstance(options.pool, bool)
                                     or not 1 <= options.pool <= 20 * MAX_K):
        raise QueryError(f"pool must be a whole number from 1 to {20 * MAX_K}.")
    language = options.language
    if language is not None and (not isinstance(language, str) or language.lower() not in SEARCH_LANGUAGES):
        raise QueryError(f"lang must be one of {', '.join(SEARCH_LANGUAGES)}.")
    prefix = options.path_prefix
    if prefix is not None and (not isinstance(prefix, str) or len(prefix) > MAX_PATH_PREFIX
                               or "\x00" in prefix or not is_valid_unicode(prefix)):
        raise QueryError(f"path must be a folder or file path of the repo, at most {MAX_PATH_PREFIX:,} characters.")
    repo_path_prefix(prefix)  # nothing outside the repo (`../`, `/etc`): it would search everything
    if options.mode not in {"hybrid", "vector", "bm25"}:
        raise QueryError(f"Unknown search mode {options.mode!r}.")
    if options.role is not None and (not isinstance(options.role, str) or options.role.lower() not in ROLES):
        raise QueryError(f"Unknown role {options.role!r} (roles: {', '.join(ROLES)}).")


@dataclass
class SearchOptions:
    k: int = 10
    hyde: bool = False  # off by default: on the realistic eval it cost 31 s a search for no file gain
    rerank: bool | None = None  # None: the CODEQA_RERANK setting
    language: str | None = None
    path_prefix: str | None = None
    role: str | None = None  # only files of this role (languages.ROLES)
    mode: str = "hybrid"  # hybrid | vector | bm25
    pool: int | None = None  # candidates per table before rerank; default 3 × k
    # Also search by the vectors of a report's code blocks and error lines. Off: on the eval's
    # train split it lowered file hit@5 on issue reports (0.80 → 0.70) and doubled search time.
    pieces: bool = False
    # Weigh every definition of the best files (ranking.rank_definitions), not only the pool's.
    definitions: bool = True

    def pool_size(self) -> int:
        return max(self.pool or 3 * self.k, 2 * self.k)


@dataclass
class Hit:
    """One retrieved row: a definition, a docs section, a file or a chunk of module-level code."""

    id: str
    table: str
    kind: str
    name: str
    qualified_name: str
    file_path: str
    start_line: int
    end_line: int
    language: str
    signature: str
    doc: str
    code: str
    parent: str | None
    references: list[dict]
    reference_count: int
    score: float
    exact: bool = False
    role: str = "source"  # of its file (languages.ROLES), as stored with the row
    relevance: float = 0.0  # what a reader is shown as its score: see `_show_relevance`
    declaration: bool = False  # a signature only, with no implementation in the repository (overloads.py)
    signatures: list[str] = field(default_factory=list)  # of an overload set, in source order

    def signed(self) -> Signed:
        return Signed(self.language, self.qualified_name, self.declaration, self.signature, self.signatures)

    def to_json(self) -> dict:
        return {
            "id": self.id, "kind": self.kind, "name": self.name, "qualified_name": self.qualified_name,
            "signature": self.signature,
            "file_path": self.file_path, "start_line": self.start_line, "end_line": self.end_line,
            "language": self.language, "role": self.role, "score": round(self.relevance, 4),
            "exact_match": self.exact, "declaration": self.declaration, "signatures": self.signatures,
            "reference_count": self.reference_count,
            "references": [{k: r[k] for k in ("file_path", "line", "column", "text")} for r in self.references],
        }


@dataclass
class SearchResult:
    id: str
    query: str
    expanded_query: str
    results: list[Hit]
    timings_ms: dict[str, float]
    rerank: dict
    hyde: dict
    notices: list[str] = field(default_factory=list)
    files: list[FileHit] = field(default_factory=list)  # the best k files
    file_candidates: list[FileHit] = field(default_factory=list)  # every file with evidence, best first
    question_kind: QuestionKind = "report"  # (question_kind.py)
    file_model: str = "reports"  # the file model that ranked `files` for that kind (ranking.file_model_name)

    def to_json(self) -> dict:
        return {"id": self.id, "query": self.query, "expanded_query": self.expanded_query,
                "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
                "rerank": self.rerank, "hyde": self.hyde, "notices": self.notices,
                "question_kind": self.question_kind, "file_model": self.file_model,
                "results": [hit.to_json() for hit in self.results],
                "files": [file.to_json() for file in self.files]}


# --- Reading a query ---------------------------------------------------------------------------

_CODE_IDENT = re.compile(
    r"`([^`\n]{1,120})`"  # anything in backticks
    r"|\b([A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)+)\b"  # dotted / :: paths
    r"|\b([A-Za-z_]\w*)(?=\()"  # name(
    r"|\b([a-z]+_\w+|_\w+|[A-Za-z]+[a-z0-9]+[A-Z]\w*|[A-Z]{2,}_\w+)\b")  # snake, _private, camel/Pascal
_FILE_MENTION = re.compile(r"[\w./\\-]*\w\.(?:%s)\b" % "|".join(
    sorted((re.escape(ext[1:]) for ext in INDEXED_EXTENSIONS), key=len, reverse=True)))
_PY_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\w+)')
# Reading a report: fenced code blocks; stack-trace and log lines (Python, JVM, Go, Rust, JS,
# gdb/backtrace frames, `path:line` locations); error lines (`ValueError: ...`, `error: ...`,
# `panic: ...`, `thread 'main' panicked at ...`).
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)
_TRACE_LINE = re.compile(
    r'^\s*(?:File "[^"]+", line \d+|Traceback \(most recent call last\)|at [\w$.<>/]+\(.*\)$'
    r"|at [\w$.<>/]+ \(?[\w./:-]+:\d+|#\d+\s+0x[0-9a-f]+|\d+:\s+0x[0-9a-f]+|goroutine \d+ \["
    r"|[\w./-]+\.\w+:\d+(?::\d+)?(?:\s|$)|\w+(?:\.\w+)*\(.*\)\s*$)", re.M)
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception|Warning|Panic)\b:?.{0,240}|(?:error|fatal|panic)(?:\[\w+\])?: .{0,240}"
    r"|thread '[^']*' panicked at .{0,240})$", re.M)
_WHOLE_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*")
MAX_PIECES = 3  # extra query vectors: the first code blocks and the error lines
PIECE_CHARS = 1_000  # of each


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    semantic: str  # what gets embedded
    keywords: str  # what BM25 gets
    symbols: tuple[str, ...]  # code-shaped names the question mentions
    files: tuple[str, ...]  # file names or paths it mentions
    about_tests: bool = False  # the question is about tests: don't rank test files lower
    about_prose: bool = False  # the question asks for docs or an example (a file feature, `prose_asked`)
    pieces: tuple[str, ...] = ()  # a report's code blocks and error lines, embedded on their own
    whole_name: str = ""  # the query is this one name, qualified name or file name, and nothing else
    kind: QuestionKind = "report"  # a report of something wrong or a change, or a how question (question_kind.py)

    @cached_property
    def terms(self) -> list[str]:
        """Its distinct identifier-aware tokens, in order (at most MAX_FILE_TERMS): what
        whole-file BM25 and the definitions' BM25 match, tokenized once per search."""
        return list(dict.fromkeys(create_tables.code_tokens(self.text).split()))[:MAX_FILE_TERMS]


def parse_query(text: str) -> ParsedQuery:
    """Split a question into what to embed, what BM25 should match and what it names exactly.

    A long issue report (stack traces, logs) is handled on purpose: the embedding sees its
    opening, where people describe the problem; BM25 sees its identifiers, code-shaped ones
    first, wherever they appear; stack-trace frames count as mentions.
    """
    symbols: list[str] = []
    files: list[str] = []
    whole_name = _whole_name(text)
    if whole_name:  # `colordemo`: a plain word the patterns below would take for prose
        (files if _FILE_MENTION.fullmatch(whole_name) else symbols).append(whole_name)
    for path, function in _PY_FRAME.findall(text):
        files.append(path)
        symbols.append(function)
    for match in _CODE_IDENT.finditer(text):
        token = next(g for g in match.groups() if g).strip().rstrip("()")
        if _FILE_MENTION.fullmatch(token):
            continue
        symbols.append(token.replace("::", "."))
    files += _FILE_MENTION.findall(text)
    symbols = list(dict.fromkeys(s for s in symbols if re.fullmatch(r"[\w.]+", s)))
    files = list(dict.fromkeys(f.replace("\\", "/").lstrip("./") for f in files))

    code_terms = create_tables.code_tokens(" ".join(symbols + files)).split()
    prose_terms = create_tables.code_tokens(text).split()
    keywords = list(dict.fromkeys(code_terms + prose_terms))[:MAX_KEYWORDS]
    prose, pieces = split_report(text)
    semantic = prose if len(prose) <= EMBED_QUERY_CHARS else (
        prose[:EMBED_QUERY_CHARS].rsplit("\n", 1)[0] + "\n" + " ".join(symbols[:40]))
    return ParsedQuery(text, semantic, " ".join(keywords), tuple(symbols[:20]), tuple(files[:10]),
                       bool(_TEST_WORDS.search(text)), bool(_PROSE_WORDS.search(text)), pieces, whole_name,
                       question_kind(text, bool(pieces)))


def _whole_name(text: str) -> str:
    """The query itself when it is one name (`colordemo`, `Context.invoke`, `Foo::bar`) or one
    file name or path (`view.js`, `src/view.js`), backticks allowed; else ""."""
    stripped = text.strip().strip("`").strip()
    if _WHOLE_NAME.fullmatch(stripped):
        return stripped.replace("::", ".").replace("#", ".")
    if _FILE_MENTION.fullmatch(stripped):
        return stripped.replace("\\", "/").lstrip("./")
    return ""


def split_report(text: str) -> tuple[str, tuple[str, ...]]:
    """A report's prose (what its writer says, for the main query vector) and its pieces: the
    first code blocks and the error lines, each embedded on its own.

    One 1,200-character embedding of a whole report is mostly its logs; the prose says what is
    wrong, a code block shows the API in use, the error line names the failure."""
    blocks = [m.group(2).strip() for m in _FENCE.finditer(text)]
    prose = _FENCE.sub("\n", text)
    errors = list(dict.fromkeys(m.group(0).strip() for m in _ERROR_LINE.finditer(text)))
    kept: list[str] = []
    after_frame = False  # a Python frame's next line is its source line: part of the trace
    for line in prose.splitlines():
        trace = _TRACE_LINE.match(line) is not None or after_frame and line.startswith("    ")
        after_frame = bool(_PY_FRAME.search(line))
        if not trace and line.strip() not in errors:
            kept.append(line)
    prose = "\n".join(kept)
    prose = re.sub(r"\n{3,}", "\n\n", prose).strip() or text.strip()
    pieces = [block[:PIECE_CHARS] for block in blocks if len(block) >= 20][:MAX_PIECES - bool(errors)]
    if errors:
        pieces.append("\n".join(errors[:3])[:PIECE_CHARS])
    return prose, tuple(dict.fromkeys(pieces))


# --- The retriever -------------------------------------------------------------------------------

@dataclass
class _Stages:
    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def time(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + (time.perf_counter() - start) * 1000


def _where(options: SearchOptions) -> str | None:
    clauses = []
    if options.language:
        clauses.append(f"language = {sql_quote(options.language.lower())}")
    if options.path_prefix:
        prefix = re.sub(r"^(?:\./)+", "", options.path_prefix.strip())  # `./src` is `src`; `.github/` stays
        clauses.append(f"file_path LIKE {sql_quote(sql_like_escape(prefix) + '%')}")
    if options.role:
        clauses.append(f"role = {sql_quote(options.role.lower())}")
    return " AND ".join(clauses) or None


class Retriever:
    """Loads the embedder, LLM client and reranker once; `search()` is safe to call from threads.

    `llm` is a client, or a function that returns one when a search first asks the LLM (HyDE is
    off by default, so most processes never import the OpenAI client). `file_ranker` and
    `symbol_ranker` replace the shipped models (`models/*.json`): the eval's ablation refits
    them without a group of features."""

    def __init__(self, settings: Settings, llm: LLMClient | Callable[[], LLMClient] | None = None,
                 threads: int | None = 1,
                 db: lancedb.DBConnection | None = None, file_ranker: LinearRanker | None = None,
                 symbol_ranker: LinearRanker | None = None, structure: bool | None = None) -> None:
        self.settings = settings
        # `file_ranker` ranks every question's files; else the file model is the one
        # `settings.file_model` gives the question's kind (question_kind.py). Both are loaded
        # now, so a broken model file is an error at start, not at the first question.
        self.file_ranker = file_ranker
        for kind in get_args(QuestionKind):
            file_ranker_for(settings.file_model, kind)
        # The repository's structure (structure.py) is read only for a file model that weighs
        # it, or when asked (`structure=True`: the trainers, which need the features to fit them).
        self.structure = structure
        self.symbol_ranker = symbol_ranker or default_symbol_ranker()
        self.db = db if db is not None else create_tables.connect(settings)  # services.Services shares one
        self.embedder = get_embedder(settings, threads=threads)
        self.embedder.embed(["warm up"])  # load the model now, not inside the first query's timing
        self._llm = llm
        self._lock = threading.Lock()
        self._tables: dict[tuple[str, str], tuple[str, object]] = {}  # (repo, kind) → (prefix, table)
        self._holders: dict[tuple[str, str], tuple[float, index_lock.LockHolder | None]] = {}
        # (table, version, file) → its light rows with their vectors: the best files of one
        # question are often the best files of the next.
        self._definitions: OrderedDict[tuple[str, int, str], list[LightRow]] = OrderedDict()
        self._layouts: OrderedDict[tuple[str, int], RepoLayout] = OrderedDict()  # (table, version) → layout
        # Shared by concurrent requests: a search queues about ten short queries here (each row
        # table's BM25 and vector queries, whole-file BM25, exact-name lookups); none waits on another.
        self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="codeqa-table")

    @property
    def llm(self) -> LLMClient:
        from codeqa.llm.client import LLMClient

        with self._lock:
            if self._llm is None:
                self._llm = LLMClient(self.settings)
            elif not isinstance(self._llm, LLMClient):
                self._llm = self._llm()
            return self._llm

    def reranker(self):
        from codeqa.search.rerank import get_reranker
        return get_reranker(self.settings)

    def _table(self, repo: create_tables.RepoInfo, kind: str):
        """The repo's table, opened once per generation: a re-index to new tables opens those."""
        key = (repo.name, kind)
        with self._lock:
            prefix, table = self._tables.get(key, ("", None))
            if prefix != repo.prefix:
                table = create_tables.open_table(self.db, repo, kind)
                self._tables[key] = (repo.prefix, table)
        table.checkout_latest()
        return table

    def _layout(self, repo: create_tables.RepoInfo) -> RepoLayout:
        """The repository's structure (structure.RepoLayout) at its current index version, built
        once per version from the file rows (every indexed file has one)."""
        table = self._table(repo, "modules")
        key = (table.name, table.version)
        with self._lock:
            layout = self._layouts.get(key)
        if layout is None:
            rows = (table.search().where(f"kind = '{FILE_KIND}'").select(["file_path", "role", "language"])
                    .limit(None).to_arrow().to_pylist())
            layout = RepoLayout.of({row["file_path"]: (row["role"], row["language"]) for row in rows})
            with self._lock:
                self._layouts[key] = layout
                while len(self._layouts) > LAYOUTS_KEPT:
                    self._layouts.popitem(last=False)
        return layout

    def search(self, repo_name: str, query: str, options: SearchOptions | None = None,
               query_id: str | None = None, progress: Progress | None = None) -> SearchResult:
        """Run the pipeline; `progress(stage, state, ms, detail)` hears about hyde/search/rerank live.

        A repo being re-indexed (`--rebuild`) is searched in its previous tables, with a notice;
        one whose first index run has not finished is refused (`IndexNotReadyError`). When a
        re-index switches to new tables during the search, it runs once more on those."""
        options = options or SearchOptions()
        text = check_query(query)
        check_options(options)
        repo, notices = self._searchable(repo_name)
        try:
            result = self._run(repo, text, options, query_id, progress or _silent)
        except Exception:
            current = create_tables.get_repo(self.db, repo.name)  # UnknownRepoError once it was removed
            if current.prefix == repo.prefix:
                raise
            repo, notices = self._searchable(repo_name)
            result = self._run(repo, text, options, query_id, progress or _silent)
        result.notices[:0] = notices
        return result

    def _searchable(self, repo_name: str) -> tuple[create_tables.RepoInfo, list[str]]:
        """The repo's registry row if its index can be searched, and what to tell the user about it."""
        repo = create_tables.get_repo(self.db, repo_name)
        create_tables.check_layout(repo)
        if repo.embedding_model != self.embedder.model_id:
            raise create_tables.ModelMismatchError(
                f"Repo {repo.name!r} was indexed with {repo.embedding_model}, but the configured "
                f"embedding model is {self.embedder.model_id}.")
        running = self._lock_holder(repo)
        if not repo.indexed_at:
            if running is not None:
                raise create_tables.IndexNotReadyError(
                    f"{repo.name} is being indexed and its first run has not finished "
                    f"({running.describe(time.time())}); search it again when it has.")
            raise create_tables.IndexNotReadyError(
                f"{repo.name}'s index run stopped before it finished: run `python preprocessing.py index` "
                "on it again.")
        notices = []
        if running is not None and running.purpose == "rebuild" and repo.indexed_at < running.acquired_at:
            notices.append(f"{repo.name} is being re-indexed: these results come from its index as it "
                           "was before, until the new one is searchable.")
        if repo.stats.vectors_pending:
            state = ("its index run is embedding them now" if running is not None else
                     "the index run that was embedding them stopped: run `python preprocessing.py index` again")
            notices.append(f"{repo.stats.embedded_percent}% of {repo.name}'s rows have their vectors so far "
                           f"({state}); the others are found by their text and names meanwhile.")
        return repo, notices

    def _lock_holder(self, repo: create_tables.RepoInfo) -> index_lock.LockHolder | None:
        """Who is (re-)indexing the repo. A lock read costs a few ms, so a searchable repo's answer
        is kept for a moment (per generation: a finished rebuild is seen at once)."""
        if not repo.indexed_at:
            return index_lock.holder(self.db, repo.name)
        key, now = (repo.name, repo.prefix), time.monotonic()
        with self._lock:
            cached = self._holders.get(key)
        if cached is not None and now - cached[0] < HOLDER_CACHE_SECONDS:
            return cached[1]
        found = index_lock.holder(self.db, repo.name)
        with self._lock:
            self._holders[key] = (now, found)
        return found

    def _run(self, repo: create_tables.RepoInfo, text: str, options: SearchOptions, query_id: str | None,
             report: Progress) -> SearchResult:
        stages = _Stages()
        notices: list[str] = []
        started = time.perf_counter()
        parsed = parse_query(text)
        if options.hyde:
            report("hyde", "start", None, "")
        search_text, hyde = self._hyde(repo, parsed, options, stages, notices)
        hyde_ms = sum(stages.timings.get(s, 0.0) for s in ("hyde", "first_search", "expansion"))
        report("hyde", "done" if hyde["used"] else "skipped", hyde_ms if hyde["used"] else None, hyde["reason"])
        report("search", "start", None, "")
        # Whole-file BM25 and the exact-name lookups need no vector: they run beside the row search.
        file_rows = self._pool.submit(self._whole_file_bm25, repo, parsed, options) if options.mode != "vector" else None
        named = [self._pool.submit(self._exact_rows, repo, kind, parsed, options)
                 for kind in create_tables.ROW_TABLES] if parsed.symbols or parsed.files else []
        with stages.time("search"):
            pool, question_vector = self._hybrid(repo, search_text, options, options.pool_size(), stages)
        with stages.time("exact"):
            pool = _exact_first(parsed, pool, [_hit(row, kind) for kind, rows in
                                               zip(create_tables.ROW_TABLES, named) for row in rows.result()])
            pool = self._group_overloads(repo, pool, options)
        report("search", "done", stages.timings["search"] + stages.timings["exact"], f"{len(pool)} candidates")
        with stages.time("files"):
            bm25_files = file_rows.result() if file_rows is not None else []
            ranker = self.file_ranker or file_ranker_for(self.settings.file_model, parsed.kind)
            structure = ranker.weighs(STRUCTURE_FEATURES) if self.structure is None else self.structure
            candidates = rank_files(bm25_files, pool, parsed.about_tests, ranker, parsed.about_prose,
                                    parsed.terms, self._layout(repo) if structure else None)
            candidates = group_twins(candidates, self.settings.platform)
        if options.definitions:
            with stages.time("definitions"):
                self._rank_definitions(repo, candidates[:min(options.k, DEFINITION_FILES)], pool, parsed,
                                       question_vector)
        rerank = self._rerank(repo, parsed, candidates[:options.k], options, stages, notices, report)
        hits, candidates = _whole_name_first(parsed, hits_in_file_order(pool, candidates[:options.k]), candidates)
        hits = self._group_overloads(repo, hits, options)[:options.k]
        _show_relevance(hits, candidates, parsed)
        stages.timings["total"] = (time.perf_counter() - started) * 1000
        return SearchResult(id=query_id or uuid.uuid4().hex[:12], query=text,
                            expanded_query=search_text.text if hyde["used"] else "",
                            results=hits, timings_ms=stages.timings, rerank=rerank,
                            hyde=hyde, notices=notices, files=candidates[:options.k], file_candidates=candidates,
                            question_kind=parsed.kind,
                            file_model="given" if self.file_ranker else file_model_name(self.settings.file_model,
                                                                                         parsed.kind))

    # HyDE ---------------------------------------------------------------------------------------

    def _hyde(self, repo, parsed: ParsedQuery, options: SearchOptions, stages: _Stages,
              notices: list[str]) -> tuple[ParsedQuery, dict]:
        """Two HyDE steps; returns the query to search with and whether HyDE was used."""
        if not options.hyde:
            return parsed, {"used": False, "reason": "switched off"}
        languages = ", ".join(lang for lang, _ in sorted(
            repo.stats.files_by_language.items(), key=lambda item: -item[1])[:4]) or "unknown"
        try:
            with stages.time("hyde"):
                imagined = self.llm.complete("hyde", prompts.hyde_messages(parsed.text[:4000], languages),
                                             max_tokens=prompts.HYDE_MAX_TOKENS)
            first_query = _with_question(parse_query(imagined), parsed)
            with stages.time("first_search"):
                found, _ = self._hybrid(repo, first_query, options, FIRST_PASS, stages)
            with stages.time("expansion"):
                expanded = self.llm.complete("hyde", prompts.expansion_messages(
                    parsed.text[:2000], _snippets_for_expansion(found)),
                    max_tokens=prompts.EXPANSION_MAX_TOKENS)
        except LLMUnavailable as exc:
            notices.append(f"HyDE skipped, searching with the question alone: {exc}")
            return parsed, {"used": False, "reason": str(exc)}
        return _with_question(parse_query(expanded + "\n" + imagined), parsed), {"used": True, "reason": ""}

    # Search -------------------------------------------------------------------------------------

    def _hybrid(self, repo, query: ParsedQuery, options: SearchOptions, limit: int,
                stages: _Stages) -> tuple[list[Hit], list[float] | None]:
        """Search every row table; return candidates best first, the tables' rows interleaved,
        and the question's vector (None in BM25 mode).

        Each table's BM25 and vector rankings are fused here (`fuse_hybrid`), not by a LanceDB
        hybrid query: the BM25 queries need no vector, so they run on the pool while the query
        is being embedded, and a row still waiting for its vector keeps a fair place."""
        tables = {kind: self._table(repo, kind) for kind in create_tables.ROW_TABLES}
        # Declarations are found by name (`_exact_rows`) and as definitions of the files the
        # ranking lists, not here: a header's prototypes took pool places from the code itself
        # (jq's test items: file hit@5 0.67 with them, 1.00 without).
        where = " AND ".join(filter(None, [_where(options), "NOT declaration"]))
        text_query = (MultiMatchQuery(query.keywords, list(create_tables.FTS_COLUMNS), boosts=FTS_BOOSTS)
                      if query.keywords and options.mode != "vector" else None)
        texts = {kind: self._pool.submit(self._text_rows, tables[kind], text_query, where, limit)
                 for kind in tables} if text_query is not None else {}
        vectors: list = []
        if options.mode != "bm25":
            pieces = list(query.pieces) if options.pieces else []
            with stages.time("embed"):
                vectors = list(self.embedder.embed([query.semantic, *pieces]))
        # LanceDB releases the GIL: every table and query vector is searched at the same time.
        by_vector = iter(self._pool.map(lambda job: self._vector_rows(tables[job[0]], job[1], where, limit),
                                        [(kind, vector) for kind in tables for vector in vectors]))
        hits = []
        for kind in tables:
            vector_lists = [next(by_vector) for _ in vectors]
            rows = texts[kind].result() if kind in texts else []
            if vector_lists:
                rows = fuse_hybrid(vector_lists[0], rows)[:limit] if kind in texts else vector_lists[0]
            if len(vector_lists) > 1:  # a report's pieces: their vector rankings join the fused one
                rows = fuse_ranked([rows, *vector_lists[1:]])[:limit]
            hits += [_hit(row, kind) for row in rows]
        return _rank(hits, query.about_tests), (vectors[0] if vectors else None)

    def _vector_rows(self, table, vector, where: str | None, limit: int) -> list[dict]:
        builder = table.search(vector, query_type="vector").distance_type("cosine").ef(ANN_EF)
        # Naming the score column keeps lance from warning about its auto-projection.
        return _scored(_filtered(builder, where).select(SELECT + ["_distance"]).limit(limit).to_list(),
                       lambda row: 1.0 - row["_distance"])

    def _text_rows(self, table, text_query, where: str | None, limit: int) -> list[dict]:
        """BM25 rows, each saying whether it has its vector yet (`_no_vector`)."""
        columns = {**{column: column for column in SELECT}, "_score": "_score",
                   "_no_vector": create_tables.NO_VECTOR}
        builder = table.search(text_query, query_type="fts")
        return _scored(_filtered(builder, where).select(columns).limit(limit).to_list(),
                       lambda row: row["_score"])

    def _whole_file_bm25(self, repo, parsed: ParsedQuery, options: SearchOptions) -> list[dict]:
        """Files by BM25 over their whole text (`file_text`: the same identifier-aware tokens as
        the eval's plain baseline), against every distinct term of the question, best first.

        Whole-file evidence is what a row-level search lacks: a file whose ten functions each
        match a little, or whose bug lives in module-level code, ranks here."""
        terms = parsed.terms
        if not terms:
            return []
        where = " AND ".join(filter(None, [f"kind = '{FILE_KIND}'", _where(options)]))
        query = MatchQuery(" ".join(terms), create_tables.FILE_TEXT_COLUMN)
        return (self._table(repo, "modules").search(query, query_type="fts").where(where, prefilter=True)
                .select(["file_path", "role", "language", "_score"]).limit(FILE_BM25_POOL).to_list())

    def _rank_definitions(self, repo, files: list[FileHit], pool: list[Hit], parsed: ParsedQuery,
                          question_vector: list[float] | None) -> None:
        """Give the best files their best definitions, weighing all of them, not only the pool's:
        the function a report is about often matches it less than a sibling does across the repo.

        All of the files' rows are read without their code and references (most are only
        weighed); the few chosen from outside the pool are then read whole."""
        if not files:
            return
        paths = [f.path for f in files]
        in_pool = {hit.id: hit for hit in pool}
        definitions, vectors, texts = [], [], []
        for kind, rows in zip(DEFINITION_TABLES, self._pool.map(
                lambda kind: self._light_rows(repo, kind, paths), DEFINITION_TABLES)):
            for row, vector, tokens in rows:
                definitions.append(in_pool.get(row["id"]) or _hit(
                    {**row, "signature": "", "doc": "", "code": "", "parent": None, "references": [],
                     "_score_value": 0.0}, kind))
                vectors.append(vector)
                texts.append(tokens)
        named = {hit.id for hit in definitions if any(_names(hit, name) for name in parsed.symbols)}
        features = definition_features(definitions, vectors, texts, pool, question_vector, parsed.terms, named)
        rank_definitions(files, definitions, features, self.symbol_ranker)
        outside = [hit for file in files for hit in file.symbols if hit.id not in in_pool]
        if outside:
            whole = self._whole_hits(repo, outside)
            for file in files:
                file.symbols = [whole.get(hit.id, hit) for hit in file.symbols]
                for definition in file.definitions:
                    definition.hit = whole.get(definition.hit.id, definition.hit)

    def _whole_hits(self, repo, hits: list[Hit]) -> dict[str, Hit]:
        """Light rows (`_light_rows`: no code, signature or doc) read whole, by id; rows that
        already have their code are not read again."""
        light = [hit for hit in hits if not hit.code]
        if not light:
            return {}
        paths = sorted({hit.file_path for hit in light})

        def read_whole(kind: str) -> list[Hit]:
            ids = [hit.id for hit in light if hit.table == kind]
            where = f"{create_tables.sql_in('file_path', paths)} AND {create_tables.sql_in('id', ids)}"
            rows = self._table(repo, kind).search().where(where).select(SELECT).limit(len(ids)).to_list()
            return [_hit({**row, "_score_value": 0.0}, kind) for row in rows]

        return {hit.id: hit for found in self._pool.map(read_whole, sorted({hit.table for hit in light}))
                for hit in found}

    def _light_rows(self, repo, kind: str, paths: list[str]) -> list[LightRow]:
        """The files' definitions and module code without code (DEFINITION_COLUMNS), each with its
        vector as an array (None: not yet embedded) and its search text's tokens. Read as Arrow,
        since a vector turned into a Python list costs more than its query, and kept for the next
        search while the table stays at its version."""
        table = self._table(repo, kind)
        version = (table.name, table.version)
        with self._lock:
            found = {path: self._definitions[(*version, path)] for path in paths
                     if (*version, path) in self._definitions}
            for path in found:
                self._definitions.move_to_end((*version, path))
        missing = [path for path in paths if path not in found]
        if missing:
            where = f"{create_tables.sql_in('file_path', missing)} AND NOT {create_tables.sql_in('kind', [DOC_KIND, FILE_KIND])}"
            read = table.search().where(where).select(DEFINITION_COLUMNS).limit(MAX_DEFINITIONS).to_arrow()
            column = read.column("vector").combine_chunks()
            matrix = column.values.to_numpy(zero_copy_only=False).reshape(len(column), -1) if len(column) else None
            absent = column.is_null().to_numpy(zero_copy_only=False)
            fresh: dict[str, list[LightRow]] = {path: [] for path in missing}
            for i, row in enumerate(read.drop_columns(["vector"]).to_pylist()):
                tokens = row.pop("search_text").split()
                fresh[row["file_path"]].append((row, None if absent[i] else matrix[i], tokens))
            with self._lock:
                for path, rows in fresh.items():
                    self._definitions[(*version, path)] = rows
                while len(self._definitions) > DEFINITION_CACHE_FILES:
                    self._definitions.popitem(last=False)
            found.update(fresh)
        return [entry for path in paths for entry in found[path]]

    def _rerank(self, repo, parsed: ParsedQuery, files: list[FileHit], options: SearchOptions, stages: _Stages,
                notices: list[str], report: Progress) -> dict:
        """The cross-encoder reads the question with each of the best files' best definitions
        and reorders them (`rerank.rerank_definitions`); the files keep their order."""
        wanted = self.settings.rerank if options.rerank is None else options.rerank
        if not wanted:
            report("rerank", "skipped", None, "switched off")
            return {"used": False, "reason": "switched off"}
        from codeqa.search.rerank import RerankUnavailable, rerank_candidates, rerank_definitions
        reranker = self.reranker()
        status = reranker.status()
        if not status.available:
            notices.append(f"Rerank unavailable: {status.reason}")
            report("rerank", "skipped", None, status.reason)
            return {"used": False, "reason": status.reason}
        chosen = rerank_candidates(files)[:reranker.max_documents]
        if not chosen:
            report("rerank", "skipped", None, "no definitions to rerank")
            return {"used": False, "reason": "no definitions to rerank"}
        report("rerank", "start", None, f"{len(chosen)} definitions")
        try:
            with stages.time("rerank"):
                whole = self._whole_hits(repo, [definition.hit for definition in chosen])
                for definition in chosen:
                    definition.hit = whole.get(definition.hit.id, definition.hit)
                scores = reranker.score(parsed.semantic, [create_tables.embedding_text(_row_of(d.hit)) for d in chosen])
        except RerankUnavailable as exc:
            notices.append(f"Rerank unavailable: {exc}")
            report("rerank", "skipped", None, str(exc))
            return {"used": False, "reason": str(exc)}
        rerank_definitions(files, {definition.hit.id: score for definition, score in zip(chosen, scores)})
        report("rerank", "done", stages.timings["rerank"], "")
        return {"used": True, "reason": status.reason}

    def _group_overloads(self, repo, hits: list[Hit], options: SearchOptions) -> list[Hit]:
        """Each declaration with an implementation in the repository gives its place to that
        implementation (`overloads.py`): a header's prototype to the `.c` function, an in-class
        declaration to the out-of-class definition. The implementation keeps the declaration's
        score and exactness, so the evidence lands on the file that holds the code."""
        names = declared_names([hit.signed() for hit in hits])
        if not names:
            return hits
        where = f"{create_tables.sql_in('qualified_name', names)} AND NOT declaration"
        extra = _where(options)
        where += f" AND {extra}" if extra else ""
        found = [_hit({**row, "_score_value": 0.0}, kind) for kind in ("methods", "classes")
                 for row in self._table(repo, kind).search().where(where).select(SELECT)
                 .limit(MAX_EXACT_ROWS).to_list()]
        found.sort(key=lambda hit: (hit.role == "test", hit.file_path, hit.start_line))
        everything = hits + found
        grouped = []
        for place in group_declarations([hit.signed() for hit in hits], [hit.signed() for hit in found]):
            hit, first = everything[place.index], hits[place.at]
            hit.score, hit.exact = max(hit.score, first.score), hit.exact or first.exact
            if place.signatures is not None:
                hit.signatures = place.signatures
            grouped.append(hit)
        return grouped

    def _exact_rows(self, repo, kind: str, parsed: ParsedQuery, options: SearchOptions) -> list[dict]:
        """Rows of one table that the question names: definitions by name from the definition
        tables, and each named file as its `file` row (the whole file) from the modules table."""
        if kind == "modules":
            clauses = [f"file_path = {sql_quote(path)} OR file_path LIKE {sql_quote('%/' + sql_like_escape(path))}"
                       for path in parsed.files]
            if parsed.whole_name and parsed.whole_name not in parsed.files and "." not in parsed.whole_name:
                clauses.append(f"name LIKE {sql_quote(sql_like_escape(parsed.whole_name) + '.%')}")  # `view`: view.js
            where = f"kind = '{FILE_KIND}' AND ({' OR '.join(clauses)})" if clauses else ""
        elif parsed.symbols:
            names = ", ".join(sql_quote(s) for s in parsed.symbols)
            last = ", ".join(sql_quote(s.rsplit(".", 1)[-1]) for s in parsed.symbols if "." in s)
            where = f"(qualified_name IN ({names}) OR name IN ({names})"
            where += f" OR (name IN ({last}) AND kind != '{DOC_KIND}'))" if last else ")"
        else:
            where = ""
        if not where:
            return []
        extra = _where(options)
        if extra:
            where += f" AND {extra}"
        rows = self._table(repo, kind).search().where(where).select(SELECT).limit(MAX_EXACT_ROWS).to_list()
        if kind == "modules":  # `view.%` also matched view.test.js: a file stem must be the whole name
            rows = [row for row in rows if any(_names_file(row["file_path"], name)
                                               for name in parsed.files + (parsed.whole_name,) if name)]
        for row in rows:
            row["_score_value"] = 0.0
        return rows


def _exact_first(parsed: ParsedQuery, hits: list[Hit], exact: list[Hit]) -> list[Hit]:
    """Put the rows the question names exactly (`exact`: symbols, files) on top, in the order named."""
    if not exact:
        return hits
    ranked = {h.id: i for i, h in enumerate(hits)}
    order = {name: i for i, name in enumerate(parsed.symbols + parsed.files)}

    def rank(hit: Hit) -> tuple[int, int]:
        named = min((i for name, i in order.items() if _names(hit, name)), default=len(order))
        return named, ranked.get(hit.id, len(ranked))

    exact = sorted({h.id: h for h in exact}.values(), key=rank)[:MAX_EXACT]
    top = hits[0].score if hits else 1.0
    lifted = []
    for hit in exact:
        hit = next((h for h in hits if h.id == hit.id), hit)
        hit.exact, hit.score = True, max(hit.score, top)
        lifted.append(hit)
    lifted_ids = {h.id for h in lifted}
    return lifted + [h for h in hits if h.id not in lifted_ids]


def _names_file(path: str, name: str) -> bool:
    """`name` is the file's path, a tail of it (`src/view.js`, `view.js`), or its stem (`view`)."""
    base = path.rsplit("/", 1)[-1]
    return path == name or path.endswith("/" + name) or ("." not in name and base.rsplit(".", 1)[0] == name)


def _named_by_whole(hit: Hit, whole_name: str) -> bool:
    """The query, being exactly one name, names this hit: its definition or its file."""
    if hit.table == "modules":
        return hit.kind == FILE_KIND and _names_file(hit.file_path, whole_name)
    return _row_names({"qualified_name": hit.qualified_name, "name": hit.name}, whole_name)


def _whole_name_first(parsed: ParsedQuery, hits: list[Hit], files: list[FileHit]) -> tuple[list[Hit], list[FileHit]]:
    """A query that is exactly a name (`colordemo`, `Context.invoke`, `view.js`, `view`) puts
    what it names first, source before tests, whatever the rest of the evidence says; their
    files lead the file list likewise. Any other query is left as ranked."""
    if not parsed.whole_name:
        return hits, files
    named = sorted((i for i, hit in enumerate(hits) if hit.exact and _named_by_whole(hit, parsed.whole_name)),
                   key=lambda i: (hits[i].role == "test", hits[i].table == "modules", i))
    if not named:
        return hits, files
    first = [hits[i] for i in named]
    chosen = {hit.id for hit in first}
    paths = list(dict.fromkeys(hit.file_path for hit in first))
    ahead = sorted((f for f in files if f.path in paths), key=lambda f: paths.index(f.path))
    return first + [h for h in hits if h.id not in chosen], ahead + [f for f in files if f.path not in paths]


def _show_relevance(hits: list[Hit], files: list[FileHit], parsed: ParsedQuery) -> None:
    """The score a reader sees (`Hit.relevance`, `FileHit.relevance`): the file model's
    estimate that the result's file is one the answer needs (`ranking.file_probability`),
    1.0 for what a query that is exactly a name names, and never more than the score of the
    result above it, so the scores read down a list as its order does."""
    chance = {file.path: file_probability(file.score) for file in files}
    certain = {hit.id for hit in hits if parsed.whole_name and hit.exact and _named_by_whole(hit, parsed.whole_name)}
    ceiling = 1.0
    for hit in hits:
        hit.relevance = ceiling = min(ceiling, 1.0 if hit.id in certain else chance.get(hit.file_path, ceiling))
    certain_files = {hit.file_path for hit in hits if hit.id in certain}
    ceiling = 1.0
    for file in files:
        file.relevance = ceiling = min(ceiling, 1.0 if file.path in certain_files else chance[file.path])


def _row_names(row: dict, name: str) -> bool:
    return row["qualified_name"] == name or row["name"] == name or (
        "." in name and row["qualified_name"].endswith("." + name.split(".", 1)[-1])
        and row["name"] == name.rsplit(".", 1)[-1])


def _names(hit: Hit, name: str) -> bool:
    return _row_names({"qualified_name": hit.qualified_name, "name": hit.name}, name) or (
        hit.file_path == name or hit.file_path.endswith("/" + name))


def _hit(row: dict, table: str) -> Hit:
    return Hit(id=row["id"], table=table, kind=row["kind"], name=row["name"],
               qualified_name=row["qualified_name"], file_path=row["file_path"],
               start_line=row["start_line"], end_line=row["end_line"], language=row["language"],
               role=row["role"], signature=row["signature"] or "", doc=row["doc"] or "", code=row["code"] or "",
               # Name matches (`x.m()` with `x` of unknown type) are kept for @references, not
               # shown as uses nor fed to ranking: `reference_count` counts resolved uses only.
               parent=row["parent"], references=[r for r in row["references"] or []
                                                 if is_resolved(r.get("resolution") or "")],
               reference_count=row["reference_count"] or 0, score=row["_score_value"],
               declaration=bool(row.get("declaration")), signatures=list(row.get("signatures") or []))


def _rank(hits: list[Hit], about_tests: bool) -> list[Hit]:
    """Best first; test files count a little less unless the question is about tests, and a
    file row gives its place to a definition of its own file."""
    if not about_tests:
        for hit in hits:
            if hit.role == "test":
                hit.score *= TEST_FILE_WEIGHT
    return _files_yield_to_their_definitions(sorted(hits, key=lambda h: -h.score))


def _files_yield_to_their_definitions(ranked: list[Hit]) -> list[Hit]:
    """A file row gives way to the definitions of its own file found in the same pool.

    The file matched as a whole and its definition is the more precise answer (the context
    shows a definition inside its file anyway). A file row ranked above its file's best
    definition hands it its place and score; a file row ranked below one is redundant. Either
    way the file row goes to the end of the pool. A file with no definition in the pool keeps
    its row where it ranked, so a file that only its file row finds stays found."""
    out = list(ranked)
    demoted: list[Hit] = []
    shown: set[str] = set()  # files with a definition at or above the current place
    at = 0
    while at < len(out):
        hit = out[at]
        if hit.kind != FILE_KIND:
            if hit.table != "modules":
                shown.add(hit.file_path)
            at += 1
            continue
        below = None if hit.file_path in shown else next(
            (j for j in range(at + 1, len(out)) if out[j].file_path == hit.file_path and out[j].table != "modules"),
            None)
        if hit.file_path not in shown and below is None:
            at += 1
            continue
        demoted.append(out.pop(at))
        if below is not None:
            definition = out.pop(below - 1)
            definition.score = hit.score
            out.insert(at, definition)
    floor = min((h.score for h in out), default=0.0)
    for hit in demoted:
        hit.score = floor
    return out + demoted


def _filtered(builder, where: str | None):
    return builder.where(where, prefilter=True) if where else builder


def _scored(rows: list[dict], score: Callable[[dict], float]) -> list[dict]:
    for row in rows:
        row["_score_value"] = float(score(row))
    return rows


def fuse_hybrid(vector_rows: list[dict], text_rows: list[dict]) -> list[dict]:
    """Vector and text rankings of one table by reciprocal-rank fusion, as LanceDB's RRF
    reranker does, except that a text row without a vector yet (`_no_vector`) counts its text
    rank twice: in place of the vector rank it cannot have, rather than losing to every row
    that was embedded sooner. A row's `_score_value` becomes its fused score."""
    fused = fuse_ranked([vector_rows, text_rows])
    for rank, row in enumerate(text_rows, 1):
        if row.get("_no_vector"):  # the same dict fuse_ranked kept: no vector list can hold it
            row["_score_value"] += 1.0 / (RRF_K + rank)
    return sorted(fused, key=lambda row: -row["_score_value"])


def fuse_ranked(lists: list[list[dict]]) -> list[dict]:
    """Rows of several rankings of one table, by reciprocal-rank fusion (RRF_K): the main query's
    and each piece's. A row's `_score_value` becomes its fused score."""
    fused: dict[str, dict] = {}
    scores: dict[str, float] = {}
    for rows in lists:
        for rank, row in enumerate(rows, 1):
            fused.setdefault(row["id"], row)
            scores[row["id"]] = scores.get(row["id"], 0.0) + 1.0 / (RRF_K + rank)
    for key, row in fused.items():
        row["_score_value"] = scores[key]
    return sorted(fused.values(), key=lambda row: -row["_score_value"])


def _with_question(generated: ParsedQuery, question: ParsedQuery) -> ParsedQuery:
    """Search text from LLM output, keeping the question's own names and words in BM25."""
    keywords = list(dict.fromkeys(question.keywords.split() + generated.keywords.split()))[:MAX_KEYWORDS]
    semantic = (generated.text[:EMBED_QUERY_CHARS // 2] + "\n" + question.semantic)[:EMBED_QUERY_CHARS * 2]
    return ParsedQuery(generated.text, semantic, " ".join(keywords), question.symbols, question.files,
                       question.about_tests, question.about_prose, kind=question.kind)


def _snippets_for_expansion(hits: list[Hit]) -> str:
    """The first search's findings for HyDE step 2, each once: where, signature, doc line."""
    lines = []
    for hit in hits[:2 * FIRST_PASS]:
        doc = hit.doc.strip().splitlines()[0] if hit.doc.strip() else ""
        head = hit.signature or next(iter(hit.code.strip().splitlines()), hit.name)
        lines.append(f"{hit.file_path}:{hit.start_line} {hit.qualified_name}: {head[:160]}"
                     + (f" — {doc[:120]}" if doc else ""))
    return "\n".join(lines)


def _row_of(hit: Hit) -> dict:
    """The fields `create_tables.embedding_text` reads: the reranker reads what the index embeds."""
    return {"file_path": hit.file_path, "kind": hit.kind, "qualified_name": hit.qualified_name,
            "signature": hit.signature, "doc": hit.doc, "code": hit.code}
