"""The indexing CLI: parse arguments, run the indexer, print what it did.

    python preprocessing.py index /path/to/repo [--name NAME]    # or: codeqa index ...
    python preprocessing.py index --dry-run /path/to/repo        # what would be indexed, skipped
    python preprocessing.py list
    python preprocessing.py remove NAME
    python preprocessing.py watch /path/to/repo [--name NAME]   # index, then re-index on changes

The work itself is `codeqa.indexing.indexer.index_repo` (and `live_index.watch_repo`).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from dataclasses import replace

from codeqa.core.config import Settings
from codeqa.core.errors import printable, printable_lines, run_cli
from codeqa.core.records import RepoInfo
from codeqa.core.servers import yield_cpu
from codeqa.indexing.indexer import IndexReport, index_repo, remove_repo
from codeqa.parsing.preview import IndexPreview, preview_index
from codeqa.parsing.treesitter import MAX_NESTING
from codeqa.services import Services


def _format_report(report: IndexReport) -> str:
    lines = [f"note: {notice}" for notice in report.notices]
    lines += [
        f"Indexed {report.name} ({report.root})",
        f"  files: {report.added} added, {report.changed} changed, {report.deleted} deleted, "
        f"{report.unchanged} unchanged",
    ]
    if report.files_by_language:
        langs = ", ".join(f"{lang} {n}" for lang, n in sorted(report.files_by_language.items()))
        lines.append(f"  by language: {langs}")
    lines.append(
        f"  rows: {report.methods} methods, {report.classes} classes, {report.docs} doc sections, "
        f"{sum(report.files_by_language.values())} files, {report.modules} module-code chunks; "
        f"{report.references} references ({report.references_updated} rows updated); "
        f"{report.embedded} texts embedded"
    )
    if report.vectors_pending:
        lines.append(
            f"  {report.vectors_pending} of {report.rows} rows have no vector yet (found by their text "
            "until the next run embeds them)"
        )
    for reason, count in report.skipped.most_common():
        examples = ", ".join(report.skipped_examples.get(reason, [])[:3])
        lines.append(f"  skipped {count} {reason}" + (f" (e.g. {examples})" if examples else ""))
    if report.non_utf8:
        lines.append(f"  {report.non_utf8} files were not UTF-8 and were decoded with replacement characters")
    for encoding, count in sorted(report.bom_decoded.items()):
        lines.append(f"  {count} files were {encoding.upper()} (by their byte-order mark) and were decoded as such")
    if report.syntax_error_files:
        lines.append(
            f"  {len(report.syntax_error_files)} files have syntax errors (indexed what parsed), "
            f"e.g. {', '.join(report.syntax_error_files[:3])}"
        )
    if report.too_deep:
        lines.append(
            f"  {sum(report.too_deep.values())} definitions nested more than {MAX_NESTING} deep are "
            f"part of their enclosing definition's row, e.g. in {', '.join(list(report.too_deep)[:3])}"
        )
    timings = ", ".join(f"{stage} {seconds:.2f}s" for stage, seconds in report.timings.items())
    lines.append(f"  time: {timings}")
    return printable_lines(lines)  # file names are the repository's: no escape sequence reaches the terminal


DRY_RUN_EXAMPLES = 10  # skipped paths listed per reason


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _counts(counter: Counter[str]) -> str:
    """`python 7, markdown 1, other 1`: most first, ties by name."""
    return ", ".join(f"{key} {count:,}" for key, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _format_preview(preview: IndexPreview) -> str:
    """`index --dry-run`: what a run would index and skip, by folder and by reason."""
    size = sum(size for _, _, size in preview.files)
    lines = [
        f"Dry run of {preview.root}: nothing was indexed or written.",
        f"Would index {_plural(len(preview.files), 'file')} ({size / 1e6:.2f} MB)"
        + (f": {_counts(preview.languages)}" if preview.files else ""),
        f"Would skip {_plural(len(preview.skips), 'path')} (a skipped folder counts once)"
        + (f": {_counts(preview.skipped)}" if preview.skips else ""),
        "By folder (files to index, paths skipped):",
    ]
    folders = preview.by_folder()
    width = max(map(len, folders), default=0)
    for folder, tally in folders.items():
        skipped = f"  ({_counts(tally.skipped)})" if tally.skipped else ""
        lines.append(f"  {folder:<{width}}  {tally.files:>7,}  {sum(tally.skipped.values()):>7,}{skipped}")
    if preview.skips:
        lines.append("Skipped, by reason (a folder ending in / is skipped whole):")
    for reason, count in sorted(preview.skipped.items(), key=lambda kv: (-kv[1], kv[0])):
        paths = sorted(path for why, path in preview.skips if why == reason)
        more = f", and {count - DRY_RUN_EXAMPLES:,} more" if count > DRY_RUN_EXAMPLES else ""
        lines.append(f"  {reason} {count:,}: {', '.join(paths[:DRY_RUN_EXAMPLES])}{more}")
    rules = preview.ignore_files
    lines.append(f"Ignore files read: {', '.join(rules)}" if rules else "No .gitignore or .codeqaignore file.")
    return printable_lines(lines)  # file names are the repository's: no escape sequence reaches the terminal


def _format_repos(repos: list[RepoInfo]) -> str:
    if not repos:
        return "No repos indexed yet: python preprocessing.py index /path/to/repo"
    lines = []
    for info in repos:
        stats = info.stats
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.indexed_at)) if info.indexed_at else "never"
        lines.append(f"{info.name}\t{info.root}")
        lines.append(
            f"  {stats.files} files, {stats.methods} methods, {stats.classes} classes, {stats.docs} docs, "
            f"{stats.references} references; model {info.embedding_model} "
            f"({info.embedding_dim}-d); last indexed {when}"
            + (f"; {stats.embedded_percent}% embedded" if stats.embedded_percent < 100 else "")
        )
    return printable_lines(lines)


def build_parser(prog: str = "preprocessing.py") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Index code repositories for CodeQA.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log per-file details")
    commands = parser.add_subparsers(dest="command", required=True)
    index = commands.add_parser("index", help="index a repo (first run: everything; later: only what changed)")
    index.add_argument("path", help="the repository's root directory")
    index.add_argument("--name", help="name to index it under (default: the folder name)")
    index.add_argument(
        "--rebuild",
        action="store_true",
        help="index from scratch into new tables, then switch to them (needed after "
        "changing the embedding model); searches use the old index meanwhile",
    )
    index.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be indexed and skipped (by folder and by reason), then stop: "
        "nothing is parsed, embedded or written",
    )
    index.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress output (a bar on a terminal, else a line every 10%% or 10 s)",
    )
    watch = commands.add_parser(
        "watch", help="index a repo, then keep its index fresh: re-index after every burst of file changes until Ctrl-C"
    )
    watch.add_argument("path", help="the repository's root directory")
    watch.add_argument("--name", help="name to index it under (default: the folder name)")
    watch.add_argument("--no-progress", action="store_true", help="no progress output for the first run")
    commands.add_parser("list", help="list indexed repos")
    remove = commands.add_parser("remove", help="delete a repo's index")
    remove.add_argument("name", help="the repo's name, as `list` shows it")
    for command in (index, watch):
        command.add_argument(
            "--cluster",
            metavar="ADDRESS",
            help="parse and embed on the Ray cluster whose head is at HOST:PORT (default: CODEQA_CLUSTER, "
            "else this machine); this process still writes the index",
        )
    for command in (index, remove):
        command.add_argument(
            "--wait",
            type=_seconds,
            default=0.0,
            metavar="SECONDS",
            help="if another run is indexing this repo, wait up to this long for it "
            "(default: stop at once with exit status 75)",
        )
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to 86400, got {text!r}")
    return value


def _watch(args: argparse.Namespace, services: Services) -> None:
    """`watch`: the first run's full report, then one line per re-index."""
    from codeqa.indexing.live_index import (  # watchfiles: only for `watch`
        format_changes,
        format_fold,
        format_run,
        watch_repo,
    )

    first = True

    def on_run(report: IndexReport) -> None:
        nonlocal first
        if first:
            print(_format_report(report))
            print(printable(f"Watching {report.root} for changes (Ctrl-C to stop)"), flush=True)
            first = False
        else:
            print(printable(format_run(report)), flush=True)

    watch_repo(
        args.path,
        services.settings,
        services.db,
        name=args.name,
        on_changes=lambda paths: print(printable(format_changes(paths)), flush=True),
        on_run=on_run,
        progress=False if args.no_progress else None,
        on_fold=lambda name, seconds: print(printable(format_fold(name, seconds)), flush=True),
    )


class _OneLineFormatter(logging.Formatter):
    """Log records as one line each: a warning's traceback (a lock not released on a full disk)
    is for `--verbose`, and the error that follows it says what went wrong."""

    def formatException(self, exc_info) -> str:
        return ""


def main(argv: list[str] | None = None, prog: str = "preprocessing.py") -> int:
    """The CLI (`codeqa` runs it with its own `prog`); returns the exit status."""
    args = build_parser(prog).parse_args(argv)
    handler = logging.StreamHandler()
    handler.setFormatter(
        logging.Formatter("%(levelname)s %(name)s: %(message)s")
        if args.verbose
        else _OneLineFormatter("%(levelname)s %(name)s: %(message)s")
    )
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    try:
        return run_cli(lambda: _run(args))
    except KeyboardInterrupt:
        print("interrupted: the index is consistent; rerun to finish", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    """The subcommand's work; `main` reports the errors a user can act on."""
    settings = Settings.from_env()
    if getattr(args, "cluster", None):
        settings = replace(settings, cluster=args.cluster)
    services = Services(settings)
    if args.command == "index" and args.dry_run:
        print(_format_preview(preview_index(args.path, services.settings.max_file_bytes)))
        return 0
    if args.command in ("index", "watch"):
        yield_cpu(services.settings.background_niceness)  # searches of a running web app go first
    if args.command == "index":
        report = index_repo(
            args.path,
            services.settings,
            name=args.name,
            rebuild=args.rebuild,
            progress=False if args.no_progress else None,
            db=services.db,
            wait=args.wait,
        )
        print(_format_report(report))
    elif args.command == "watch":
        _watch(args, services)
    elif args.command == "list":
        print(_format_repos(services.repos()))
    else:
        info = remove_repo(services.db, args.name, args.wait)
        print(printable(f"Removed {info.name} ({info.root})."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
