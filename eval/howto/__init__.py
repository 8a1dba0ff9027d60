"""The how-it-works eval: maintainers' descriptions of a part of the code, the names masked.

See eval/howto/README.md. Modules: `resolve` (a name in a document → the repository's files),
`passages` (a document → passages → mentions → masked queries), `items` (the item file and its
split), `mine` (builds the items from pinned commits) and `run` (indexes, searches, scores).
"""
