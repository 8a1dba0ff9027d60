"""Which rows need a vector, and the batches they are embedded in.

A row keeps the vector of its text from before the run (`reuse_vectors`), so an unchanged
definition in a changed file is never embedded twice; the rest wait for `indexer.fill_vectors`,
which embeds them in `embedding_batches`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from codeqa.store.rows import embedding_text


def reuse_vectors(rows: list[dict], cache: Mapping[str, np.ndarray]) -> int:
    """Give each row the vector of its text from `cache` (the replaced rows' vectors), or none
    yet (`fill_vectors` embeds it after the run made the repo searchable); returns how many
    rows wait for a vector."""
    waiting = 0
    for row in rows:
        row["vector"] = cache.get(row["text_hash"])
        waiting += row["vector"] is None
    return waiting


@dataclass(frozen=True)
class EmbeddingBatch:
    """Distinct texts to embed in one call, and the rows (by id) each text's vector goes to."""

    texts: list[str]
    row_ids: list[list[str]]

    @property
    def rows(self) -> int:
        return sum(map(len, self.row_ids))


def embedding_batches(rows: Iterable[Mapping], size: int) -> list[EmbeddingBatch]:
    """Rows waiting for vectors as batches of at most `size` distinct texts, longest first.

    Identical texts (a method copied between files, generated twins) are embedded once; texts
    of like length share a batch, so the model pads little. Longest first, because the first
    batch then sizes the model's buffers and every later one fits in them: shortest first let
    the allocator's heap grow with each longer batch (django/: peak RSS 1,605 MB; flat at the
    first batch's size when the order is reversed)."""
    by_hash: dict[str, tuple[str, list[str]]] = {}
    for row in rows:
        text, ids = by_hash.setdefault(row["text_hash"], (embedding_text(row), []))
        ids.append(row["id"])
    ordered = sorted(by_hash.values(), key=lambda item: -len(item[0]))
    return [
        EmbeddingBatch(
            [text for text, _ in ordered[start : start + size]], [ids for _, ids in ordered[start : start + size]]
        )
        for start in range(0, len(ordered), size)
    ]
