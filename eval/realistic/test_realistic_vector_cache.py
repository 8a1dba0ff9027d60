"""The vector cache's model key: vectors of the same text cut at another length never mix."""

from __future__ import annotations

import pytest

from codeqa.indexing.embeddings import LocalEmbedder

from eval.realistic.vector_cache import model_key


@pytest.mark.unit
def test_the_local_model_key_carries_the_embedders_max_tokens() -> None:
    """Built without loading the model: the key comes from the embedder's setting, not a constant."""
    assert model_key(LocalEmbedder(max_tokens=128)) == "local:all-MiniLM-L6-v2-int8@128"
    assert model_key(LocalEmbedder(max_tokens=256)) == "local:all-MiniLM-L6-v2-int8@256"
