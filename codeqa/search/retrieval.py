"""Question → ranked code (methods, classes, files and module-level code) → context: the
search half of CodeQA.

    Retriever(settings).search("repo", "how are carts totalled?", SearchOptions(k=10))

(`codeqa search` and `codeqa context` are the CLI over it, in `codeqa.cli`.)

Pipeline: HyDE (the LLM writes the code it expects) → hybrid search → HyDE with the real
code found (the question rewritten with the codebase's names) → hybrid search over a
candidate pool → files ranked by their evidence → the best files' definitions weighed → optional
cross-encoder rerank of those definitions → the list's order rules (a sure file's further
definitions and templates last for a report, exact-name matches on top, no file crowding
it). Every stage can be switched off and reports its time; without an LLM, search still runs
and says so. Each stage's idea lives in a module of its own (query, fusion, pool, exact,
ranking, structure, twins, rerank, sure_file, templates, crowding); this one runs them in
order against the index (`store.reader`).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar, get_args

import numpy as np

from codeqa.core.config import Settings
from codeqa.core.errors import LLMUnavailable
from codeqa.indexing.embeddings import get_embedder
from codeqa.llm import prompts
from codeqa.search import exact
from codeqa.search.crowding import uncrowded
from codeqa.search.fusion import fuse_hybrid, fuse_ranked
from codeqa.search.options import SearchOptions, check_options
from codeqa.search.overloads import declared_names, group_declarations
from codeqa.search.pool import rank_pool
from codeqa.search.query import ParsedQuery, check_query, parse_query, with_question
from codeqa.search.question_kind import QuestionKind
from codeqa.search.ranking import (
    DEFINITION_FILES,
    LinearRanker,
    Tokens,
    default_symbol_ranker,
    definition_features,
    file_model_name,
    file_probability,
    file_ranker_for,
    hits_in_file_order,
    rank_definitions,
    rank_files,
)
from codeqa.search.results import FileHit, Hit, SearchResult
from codeqa.search.structure import STRUCTURE_FEATURES, RepoLayout
from codeqa.search.sure_file import deepen_sure_file
from codeqa.search.templates import templates_last
from codeqa.search.twins import group_twins
from codeqa.store import lease, registry
from codeqa.store.errors import IndexNotReadyError, ModelMismatchError
from codeqa.store.index import Index
from codeqa.store.reader import RepoReader, Scope
from codeqa.store.rows import embedding_text
from codeqa.store.schema import ROW_IDENTITY, ROW_TABLES, SYMBOL_TABLES

if TYPE_CHECKING:
    from codeqa.core.records import RepoInfo
    from codeqa.indexing.embeddings import Embedder
    from codeqa.llm.client import LLMClient

HOLDER_CACHE_SECONDS = 2.0  # how stale "being re-indexed" may be, to keep a lock read off most searches
MAX_EXACT_ROWS = 50  # rows read per table to choose exact mentions from
FTS_BOOSTS = [1.0, 2.0, 1.0]  # of schema.FTS_COLUMNS, in order
SELECT = [
    *ROW_IDENTITY,
    *("role", "signature", "doc", "code", "parent", "references", "reference_count", "declaration", "signatures"),
]
FIRST_PASS = 5  # rows of each table, shown to HyDE step 2
ANN_EF = 100  # HNSW search breadth where a table has a vector index (recall@30 0.99 on Django)
LAYOUTS_KEPT = 8  # repositories' structures kept in memory (a few MB each at most)
FILE_BM25_POOL = 50  # files whole-file BM25 ranks, as evidence for the file ranking (ranking.py)
# Where a file's definitions and module-level code are (docs sections and file rows left out).
DEFINITION_TABLES = ROW_TABLES
MAX_DEFINITIONS = 1_000  # rows read per table for the best files' definitions
DEFINITION_CACHE_FILES = 1_000  # files whose light rows (~2 KB each) a retriever keeps for later searches
DEFINITION_COLUMNS = [*ROW_IDENTITY, "role", "reference_count", "declaration", "search_text", "vector"]


Progress = Callable[[str, str, "float | None", str], None]
T = TypeVar("T")
LightRow = tuple[dict, np.ndarray | None, Tokens]  # a definition's columns, its vector, its search tokens


def _silent(stage: str, state: str, ms: float | None, detail: str) -> None:
    """The default progress listener: nobody is listening."""


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


@lru_cache(maxsize=16)
def load_models(settings: Settings, threads: int | None = 1) -> Embedder:
    """Load the models a search uses: the embedder `Retriever(settings, threads=threads)` embeds
    questions with, and the reranker where searches rerank by default. Once per process and
    settings (the models themselves are shared: `get_embedder`, `get_reranker`), so a face may call
    this early, on another thread, and the `Retriever` it builds then finds them loaded (no second
    warm-up query to an embedding server): `Services.retriever` does, while LanceDB imports (most
    of a one-shot `codeqa search`)."""
    embedder = get_embedder(settings, threads=threads)
    embedder.embed(["warm up"])
    if settings.rerank or settings.rerank_chat:
        from codeqa.search.rerank import get_reranker

        get_reranker(settings).load()
    return embedder


class Retriever:
    """Loads the embedder, LLM client and reranker once; `search()` is safe to call from threads.

    `llm` is a client, or a function that returns one when a search first asks the LLM (HyDE is
    off by default, so most processes never import the OpenAI client). `file_ranker` and
    `symbol_ranker` replace the shipped models (`models/*.json`): the eval's ablation refits
    them without a group of features."""

    def __init__(
        self,
        settings: Settings,
        llm: LLMClient | Callable[[], LLMClient] | None = None,
        threads: int | None = 1,
        index: Index | None = None,
        file_ranker: LinearRanker | None = None,
        symbol_ranker: LinearRanker | None = None,
        structure: bool | None = None,
    ) -> None:
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
        self.index = index if index is not None else Index.connect(settings)  # services.Services shares one
        self.embedder = load_models(settings, threads)  # now, not inside the first query's timing
        self._llm = llm
        self._lock = threading.Lock()
        self._holders: dict[tuple[str, str], tuple[float, lease.LockHolder | None]] = {}
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

    def reranker(self) -> Any:
        from codeqa.search.rerank import get_reranker

        return get_reranker(self.settings)

    def _reads(self, repo: RepoInfo) -> Executor:
        """Where a search's reads run: side by side on the pool while they are LanceDB queries
        (each mostly waits), one after another when the repo is held in memory (each is a few ms
        of numpy, and handing them to threads cost more: p50 31 → 23 ms on Django)."""
        return _IN_TURN if self.index.reader(repo).in_memory() else self._pool

    def _layout(self, repo: RepoInfo) -> RepoLayout:
        """The repository's structure (structure.RepoLayout) at its current index version, built
        once per version from the file rows (every indexed file has one)."""
        reader = self.index.reader(repo)
        key = reader.version("modules")
        with self._lock:
            layout = self._layouts.get(key)
        if layout is None:
            rows = reader.file_rows(["file_path", "role", "language"])
            layout = RepoLayout.of({row["file_path"]: (row["role"], row["language"]) for row in rows})
            with self._lock:
                self._layouts[key] = layout
                while len(self._layouts) > LAYOUTS_KEPT:
                    self._layouts.popitem(last=False)
        return layout

    def search(
        self,
        repo_name: str,
        query: str,
        options: SearchOptions | None = None,
        query_id: str | None = None,
        progress: Progress | None = None,
    ) -> SearchResult:
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
            current = self.index.repo(repo.name)  # UnknownRepoError once it was removed
            if current.prefix == repo.prefix:
                raise
            repo, notices = self._searchable(repo_name)
            result = self._run(repo, text, options, query_id, progress or _silent)
        result.notices[:0] = notices
        return result

    def _searchable(self, repo_name: str) -> tuple[RepoInfo, list[str]]:
        """The repo's registry row if its index can be searched, and what to tell the user about it."""
        repo = self.index.repo(repo_name)
        registry.check_layout(repo)
        if repo.embedding_model != self.embedder.model_id:
            raise ModelMismatchError(
                f"Repo {repo.name!r} was indexed with {repo.embedding_model}, but the configured "
                f"embedding model is {self.embedder.model_id}."
            )
        running = self._lock_holder(repo)
        if not repo.indexed_at:
            if running is not None:
                raise IndexNotReadyError(
                    f"{repo.name} is being indexed and its first run has not finished "
                    f"({running.describe(time.time())}); search it again when it has."
                )
            raise IndexNotReadyError(
                f"{repo.name}'s index run stopped before it finished: run `python preprocessing.py index` on it again."
            )
        notices = []
        if running is not None and running.purpose == "rebuild" and repo.indexed_at < running.acquired_at:
            notices.append(
                f"{repo.name} is being re-indexed: these results come from its index as it "
                "was before, until the new one is searchable."
            )
        if repo.stats.vectors_pending:
            state = (
                "its index run is embedding them now"
                if running is not None
                else "the index run that was embedding them stopped: run `python preprocessing.py index` again"
            )
            notices.append(
                f"{repo.stats.embedded_percent}% of {repo.name}'s rows have their vectors so far "
                f"({state}); the others are found by their text and names meanwhile."
            )
        return repo, notices

    def _lock_holder(self, repo: RepoInfo) -> lease.LockHolder | None:
        """Who is (re-)indexing the repo. A lock read costs a few ms, so a searchable repo's answer
        is kept for a moment (per generation: a finished rebuild is seen at once)."""
        if not repo.indexed_at:
            return self.index.lock_holder(repo.name)
        key, now = (repo.name, repo.prefix), time.monotonic()
        with self._lock:
            cached = self._holders.get(key)
        if cached is not None and now - cached[0] < HOLDER_CACHE_SECONDS:
            return cached[1]
        found = self.index.lock_holder(repo.name)
        with self._lock:
            self._holders[key] = (now, found)
        return found

    def _run(
        self, repo: RepoInfo, text: str, options: SearchOptions, query_id: str | None, report: Progress
    ) -> SearchResult:
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
        reads = self._reads(repo)
        # Whole-file BM25 and the exact-name lookups need no vector: they run beside the row search.
        file_rows = reads.submit(self._whole_file_bm25, repo, parsed, options) if options.mode != "vector" else None
        named = (
            [reads.submit(self._exact_rows, repo, kind, parsed, options) for kind in ROW_TABLES]
            if parsed.symbols or parsed.files
            else []
        )
        with stages.time("search"):
            pool, question_vector = self._hybrid(repo, search_text, options, options.pool_size(), stages)
        with stages.time("exact"):
            pool = exact.exact_first(
                parsed,
                pool,
                [
                    Hit.from_row(row, kind)
                    for kind, rows in zip(ROW_TABLES, named, strict=False)
                    for row in rows.result()
                ],
            )
            pool = self._group_overloads(repo, pool, options)
        report("search", "done", stages.timings["search"] + stages.timings["exact"], f"{len(pool)} candidates")
        with stages.time("files"):
            bm25_files = file_rows.result() if file_rows is not None else []
            ranker = self.file_ranker or file_ranker_for(self.settings.file_model, parsed.kind)
            structure = ranker.weighs(STRUCTURE_FEATURES) if self.structure is None else self.structure
            candidates = rank_files(
                bm25_files,
                pool,
                parsed.about_tests,
                ranker,
                parsed.about_prose,
                parsed.terms,
                self._layout(repo) if structure else None,
            )
            candidates = group_twins(candidates, self.settings.platform)
        if options.definitions:
            with stages.time("definitions"):
                self._rank_definitions(
                    repo, candidates[: min(options.k, DEFINITION_FILES)], pool, parsed, question_vector
                )
        rerank = self._rerank(repo, parsed, candidates[: options.k], options, stages, notices, report)
        if deepen_sure_file(candidates[: options.k], parsed.kind):  # files have definitions only when weighed
            self._read_shown(repo, candidates[:1])
        listed = templates_last(hits_in_file_order(pool, candidates[: options.k], parsed.kind), parsed.kind)
        hits, candidates = exact.whole_name_first(parsed, listed, candidates)
        hits = uncrowded(self._group_overloads(repo, hits, options))[: options.k]
        _show_relevance(hits, candidates, parsed)
        stages.timings["total"] = (time.perf_counter() - started) * 1000
        return SearchResult(
            id=query_id or uuid.uuid4().hex[:12],
            query=text,
            expanded_query=search_text.text if hyde["used"] else "",
            results=hits,
            timings_ms=stages.timings,
            rerank=rerank,
            hyde=hyde,
            notices=notices,
            files=candidates[: options.k],
            file_candidates=candidates,
            question_kind=parsed.kind,
            file_model="given" if self.file_ranker else file_model_name(self.settings.file_model, parsed.kind),
        )

    # HyDE ---------------------------------------------------------------------------------------

    def _hyde(
        self, repo, parsed: ParsedQuery, options: SearchOptions, stages: _Stages, notices: list[str]
    ) -> tuple[ParsedQuery, dict]:
        """Two HyDE steps; returns the query to search with and whether HyDE was used."""
        if not options.hyde:
            return parsed, {"used": False, "reason": "switched off"}
        languages = (
            ", ".join(lang for lang, _ in sorted(repo.stats.files_by_language.items(), key=lambda item: -item[1])[:4])
            or "unknown"
        )
        try:
            with stages.time("hyde"):
                imagined = self.llm.complete(
                    "hyde", prompts.hyde_messages(parsed.text[:4000], languages), max_tokens=prompts.HYDE_MAX_TOKENS
                )
            first_query = with_question(parse_query(imagined), parsed)
            with stages.time("first_search"):
                found, _ = self._hybrid(repo, first_query, options, FIRST_PASS, stages)
            with stages.time("expansion"):
                expanded = self.llm.complete(
                    "hyde",
                    prompts.expansion_messages(parsed.text[:2000], _snippets_for_expansion(found)),
                    max_tokens=prompts.EXPANSION_MAX_TOKENS,
                )
        except LLMUnavailable as exc:
            notices.append(f"HyDE skipped, searching with the question alone: {exc}")
            return parsed, {"used": False, "reason": str(exc)}
        return with_question(parse_query(expanded + "\n" + imagined), parsed), {"used": True, "reason": ""}

    # Search -------------------------------------------------------------------------------------

    def _hybrid(
        self, repo, query: ParsedQuery, options: SearchOptions, limit: int, stages: _Stages
    ) -> tuple[list[Hit], list[float] | None]:
        """Search every row table; return candidates best first, the tables' rows interleaved,
        and the question's vector (None in BM25 mode).

        Each table's BM25 and vector rankings are fused here (`fuse_hybrid`), not by a LanceDB
        hybrid query: the BM25 queries need no vector, so they run on the pool while the query
        is being embedded (a repo held in memory is read in turn: `_reads`), and a row still
        waiting for its vector keeps a fair place."""
        reader, reads = self.index.reader(repo), self._reads(repo)
        # Declarations are found by name (`_exact_rows`) and as definitions of the files the
        # ranking lists, not here: a header's prototypes took pool places from the code itself
        # (jq's test items: file hit@5 0.67 with them, 1.00 without).
        scope = options.scope()
        texts = (
            {kind: reads.submit(self._text_rows, reader, kind, query.keywords, scope, limit) for kind in ROW_TABLES}
            if query.keywords and options.mode != "vector"
            else {}
        )
        vectors: list = []
        if options.mode != "bm25":
            pieces = list(query.pieces) if options.pieces else []
            with stages.time("embed"):
                vectors = list(self.embedder.embed([query.semantic, *pieces]))
        # LanceDB releases the GIL: every table and query vector is searched at the same time.
        by_vector = iter(
            reads.map(
                lambda job: self._vector_rows(reader, job[0], job[1], scope, limit),
                [(kind, vector) for kind in ROW_TABLES for vector in vectors],
            )
        )
        hits = []
        for kind in ROW_TABLES:
            vector_lists = [next(by_vector) for _ in vectors]
            rows = texts[kind].result() if kind in texts else []
            if vector_lists:
                rows = fuse_hybrid(vector_lists[0], rows)[:limit] if kind in texts else vector_lists[0]
            if len(vector_lists) > 1:  # a report's pieces: their vector rankings join the fused one
                rows = fuse_ranked([rows, *vector_lists[1:]])[:limit]
            hits += [Hit.from_row(row, kind) for row in rows]
        return rank_pool(hits, query.about_tests), (vectors[0] if vectors else None)

    @staticmethod
    def _vector_rows(reader: RepoReader, kind: str, vector: np.ndarray, scope: Scope, limit: int) -> list[dict]:
        rows = reader.vector_search(kind, vector, scope, SELECT, limit, ANN_EF, implementations_only=True)
        return _scored(rows, lambda row: 1.0 - row["_distance"])

    @staticmethod
    def _text_rows(reader: RepoReader, kind: str, keywords: str, scope: Scope, limit: int) -> list[dict]:
        """BM25 rows, each saying whether it has its vector yet (`_no_vector`)."""
        rows = reader.text_search(kind, keywords, scope, SELECT, limit, FTS_BOOSTS, implementations_only=True)
        return _scored(rows, lambda row: row["_score"])

    def _whole_file_bm25(self, repo, parsed: ParsedQuery, options: SearchOptions) -> list[dict]:
        """Files by BM25 over their whole text (`file_text`: the same identifier-aware tokens as
        the eval's plain baseline), against every distinct term of the question, best first.

        Whole-file evidence is what a row-level search lacks: a file whose ten functions each
        match a little, or whose bug lives in module-level code, ranks here."""
        terms = parsed.terms
        if not terms:
            return []
        return self.index.reader(repo).file_text_search(terms, options.scope(), FILE_BM25_POOL)

    def _rank_definitions(
        self, repo, files: list[FileHit], pool: list[Hit], parsed: ParsedQuery, question_vector: list[float] | None
    ) -> None:
        """Give the best files their best definitions, weighing all of them, not only the pool's:
        the function a report is about often matches it less than a sibling does across the repo.

        All of the files' rows are read without their code and references (most are only
        weighed); the few chosen from outside the pool are then read whole."""
        if not files:
            return
        paths = [f.path for f in files]
        in_pool = {hit.id: hit for hit in pool}
        definitions, vectors, texts = [], [], []
        for kind, rows in zip(
            DEFINITION_TABLES,
            self._reads(repo).map(lambda kind: self._light_rows(repo, kind, paths), DEFINITION_TABLES),
            strict=False,
        ):
            for row, vector, tokens in rows:
                definitions.append(
                    in_pool.get(row["id"])
                    or Hit.from_row(
                        {
                            **row,
                            "signature": "",
                            "doc": "",
                            "code": "",
                            "parent": None,
                            "references": [],
                            "_score_value": 0.0,
                        },
                        kind,
                    )
                )
                vectors.append(vector)
                texts.append(tokens)
        named = {hit.id for hit in definitions if any(exact.names(hit, name) for name in parsed.symbols)}
        features = definition_features(definitions, vectors, texts, pool, question_vector, parsed.terms, named)
        rank_definitions(files, definitions, features, self.symbol_ranker)
        self._read_shown(repo, files)

    def _read_shown(self, repo, files: list[FileHit]) -> None:
        """The files' shown definitions that were weighed as light rows (`_light_rows`), read whole."""
        whole = self._whole_hits(repo, [hit for file in files for hit in file.symbols])
        if not whole:
            return
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
            rows = self.index.reader(repo).rows_by_ids(kind, ids, SELECT, paths)
            return [Hit.from_row({**row, "_score_value": 0.0}, kind) for row in rows]

        return {
            hit.id: hit
            for found in self._reads(repo).map(read_whole, sorted({hit.table for hit in light}))
            for hit in found
        }

    def _light_rows(self, repo, kind: str, paths: list[str]) -> list[LightRow]:
        """The files' definitions and module code without code (DEFINITION_COLUMNS), each with its
        vector as an array (None: not yet embedded) and its search text's tokens. Read as Arrow,
        since a vector turned into a Python list costs more than its query, and kept for the next
        search while the table stays at its version."""
        reader = self.index.reader(repo)
        version = reader.version(kind)
        with self._lock:
            found = {
                path: self._definitions[(*version, path)] for path in paths if (*version, path) in self._definitions
            }
            for path in found:
                self._definitions.move_to_end((*version, path))
        missing = [path for path in paths if path not in found]
        if missing:
            read = reader.rows_in_files(kind, missing, DEFINITION_COLUMNS, MAX_DEFINITIONS)
            column = read.column("vector").combine_chunks()
            matrix = column.values.to_numpy(zero_copy_only=False).reshape(len(column), -1) if len(column) else None
            absent = column.is_null().to_numpy(zero_copy_only=False)
            fresh: dict[str, list[LightRow]] = {path: [] for path in missing}
            for i, row in enumerate(read.drop_columns(["vector"]).to_pylist()):
                tokens = Tokens.of(row.pop("search_text").split())
                fresh[row["file_path"]].append((row, None if absent[i] or matrix is None else matrix[i], tokens))
            with self._lock:
                for path, rows in fresh.items():
                    self._definitions[(*version, path)] = rows
                while len(self._definitions) > DEFINITION_CACHE_FILES:
                    self._definitions.popitem(last=False)
            found.update(fresh)
        return [entry for path in paths for entry in found[path]]

    def _rerank(
        self,
        repo,
        parsed: ParsedQuery,
        files: list[FileHit],
        options: SearchOptions,
        stages: _Stages,
        notices: list[str],
        report: Progress,
    ) -> dict:
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
        chosen = rerank_candidates(files)[: reranker.max_documents]
        if not chosen:
            report("rerank", "skipped", None, "no definitions to rerank")
            return {"used": False, "reason": "no definitions to rerank"}
        report("rerank", "start", None, f"{len(chosen)} definitions")
        try:
            with stages.time("rerank"):
                whole = self._whole_hits(repo, [definition.hit for definition in chosen])
                for definition in chosen:
                    definition.hit = whole.get(definition.hit.id, definition.hit)
                scores = reranker.score(parsed.semantic, [embedding_text(d.hit.embedded_fields()) for d in chosen])
        except RerankUnavailable as exc:
            notices.append(f"Rerank unavailable: {exc}")
            report("rerank", "skipped", None, str(exc))
            return {"used": False, "reason": str(exc)}
        rerank_definitions(files, {definition.hit.id: score for definition, score in zip(chosen, scores, strict=False)})
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
        reader = self.index.reader(repo)
        found = [
            Hit.from_row({**row, "_score_value": 0.0}, kind)
            for kind in SYMBOL_TABLES
            for row in reader.implementations_of(kind, names, options.scope(), SELECT, MAX_EXACT_ROWS)
        ]
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
        reader, scope = self.index.reader(repo), options.scope()
        if kind == "modules":
            whole = parsed.whole_name
            stem = whole if whole and whole not in parsed.files and "." not in whole else None  # `view`: view.js
            tails = [tail for tail in map(exact.tail_of_long, parsed.files) if tail]
            rows = reader.file_rows_named([*parsed.files, *tails], stem, scope, SELECT, MAX_EXACT_ROWS)
            by_tail = exact.named_by_long([row["file_path"] for row in rows], parsed.files)
            # `view.%` also matched view.test.js: a file stem must be the whole name
            rows = [
                row
                for row in rows
                if row["file_path"] in by_tail
                or any(exact.names_file(row["file_path"], name) for name in parsed.files + (parsed.whole_name,) if name)
            ]
        elif parsed.symbols:
            tails = [symbol.rsplit(".", 1)[-1] for symbol in parsed.symbols if "." in symbol]
            rows = reader.rows_named(kind, parsed.symbols, tails, scope, SELECT, MAX_EXACT_ROWS)
        else:
            return []
        for row in rows:
            row["_score_value"] = 0.0
        return rows


class _InTurn(Executor):
    """An executor that runs each job at once, in the calling thread (a failing job raises there)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


_IN_TURN = _InTurn()


def _show_relevance(hits: list[Hit], files: list[FileHit], parsed: ParsedQuery) -> None:
    """The score a reader sees (`Hit.relevance`, `FileHit.relevance`): the file model's
    estimate that the result's file is one the answer needs (`ranking.file_probability`),
    1.0 for what a query that is exactly a name names, and never more than the score of the
    result above it, so the scores read down a list as its order does."""
    chance = {file.path: file_probability(file.score) for file in files}
    certain = {
        hit.id for hit in hits if parsed.whole_name and hit.exact and exact.named_by_whole(hit, parsed.whole_name)
    }
    ceiling = 1.0
    for hit in hits:
        hit.relevance = ceiling = min(ceiling, 1.0 if hit.id in certain else chance.get(hit.file_path, ceiling))
    certain_files = {hit.file_path for hit in hits if hit.id in certain}
    ceiling = 1.0
    for file in files:
        file.relevance = ceiling = min(ceiling, 1.0 if file.path in certain_files else chance[file.path])


def _scored(rows: list[dict], score: Callable[[dict], float]) -> list[dict]:
    for row in rows:
        row["_score_value"] = float(score(row))
    return rows


def _snippets_for_expansion(hits: list[Hit]) -> str:
    """The first search's findings for HyDE step 2, each once: where, signature, doc line."""
    lines = []
    for hit in hits[: 2 * FIRST_PASS]:
        doc = hit.doc.strip().splitlines()[0] if hit.doc.strip() else ""
        head = hit.signature or next(iter(hit.code.strip().splitlines()), hit.name)
        lines.append(
            f"{hit.file_path}:{hit.start_line} {hit.qualified_name}: {head[:160]}" + (f" — {doc[:120]}" if doc else "")
        )
    return "\n".join(lines)
