"""Indexing: a repository on disk → LanceDB tables (rows, vectors, references).

`repo_files` walks the tree, `index_plan` decides what changed, `indexer` applies the plan
under `index_lock`, `create_tables` owns the schema, `embeddings` the vectors, `live_index`
re-runs the indexer on file changes. Imports `codeqa.core` and `codeqa.parsing`.
"""
