"""@references and MCP find_references on a real index of the click case from issue 34: the
uses of `Context.invoke` are its own, `runner.invoke` on a `CliRunner` is not one of them, and a
call on an untyped receiver is shown apart as a name match."""

from __future__ import annotations

import pytest

from test_references_receivers import CLICK

pytestmark = pytest.mark.integration


def test_references_and_find_references_keep_name_matches_apart(tmp_path) -> None:
    """The click fixture indexed for real: @references and MCP find_references of Context.invoke
    list its own uses, no `runner.invoke` on a CliRunner, and the untyped fixture call apart."""
    from conftest import settings_for
    from codeqa.chat.chat_commands import parse_message
    from codeqa.chat.resolver import CommandResolver
    from codeqa.store.index import Index
    from codeqa.store import registry
    from codeqa.store.connection import connect
    from codeqa.indexing.indexer import index_repo
    from codeqa.mcp_server import CodeTools
    from codeqa.services import Services

    root = tmp_path / "click"
    for path, source in CLICK.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(source)
    settings = settings_for(tmp_path / "data")
    index_repo(root, settings, name="click", progress=False)
    db = connect(settings)
    lookup = CommandResolver(Index(db)).lookup(registry.get_repo(db, "click"))

    (found,) = lookup.resolve(parse_message("@references Context.invoke").lookups)
    sites = [(s["file_path"], s["start_line"], s["source"]) for s in found.sources]
    assert sites == [("click/core.py", 6, "@references Context.invoke"),
                     ("tests/test_commands.py", 13, "@references Context.invoke"),
                     ("tests/test_commands.py", 17, "@references Context.invoke (name match)")]
    assert "is used 2 times; 1 name match" in found.notes[0]

    (runner,) = lookup.resolve(parse_message("@references CliRunner.invoke").lookups)
    assert [s["start_line"] for s in runner.sources] == [7, 8, 9, 17]
    assert "is used 3 times; 1 name match" in runner.notes[0]

    text, output = CodeTools(Services(settings), "click").find_references("Context.invoke", None, 50)
    assert (output.total, output.resolved, output.name_matches) == (3, 2, 1)
    assert [(u.line, u.resolution) for u in output.uses] == [(6, "self"), (13, "typed"), (17, "name")]
    assert "2 resolved, 1 name match" in text
    assert text.index("Name matches") > text.index("tests/test_commands.py:13:")
