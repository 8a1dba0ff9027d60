"""Where an index run's parsing and embedding run: this machine's cores, or a Ray cluster's.

The one place that reads `Settings.cluster`, so the indexer never branches on it: it asks for
a `workers.ParsePool` and an `Embedder` and gets the local ones or the cluster's
(`indexing/cluster.py`). Either way the run's own process is the one writer.
"""

from __future__ import annotations

from codeqa.core.config import Settings
from codeqa.indexing.embeddings import Embedder, get_embedder
from codeqa.indexing.workers import POOL_MIN_FILES, ParsePool, Parsers


def open_parsers(repo: str, settings: Settings, walked_at_ns: int, files: int, embedder: Embedder | None) -> ParsePool:
    """The pool that parses a run's `files` files: the cluster's when one is configured and the
    run is big enough to gain from it (a one-file re-index parses here), else this machine's."""
    if settings.cluster and files >= POOL_MIN_FILES:
        from codeqa.indexing.cluster import RayParsers  # Ray: only with the cluster extra, only when used

        return RayParsers(repo, settings, walked_at_ns, embedder)
    return Parsers(repo, settings, walked_at_ns, files, embedder)


def index_embedder(settings: Settings) -> Embedder:
    """The embedder an index run fills vectors with: the configured one, run on the cluster's
    nodes when a cluster is configured and the model is a local one that is not inline (an
    inline model embeds in the parse tasks already; an endpoint scales on its own). A run with a
    cluster configured checks it answers first, whether or not it will use it (`cluster.check`)."""
    local = get_embedder(settings)
    if not settings.cluster:
        return local
    from codeqa.indexing.cluster import ClusterEmbedder, check

    check(settings.cluster)
    if settings.embedding_provider != "local" or local.inline:
        return local
    return ClusterEmbedder(settings, local)
