"""``hgm mcp``: the memory as Model Context Protocol tools, over stdio (the official SDK).

:data:`TOOLS` defines each tool (name, description written for an LLM, JSON Schema of its
input, and the operation of :class:`~hgm_engine.server.service.MemoryService` it runs);
:func:`call_tool` validates the arguments and runs one, returning the result document or an
``{"error": ...}`` document (an error result, ``is_error``). :func:`build_server` makes the
SDK's low-level ``Server`` with those tools; :func:`main` serves it on stdin/stdout::

    python -m hgm_engine.server.mcp_server --db memory.db

Configure a client (e.g. a desktop host) with that command. The protocol uses stdout; logs
go to stderr. Every line the client sends gets an answer: one that is not JSON gets the
JSON-RPC parse error (-32700, id null), JSON that is no JSON-RPC message gets invalid request
(-32600, with the message's id when it has a usable one), and the server reads on
(:func:`line_error`); the SDK alone would drop such a line without a word, and the client
would wait for ever.

>>> from hgm_engine import Memory
>>> from hgm_engine.server.service import MemoryService
>>> service = MemoryService(Memory())
>>> sorted(t.name for t in TOOLS)[:4]
['explain', 'facts', 'frontier', 'get_node']
>>> call_tool(service, "transact", {"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})[0]["t"]
1
>>> doc, failed = call_tool(service, "query", {"expr": "root.subgoal"})
>>> failed, doc["error"]["category"]
(True, 'unknown-name')
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
from typing import Any, Callable, Mapping

import attrs

from hgm_engine import __version__
from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory
from hgm_engine.server.service import MemoryService, ServerLimits, error_document

__all__ = [
    "TOOLS",
    "Tool",
    "call_tool",
    "line_error",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "build_server",
    "serve",
    "main",
    "add_parser",
    "add_arguments",
    "run",
]

logger = logging.getLogger("hgm.mcp")

_AS_OF = {
    "type": ["integer", "string"],
    "description": "Read the memory as it was at this t (a commit number), at a snapshot name, or at an ISO 8601 time (the last commit at or before it, e.g. 2026-03-01T09:30:00Z); omit for now.",
}

_OP = {
    "type": "object",
    "description": (
        "One operation. op is one of: "
        "add_node {id?, type, parent?, order?, ...attributes}; "
        "update_node {id, set?: {attr: value}, unset?: [attr]}; "
        "delete_node {id, cascade?: bool}; "
        "add_edge {from, to, type, ...attributes}; "
        "update_edge {from, to, type, set?, unset?}; "
        "delete_edge {from, to, type}; "
        "replace_branch {id, with: [nested plan nodes {id?, type, children?: [...], ...attributes}], set?}; "
        "confirm {id} (clear a node's staleness marks); "
        "invalidate {id, at, by?, reason?} (close a fact's valid time at the ISO 8601 time at instead of "
        "deleting it; by is the newer fact that supersedes it)."
    ),
    "properties": {
        "op": {
            "type": "string",
            "enum": [
                "add_node",
                "update_node",
                "delete_node",
                "add_edge",
                "update_edge",
                "delete_edge",
                "replace_branch",
                "confirm",
                "invalidate",
            ],
        }
    },
    "required": ["op"],
}


@attrs.frozen
class Tool:
    """One MCP tool: what the model reads (name, description, input schema) and what runs."""

    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    run: Callable[[MemoryService, dict[str, Any]], dict[str, Any]]
    read_only: bool = True


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOLS: tuple[Tool, ...] = (
    Tool(
        "query",
        "Query the memory",
        "Read the task memory with a path expression; returns the matching nodes (ids and attributes), "
        "a count, a boolean or paths, plus t (the state read; pass it as base_t to transact). "
        "Starts: root (top-level goals), nodes (all), #ID (one node), focus, $param. "
        "Steps: .children .parent .subgoals .actions .descendants .ancestors .siblings .next .prev "
        ".following .preceding .related .related_facts .related_entities .results .sources .derived "
        ".out(edge_type) .in(edge_type); repetition {m,n} after a one-hop step; "
        ".where(cond) with = != < <= > >= in contains =~ and or not exists(rel) count(rel) has(attr); "
        "[i] [a:b] .first() .last() .limit(n) .sort_by(attr, 'desc'); finals .count() .exists() .paths(). "
        "Examples: \"root.actions.where(status = 'pending')\", \"#trip.descendants.where(type = 'action').count()\", "
        "\"nodes.where(content =~ $pattern)\" with params {\"pattern\": \"hotel\"}. "
        "Put values in params rather than pasting them into expr. Errors name the category "
        "(syntax, unknown-name with a suggestion, missing-parameter, limit-exceeded) and the position.",
        _schema(
            {
                "expr": {"type": "string", "description": "The path expression."},
                "params": {"type": "object", "description": "Values for the $names used in expr (JSON values)."},
                "focus": {"type": "string", "description": "Node id that `focus` and `current_goal` refer to."},
                "as_of": _AS_OF,
                "nodes": {"type": "boolean", "description": "Include node attributes (default true); false returns ids only."},
            },
            ["expr"],
        ),
        lambda s, a: s.query(a["expr"], a.get("focus"), a.get("params"), a.get("as_of"), nodes=a.get("nodes", True)),
    ),
    Tool(
        "explain",
        "Explain a query",
        "Show how a path expression would run: its result kind, the parameters it needs, whether it "
        "uses the focus, and the optimized plan. Nothing is read or changed. Use it to check a query "
        "before running it or to understand an error.",
        _schema({"expr": {"type": "string", "description": "The path expression."}}, ["expr"]),
        lambda s, a: s.explain(a["expr"]),
    ),
    Tool(
        "transact",
        "Change the memory",
        "Apply a list of operations as ONE transaction: all of them or none. Ops apply in order and "
        "each sees the ones before (add a node, then an edge to it). Returns the report: committed, "
        "t, the changes, rules that fired and nodes marked stale. Refused transactions change "
        "nothing and say why: constraint-violation (every violation listed), conflict (something "
        "you read changed after base_t: query again and retry), unknown-node, duplicate-id. "
        "Use dry_run to check without committing. Node types: goal, action, entity, fact, result; "
        "edge types: parent_of, before, related_to, derived_from, produces, replaces, causes. "
        "Example ops: [{\"op\": \"add_node\", \"id\": \"a9\", \"type\": \"action\", \"parent\": \"day1\", "
        "\"content\": \"Visit the Summer Palace\", \"status\": \"pending\"}, "
        "{\"op\": \"update_node\", \"id\": \"a3\", \"set\": {\"status\": \"done\"}}].",
        _schema(
            {
                "ops": {"type": "array", "items": _OP, "minItems": 1, "description": "The operations, in order."},
                "author": {"type": "string", "description": "Who makes the change (recorded in the history)."},
                "reason": {"type": "string", "description": "Why (recorded in the history)."},
                "base_t": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "The t your reads were made at; refuse as a conflict if what this touches changed since.",
                },
                "dry_run": {"type": "boolean", "description": "Check everything, commit nothing."},
            },
            ["ops"],
        ),
        lambda s, a: s.transact({k: v for k, v in a.items() if k != "dry_run"}, dry_run=a.get("dry_run", False)),
        read_only=False,
    ),
    Tool(
        "locate",
        "Find stored decision paths",
        "Find the stored decision paths (past trajectories: a goal and its ordered steps) that best "
        "fit what you are about to do, best first, each with a score and the breakdown of the score. "
        "Reuse a good match's steps, or rewrite it with rewrite_path when the user corrects it.",
        _schema(
            {
                "text": {"type": "string", "minLength": 1, "description": "The task or question, in natural language."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags that matching paths should carry."},
                "k": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many matches (default 5)."},
                "coarse": {"type": "boolean", "description": "Read the scenario summaries first (summarize), then rank only their paths."},
                "scenarios": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "With coarse: scenarios to keep (default 3)."},
            },
            ["text"],
        ),
        lambda s, a: s.locate(a["text"], a.get("tags"), a.get("k", 5), a.get("coarse", False), a.get("scenarios", 3)),
    ),
    Tool(
        "rewrite_path",
        "Rewrite a stored path",
        "Record a corrected version of a stored decision path (found with locate): the old version "
        "is kept and marked superseded, the new one becomes current. steps is either the full new "
        "list of steps or edit ops ({\"keep\": i}, {\"change\": i, ...}, {\"add\": {...}, \"after\": i}, "
        "{\"remove\": i}). Give the reason (e.g. the user's correction).",
        _schema(
            {
                "path_id": {"type": "string", "minLength": 1, "description": "The path (trajectory) id."},
                "steps": {"type": "array", "minItems": 1, "description": "The new steps, or edit ops."},
                "reason": {"type": "string", "minLength": 1, "description": "Why the path changes."},
            },
            ["path_id", "steps", "reason"],
        ),
        lambda s, a: s.rewrite_path(a["path_id"], a["steps"], a["reason"]),
        read_only=False,
    ),
    Tool(
        "stale",
        "List stale nodes",
        "List the nodes that rules marked needs_review or blocked after something they depend on "
        "changed, with each mark's rule, cause and t. Re-check them; clear a mark with "
        "transact [{\"op\": \"confirm\", \"id\": ...}] or update the node.",
        _schema({"as_of": _AS_OF}, []),
        lambda s, a: s.stale(a.get("as_of")),
    ),
    Tool(
        "frontier",
        "Next actions of a goal",
        "The pending actions under a goal that can run now: every action that must come before "
        "them (before edges) is done, and they are neither blocked nor marked stale. Use it to "
        "pick what to do next.",
        _schema({"goal": {"type": "string", "minLength": 1, "description": "The goal's node id."}, "as_of": _AS_OF}, ["goal"]),
        lambda s, a: s.frontier(a["goal"], a.get("as_of")),
    ),
    Tool(
        "facts",
        "What holds about an entity",
        "The facts about an entity (related_to) with their valid time [valid_from, valid_to), "
        "whether each holds at the ISO 8601 time at (default: now) and what superseded what "
        "(invalidate links the newer fact). Use it to read the current price, rule or state of "
        "something without older facts competing.",
        _schema(
            {
                "id": {"type": "string", "minLength": 1, "description": "The entity's node id."},
                "at": {"type": "string", "description": "The valid time, ISO 8601 (2026-03-01 or 2026-03-01T09:30:00Z); omit for now."},
                "as_of": _AS_OF,
            },
            ["id"],
        ),
        lambda s, a: s.facts(a["id"], a.get("at"), a.get("as_of")),
    ),
    Tool(
        "summarize",
        "Summarize a scenario",
        "Roll a scenario's events (or any subtree) up into one summary node (kind 'summary', "
        "linked by 'summarizes' edges to each node it covers): counts, salient steps, entities, "
        "outcomes. Read summaries first (query #ID.summaries) and descend into the events they "
        "cover. Summarizing again refreshes it; it is marked needs_review when what it covers changes.",
        _schema(
            {
                "id": {"type": "string", "minLength": 1, "description": "The scenario (or any node) to summarize."},
                "max_items": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Steps, entities and outcomes named (default 8)."},
                "author": {"type": "string"},
                "reason": {"type": "string"},
            },
            ["id"],
        ),
        lambda s, a: s.summarize(a["id"], a.get("author"), a.get("reason"), a.get("max_items")),
    ),
    Tool(
        "get_node",
        "Read one node",
        "One node with all its attributes (now, or as_of an earlier t or snapshot).",
        _schema({"id": {"type": "string", "minLength": 1, "description": "The node id."}, "as_of": _AS_OF}, ["id"]),
        lambda s, a: s.node(a["id"], a.get("as_of")),
    ),
    Tool(
        "history",
        "History of a node",
        "Every commit that touched a node (its attributes or its edges), oldest first: t, author, "
        "reason, time and the changes.",
        _schema({"node": {"type": "string", "minLength": 1, "description": "The node id."}}, ["node"]),
        lambda s, a: s.history(a["node"]),
    ),
)

_BY_NAME = {tool.name: tool for tool in TOOLS}


def _validator(schema: Mapping[str, Any]):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


_VALIDATORS: dict[str, Any] = {}


def _invalid(message: str, where: str | None = None) -> dict[str, Any]:
    error = {"category": "invalid-argument", "message": message, "line": None, "column": None}
    if where:
        error["where"] = where
    return {"error": error}


def call_tool(service: MemoryService, name: str, arguments: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool]:
    """Run tool ``name``; ``(document, is_error)``. Arguments are checked against the tool's
    input schema first; every failure is an ``{"error": {"category", "message", ...}}``.

    >>> from hgm_engine import Memory
    >>> call_tool(MemoryService(Memory()), "frontier", {"goal": 3})[0]["error"]["message"]
    "goal: 3 is not of type 'string'"
    """
    tool = _BY_NAME.get(name)
    if tool is None:
        return _invalid(f"no tool {name!r}; tools: {', '.join(sorted(_BY_NAME))}"), True
    arguments = dict(arguments or {})
    validator = _VALIDATORS.get(name)
    if validator is None:
        validator = _VALIDATORS[name] = _validator(tool.input_schema)
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path)
        return _invalid(f"{where + ': ' if where else ''}{first.message}", where or None), True
    try:
        return tool.run(service, arguments), False
    except HGMError as err:
        return error_document(err), True
    except RecursionError:
        return {"error": {"category": "limit-exceeded", "message": "the request is nested too deeply", "line": None, "column": None}}, True
    except Exception:  # noqa: BLE001 - a bug: logged in full, and still a result the model can read
        logger.exception("tool %s failed", name)
        message = f"internal error in tool {name!r} (the server's log has the details)"
        return {"error": {"category": "internal", "message": message, "line": None, "column": None}}, True


# -- lines that are no JSON-RPC message ---------------------------------------------------------

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

    unreadable = ""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        if not isinstance(message, mcp_types.JSONRPCNotification) or '"id"' not in line:
            return None
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
    if not unreadable and isinstance(doc, dict) and "id" not in doc and "jsonrpc" in doc and isinstance(doc.get("method"), str):
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


# -- the SDK server ----------------------------------------------------------------------------

INSTRUCTIONS = (
    "hgm is a hierarchical task memory: goals contain subgoals and actions, actions are ordered by "
    "'before' edges, results and facts hang off them. Read with query (path expressions) and "
    "frontier/stale; change it only with transact (all-or-nothing, checked by constraints). "
    "Every answer is JSON; errors carry a category and a message saying how to fix the call."
)


def build_server(service: MemoryService):
    """The MCP SDK's low-level ``Server`` exposing :data:`TOOLS` over ``service``."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    tools = [
        types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=dict(tool.input_schema),
            annotations=types.ToolAnnotations(
                title=tool.title,
                read_only_hint=tool.read_only,
                destructive_hint=not tool.read_only,
                idempotent_hint=tool.read_only,
                open_world_hint=False,
            ),
        )
        for tool in TOOLS
    ]

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx, params) -> types.CallToolResult:
        # Engine calls may wait for the memory's locks or the disk: keep the loop free.
        doc, failed = await anyio.to_thread.run_sync(call_tool, service, params.name, params.arguments)
        if failed:
            logger.info("tool %s refused: %s", params.name, doc.get("error", {}).get("category"))
        text = json.dumps(doc, ensure_ascii=False, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=doc,
            is_error=failed,
        )

    return Server(
        "hgm",
        version=__version__,
        title="hgm task memory",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


async def serve(service: MemoryService) -> None:
    """Serve the tools on stdin/stdout until the client closes the connection."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(service)
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


# -- command line ------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``hgm mcp``.

    >>> add_arguments(argparse.ArgumentParser()).parse_args(["--db", "m.db"]).query_timeout
    5.0
    """
    defaults = ServerLimits()
    parser.add_argument("--db", required=True, metavar="PATH", help="the memory (a SQLite file; created if missing)")
    parser.add_argument("--max-query-length", type=int, default=defaults.max_query_length, metavar="CHARS")
    parser.add_argument("--max-work", type=int, default=defaults.max_work, metavar="N", help="nodes one query's steps may produce")
    parser.add_argument("--query-timeout", type=float, default=defaults.timeout, metavar="SECONDS")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    return parser


def add_parser(subparsers: Any, name: str = "mcp") -> argparse.ArgumentParser:
    """Add ``hgm mcp`` to an argparse subparsers object; its ``func`` default is :func:`run`.

    >>> parser = argparse.ArgumentParser(prog="hgm")
    >>> _ = add_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["mcp", "--db", "m.db"]).db
    'm.db'
    """
    parser = subparsers.add_parser(name, help="serve a memory as MCP tools over stdio", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(prog="hgm mcp", description="Serve an hgm memory as MCP tools over stdio."))


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdin closes); logs on stderr."""
    try:
        import anyio
        import mcp.server.lowlevel  # noqa: F401 - the SDK, before the memory is opened
    except ImportError as exc:
        print(f"hgm mcp: needs the server extra: pip install 'hgm[serve]' ({exc})", file=sys.stderr)
        return 1

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    for name in ("hgm", "mcp"):
        named = logging.getLogger(name)
        named.handlers[:] = [handler]
        named.setLevel(args.log_level.upper())
        named.propagate = False
    limits = ServerLimits(max_query_length=args.max_query_length, max_work=args.max_work, timeout=args.query_timeout)
    try:
        memory = Memory.open(args.db)
    except (HGMError, OSError) as exc:
        print(f"hgm mcp: cannot open {args.db}: {exc}", file=sys.stderr)
        return 1
    try:
        logger.info("serving %s (t=%d, %d nodes) over stdio", args.db, memory.t, len(memory))
        anyio.run(serve, MemoryService(memory, limits))
    except KeyboardInterrupt:
        pass
    finally:
        memory.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``hgm mcp`` as a function: parse ``argv``, serve on stdio until the client disconnects.

    Example (not run here: it reads MCP messages from stdin)::

        main(["--db", "memory.db"])
    """
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
