"""Parsing files on every core: a pool of worker processes, fed a batch ahead of the writer.

Parsing is CPU-bound Python (tree-sitter walks, references, BM25 text), so it scales with
processes, not threads. The writer stays one process (LanceDB commits, the lease, crash-safe
ordering); the workers read and parse files and hand back rows. A run with few files parses in
the run's own process: starting workers costs more than it saves there (a one-file re-index).
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial

from codeqa.core.config import Settings
from codeqa.indexing.embeddings import Embedder, get_embedder
from codeqa.indexing.file_rows import FileRows, parse_file
from codeqa.parsing.repo_files import ReadFile

POOL_MIN_FILES = 64  # fewer files than this are parsed in the run's own process
CHUNK_FILES = 16  # files per task a worker takes at a time

Parsed = FileRows | str  # a file's rows, or why it was skipped


def _parse_chunk(
    repo: str, max_file_bytes: int, walked_at_ns: int, embed: Settings | None, chunk: Sequence[ReadFile]
) -> list[Parsed]:
    """A worker's task: parse files, and embed their rows with the configured (inline) embedder,
    which each worker loads once (`get_embedder` keeps it)."""
    embedder = get_embedder(embed, threads=1) if embed is not None else None
    return [parse_file(repo, file, max_file_bytes, walked_at_ns, embedder) for file in chunk]


class Parsers:
    """Parses planned files into rows, batch by batch, in order; `with Parsers(...) as parsers:`."""

    def __init__(self, repo: str, settings: Settings, walked_at_ns: int, files: int, embedder: Embedder | None) -> None:
        """`embedder`: an inline one gives the rows their vectors as they are parsed (in a worker,
        the same model loaded from `settings`); None leaves them to `indexer.fill_vectors`."""
        embed = settings if embedder is not None else None
        self._work = partial(_parse_chunk, repo, settings.max_file_bytes, walked_at_ns, embed)
        self._here = partial(
            parse_file, repo, max_file_bytes=settings.max_file_bytes, walked_at_ns=walked_at_ns, embedder=embedder
        )
        processes = settings.index_processes
        self._pool: ProcessPoolExecutor | None = None
        if processes > 1 and files >= POOL_MIN_FILES:
            # forkserver: workers start from a clean process, not a fork of this one's threads; they
            # inherit its CPU priority (index runs are niced: `CODEQA_BACKGROUND_NICENESS`).
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["codeqa.indexing.workers"])
            self._pool = ProcessPoolExecutor(max_workers=processes, mp_context=context)

    def __enter__(self) -> Parsers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def batches(self, batches: Iterable[Sequence[ReadFile]], done: Callable[[int], None]) -> Iterator[list[Parsed]]:
        """Each batch's results in order, `done(n)` told as files are parsed. With workers, the
        next batch is being parsed while the caller writes this one; at most two batches are in
        memory."""
        if self._pool is None:
            for batch in batches:
                yield [self._parsed_here(file, done) for file in batch]
            return
        pending: deque[list[Future[list[Parsed]]]] = deque()
        for batch in batches:
            chunks = [batch[start : start + CHUNK_FILES] for start in range(0, len(batch), CHUNK_FILES)]
            pending.append([self._pool.submit(self._work, chunk) for chunk in chunks])
            if len(pending) > 1:
                yield self._collect(pending.popleft(), done)
        while pending:
            yield self._collect(pending.popleft(), done)

    def _parsed_here(self, file: ReadFile, done: Callable[[int], None]) -> Parsed:
        parsed = self._here(file)
        done(1)
        return parsed

    @staticmethod
    def _collect(chunks: list[Future[list[Parsed]]], done: Callable[[int], None]) -> list[Parsed]:
        results: list[Parsed] = []
        for future in chunks:
            parsed = future.result()
            results += parsed
            done(len(parsed))
        return results
