"""An index run on a Ray cluster: its nodes parse (and embed) the files; this process writes.

The split is the local pool's (`workers.Parsers`), moved onto more machines: a Ray task does
what a pool worker does — parse a chunk of files into rows and, with an inline embedder, give
them their vectors — and this process (the driver) does everything else: it holds the repo's
lease, reads each file's bytes and ships them with the task (a node need not see this disk),
and writes every batch through the same crash-safe, atomic LanceDB commits as a local run. No
node ever writes to the index, so a node that dies costs a retried task, never a half-written
table: tasks are pure, Ray reruns them (`RETRIES`), and work that is lost for good stops the
run with one line before its next write — what a killed local run leaves, which the next run
repairs. A local model that is not inline embeds on the nodes too (`ClusterEmbedder`: the
vectors the driver still has to fill, split over them).

Needs the `cluster` extra (`pip install codeqa[cluster]`: Ray) here and on every node, with the
same CodeQA (`code_fingerprint` is checked by every task). docs/architecture.md says why
CodeQA keeps one writer rather than having nodes write Lance fragments (as lance-ray does).
"""

from __future__ import annotations

import hashlib
import logging
import math
import socket
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from codeqa.core.config import Settings
from codeqa.core.errors import CodeQAError, UnavailableError
from codeqa.indexing.embeddings import Embedder, EmbeddingError, get_embedder
from codeqa.indexing.file_rows import parse_file
from codeqa.indexing.workers import CHUNK_FILES, Parsed
from codeqa.parsing.repo_files import ReadFile, read_bytes

RETRIES = 3  # times Ray reruns a task whose worker or node died (tasks are pure: rerunning is safe)
CHECK_EVERY_S = 30.0  # while waiting for a task, how often to check the cluster still has a CPU
MAX_BATCHES_AHEAD = 8  # batches in flight at most (each holds its files' bytes and rows)
EMBED_CHUNK_MIN = 16  # texts per embedding task at least (fewer cost more in overhead than they gain)
CONNECT_TIMEOUT_S = 5.0
PACKAGE_DIR = Path(__file__).resolve().parents[1]


class ClusterError(UnavailableError):
    """The cluster can't be reached or lost the work; the message says what to do, and the index
    stays as consistent as after a killed local run."""

    code = "cluster_unavailable"


# --- The code every node must share -------------------------------------------------------------


@cache
def code_fingerprint() -> str:
    """A hash of this CodeQA's code (its .py and query files): a node running other code would
    write other rows (ids, texts), so every task checks it matches the driver's."""
    digest = hashlib.sha1()
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.suffix in (".py", ".scm") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _check_code(expected: str) -> None:
    if code_fingerprint() != expected:
        raise ClusterError(
            f"A node of the cluster ({socket.gethostname()}) runs other CodeQA code than the indexer "
            f"(fingerprint {code_fingerprint()}, the indexer's {expected}): install the same version on every node."
        )


# --- The tasks (they run on the nodes) ------------------------------------------------------------


def parse_shipped(
    repo: str,
    max_file_bytes: int,
    walked_at_ns: int,
    embed: Settings | None,
    fingerprint: str,
    files: Sequence[tuple[ReadFile, bytes | None]],
) -> list[Parsed]:
    """A node's parse task: the pool worker's (`workers._parse_chunk`), on bytes the driver read
    (None: it could not read the file)."""
    _check_code(fingerprint)
    embedder = get_embedder(embed, threads=1) if embed is not None else None
    return [
        "unreadable" if data is None else parse_file(repo, file, max_file_bytes, walked_at_ns, embedder, data)
        for file, data in files
    ]


def embed_texts(settings: Settings, fingerprint: str, texts: Sequence[str]) -> np.ndarray:
    """A node's embedding task: the configured local model, one thread per task (Ray runs one
    task per CPU)."""
    _check_code(fingerprint)
    return get_embedder(settings, threads=1).embed(texts)


# --- Connecting ------------------------------------------------------------------------------------


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ClusterError("Indexing on a cluster needs Ray: pip install 'codeqa[cluster]'.") from exc
    return ray


def _host_port(address: str) -> tuple[str, int]:
    """`HOST:PORT` of a Ray cluster's head (what `ray start --head` prints); a one-line error else."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(
            f"{address!r} is not a Ray cluster address: give the head node's HOST:PORT, as `ray start --head` "
            "prints it (--cluster or CODEQA_CLUSTER)."
        )
    return host.strip("[]"), int(port)


def _check_answers(address: str) -> None:
    """Fail at once, in one line, when nothing listens at the address (Ray itself retries for
    a minute and then raises a page of logs)."""
    host, port = _host_port(address)
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ClusterError(
            f"No Ray cluster answers at {address} ({exc.strerror or exc}): start one with "
            "`ray start --head`, or fix --cluster / CODEQA_CLUSTER."
        ) from exc


def check(address: str) -> None:
    """What every run configured for a cluster checks first, even one too small to use it (a
    one-file re-index, an inline model): Ray is installed and something answers at `address`,
    so a wrong --cluster is said in one line, never ignored. Cheap: no `ray.init`."""
    _import_ray()
    _check_answers(address)


_connected = {"address": ""}  # the cluster this process joined


def connect(address: str) -> Any:
    """The `ray` module, connected to the cluster at `address` (once per process; another
    address disconnects from the first)."""
    ray = _import_ray()
    if ray.is_initialized():
        if _connected["address"] == address:
            return ray
        ray.shutdown()
    _check_answers(address)
    try:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    except Exception as exc:  # Ray raises many kinds here; each means the cluster can't be used
        raise ClusterError(f"Could not join the Ray cluster at {address}: {str(exc).splitlines()[0]}") from exc
    _connected["address"] = address
    return ray


class _Waiter:
    """Waits for a task's result, turning the cluster's failures into one-line errors."""

    def __init__(self, ray: Any, address: str, lost: Callable[[str], CodeQAError]) -> None:
        self._ray = ray
        self._address = address
        self._lost = lost

    def get(self, ref: Any) -> Any:
        ray = self._ray
        while not ray.wait([ref], timeout=CHECK_EVERY_S)[0]:
            if not ray.cluster_resources().get("CPU", 0):
                raise self._lost(f"no node with a CPU is left in the Ray cluster at {self._address}")
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, CodeQAError):
                raise cause from None
            if isinstance(cause, ImportError):
                raise self._lost(f"a node can't run CodeQA ({cause}): install codeqa[cluster] on every node") from exc
            raise  # a bug in parsing or embedding: its traceback, as from a local worker
        except ray.exceptions.RayError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            lost = f"the Ray cluster at {self._address} lost a task after {RETRIES} retries ({first})"
            raise self._lost(lost) from exc


def _shipped_settings(settings: Settings) -> Settings:
    """What a node needs to load the model: the settings less their secrets (API keys, Redis)."""
    secrets: dict[str, Any] = {f.name: "" for f in fields(Settings) if f.metadata.get("secret")}
    return replace(settings, **secrets)


# --- The pool and the embedder a run uses ---------------------------------------------------------


def _lost_parsing(why: str) -> ClusterError:
    return ClusterError(f"Indexing stopped: {why}. No half-written file is visible; run the index again to finish.")


class RayParsers:
    """A `workers.ParsePool` on a Ray cluster: each chunk of a batch's files is a task, and as
    many batches are in flight as keep every CPU of the cluster busy."""

    def __init__(self, repo: str, settings: Settings, walked_at_ns: int, embedder: Embedder | None) -> None:
        self._ray = connect(settings.cluster)
        self._task = self._ray.remote(parse_shipped).options(
            num_cpus=1, max_retries=RETRIES, retry_exceptions=False, scheduling_strategy="SPREAD"
        )
        embed = _shipped_settings(settings) if embedder is not None else None
        self._args = (repo, settings.max_file_bytes, walked_at_ns, embed, code_fingerprint())
        self._max_file_bytes = settings.max_file_bytes
        chunks_per_batch = math.ceil(settings.write_batch / CHUNK_FILES)
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        self._ahead = max(1, min(MAX_BATCHES_AHEAD, math.ceil(2 * cpus / chunks_per_batch)))
        self._waiter = _Waiter(self._ray, settings.cluster, _lost_parsing)
        self._pending: deque[list[Any]] = deque()

    def __enter__(self) -> RayParsers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Cancel what is still in flight (a failed or interrupted run)."""
        for refs in self._pending:
            for ref in refs:
                self._ray.cancel(ref)
        self._pending.clear()

    def batches(self, batches: Iterable[Sequence[ReadFile]], done: Callable[[int], None]) -> Iterator[list[Parsed]]:
        """Each batch's results in order, `done(n)` told as chunks come back."""
        for batch in batches:
            self._pending.append(self._submit(batch))
            if len(self._pending) > self._ahead:
                yield self._collect(self._pending.popleft(), done)
        while self._pending:
            yield self._collect(self._pending.popleft(), done)

    def _submit(self, batch: Sequence[ReadFile]) -> list[Any]:
        """The batch's chunks as tasks, with the files' bytes read here."""
        shipped = [(file, read_bytes(file, self._max_file_bytes)) for file in batch]
        return [
            self._task.remote(*self._args, shipped[start : start + CHUNK_FILES])
            for start in range(0, len(shipped), CHUNK_FILES)
        ]

    def _collect(self, refs: list[Any], done: Callable[[int], None]) -> list[Parsed]:
        results: list[Parsed] = []
        for ref in refs:
            parsed = self._waiter.get(ref)
            results += parsed
            done(len(parsed))
        return results


def _lost_embedding(why: str) -> EmbeddingError:
    return EmbeddingError(f"Embedding stopped: {why}")


class ClusterEmbedder:
    """The configured local model run on the cluster's nodes (an `Embedder`): each call's texts
    are split so that every CPU gets a share. The driver still writes the vectors."""

    def __init__(self, settings: Settings, local: Embedder) -> None:
        self._ray = connect(settings.cluster)
        self._task = self._ray.remote(embed_texts).options(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)
        self._settings = _shipped_settings(settings)
        self._local = local
        self.model_id = local.model_id
        self.inline = local.inline
        self._waiter = _Waiter(self._ray, settings.cluster, _lost_embedding)

    @property
    def dim(self) -> int:
        return self._local.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        cpus = max(1, int(self._ray.cluster_resources().get("CPU", 1)))
        size = max(EMBED_CHUNK_MIN, math.ceil(len(texts) / cpus))
        refs = [
            self._task.remote(self._settings, code_fingerprint(), list(texts[start : start + size]))
            for start in range(0, len(texts), size)
        ]
        return np.concatenate([self._waiter.get(ref) for ref in refs])
