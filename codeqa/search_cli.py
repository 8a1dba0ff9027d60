"""The search CLI: `codeqa search` and `codeqa context` parse arguments and print.

    codeqa search --repo NAME [--k 10] [--hyde] [--rerank|--no-rerank]
                  [--lang L] [--path P] [--role R] [--json] "QUESTION"
    codeqa search --repo NAME --json --batch questions.jsonl
    codeqa context --repo NAME [--budget TOKENS] [--k 8] [--hyde] [--json] "MESSAGE"

The search is `codeqa.search.retrieval.Retriever`, the context `codeqa.chat.context.ContextBuilder`,
both reached through `codeqa.services.Services`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from codeqa.core.config import Settings
from codeqa.core.errors import printable, printable_lines, run_cli
from codeqa.parsing.languages import ROLES
from codeqa.search.options import SearchOptions, check_options
from codeqa.search.query import QueryError
from codeqa.search.results import SearchResult

if TYPE_CHECKING:
    from codeqa.services import Services


def _format_human(result: SearchResult) -> str:
    lines = []
    for notice in result.notices:
        lines.append(f"note: {notice}")
    if result.expanded_query:
        lines.append(f"expanded query: {result.expanded_query[:300]}")
    for rank, hit in enumerate(result.results, 1):
        mark = " (exact)" if hit.exact else ""
        mark += " (declaration)" if hit.declaration else ""
        lines.append(
            f"{rank:2}. {hit.file_path}:{hit.start_line}-{hit.end_line}  {hit.kind} "
            f"{hit.qualified_name}  score {hit.relevance:.2f}{mark}"
        )
        lines += [f"      signature: {signature}" for signature in hit.signatures]
        for ref in hit.references[:3]:
            lines.append(f"      used in {ref['file_path']}:{ref['line']}  {ref['text'][:80]}")
        if hit.reference_count > 3:
            lines.append(f"      ... {hit.reference_count} uses in all")
    if result.files:
        lines.append(
            f"files (ranked as a {'how-it-works question' if result.question_kind == 'how' else 'report'}, "
            f"file model {result.file_model}):"
        )
    for rank, file in enumerate(result.files, 1):
        best = ", ".join(f"{h.qualified_name} {h.start_line}-{h.end_line}" for h in file.symbols)
        twins = f"  [twin of {', '.join(file.twins)}]" if file.twins else ""
        lines.append(f"{rank:2}. {file.path}  ({file.role}){twins}" + (f"  {best}" if best else ""))
    timings = ", ".join(f"{k} {v:.0f} ms" for k, v in result.timings_ms.items())
    lines.append(f"time: {timings}; rerank: {'used' if result.rerank['used'] else result.rerank['reason']}")
    return printable_lines(lines)  # names and code are the repository's: no escape sequence reaches the terminal


def build_parser(prog: str = "codeqa") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Search an indexed repo.")
    commands = parser.add_subparsers(dest="command", required=True)
    search = commands.add_parser("search", help="search a repo for a question")
    search.add_argument("query", nargs="?", help="the question (omit with --batch)")
    search.add_argument("--repo", required=True, help="the indexed repo to search (`codeqa list` names them)")
    search.add_argument("--k", type=int, default=10, help="how many results, 1 to 50 (default 10)")
    search.add_argument(
        "--hyde",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="run the two LLM HyDE steps first (off by default)",
    )
    rerank = search.add_mutually_exclusive_group()
    rerank.add_argument(
        "--rerank",
        dest="rerank",
        action="store_true",
        default=None,
        help="rerank the best files' definitions with the cross-encoder (default: CODEQA_RERANK)",
    )
    rerank.add_argument("--no-rerank", dest="rerank", action="store_false", help="do not rerank")
    search.add_argument("--lang", help="only this language (python, java, ...)")
    search.add_argument("--path", help="only files under this path prefix, relative to the repo root")
    search.add_argument("--role", choices=ROLES, help="only files of this role (source, test, ...)")
    search.add_argument(
        "--mode",
        choices=["hybrid", "vector", "bm25"],
        default="hybrid",
        help="hybrid (default): vectors and BM25 fused; or only one of them",
    )
    search.add_argument("--pool", type=int, help="candidates per table before rerank (default 3 × k)")
    search.add_argument("--json", action="store_true", help="one JSON object per query")
    search.add_argument("--batch", help='JSONL file of {"id", "query"} objects')
    context = commands.add_parser(
        "context",
        help="what the LLM would see for a chat message: its @-commands resolved, the search run, the context packed",
    )
    context.add_argument("message", help='a chat message, e.g. "@definition Cart @references Cart how?"')
    context.add_argument("--repo", required=True, help="the indexed repo the message is about")
    context.add_argument("--budget", type=int, help="context tokens (default: CODEQA_CONTEXT_TOKENS)")
    context.add_argument("--k", type=int, default=8, help="search hits for @codebase")
    context.add_argument("--hyde", action="store_true", help="run HyDE for @codebase (off by default)")
    context.add_argument("--json", action="store_true", help="the same JSON as POST /api/context")
    return parser


def _context_main(args: argparse.Namespace, services: Services) -> int:
    """`codeqa context`: print the packed context (or its JSON) for one message."""
    if args.budget is not None and args.budget < 1:
        raise QueryError("--budget must be a positive number of tokens.")
    options = SearchOptions(k=args.k, hyde=args.hyde, rerank=services.settings.rerank_chat)  # as the chat would
    check_options(options)
    assembled = services.context.build(
        args.repo, args.message, options, args.budget or services.settings.context_tokens
    )
    if args.json:
        print(json.dumps(assembled.to_json()))
        return 0
    for notice in assembled.notices:
        print(printable(f"note: {notice}"), file=sys.stderr)
    print(printable_lines(assembled.text.splitlines()))
    summary = assembled.summary()
    print(
        f"-- {summary['tokens']} of {summary['budget']} tokens; {summary['included']} sources whole, "
        f"{summary['trimmed']} trimmed, {summary['omitted']} left out",
        file=sys.stderr,
    )
    return 0


def _batch(path: str) -> Iterator[tuple[str, str]]:
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    item = json.loads(line)
                    yield str(item["id"]), item["query"]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise QueryError(f'{path}:{number}: expected {{"id", "query"}}: {exc}') from exc


def main(argv: list[str] | None = None, prog: str = "codeqa") -> int:
    """The CLI (`codeqa` runs it with its own `prog`); returns the exit status."""
    args = build_parser(prog).parse_args(argv)
    if args.command == "search" and bool(args.query) == bool(args.batch):
        print("error: give either a QUESTION or --batch FILE", file=sys.stderr)
        return 2
    return run_cli(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    """The subcommand's work; `main` reports the errors a user can act on."""
    from codeqa.services import Services  # after the arguments are read: `--help` needs none of it

    settings = Settings.from_env()
    if args.command == "context" or not args.batch:
        # One question: reading the repo into memory (store.resident) would cost more than it saves.
        settings = replace(settings, resident_rows=0)
    if getattr(args, "rerank", None) is False:  # --no-rerank: the reranker need not even load
        settings = replace(settings, rerank=False, rerank_chat=False)
    with Services(settings) as services:
        if args.command == "context":
            return _context_main(args, services)
        _search_main(args, services)
    return 0


def _search_main(args: argparse.Namespace, services: Services) -> None:
    """`codeqa search`: one question, or a JSONL batch (a bad query there is one error line)."""
    options = SearchOptions(
        k=args.k,
        hyde=args.hyde,
        rerank=args.rerank,
        language=args.lang,
        path_prefix=args.path,
        role=args.role,
        mode=args.mode,
        pool=args.pool,
    )
    check_options(options)  # once, not once per query of a batch
    queries = _batch(args.batch) if args.batch else [(None, args.query)]
    for query_id, query in queries:
        try:
            result = services.retriever.search(args.repo, query, options, query_id=query_id)
        except QueryError as exc:
            if not args.batch:
                raise
            print(json.dumps({"id": query_id, "query": query, "error": str(exc)}), flush=True)
            continue
        print(json.dumps(result.to_json()) if args.json else _format_human(result), flush=True)
