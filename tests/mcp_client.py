"""A real MCP client session with `codeqa mcp`, usable from plain (sync) tests.

The server runs as a subprocess spoken to over stdio by the SDK's own client, exactly as an
editor or agent runs it; a blocking portal (an event loop in a thread) lets sync tests and
module-scoped fixtures make calls.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import CallToolResult

ROOT = Path(__file__).resolve().parent.parent
# Where an LLM would be if the server asked for one: nothing listens there.
NO_LLM = "http://127.0.0.1:9/v1"


class McpSession:
    """Calls tools of one running server."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client

    def call(self, tool: str, on_progress: ProgressFnT | None = None, **arguments: Any) -> CallToolResult:
        """Call a tool; with `on_progress`, the call carries a progressToken and each progress
        notification is passed to it."""
        return self.portal.call(partial(self.client.call_tool, tool, arguments, progress_callback=on_progress))

    def text(self, tool: str, **arguments: Any) -> str:
        """The text of a successful call."""
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content[0].text
        return result.content[0].text

    def data(self, tool: str, **arguments: Any) -> dict:
        """The structured content of a successful call."""
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content[0].text
        return result.structured_content

    def error(self, tool: str, **arguments: Any) -> str:
        """The message of a call that must fail as a tool error."""
        result = self.call(tool, **arguments)
        assert result.is_error, result.content[0].text
        return result.content[0].text

    def tools(self) -> list:
        return self.portal.call(self.client.list_tools).tools


def server_command(*args: str) -> tuple[str, list[str]]:
    return sys.executable, ["-m", "codeqa", "mcp", *args]


@contextmanager
def mcp_session(data_dir: Path, cwd: Path, *args: str, command: tuple[str, list[str]] | None = None,
                env: dict[str, str] | None = None) -> Iterator[McpSession]:
    """A started server (`codeqa mcp ARGS`, or `command`) on the index in `data_dir`."""
    executable, argv = command or server_command(*args)
    params = StdioServerParameters(
        command=executable, args=argv, cwd=str(cwd),
        env={"CODEQA_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "CODEQA_LLM_BASE_URL": NO_LLM,
             "PYTHONPATH": str(ROOT),  # the checkout's package, wherever `cwd` is
             **(env or {})})
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=300)) as client:
            yield McpSession(portal, client)
