"""Retrieval eval: labelled questions on Flask 3.1.3's sdist, scored per search configuration.

    python -m eval.run_eval                      # vector, bm25, hybrid-rrf, +rerank
    python -m eval.run_eval --configs hybrid-rrf --pool 30 --pool 60
    python -m eval.run_eval --with-llm --limit 10 # adds +hyde (embedded Qwen on CPU: slow)
    python -m eval.run_eval --json eval/.cache/raw.json

The corpus is fetched from PyPI with pip (sha256-pinned) and unpacked into eval/.cache/,
then indexed into eval/.cache/data with CodeQA's own indexer; later runs reuse the index.
See eval/README.md for the metric definitions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

EVAL_DIR = Path(__file__).resolve().parent
os.environ.setdefault("LANCEDB_LOG", "error")  # lance's per-query deprecation warnings drown the report

from codeqa.core.config import Settings
from codeqa.indexing.indexer import index_repo
from codeqa.store import create_tables, registry
from codeqa.store.connection import connect

CACHE_DIR = EVAL_DIR / ".cache"
QUESTIONS = EVAL_DIR / "questions.jsonl"
RESULTS_MD = EVAL_DIR / "results.md"
DIST = "flask==3.1.3"
SDIST_NAME = "flask-3.1.3.tar.gz"
SDIST_SHA256 = "0ef0e52b8a9cd932855379197dd8f94047b359ca0a78695144304cb45f87c9eb"
REPO_NAME = "eval-flask-3.1.3"
KINDS = ("how", "where", "bug", "doc")
DOC_PART_SUFFIX = " (part "
K = 10


# --- Corpus and index -------------------------------------------------------------------------

def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_corpus(cache: Path = CACHE_DIR) -> Path:
    """Download (pip) and unpack the pinned sdist once; returns the unpacked root."""
    root = cache / "src" / SDIST_NAME.removesuffix(".tar.gz")
    if (root / "PKG-INFO").exists():
        return root
    archive = cache / "dl" / SDIST_NAME
    if not archive.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        DIST, "-d", str(archive.parent)], check=True)
    if _sha256(archive) != SDIST_SHA256:
        raise SystemExit(f"{archive} does not match the pinned sha256 {SDIST_SHA256}; delete it and rerun.")
    with tarfile.open(archive) as tar:
        tar.extractall(cache / "src", filter="data")
    return root


def ensure_index(root: Path, settings: Settings) -> None:
    """Index (incrementally: cheap when nothing changed) the corpus under REPO_NAME."""
    started = time.perf_counter()
    report = index_repo(root, settings, name=REPO_NAME, progress=False)
    print(f"index {REPO_NAME}: {report.methods} methods, {report.classes} classes, {report.docs} doc "
          f"sections ({time.perf_counter() - started:.1f} s)", file=sys.stderr)


def section_name(qualified_name: str) -> str:
    """`config.rst > X (part 2)` → `config.rst > X`: a split doc section counts as its section."""
    cut = qualified_name.rfind(DOC_PART_SUFFIX)
    return qualified_name[:cut] if cut > 0 and qualified_name.endswith(")") else qualified_name


def indexed_symbols(settings: Settings) -> set[tuple[str, str]]:
    """Every (file_path, qualified_name) in the index, doc parts folded to their section."""
    db = connect(settings)
    repo = create_tables.RepoTables(db, registry.get_repo(db, REPO_NAME))
    found: set[tuple[str, str]] = set()
    for table in repo.symbol_tables:
        data = table.search().select(["file_path", "qualified_name"]).limit(None).to_arrow()
        found.update(zip(data["file_path"].to_pylist(), map(section_name, data["qualified_name"].to_pylist())))
    return found



# --- Questions ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    query: str
    gold_files: tuple[str, ...]
    gold_symbols: tuple[str, ...]
    exact: bool = False

    def gold_pairs(self, index: set[tuple[str, str]]) -> set[tuple[str, str]]:
        """(file, qualified name) of each gold symbol, in whichever gold file defines it."""
        return {(f, s) for f in self.gold_files for s in self.gold_symbols if (f, s) in index}


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            raw = json.loads(line)
            questions.append(Question(raw["id"], raw["kind"], raw["query"], tuple(raw["gold_files"]),
                                      tuple(raw["gold_symbols"]), bool(raw.get("exact", False))))
    return questions


def validate(questions: list[Question], index: set[tuple[str, str]]) -> None:
    """Fail loudly on a label that the index can't contain: typos would silently score 0."""
    errors = []
    if len({q.id for q in questions}) != len(questions):
        errors.append("duplicate question ids")
    for q in questions:
        if q.kind not in KINDS:
            errors.append(f"{q.id}: unknown kind {q.kind!r}")
        if not q.gold_files or not q.gold_symbols:
            errors.append(f"{q.id}: needs gold_files and gold_symbols")
        found = {s for _, s in q.gold_pairs(index)}
        errors.extend(f"{q.id}: {s!r} is in none of {list(q.gold_files)}" for s in q.gold_symbols if s not in found)
        used = {f for f, _ in q.gold_pairs(index)}
        errors.extend(f"{q.id}: gold file {f!r} holds no gold symbol" for f in q.gold_files if f not in used)
    if errors:
        raise SystemExit("questions.jsonl has bad labels:\n  " + "\n  ".join(errors))


# --- Configurations and scoring ----------------------------------------------------------------

@dataclass(frozen=True)
class EvalConfig:
    name: str
    options: dict = field(default_factory=dict)
    needs_llm: bool = False


CONFIGS = {
    "vector": EvalConfig("vector", {"mode": "vector"}),
    "bm25": EvalConfig("bm25", {"mode": "bm25"}),
    "hybrid-rrf": EvalConfig("hybrid-rrf", {"mode": "hybrid"}),
    # A listed file's symbols from the pool only, without the definition ranker (ranking.py).
    "hybrid-pool-symbols": EvalConfig("hybrid-pool-symbols", {"mode": "hybrid", "definitions": False}),
    "+rerank": EvalConfig("+rerank", {"mode": "hybrid", "rerank": True}),
    "+hyde": EvalConfig("+hyde", {"mode": "hybrid", "hyde": True}, needs_llm=True),
}
DEFAULT_CONFIGS = ("vector", "bm25", "hybrid-rrf", "hybrid-pool-symbols", "+rerank")


def matches(hit_file: str, hit_name: str, gold: set[tuple[str, str]]) -> bool:
    """A hit is a gold symbol; a docs hit also counts inside (or as a part of) a gold section."""
    name = section_name(hit_name)
    return any(hit_file == f and (name == s or name.startswith(s + " > ")) for f, s in gold)


def score(question: Question, gold: set[tuple[str, str]], hits: list[tuple[str, str]]) -> dict:
    """Per-question metrics over the top-K hits, each hit a (file_path, qualified_name)."""
    top = hits[:K]
    files = [f for f, _ in top]
    found = {(f, s) for f, s in gold if any(matches(hf, hn, {(f, s)}) for hf, hn in top)}
    first = next((rank for rank, (f, n) in enumerate(top, start=1) if matches(f, n, gold)), None)
    return {
        "file@5": float(any(f in question.gold_files for f in files[:5])),
        "file@10": float(any(f in question.gold_files for f in files)),
        "sym_recall@10": len(found) / len(gold),
        "mrr@10": 1.0 / first if first else 0.0,
        "first_gold_rank": first,
    }


METRICS = ("file@5", "file@10", "sym_recall@10", "mrr@10")


def summarize(rows: list[dict]) -> dict:
    summary = {m: statistics.fmean(r[m] for r in rows) for m in METRICS}
    summary["p50_ms"] = statistics.median(r["ms"] for r in rows)
    summary["n"] = len(rows)
    return summary


# --- Running -----------------------------------------------------------------------------------

def run_config(retriever, config: EvalConfig, questions: list[Question], index: set[tuple[str, str]],
               pool: int | None) -> list[dict] | str:
    """Score every question under one configuration; returns the reason instead when it can't run."""
    from codeqa.search.options import SearchOptions
    options = SearchOptions(**{"k": K, "hyde": False, "rerank": False, "pool": pool, **config.options})
    rows = []
    for number, q in enumerate(questions, start=1):
        started = time.perf_counter()
        result = retriever.search(REPO_NAME, q.query, options)
        elapsed = (time.perf_counter() - started) * 1000
        if config.options.get("rerank") and not result.rerank.get("used"):
            return str(result.rerank.get("reason") or "the retriever gave no reason")
        hits = [(h.file_path, h.qualified_name) for h in result.results]
        rows.append({"id": q.id, "kind": q.kind, "ms": result.timings_ms.get("total", elapsed),
                     **score(q, q.gold_pairs(index), hits),
                     "hits": [f"{f}::{n}" for f, n in hits]})
        if config.needs_llm:
            print(f"  {config.name}: {number}/{len(questions)}", file=sys.stderr)
    return rows


def _fmt(summary: dict) -> str:
    return " | ".join(f"{summary[m]:.3f}" for m in METRICS) + f" | {summary['p50_ms']:.0f}"


def markdown_table(results: dict[str, list[dict]], skipped: dict[str, str], by_kind: bool) -> str:
    lines = [f"| config | {' | '.join(METRICS)} | p50 ms |", "|---" * (len(METRICS) + 2) + "|"]
    for name, rows in results.items():
        lines.append(f"| {name} (n={len(rows)}) | {_fmt(summarize(rows))} |")
        if by_kind:
            grouped = defaultdict(list)
            for row in rows:
                grouped[row["kind"]].append(row)
            lines.extend(f"| &nbsp;&nbsp;{name} · {kind} (n={len(grouped[kind])}) | {_fmt(summarize(grouped[kind]))} |"
                         for kind in KINDS if grouped[kind])
    lines.extend(f"| {name} | unavailable: {reason} |" for name, reason in skipped.items())
    return "\n".join(lines)


def missed_everywhere(results: dict[str, list[dict]], questions: list[Question]) -> list[Question]:
    """Questions no configuration found any gold symbol for in its top 10."""
    if not results:
        return []
    missed = set.intersection(*({r["id"] for r in rows if r["sym_recall@10"] == 0} for rows in results.values()))
    return [q for q in questions if q.id in missed]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), help="default: every no-LLM config")
    parser.add_argument("--with-llm", action="store_true", help="also run +hyde (embedded LLM: slow on CPU)")
    parser.add_argument("--pool", type=int, action="append", help="candidate pool; repeat to sweep")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--kind", choices=KINDS, action="append", help="only questions of this kind")
    parser.add_argument("--by-kind", action="store_true", help="add a row per question kind")
    parser.add_argument("--json", metavar="PATH", help="write raw per-question results here")
    parser.add_argument("--results", metavar="PATH", default=str(RESULTS_MD), help="markdown output")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings.from_env(data_dir=CACHE_DIR / "data", lancedb_uri="")
    ensure_index(fetch_corpus(), settings)
    index = indexed_symbols(settings)
    questions = load_questions()
    validate(questions, index)
    questions = [q for q in questions if not args.kind or q.kind in args.kind][:args.limit]

    from codeqa.search.retrieval import Retriever
    retriever = Retriever(settings)
    names = list(args.configs or DEFAULT_CONFIGS) + (["+hyde"] if args.with_llm else [])
    results: dict[str, list[dict]] = {}
    skipped: dict[str, str] = {}
    for name in dict.fromkeys(names):
        for pool in args.pool or [None]:
            label = name if pool is None else f"{name} pool={pool}"
            outcome = run_config(retriever, CONFIGS[name], questions, index, pool)
            if isinstance(outcome, str):
                skipped[label] = outcome
                print(f"{label}: unavailable, {outcome}", file=sys.stderr)
            else:
                results[label] = outcome
                print(f"{label}: {_fmt(summarize(outcome))}", file=sys.stderr)

    table = markdown_table(results, skipped, args.by_kind)
    header = (f"Retrieval eval on {SDIST_NAME} ({len(questions)} questions, k={K}); "
              f"see eval/README.md for definitions.\n\n")
    print(table)
    Path(args.results).write_text(header + table + "\n", encoding="utf-8")
    missed = missed_everywhere(results, questions)
    if missed:
        print(f"\nMissed by every config ({len(missed)}):")
        for q in missed:
            print(f"  {q.id} [{q.kind}] {q.query.splitlines()[0][:100]}  gold: {', '.join(q.gold_symbols)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"configs": results, "skipped": skipped}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
