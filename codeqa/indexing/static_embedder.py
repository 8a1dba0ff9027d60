"""A static code embedder: a token lookup, a sum and a normalisation, numpy only.

The model (`models/codeqa-static/`, model card there) is a table of token vectors trained by
CodeQA (`training/train_static.py`): distilled from `codeqa-matcher` (all-MiniLM-L6-v2
fine-tuned here) over a vocabulary of code identifiers, then trained contrastively on
(fix-commit or issue text → changed definition) pairs. No transformer runs:
a definition costs a regex pass and a few hundred row lookups, thousands per second per core.

Text → tokens is the index's own (`parsing.tokens.code_token_list`, what BM25 reads): every
ASCII identifier gives its lowercased camelCase/snake_case parts and, when it has several,
itself whole (lowercased, `_` dropped), so `parseHTTPResponse`, `parse_http_response` and
"parse http response" meet. A token the vocabulary lacks is split into the vocabulary's
word pieces (`##`-prefixed continuations, greedy longest match first, as BERT's WordPiece);
a token with no piece at all is skipped. A text's vector is the sum of its tokens' rows (each
row carries its token's weight), L2-normalised; a text with no known token gets the zero
vector. Each text is embedded on its own, so its vector never depends on the batch.

The files are checked against their pinned sha256 once per process; a missing or altered file
raises `StaticModelError` with a one-line message.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from codeqa.core.errors import UnavailableError
from codeqa.parsing.tokens import code_token_list

MODEL_NAME = "codeqa-static"
MODEL_DIR = Path(__file__).resolve().parent / "models" / MODEL_NAME
VECTORS_FILE = "vectors.npy"  # float16 (vocabulary, dim): each row already scaled by its token's weight
VOCAB_FILE = "vocab.txt"  # one token a line, UTF-8: line i is row i

# The shipped files (written by training/train_static.py export; the model card states them).
VECTORS_SHA256 = "b17beeb6cdbe48d6344a5bb793ee453ffe4dd26cb739fa5da25aef2b9836a94a"
VECTORS_SIZE = 32_768_128
VOCAB_SHA256 = "7098e60e49d7004e73fb0b6561717505694d42a7a75fd47496946e142e13043f"
VOCAB_SIZE = 562_083
DIM = 256  # the vectors' size: known without loading (an index creates its tables before it embeds)

CONTINUATION = "##"  # a word piece that continues a token (WordPiece's convention)
MAX_PIECE_CHARS = 64  # a longer token is not split into pieces (it is skipped unless known whole)


class StaticModelError(UnavailableError):
    """The static embedding model's files are missing or not the pinned ones."""

    code = "embedding_unavailable"


@dataclass(frozen=True)
class StaticFiles:
    """A model folder and the pins its files are checked against (empty pins: not checked)."""

    directory: Path
    vectors_sha256: str = ""
    vectors_size: int = 0
    vocab_sha256: str = ""
    vocab_size: int = 0
    dim: int = 0  # the pinned vectors' size (0: whatever the file holds)

    @property
    def digest(self) -> str:
        """One hash naming both files (pinned ones from their pins, others from their bytes)."""
        vectors = self.vectors_sha256 or _sha256(self.directory / VECTORS_FILE)
        vocab = self.vocab_sha256 or _sha256(self.directory / VOCAB_FILE)
        return hashlib.sha256(f"{vectors}:{vocab}".encode()).hexdigest()


def shipped_files() -> StaticFiles:
    return StaticFiles(MODEL_DIR, VECTORS_SHA256, VECTORS_SIZE, VOCAB_SHA256, VOCAB_SIZE, DIM)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def _read_checked(path: Path, sha256: str, size: int) -> bytes:
    try:
        data = path.read_bytes()
    except OSError:
        raise StaticModelError(
            f"The static embedding model file {path.name!r} ({MODEL_NAME}) is missing: "
            "it ships inside the codeqa package, reinstall CodeQA."
        ) from None
    if sha256 and (len(data) != size or hashlib.sha256(data).hexdigest() != sha256):
        raise StaticModelError(
            f"The static embedding model file {path.name!r} ({MODEL_NAME}, {len(data)} bytes) "
            f"is not the pinned file (sha256 {sha256[:12]}…): reinstall CodeQA."
        )
    return data


class Vocabulary:
    """Token → row, with WordPiece's greedy longest-match split for tokens it lacks."""

    def __init__(self, words: list[str]) -> None:
        self.index = {word: row for row, word in enumerate(words)}
        self._lookup = lru_cache(maxsize=500_000)(self._ids_uncached)

    def __len__(self) -> int:
        return len(self.index)

    def ids(self, token: str) -> tuple[int, ...]:
        """The rows of one token: itself, else its pieces, else nothing."""
        row = self.index.get(token)
        return (row,) if row is not None else self._lookup(token)

    def _ids_uncached(self, token: str) -> tuple[int, ...]:
        if len(token) > MAX_PIECE_CHARS:
            return ()
        pieces: list[int] = []
        start = 0
        while start < len(token):
            end = len(token)
            while end > start:
                piece = token[start:end] if start == 0 else CONTINUATION + token[start:end]
                row = self.index.get(piece)
                if row is not None:
                    pieces.append(row)
                    break
                end -= 1
            if end == start:  # no piece fits here: WordPiece gives up on the whole token
                return ()
            start = end
        return tuple(pieces)

    def encode(self, text: str) -> np.ndarray:
        """The rows of a text's tokens (int32), in order."""
        ids: list[int] = []
        index = self.index
        for token in code_token_list(text):
            row = index.get(token)
            if row is not None:
                ids.append(row)
            else:
                ids.extend(self._lookup(token))
        return np.asarray(ids, dtype=np.int32)


class StaticEmbedder:
    """CodeQA's static code embedder (`Embedder` protocol of `embeddings.py`).

    Loaded on first use (the files checked once per process), then thread-safe: embedding
    reads only immutable arrays and a memoised token split."""

    def __init__(self, files: StaticFiles | None = None) -> None:
        self.files = files or shipped_files()
        self.model_id = f"local:{MODEL_NAME}-{self.files.digest[:12]}"
        self.inline = True  # a lookup and a sum: rows get their vectors as they are parsed
        self._vectors: np.ndarray | None = None
        self._vocabulary: Vocabulary | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[np.ndarray, Vocabulary]:
        if self._vectors is None or self._vocabulary is None:
            with self._lock:
                if self._vectors is None or self._vocabulary is None:
                    files = self.files
                    vectors = np.load(
                        io.BytesIO(
                            _read_checked(files.directory / VECTORS_FILE, files.vectors_sha256, files.vectors_size)
                        ),
                        allow_pickle=False,
                    )
                    words = (
                        _read_checked(files.directory / VOCAB_FILE, files.vocab_sha256, files.vocab_size)
                        .decode("utf-8")
                        .split("\n")
                    )
                    if words and words[-1] == "":
                        words.pop()
                    if (
                        vectors.ndim != 2
                        or vectors.shape[0] != len(words)
                        or (files.dim and vectors.shape[1] != files.dim)
                    ):
                        raise StaticModelError(
                            f"The static embedding model ({MODEL_NAME}) is inconsistent: "
                            f"{vectors.shape} vectors for {len(words)} tokens; reinstall CodeQA."
                        )
                    self._vocabulary = Vocabulary(words)
                    self._vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        return self._vectors, self._vocabulary

    @property
    def dim(self) -> int:
        return self.files.dim or int(self._load()[0].shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors, vocabulary = self._load()
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = vocabulary.encode(text)
            if len(ids):
                summed = vectors[ids].sum(axis=0)
                norm = float(np.linalg.norm(summed))
                if norm > 0:
                    out[row] = summed / norm
        return out
