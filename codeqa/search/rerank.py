"""The rerank stage's model: a cross-encoder that reads the question and a definition together.

`codeqa-reranker` (shipped in `models/codeqa-reranker/`, model card beside it) is
all-MiniLM-L6-v2 with a score head, trained by `training/train_reranker.py` to put the
definition a fix changed above the other definitions of its file. It runs on onnxruntime with
the embedder's tokenizer: no torch, nothing downloaded. A user's own cross-encoder of the same
family (a folder holding `model.onnx`, exported by `training/export_onnx.py --reranker`) can
take its place through CODEQA_RERANK_MODEL.

Why not `rerankers`' FlashRank backend, which also runs ONNX cross-encoders: FlashRank 0.2.10
loads only the model names in its own table, downloading any it does not find in its cache
folder, cuts pairs at 512 tokens with no setting for it through `rerankers` (the cost here is
linear in it), and configures the root logger on import.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codeqa.core.errors import UnavailableError
from codeqa.indexing.embeddings import ONNX_FILE, TOKENIZER_FILE, EmbeddingError, LocalModel

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Encoding, Tokenizer

    from codeqa.search.results import Definition, FileHit

# As the reranker was trained (training/train_reranker.py): the question's first 64 tokens,
# the definition's text up to 256 in all.
QUERY_TOKENS = 64
PAIR_TOKENS = 256
_CHARS_PER_TOKEN_BOUND = 10  # pre-cut huge texts before the tokenizer sees them

# Which definitions it reads: the best RERANK_PER_FILE (by the definition model) of each of the
# best RERANK_FILES files; their order within the file becomes the definition model's score
# plus RERANK_WEIGHT times the reranker's logit. Chosen on 30 items of the realistic eval's
# train split whose repositories training holds back (docs/matcher.md, "The reranker"); the
# weight measured again on all 290 train items once pairs were scored alone (docs/retrieval.md).
RERANK_FILES = 3
RERANK_PER_FILE = 8
RERANK_WEIGHT = 1.0

RERANKER_NAME = "codeqa-reranker"
MODELS_DIR = Path(__file__).resolve().parent / "models"  # the reranker ships beside this module
RERANKER_SHA256 = "9f0f9309b52625d1adfbb68b23c9bb8475fa46a82eb309725fc0eb3686577b7a"
RERANKER_SIZE = 17_602_543


class RerankUnavailable(UnavailableError):
    """The reranker cannot run here; the message says why and how to fix it."""

    code = "rerank_unavailable"


@dataclass(frozen=True)
class RerankStatus:
    available: bool
    reason: str  # why not, or which model


def reranker_model(name: str) -> LocalModel:
    """The model CODEQA_RERANK_MODEL names: the shipped one, or a folder (or file) of a user's."""
    if name == RERANKER_NAME:
        return LocalModel(
            RERANKER_NAME,
            MODELS_DIR / RERANKER_NAME / ONNX_FILE,
            RERANKER_SHA256,
            RERANKER_SIZE,
            "it ships inside the codeqa package: reinstall CodeQA",
        )
    path = Path(name).expanduser()
    if path.is_dir():
        path = path / ONNX_FILE
    if path.suffix == ".onnx" and path.is_file():
        return LocalModel(path.parent.name if path.name == ONNX_FILE else path.stem, path.resolve())
    raise RerankUnavailable(  # the value is a server path: it is not echoed to web users
        f"CODEQA_RERANK_MODEL is neither {RERANKER_NAME} nor an ONNX cross-encoder (a file, or a folder "
        f"holding {ONNX_FILE}, as training/export_onnx.py --reranker writes)."
    )


class CrossEncoderReranker:
    """Scores (question, text) pairs with an ONNX cross-encoder, loading it once, on first use.

    Each pair is read alone, unpadded, and `threads` pairs at a time (one core each), not as one
    padded batch. The shipped model is int8 with dynamic quantization: a batch's activations
    share one scale, so a definition's score moved with the other candidates beside it (by up to
    0.5 logit on Django's questions) and with their padding, which half of them needed (the
    median candidate is 246 tokens, the longest 256). Alone, a pair's score is its own, and the
    stage does no work on padding: on 2 cores, the stage's p50 over 24 definitions went from 453
    to 277 ms (Django's sdist, the two ways taking turns; docs/benchmarks.md). Quality: the same
    function hit@10 on the realistic eval's test split (docs/retrieval.md)."""

    def __init__(self, model: str, *, max_documents: int = 64, threads: int = 1) -> None:
        self.model = model
        self.max_documents = max_documents
        self._threads = threads
        self._lock = threading.Lock()
        self._workers = (
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="codeqa-rerank") if threads > 1 else None
        )
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._plain: Tokenizer | None = None  # no truncation: counts the question's tokens
        self._status: RerankStatus | None = None

    def status(self) -> RerankStatus:
        """Whether reranking can run: the model file is there and, if shipped, the pinned one."""
        if self._status is None:
            try:
                found = reranker_model(self.model)
                found.checked_path()
                self._status = RerankStatus(True, f"cross-encoder {found.name}")
            except (RerankUnavailable, EmbeddingError) as exc:
                self._status = RerankStatus(False, str(exc))
        return self._status

    def load(self) -> None:
        """Load the model now, so that no question waits for it; one that cannot load is left
        to `status()` to report, as a search would."""
        if self.status().available:
            try:
                self._load()
            except RerankUnavailable:
                pass

    def score(self, query: str, documents: list[str]) -> list[float]:
        """One relevance logit per document, in input order (higher is more relevant)."""
        if len(documents) > self.max_documents:
            raise ValueError(
                f"rerank got {len(documents)} documents, more than max_documents="
                f"{self.max_documents}; trim the candidates first (cost is linear in them)"
            )
        if not documents:
            return []
        session, _tokenizer = self._load()
        encoded = self.encode(query, documents)

        def run(index: int) -> float:
            pair = encoded[index]
            inputs = {
                "input_ids": np.array([pair.ids], dtype=np.int64),
                "attention_mask": np.array([pair.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([pair.type_ids], dtype=np.int64),
            }
            (logits,) = session.run(None, inputs)
            return float(logits.reshape(-1)[0])

        longest_first = sorted(range(len(encoded)), key=lambda index: -len(encoded[index].ids))  # even loads
        found = self._workers.map(run, longest_first) if self._workers else map(run, longest_first)
        scores = [0.0] * len(encoded)
        for index, score in zip(longest_first, found, strict=True):
            scores[index] = score
        return scores

    def encode(self, query: str, documents: list[str]) -> list[Encoding]:
        """Each (question, document) pair as the model reads it: the question's first
        QUERY_TOKENS tokens, then the document, PAIR_TOKENS in all (training tokenises so too)."""
        _session, tokenizer = self._load()
        question = self.cap_question(query)
        return tokenizer.encode_batch([(question, doc[: PAIR_TOKENS * _CHARS_PER_TOKEN_BOUND]) for doc in documents])

    def cap_question(self, query: str) -> str:
        """The question up to the end of its QUERY_TOKENS-th token, as the model was trained
        (the pair tokenizer's own truncation would cut the definition first, as `only_second` asks)."""
        self._load()
        return _cap_tokens(self._plain, query, QUERY_TOKENS)

    def _load(self) -> tuple[onnxruntime.InferenceSession, Tokenizer]:
        status = self.status()
        if not status.available:
            raise RerankUnavailable(status.reason)
        with self._lock:
            if self._session is None:
                import onnxruntime
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
                tokenizer.enable_truncation(max_length=PAIR_TOKENS, strategy="only_second")
                tokenizer.no_padding()  # each pair runs alone (class docstring)
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = 1  # `threads` pairs run at once, one core each
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                found = reranker_model(self.model)
                try:
                    self._session = onnxruntime.InferenceSession(
                        str(found.checked_path()), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:  # a file that is no ONNX model: no rerank, and why
                    self._status = RerankStatus(
                        False, f"the cross-encoder {found.name} cannot be loaded: {type(exc).__name__}"
                    )
                    raise RerankUnavailable(self._status.reason) from exc
                plain = Tokenizer.from_file(str(TOKENIZER_FILE))
                plain.no_padding()  # the file's own settings pad: a short question would count as long
                plain.no_truncation()
                self._tokenizer, self._plain = tokenizer, plain
        return self._session, self._tokenizer


def _cap_tokens(tokenizer: Tokenizer, text: str, max_tokens: int) -> str:
    """`text` up to the end of its `max_tokens`-th token."""
    head = text[: max_tokens * _CHARS_PER_TOKEN_BOUND]  # bounded even where tokens are long
    encoding = tokenizer.encode(head, add_special_tokens=False)
    if len(encoding.offsets) <= max_tokens:
        return head
    return head[: encoding.offsets[max_tokens - 1][1]]


def rerank_candidates(files: list[FileHit]) -> list[Definition]:
    """What the reranker reads: the best definitions of the best files, best files first."""
    return [definition for file in files[:RERANK_FILES] for definition in file.definitions[:RERANK_PER_FILE]]


def rerank_definitions(files: list[FileHit], scores: dict[str, float]) -> None:
    """Reorder each file's reranked definitions by the definition model's score plus the
    reranker's, and show the best of them as its symbols (as many as before)."""
    for file in files:
        scored = [d for d in file.definitions if d.hit.id in scores]
        if not scored:
            continue
        scored.sort(key=lambda d: (-(d.score + RERANK_WEIGHT * scores[d.hit.id]), d.hit.start_line))
        file.definitions = scored + [d for d in file.definitions if d.hit.id not in scores]
        file.symbols = [d.hit for d in file.definitions[: max(1, len(file.symbols))]]


_instances: dict[tuple[str, int], CrossEncoderReranker] = {}
_instances_lock = threading.Lock()


def get_reranker(settings) -> CrossEncoderReranker:
    """The process-wide reranker for `settings.rerank_model` on `settings.rerank_threads`, so the
    model loads once."""
    key = (settings.rerank_model, settings.rerank_threads)
    with _instances_lock:
        reranker = _instances.get(key)
        if reranker is None:
            reranker = _instances[key] = CrossEncoderReranker(settings.rerank_model, threads=settings.rerank_threads)
        return reranker
