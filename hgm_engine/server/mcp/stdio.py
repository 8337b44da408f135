"""MCP on stdin/stdout (:func:`serve`), with the framing check the SDK lacks: every line the
client sends gets an answer. A line that is not JSON gets the JSON-RPC parse error (-32700,
id null), JSON that is no JSON-RPC message gets invalid request (-32600, with the message's id
when it has a usable one), and the server reads on (:func:`line_error`); the SDK alone would
drop such a line without a word, and the client would wait for ever.

>>> line_error("not json")[0] == PARSE_ERROR
True
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
from typing import Any

from hgm_engine.server.mcp.sdk import build_server
from hgm_engine.store import DEFAULT_MEMORY

__all__ = ["PARSE_ERROR", "INVALID_REQUEST", "line_error", "serve"]

logger = logging.getLogger("hgm.mcp")

PARSE_ERROR, INVALID_REQUEST = -32700, -32600  # JSON-RPC 2.0's codes


def line_error(line: str) -> tuple[int, str, str | int | None] | None:
    """Why a line from the client is no JSON-RPC message: ``(code, message, id)``, or None when
    it is one. Not JSON: :data:`PARSE_ERROR` with id None. JSON of the wrong shape, or JSON
    the SDK's parser cannot take (a number of thousands of digits, nesting past its limit):
    :data:`INVALID_REQUEST` with the message's ``id`` when that is a string or an integer, so
    the client waiting for that id gets its answer.

    >>> line_error('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}') is None
    True
    >>> line_error('{"jsonrpc": "2.0", "id": 1, "method"')[0]
    -32700
    >>> line_error('{"jsonrpc": "2.0", "id": 4, "method": 5}')[::2]
    (-32600, 4)
    >>> line_error('{"jsonrpc": "2.0", "id": [4], "method": "tools/list"}')[::2]
    (-32600, None)
    >>> line_error('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"n": ' + "9" * 5000 + '}}')[::2]
    (-32600, 5)
    """
    import mcp_types
    from pydantic import ValidationError

    unreadable, validated = "", False
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        if not isinstance(message, mcp_types.JSONRPCNotification) or '"id"' not in line:
            return None
        validated = True
        # A notification has no id; one that came with an id the SDK could not take (a list,
        # an object) was meant as a request: say so rather than drop it.
    except ValidationError as exc:
        errors = exc.errors()
        if not errors or errors[0]["type"] == "json_invalid":
            unreadable = str((errors[0].get("ctx") or {}).get("error", "")) if errors else ""
    except Exception as exc:  # noqa: BLE001 - whatever the parser refuses, the line is unreadable
        unreadable = str(exc)
    try:  # Python's parser, told to take any number, tells JSON it cannot read from no JSON
        doc = json.loads(line, parse_int=lambda digits: int(digits) if len(digits) <= 4000 else 0)
    except (ValueError, RecursionError):
        return PARSE_ERROR, f"Parse error: the line is not JSON{': ' + unreadable[:200] if unreadable else ''}", None
    if validated and isinstance(doc, dict) and "id" not in doc:
        return None  # a notification after all (the text "id" was inside a value)
    found = doc.get("id") if isinstance(doc, dict) else None
    usable = isinstance(found, (str, int)) and not isinstance(found, bool) and (isinstance(found, str) or abs(found) < 2**63)
    if unreadable:
        message = f"Invalid Request: the message is JSON this server cannot read ({unreadable[:200]})"
    else:
        message = (
            'Invalid Request: a JSON-RPC 2.0 message is an object with "jsonrpc": "2.0" and a string "method" '
            '(a request also has an "id": a string or an integer), or a response to a request of the server'
        )
    return INVALID_REQUEST, message, found if usable else None


class _CheckedLines:
    """The client's lines that are JSON-RPC messages (what the SDK's stdio transport reads);
    every other line is answered with the error of :func:`line_error` on the server's write
    stream, once :meth:`attach` has it."""

    def __init__(self, source):
        import anyio

        self._source = source
        self._write = None
        self._attached = anyio.Event()

    def attach(self, write_stream) -> None:
        self._write = write_stream
        self._attached.set()

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        import mcp_types
        from mcp.shared.message import SessionMessage

        async for line in self._source:
            if not line.strip():
                continue  # no message at all
            error = line_error(line)
            if error is None:
                yield line
                continue
            code, message, id_ = error
            logger.info("line refused (%d): %s", code, message)
            await self._attached.wait()
            answer = mcp_types.JSONRPCError(jsonrpc="2.0", id=id_, error=mcp_types.ErrorData(code=code, message=message))
            await self._write.send(SessionMessage(answer))


async def serve(target: Any, *, default_memory: str = DEFAULT_MEMORY) -> None:
    """Serve the tools on stdin/stdout until the client closes the connection. ``target``: a
    :class:`MemoryService` or a registry of memories (see :func:`build_server`)."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(target, default_memory=default_memory)
    # The SDK drops a line it cannot read without answering: it reads ours, which answer those.
    # (stdin is a duplicate of fd 0, so closing it leaves sys.stdin alone.)
    binary = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    lines = _CheckedLines(anyio.wrap_file(io.TextIOWrapper(binary, encoding="utf-8", errors="replace")))
    try:
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            lines.attach(write_stream)
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        binary.close()
