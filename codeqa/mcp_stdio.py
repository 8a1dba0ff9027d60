"""The MCP server's stdio transport: the SDK's own, with every line it cannot read answered.

The SDK's stdio reader (`mcp.server.stdio.stdio_server`) validates each line as a JSON-RPC
message; a line that fails becomes an exception on the read stream, which the server drops:
the client is told nothing and waits out its own timeout. That happens to a line that is not
JSON, to JSON holding a lone surrogate (`"\\ud800"`: the SDK's parser refuses it, though
Python's `json` reads it), and to JSON that is not a JSON-RPC message.

`answering_stdio` keeps the SDK's transport (its claim on the standard streams included) and
wraps its read stream: each line it could not read is answered on the write stream as
JSON-RPC 2.0 says, in one line, at once, and the server reads on —

- not JSON: a parse error (-32700) with id null;
- a request holding a lone surrogate: an invalid-params error (-32602) with its id, naming the
  argument, as the web API refuses such text;
- JSON that is not a message (`[1, 2]`, no method) or that the SDK's parser refuses otherwise
  (nested too deeply): an invalid-request error (-32600), with the id when it has one.

A notification gets no answer (JSON-RPC forbids one): it is logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from codeqa.core.errors import is_valid_unicode

log = logging.getLogger("codeqa.mcp")

Item = SessionMessage | Exception  # what the SDK's reader puts on the read stream


@asynccontextmanager
async def answering_stdio() -> AsyncIterator[tuple[ReadStream[Item], WriteStream[SessionMessage]]]:
    """The SDK's stdio streams, the read one answering each line it could not read."""
    async with stdio_server() as (read_stream, write_stream):
        yield AnsweringReadStream(read_stream, write_stream), write_stream


class AnsweringReadStream:
    """A read stream (the SDK's `ReadStream` protocol) that passes messages on and answers, on
    `answers`, each line the transport could not read."""

    def __init__(self, inner: ReadStream[Item], answers: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._answers = answers

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message (the SDK's dispatcher reads it)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Item:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            answer = answer_to(unread(item))
            if answer is not None:
                await self._answers.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def unread(exc: Exception) -> object:
    """What the transport could not read, from its validation error: the line itself when it is
    not JSON to the SDK's parser (`json_invalid` carries the input whole), else the parsed value
    (a top-level error, or a missing member's, carries the whole message)."""
    if not isinstance(exc, ValidationError):
        return None
    for error in exc.errors():
        if error["type"] == "json_invalid" or len(error["loc"]) <= 1:
            return error["input"]
    return next((error["input"] for error in exc.errors() if error["type"] == "missing"), None)


def answer_to(unread: object) -> JSONRPCError | None:
    """The error answering what the transport could not read; None for a blank line and for a
    notification (never answered)."""
    if not isinstance(unread, (str, bytes)):
        return _answer_to_message(unread, parsed=True)
    if not unread.strip():
        return None  # a blank line between messages is no message
    try:
        message = json.loads(unread)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, "Parse error: the line is not JSON.")
    return _answer_to_message(message, parsed=False)


def _answer_to_message(message: object, parsed: bool) -> JSONRPCError | None:
    """The error answering JSON that the SDK's parser read (`parsed`: it is no JSON-RPC
    message), or that only Python's `json` reads (a lone surrogate, nesting past the SDK's
    limit); with the request's id whenever it has one, so the client's call ends at once."""
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object.")
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)) or not _valid(request_id):
        request_id = None
    where = _lone_surrogate(message)
    if where is not None:
        if "id" not in message:
            log.warning("dropped a notification holding a lone surrogate")
            return None
        problem = f"{where} is not valid Unicode text (it holds a lone surrogate)"
        return _error(request_id, INVALID_PARAMS, f"Invalid params: {problem}.")
    if not parsed:  # JSON to Python, not to the SDK's parser: nested past its limit
        return _error(
            request_id, INVALID_REQUEST, "Invalid request: the server can't read its JSON (nested too deeply?)."
        )
    return _error(request_id, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request or notification.")


def _lone_surrogate(message: dict) -> str | None:
    """Where in a message a string (or a key) holds a lone surrogate: `the 'query' argument`,
    `the request`; None when none does."""
    params = message.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if isinstance(arguments, dict):
        for name, value in arguments.items():
            if not _valid(name) or not _valid(value):
                return f"the {name!r} argument" if _valid(name) else "an argument's name"
    return None if _valid(message) else "the request"


def _valid(value: object) -> bool:
    """Whether every string in a JSON value, keys included, is valid Unicode. Walked without
    recursion: the value may be nested as deep as Python's `json` reads (near its limit)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str) and not is_valid_unicode(item):
            return False
        if isinstance(item, dict):
            pending += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            pending += item
    return True


def _error(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
