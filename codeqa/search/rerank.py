"""Optional ColBERT reranking of a retrieved candidate pool, honest about whether it can run.

Weights come from a local directory or the local Hugging Face cache. The hub is tried only
when downloads are allowed and a bounded probe reaches it: an unreachable hub otherwise costs
about 70 s of retries inside transformers. Scoring goes through `rerankers` (the library
LanceDB's own ColBERT reranker wraps) because the pipeline reranks a merged pool of plain
strings, not one LanceDB result table.
"""

from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from codeqa.core.errors import UnavailableError

QUERY_MAX_TOKENS = 64  # ColBERT queries are trained at ~32 tokens; longer ones only add cost
DOC_MAX_TOKENS = 300  # about 1000 characters of code; cost grows linearly with it
_CHARS_PER_TOKEN_BOUND = 10  # pre-cut huge documents before the tokenizer sees them
PROBE_TIMEOUT = 2.0  # seconds for the hub connectivity probe, DNS included
SMALL_PROJECTION, DEFAULT_PROJECTION = 96, 128  # the only sizes rerankers can build
_DOWNLOAD_PATTERNS = ["*.json", "*.txt", "*.safetensors"]
_TRUE_VALUES = {"1", "ON", "YES", "TRUE"}


class RerankUnavailable(UnavailableError):
    """ColBERT cannot run here; the message says why and how to fix it."""

    code = "rerank_unavailable"


@dataclass(frozen=True)
class RerankStatus:
    available: bool
    reason: str  # why not, or where the weights are


@dataclass(frozen=True)
class _Plan:
    """Outcome of looking for the weights without loading them."""

    status: RerankStatus
    path: Path | None = None  # local checkpoint directory, when found
    repo_id: str = ""  # hub repository to download first, when allowed


class ColbertReranker:
    """Scores documents for a query with a ColBERT checkpoint, loading it lazily once."""

    def __init__(self, model: str, *, max_documents: int = 64) -> None:
        self.model = model
        self.max_documents = max_documents
        self._lock = threading.Lock()  # guards deciding and loading
        self._score_lock = threading.Lock()  # fast tokenizers are not safe to share mid-call
        self._plan: _Plan | None = None
        self._ranker = None

    def status(self) -> RerankStatus:
        """Whether reranking can run; decided from the filesystem when possible, then cached."""
        plan = self._plan
        if plan is not None and not plan.repo_id:
            return plan.status
        with self._lock:
            if self._decide().repo_id:  # only a download can tell: do it now, once
                try:
                    self._load_locked()
                except RerankUnavailable:
                    pass  # _load_locked recorded the reason
            return self._plan.status

    def load(self) -> None:
        """Load the weights now; raises RerankUnavailable with the reason if that is impossible."""
        if self._ranker is not None:
            return
        with self._lock:
            self._load_locked()

    def score(self, query: str, documents: list[str]) -> list[float]:
        """One ColBERT score per document, in input order (higher is more relevant)."""
        if len(documents) > self.max_documents:
            raise ValueError(
                f"rerank got {len(documents)} documents, more than max_documents="
                f"{self.max_documents}; trim the candidate pool first (cost is linear in it)"
            )
        self.load()
        if not documents:
            return []
        ranker = self._ranker
        doc_chars = DOC_MAX_TOKENS * _CHARS_PER_TOKEN_BOUND
        with self._score_lock:
            capped_query = _cap_tokens(ranker.tokenizer, query, QUERY_MAX_TOKENS)
            results = ranker.rank(
                capped_query,
                [doc[:doc_chars] for doc in documents],
                doc_ids=list(range(len(documents))),
            )
        by_id = {result.document.doc_id: float(result.score) for result in results.results}
        return [by_id[index] for index in range(len(documents))]

    def _decide(self) -> _Plan:
        if self._plan is None:
            self._plan = _plan_for(self.model)
        return self._plan

    def _load_locked(self) -> None:
        if self._ranker is not None:
            return
        plan = self._decide()
        if not plan.status.available:
            raise RerankUnavailable(plan.status.reason)
        try:
            path = plan.path or _download(plan.repo_id, self.model)
            self._ranker = _build_ranker(path)
        except RerankUnavailable as exc:
            self._plan = _unavailable(str(exc))
            raise
        except Exception as exc:  # any loader failure means no rerank; keep its message
            self._plan = _unavailable(
                f"ColBERT {self.model} failed to load: {type(exc).__name__}: {exc}"
            )
            raise RerankUnavailable(self._plan.status.reason) from exc
        self._plan = _Plan(
            RerankStatus(True, f"ColBERT {self.model} loaded from {path}"), path=path
        )


_instances: dict[str, ColbertReranker] = {}
_instances_lock = threading.Lock()


def get_reranker(settings) -> ColbertReranker:
    """The process-wide reranker for `settings.colbert_model`, so weights load once."""
    with _instances_lock:
        reranker = _instances.get(settings.colbert_model)
        if reranker is None:
            reranker = _instances[settings.colbert_model] = ColbertReranker(settings.colbert_model)
        return reranker


def _unavailable(reason: str) -> _Plan:
    return _Plan(RerankStatus(False, reason))


def _plan_for(model: str) -> _Plan:
    """Find the checkpoint: a local directory, the HF cache, or (if allowed) a download."""
    if _looks_like_path(model):
        path = Path(model).expanduser()
        if not path.is_dir():
            return _unavailable(f"ColBERT model directory {path} does not exist")
        return _plan_for_dir(model, path)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(model)
    except HFValidationError as exc:
        return _unavailable(
            f"{model!r} is neither a local directory nor a Hugging Face model name: {exc}"
        )
    try:
        snapshot = snapshot_download(model, cache_dir=_hub_cache(), local_files_only=True)
        return _plan_for_dir(model, Path(snapshot))
    except LocalEntryNotFoundError:
        pass
    blocker = _download_blocker(model)
    if blocker:
        return _unavailable(
            f"ColBERT weights for {model} are not in the local Hugging Face cache ({_hub_cache()}) "
            f"and {blocker}; download them on a machine with network (huggingface-cli download "
            f"{model}) and copy the cache here, or set CODEQA_COLBERT_MODEL to a local directory"
        )
    return _Plan(
        RerankStatus(True, f"ColBERT {model} will be downloaded from the hub"), repo_id=model
    )


def _plan_for_dir(model: str, path: Path) -> _Plan:
    problem = _checkpoint_problem(path)
    if problem:
        return _unavailable(f"ColBERT {model}: {problem}")
    return _Plan(
        RerankStatus(True, f"ColBERT {model} found at {path}; loads on first use"), path=path
    )


def _looks_like_path(model: str) -> bool:
    """Hub names are `name` or `org/name`; anything else, or anything on disk, is a path."""
    return (
        Path(model).expanduser().exists()
        or model.startswith(("/", ".", "~"))
        or model.count("/") > 1
        or "\\" in model
    )


def _hub_cache() -> str:
    """Read at call time: the environment may change after huggingface_hub was imported."""
    from huggingface_hub import constants

    return os.path.expanduser(os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)


def _hub_endpoint() -> str:
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def _download_blocker(repo_id: str) -> str | None:
    """Why a download can't happen now, or None; never waits more than PROBE_TIMEOUT."""
    offline = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    if offline.upper() in _TRUE_VALUES:
        return "downloads are disabled (HF_HUB_OFFLINE=1)"
    endpoint = _hub_endpoint()
    outcome: list[str] = []

    def probe() -> None:
        from huggingface_hub.utils import get_session

        try:
            get_session().head(f"{endpoint}/api/models/{repo_id}", timeout=PROBE_TIMEOUT)
            outcome.append("")
        except Exception as exc:  # any failure to connect means unreachable
            outcome.append(f"{type(exc).__name__}")

    thread = threading.Thread(target=probe, daemon=True)  # daemon: DNS can outlive any timeout
    thread.start()
    thread.join(PROBE_TIMEOUT)
    if not outcome:
        return f"the hub is unreachable ({endpoint} did not answer within {PROBE_TIMEOUT:g} s)"
    if outcome[0]:
        return f"the hub is unreachable ({endpoint}: {outcome[0]})"
    return None


def _download(repo_id: str, model: str) -> Path:
    from huggingface_hub import snapshot_download

    snapshot = snapshot_download(
        repo_id, cache_dir=_hub_cache(), endpoint=_hub_endpoint(), allow_patterns=_DOWNLOAD_PATTERNS
    )
    path = Path(snapshot)
    problem = _checkpoint_problem(path)
    if problem:
        raise RerankUnavailable(f"ColBERT {model}: {problem}")
    return path


def _checkpoint_problem(path: Path) -> str | None:
    """What makes `path` unusable as a rerankers ColBERT checkpoint, read without loading it."""
    if not (path / "config.json").is_file():
        return f"{path} has no config.json, so it is not a Hugging Face checkpoint"
    if not any((path / name).is_file() for name in ("tokenizer.json", "vocab.txt")):
        return f"{path} has no tokenizer files (tokenizer.json or vocab.txt)"
    try:
        dim = _projection_dim(path)
    except Exception as exc:  # a truncated or foreign weights file
        return f"cannot read {path / 'model.safetensors'}: {exc}"
    if dim == 0:
        return (
            f"{path} has no ColBERT projection layer (linear.weight), so it is not a ColBERT model"
        )
    if dim is not None and dim not in (SMALL_PROJECTION, DEFAULT_PROJECTION):
        return f"{path} projects to {dim} dimensions; rerankers can only build 96 or 128"
    return None


def _projection_dim(path: Path) -> int | None:
    """Output size of ColBERT's `linear` layer from the safetensors header.

    None when there is no safetensors file to read, 0 when the file has no such layer.
    """
    weights = path / "model.safetensors"
    if not weights.is_file():
        return None
    from safetensors import safe_open

    with safe_open(str(weights), framework="pt") as handle:
        if "linear.weight" not in handle.keys():
            return 0
        return int(handle.get_slice("linear.weight").get_shape()[0])


def _build_ranker(path: Path):
    """Load through rerankers under a path whose name gives its projection size.

    rerankers 0.10 sizes the projection from the path (96 if it contains "small", else 128),
    so a checkpoint in a directory named the other way is loaded through a symlink named to fit.
    """
    dim = _projection_dim(path)
    if dim is None or ("small" in str(path)) == (dim == SMALL_PROJECTION):
        return _open_ranker(path)
    with tempfile.TemporaryDirectory(prefix="codeqa-colbert-") as tmp:
        alias = Path(tmp) / ("colbert-small" if dim == SMALL_PROJECTION else "colbert")
        if ("small" in str(alias)) != (dim == SMALL_PROJECTION):
            raise RerankUnavailable(
                f"cannot name a path for a {dim}-d ColBERT under {tmp}; set TMPDIR"
            )
        alias.symlink_to(path.resolve(), target_is_directory=True)
        return _open_ranker(alias)


def _open_ranker(path: Path):
    from rerankers import Reranker

    ranker = Reranker(str(path), model_type="colbert", verbose=0)
    if ranker is None:
        raise RerankUnavailable("rerankers cannot build ColBERT here (missing transformers/torch)")
    ranker.doc_max_length = min(ranker.doc_max_length, DOC_MAX_TOKENS)
    return ranker


def _cap_tokens(tokenizer, text: str, max_tokens: int) -> str:
    """Cut `text` after its first `max_tokens` tokens, at a token boundary."""
    encoding = tokenizer(
        text,
        add_special_tokens=False,
        truncation=True,
        max_length=max_tokens,
        return_offsets_mapping=True,
    )
    offsets = encoding["offset_mapping"]
    if len(offsets) < max_tokens:
        return text
    return text[: offsets[-1][1]]
