"""Search latency on a large index (Django 5.2.8's whole sdist: ~40,000 symbols).

    python -m bench.search_bench [--queries 200] [--with-llm] [--json out.json] [--data-dir DIR --repo NAME]

Plain search (HyDE and rerank off, one torch thread, query embedding included) is timed on
queries made from the index's own docstrings, from LanceDB and from memory (store/resident.py,
`CODEQA_RESIDENT_ROWS`) taking turns query by query, then from memory alone, with how long the
repo took to read into memory and how much the process grew. `--with-llm` also measures the
HyDE cost per query and the end-to-end time to a streamed answer with the embedded LLM. The rerank stage (the shipped
cross-encoder over the best files' definitions) is timed on its own and in the whole search
(from memory), on `--rerank-queries` of the same queries, with each of `--rerank-threads` in
turn (`CODEQA_RERANK_THREADS`). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCEDB_LOG", "error")

from codeqa.core.config import Settings

DATA = ROOT / "bench" / ".cache" / "search-data"
REPO = "django-sdist"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict:
    return {"n": len(values), "p50_ms": round(percentile(values, 0.5), 1),
            "p95_ms": round(percentile(values, 0.95), 1), "mean_ms": round(statistics.mean(values), 1)}


def ensure_index(settings: Settings) -> dict:
    from bench.index_bench import fetch_source
    from codeqa.indexing.indexer import index_repo

    source = fetch_source("django==5.2.8")
    report = index_repo(source, settings, name=REPO, progress=True)
    return {"symbols": report.methods + report.classes, "docs": report.docs,
            "index_s": round(report.timings["total"], 1)}


def docstring_queries(settings: Settings, count: int, repo: str = REPO) -> list[str]:
    from codeqa.store import registry
    from codeqa.store.connection import connect

    db = connect(settings)
    info = registry.get_repo(db, repo)
    rows = registry.open_table(db, info, "methods").search().where("doc != ''").select(["doc"]).limit(
        None).to_list()
    random.Random(7).shuffle(rows)
    return [r["doc"].strip().splitlines()[0][:200] for r in rows[:count]]


def hold_in_memory(retriever, repo: str) -> dict:
    """Read the repo into memory now (store/resident.py; a server does it in the background
    after the first search): how long it took and how much the process grew."""
    import psutil

    from codeqa.store.resident import ResidentReader
    from codeqa.store.schema import ROW_TABLES

    reader = retriever.index.reader(retriever.index.repo(repo))
    if not isinstance(reader, ResidentReader):
        return {"held": False}
    before, started = psutil.Process().memory_info().rss, time.perf_counter()
    reader.load(ROW_TABLES)
    return {"held": True, "load_s": round(time.perf_counter() - started, 2),
            "rss_added_mb": round((psutil.Process().memory_info().rss - before) / 1e6)}


def bench_search(settings: Settings, queries: list[str], repo: str = REPO) -> dict:
    """Search without rerank, from LanceDB (`CODEQA_RESIDENT_ROWS=0`) and from memory (the
    setting's value), the two taking turns query by query (their ratio on a busy box); then from
    memory alone, as a server answering one question after another searches (the latency a user
    sees: a LanceDB query just before evicts the held copy's arrays from the CPU's caches)."""
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    retrievers = {"lancedb": Retriever(replace(settings, resident_rows=0), threads=1),
                  "in_memory": Retriever(settings, threads=1)}
    held = hold_in_memory(retrievers["in_memory"], repo)
    options = SearchOptions(k=10, hyde=False, rerank=False)
    for query in queries[:10]:
        for retriever in retrievers.values():
            retriever.search(repo, query, options)
    timings: dict[str, list[dict[str, float]]] = {name: [] for name in [*retrievers, "in_memory_alone"]}
    same = 0
    for query in queries:
        found = {}
        for name, retriever in retrievers.items():
            result = retriever.search(repo, query, options)
            found[name] = [hit.id for hit in result.results]
            timings[name].append(result.timings_ms)
        same += found["lancedb"] == found["in_memory"]
    for query in queries:
        timings["in_memory_alone"].append(retrievers["in_memory"].search(repo, query, options).timings_ms)
    out: dict = {"memory": held, "same_top_10": f"{same}/{len(queries)}"}
    for name, runs in timings.items():
        stages = {stage for run in runs for stage in run} - {"total"}
        out[name] = {"total": summary([run["total"] for run in runs]),
                     "stages": {s: summary([run[s] for run in runs if s in run]) for s in sorted(stages)}}
    return out


def bench_rerank(settings: Settings, queries: list[str], repo: str = REPO, threads: tuple[int, ...] = ()) -> dict:
    """The rerank stage's own time and the whole search's with it, for each of `threads`
    (`CODEQA_RERANK_THREADS`; default: the setting's value), taking turns query by query so that
    a busy box slows each alike. The rest of the search runs on one thread, as the web app's."""
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    counts = threads or (settings.rerank_threads,)
    retrievers = {n: Retriever(replace(settings, rerank_threads=n), threads=1) for n in counts}
    for retriever in retrievers.values():
        hold_in_memory(retriever, repo)
    options = SearchOptions(k=10, hyde=False, rerank=True)
    for retriever in retrievers.values():
        retriever.search(repo, queries[0], options)  # loads the model
    stage: dict[int, list[float]] = {n: [] for n in counts}
    totals: dict[int, list[float]] = {n: [] for n in counts}
    for query in queries:
        for n, retriever in retrievers.items():
            result = retriever.search(repo, query, options)
            if result.rerank["used"]:
                stage[n].append(result.timings_ms["rerank"])
                totals[n].append(result.timings_ms["total"])
    return {f"{n} threads": {"stage": summary(stage[n]), "search_with_rerank": summary(totals[n])} for n in counts}


def bench_llm(settings: Settings, queries: list[str], repo: str = REPO) -> dict:
    from codeqa.chat.answer import ChatBudget, ChatService, ChatTurn
    from codeqa.chat.chat_store import ChatStore
    from codeqa.chat.context import ContextBuilder
    from codeqa.llm.client import LLMClient
    from codeqa.chat.resolver import CommandResolver
    from codeqa.search.retrieval import Retriever
    from codeqa.search.options import SearchOptions

    llm = LLMClient(settings)
    retriever = Retriever(settings, llm=llm, threads=1)
    hyde_costs = []
    for query in queries:
        result = retriever.search(repo, query, SearchOptions(k=10, hyde=True, rerank=False))
        hyde_costs.append(sum(result.timings_ms.get(s, 0.0) for s in ("hyde", "first_search", "expansion")))
    with tempfile.TemporaryDirectory() as tmp:
        store = ChatStore.connect("", Path(tmp))
        chat = ChatService(ContextBuilder(retriever, CommandResolver(retriever.index)), store, llm,
                           ChatBudget.from_settings(settings))
        first_tokens, totals = [], []
        for index, query in enumerate(queries):
            started = time.perf_counter()
            first = None
            for name, data in chat.run(ChatTurn(user=f"bench{index}", repo=repo, message="@codebase " + query)):
                if name == "token" and first is None:
                    first = time.perf_counter() - started
            totals.append((time.perf_counter() - started) * 1000)
            first_tokens.append((first or 0) * 1000)
        store.close()
    llm.close()
    return {"hyde": summary(hyde_costs), "chat_first_token": summary(first_tokens),
            "chat_total": summary(totals)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--with-llm", action="store_true")
    parser.add_argument("--llm-queries", type=int, default=3)
    parser.add_argument("--rerank-queries", type=int, default=50)
    parser.add_argument("--rerank-threads", type=int, nargs="+", default=[],
                        help="time the rerank stage with each of these thread counts, in turns (default: the setting)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--data-dir", type=Path, help="search this existing index instead of building the sdist's")
    parser.add_argument("--repo", default=REPO, help="the repo to search in --data-dir")
    args = parser.parse_args()
    settings = Settings.from_env(data_dir=args.data_dir or DATA, lancedb_uri="")
    if args.data_dir is None:
        results = {"index": ensure_index(settings)}
        print("index:", json.dumps(results["index"]), flush=True)
    else:
        results = {"index": {"data_dir": str(args.data_dir), "repo": args.repo}}
    queries = docstring_queries(settings, args.queries, args.repo)
    results["search"] = bench_search(settings, queries, args.repo)
    print("search:", json.dumps(results["search"]), flush=True)
    if args.rerank_queries:
        results["rerank"] = bench_rerank(settings, queries[:args.rerank_queries], args.repo, tuple(args.rerank_threads))
        print("rerank:", json.dumps(results["rerank"]), flush=True)
    if args.with_llm:
        results["llm"] = bench_llm(settings, queries[:args.llm_queries], args.repo)
        print("llm:", json.dumps(results["llm"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
