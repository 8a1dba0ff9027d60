"""Search: a question → ranked definitions and files (`retrieval.Retriever`).

Ranking models live in `models/`; `ranking` scores, `rerank` reorders, `symbol_index` finds
names, `packing` fits code into a token budget. Imports the layers below it.
"""
