"""Every command-line option is explained in `--help`, and `serve --help` says how to open the
web app to other host names (the front door's settings)."""

from __future__ import annotations

import argparse

import pytest

from codeqa import app, mcp_server, preprocessing, search_cli

pytestmark = pytest.mark.unit


def _actions(parser: argparse.ArgumentParser, name: str):
    """Every option and argument of `parser` and its subcommands, as (where, action)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, subparser in action.choices.items():
                yield from _actions(subparser, f"{name} {command}")
        elif not isinstance(action, argparse._HelpAction):
            yield name, action


@pytest.mark.parametrize("parser", [preprocessing.build_parser(), search_cli.build_parser(), app.build_parser(),
                                    mcp_server.build_parser()], ids=["index", "search", "serve", "mcp"])
def test_every_command_line_option_has_help(parser):
    missing = [f"{where}: {action.option_strings or action.dest}" for where, action in _actions(parser, parser.prog)
               if not action.help]
    assert missing == []


def test_serve_help_says_how_to_open_the_app_to_other_hosts(capsys):
    with pytest.raises(SystemExit):
        app.main(["--help"], prog="codeqa serve")
    shown = capsys.readouterr().out
    assert "CODEQA_ALLOWED_HOSTS" in shown and "CODEQA_ALLOWED_ORIGINS" in shown
