"""Scoring one item's ranked files and symbols against its gold, and summing up per group.

File metrics (hit@5, recall@5, recall@10, MRR@10) score a ranked list of files; function
metrics (recall@10, hit@10) score a ranked list of symbols, a hit being a (file path,
qualified name) pair equal to a gold symbol's. Function metrics are averaged over the items
that have gold symbols (a fix that only touched module-level code has gold files only).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

FILE_METRICS = ("file_hit@5", "file_recall@5", "file_recall@10", "file_mrr@10")
FUNCTION_METRICS = ("func_recall@10", "func_hit@10")
METRICS = FILE_METRICS + FUNCTION_METRICS
LABELS = {"file_hit@5": "file hit@5", "file_recall@5": "file R@5", "file_recall@10": "file R@10",
          "file_mrr@10": "file MRR@10", "func_recall@10": "func R@10", "func_hit@10": "func hit@10"}


def _rank(wanted, ranking: list) -> int | None:
    return ranking.index(wanted) + 1 if wanted in ranking else None


def score_item(gold_files: list[str], gold_symbols: list[tuple[str, str]], files: list[str],
               symbols: list[tuple[str, str]]) -> dict:
    """Metrics and gold ranks of one item; `files` and `symbols` are best first."""
    file_ranks = {path: _rank(path, files) for path in dict.fromkeys(gold_files)}
    found = [rank for rank in file_ranks.values() if rank is not None]
    first = min(found, default=None)
    scores: dict = {
        "file_hit@5": float(first is not None and first <= 5),
        "file_recall@5": sum(r <= 5 for r in found) / len(file_ranks),
        "file_recall@10": sum(r <= 10 for r in found) / len(file_ranks),
        "file_mrr@10": 1.0 / first if first is not None and first <= 10 else 0.0,
        "gold_file_ranks": file_ranks,
    }
    gold = list(dict.fromkeys(gold_symbols))
    symbol_ranks = {f"{path}::{name}": _rank((path, name), symbols) for path, name in gold}
    top = [rank for rank in symbol_ranks.values() if rank is not None and rank <= 10]
    scores["func_recall@10"] = len(top) / len(gold) if gold else None
    scores["func_hit@10"] = float(bool(top)) if gold else None
    scores["gold_symbol_ranks"] = symbol_ranks
    return scores


def summarize(rows: list[dict]) -> dict:
    """Means over items; function metrics over the items that have gold symbols."""
    summary: dict = {"n": len(rows)}
    for metric in FILE_METRICS:
        summary[metric] = statistics.fmean(r[metric] for r in rows) if rows else None
    with_symbols = [r for r in rows if r["func_recall@10"] is not None]
    summary["n_func"] = len(with_symbols)
    for metric in FUNCTION_METRICS:
        summary[metric] = statistics.fmean(r[metric] for r in with_symbols) if with_symbols else None
    return summary


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def markdown_table(results: dict[str, list[dict]], groups: list[tuple[str, Callable[[dict], bool]]]) -> str:
    """One row per (group, config): `results` maps a config name to its per-item rows."""
    header = ["group", "config", "n", *(LABELS[m] for m in FILE_METRICS), "n func",
              *(LABELS[m] for m in FUNCTION_METRICS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, keep in groups:
        for config, rows in results.items():
            chosen = [r for r in rows if keep(r)]
            if not chosen:
                continue
            s = summarize(chosen)
            cells = [label, config, str(s["n"]), *(_cell(s[m]) for m in FILE_METRICS), str(s["n_func"]),
                     *(_cell(s[m]) for m in FUNCTION_METRICS)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def standard_groups(rows: list[dict]) -> list[tuple[str, Callable[[dict], bool]]]:
    """Per split: all items, each language, each query type, and whether the text names a gold file."""
    groups: list[tuple[str, Callable[[dict], bool]]] = []
    for split in ("test", "train"):
        in_split = [r for r in rows if r["split"] == split]
        if not in_split:
            continue
        groups.append((f"**{split}**", lambda r, s=split: r["split"] == s))
        for language in sorted({r["language"] for r in in_split}):
            groups.append((f"{split} · {language}", lambda r, s=split, v=language: r["split"] == s and r["language"] == v))
        for query_type in sorted({r["query_type"] for r in in_split}):
            groups.append((f"{split} · {query_type}",
                           lambda r, s=split, v=query_type: r["split"] == s and r["query_type"] == v))
        for named in (True, False):
            label = "names a gold file" if named else "names no gold file"
            groups.append((f"{split} · {label}",
                           lambda r, s=split, v=named: r["split"] == s and r["names_gold_file"] == v))
    if len({r["split"] for r in rows}) > 1:
        groups.append(("**all**", lambda r: True))
    return groups
