"""Reciprocal-rank fusion: several rankings of one table's rows into one."""

from __future__ import annotations

RRF_K = 60  # reciprocal-rank fusion of a report's query vectors (LanceDB's own constant)


def fuse_hybrid(vector_rows: list[dict], text_rows: list[dict]) -> list[dict]:
    """Vector and text rankings of one table by reciprocal-rank fusion, as LanceDB's RRF
    reranker does, except that a text row without a vector yet (`_no_vector`) counts its text
    rank twice: in place of the vector rank it cannot have, rather than losing to every row
    that was embedded sooner. A row's `_score_value` becomes its fused score."""
    fused = fuse_ranked([vector_rows, text_rows])
    for rank, row in enumerate(text_rows, 1):
        if row.get("_no_vector"):  # the same dict fuse_ranked kept: no vector list can hold it
            row["_score_value"] += 1.0 / (RRF_K + rank)
    return sorted(fused, key=lambda row: -row["_score_value"])


def fuse_ranked(lists: list[list[dict]]) -> list[dict]:
    """Rows of several rankings of one table, by reciprocal-rank fusion (RRF_K): the main query's
    and each piece's. A row's `_score_value` becomes its fused score."""
    fused: dict[str, dict] = {}
    scores: dict[str, float] = {}
    for rows in lists:
        for rank, row in enumerate(rows, 1):
            fused.setdefault(row["id"], row)
            scores[row["id"]] = scores.get(row["id"], 0.0) + 1.0 / (RRF_K + rank)
    for key, row in fused.items():
        row["_score_value"] = scores[key]
    return sorted(fused.values(), key=lambda row: -row["_score_value"])
