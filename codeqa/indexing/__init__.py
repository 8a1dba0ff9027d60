"""Indexing: a repository on disk → rows, references and vectors in its tables.

`index_plan` decides what changed since the last run, `indexer` applies the plan under the
repo's lease (`store.lease`) through the store's writer (`store.create_tables`), `embeddings`
makes the vectors (with the models shipped in `models/`), `vectors` batches them, `live_index`
re-runs the indexer on file changes. Imports `core`, `parsing` and `store`.
"""
