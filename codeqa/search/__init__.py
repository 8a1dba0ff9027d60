"""Search: a question → ranked definitions and files (`retrieval.Retriever`).

`options` and `query` read the request, `retrieval` runs the pipeline through the store's
reader, and each ranking idea is a module of its own (`fusion`, `pool`, `exact`, `ranking`,
`structure`, `twins`, `overloads`, `rerank`), returning the types of `results`. The learned
models live in `models/`. Imports the layers below it.
"""
