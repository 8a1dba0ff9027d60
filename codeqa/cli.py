"""`codeqa` (and `python -m codeqa`): one command for every face of CodeQA.

    codeqa index PATH [--name N] [--rebuild]   # = python preprocessing.py index ...
    codeqa list | remove NAME | watch PATH      # = python preprocessing.py list | remove | watch
    codeqa search --repo NAME "QUESTION"        # codeqa.search_cli
    codeqa context --repo NAME "MESSAGE"        # codeqa.search_cli
    codeqa serve [--host H] [--port P]          # = python app.py (the web chat, waitress)
    codeqa mcp [--repo NAME]                    # codeqa.mcp_server (MCP tools over stdio)
    codeqa config                               # every setting: its variable, value now, default

Each subcommand is the same code as the module's own entry point; `codeqa SUBCOMMAND --help`
lists its options. Modules are imported only for the subcommand run, so `codeqa list` stays
quick.
"""

from __future__ import annotations

import importlib
import sys

from codeqa.core.errors import run_cli

# subcommand → (module, the subcommand its main takes, or None when it takes the arguments as is)
COMMANDS: dict[str, tuple[str, str | None]] = {
    "index": ("codeqa.preprocessing", "index"),
    "list": ("codeqa.preprocessing", "list"),
    "remove": ("codeqa.preprocessing", "remove"),
    "watch": ("codeqa.preprocessing", "watch"),
    "search": ("codeqa.search_cli", "search"),
    "context": ("codeqa.search_cli", "context"),
    "serve": ("codeqa.app", None),
    "mcp": ("codeqa.mcp_server", None),
}

USAGE = f"""usage: codeqa {{{",".join([*COMMANDS, "config"])}}} ...

  index PATH        index a repo (first run: everything; later: only what changed)
  list              list indexed repos
  remove NAME       delete a repo's index
  watch PATH        index a repo, then re-index on every burst of file changes
  search            search a repo for a question (--repo NAME "QUESTION")
  context           what the LLM would see for a chat message
  serve             serve the web chat (http://127.0.0.1:5000 by default)
  mcp               serve CodeQA's tools to coding agents and editors over MCP (stdio)
  config            every setting (CODEQA_* variables): its value now, its default, what it does

`codeqa COMMAND --help` shows a command's options."""


def main(argv: list[str] | None = None) -> int:
    """Run a subcommand; a closed pipe ends any of them quietly, its `--help` and usage included
    (`errors.run_cli`)."""
    args = sys.argv[1:] if argv is None else argv
    return run_cli(lambda: _dispatch(args))


def _dispatch(args: list[str]) -> int:
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if args[0] == "config":
        return show_config(args[1:])
    if args[0] not in COMMANDS:
        print(f"{USAGE}\n\nerror: unknown command {args[0]!r}", file=sys.stderr)
        return 2
    module, subcommand = COMMANDS[args[0]]
    entry = importlib.import_module(module).main
    if subcommand is None:
        return entry(args[1:], prog=f"codeqa {args[0]}")
    return entry([subcommand, *args[1:]], prog="codeqa")


def show_config(argv: list[str]) -> int:
    """`codeqa config`: the declared settings (core/config.py) as the environment sets them now."""
    from codeqa.core.config import Settings

    if argv and argv[0] in ("-h", "--help"):
        print(
            "usage: codeqa config\n\nEvery setting: its environment variable, its value now (from the "
            "environment and ./.env), its default and what it does. Secrets show only whether they are set."
        )
        return 0

    def show() -> int:
        for env, now, default, help in Settings.from_env().described():
            print(f"{env}={now}\n    default: {default}\n    {help}")
        return 0

    return run_cli(show)


if __name__ == "__main__":
    sys.exit(main())
