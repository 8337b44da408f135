"""``hgm mcp``: memories as Model Context Protocol tools, over stdio or streamable HTTP (the
official SDK).

:data:`TOOLS` defines each tool (name, description written for an LLM, JSON Schema of its
input, and the operation of :class:`~hgm_engine.server.service.MemoryService` it runs);
:func:`call_tool` validates the arguments and runs one on the memory its ``memory`` argument
names (else the server's default), within the grant of the request's token
(:mod:`hgm_engine.server.tokens`), returning the result document or an ``{"error": ...}``
document (an error result, ``is_error``). :func:`build_server` makes the SDK's low-level
``Server`` with those tools over a :class:`~hgm_engine.server.registry.MemoryRegistry`;
:func:`main` serves it on stdin/stdout, or with ``--transport streamable-http`` over HTTP
(:func:`http_app`, behind :class:`TokenCheck` with ``--token-file``)::

    python -m hgm_engine.server.mcp --db memory.db
    python -m hgm_engine.server.mcp --db memory.db --transport streamable-http --port 8766 --token-file tokens.txt

(``python -m hgm_engine.server.mcp_server``, the module's old name, still runs the same
command.) Configure a client (e.g. a desktop host) with that command. The protocol uses
stdout; logs go to stderr. Every line the client sends gets an answer
(:func:`line_error`).

The modules, one job each:

- :mod:`~hgm_engine.server.mcp.tools`: the tool table (:class:`Tool`, :data:`TOOLS`);
- :mod:`~hgm_engine.server.mcp.access`: what a request reaches (:class:`Access`, the
  ``memory`` argument, the token's grant);
- :mod:`~hgm_engine.server.mcp.calls`: running one tool call (:func:`call_tool`);
- :mod:`~hgm_engine.server.mcp.resources`, :mod:`~hgm_engine.server.mcp.prompts`: the
  resources and prompts;
- :mod:`~hgm_engine.server.mcp.sdk`: the SDK's ``Server`` over all of them
  (:func:`build_server`);
- :mod:`~hgm_engine.server.mcp.stdio`: stdin/stdout and the line check (:func:`serve`);
- :mod:`~hgm_engine.server.mcp.http`: streamable HTTP and the token check
  (:func:`http_app`);
- :mod:`~hgm_engine.server.mcp.command`: ``hgm mcp``'s command line (:func:`main`).

>>> from hgm_engine import Memory
>>> from hgm_engine.server.service import MemoryService
>>> service = MemoryService(Memory())
>>> sorted(t.name for t in TOOLS)[:4]
['add_constraint', 'changes', 'commits', 'confirm']
>>> call_tool(service, "transact", {"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})[0]["t"]
1
>>> doc, failed = call_tool(service, "query", {"expr": "root.subgoal"})
>>> failed, doc["error"]["category"]
(True, 'unknown-name')
"""

from __future__ import annotations

from hgm_engine.server.mcp.access import GRANT_SCOPE_KEY, Access, memories_of, request_grant
from hgm_engine.server.mcp.calls import call_tool
from hgm_engine.server.mcp.command import add_arguments, add_parser, build_parser, main, run
from hgm_engine.server.mcp.http import DEFAULT_HTTP_PATH, DEFAULT_HTTP_PORT, TokenCheck, http_app, serve_http
from hgm_engine.server.mcp.prompts import PROMPTS, Prompt, get_prompt
from hgm_engine.server.mcp.resources import (
    GLOBAL_RESOURCES,
    MEMORY_RESOURCE_TEMPLATES,
    MEMORY_URI,
    RESOURCE_TEMPLATES,
    RESOURCES,
    Resource,
    language_reference,
    memory_language,
    read_resource,
)
from hgm_engine.server.mcp.sdk import INSTRUCTIONS, build_server
from hgm_engine.server.mcp.stdio import INVALID_REQUEST, PARSE_ERROR, line_error, serve
from hgm_engine.server.mcp.tools import (
    MEMORY_ARGUMENT,
    MEMORY_TOOLS,
    MORE_TOOLS,
    SEARCH_TOOLS,
    STORE_TOOLS,
    TOOLS,
    Tool,
)

__all__ = [
    "TOOLS",
    "SEARCH_TOOLS",
    "MORE_TOOLS",
    "MEMORY_TOOLS",
    "STORE_TOOLS",
    "MEMORY_ARGUMENT",
    "Access",
    "memories_of",
    "RESOURCES",
    "PROMPTS",
    "read_resource",
    "get_prompt",
    "Tool",
    "call_tool",
    "line_error",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "Resource",
    "RESOURCE_TEMPLATES",
    "GLOBAL_RESOURCES",
    "MEMORY_RESOURCE_TEMPLATES",
    "MEMORY_URI",
    "language_reference",
    "memory_language",
    "Prompt",
    "INSTRUCTIONS",
    "build_server",
    "GRANT_SCOPE_KEY",
    "request_grant",
    "serve",
    "http_app",
    "serve_http",
    "TokenCheck",
    "DEFAULT_HTTP_PATH",
    "DEFAULT_HTTP_PORT",
    "main",
    "add_parser",
    "add_arguments",
    "build_parser",
    "run",
]
