"""The memory's tools, once, for every agent framework: the MCP server's tool table.

:data:`hgm_engine.server.mcp.TOOLS` is the one definition of each tool — its name, the
description written for a model, the JSON Schema of its input, whether it only reads, and the
:class:`~hgm_engine.server.service.MemoryService` operation it runs. :func:`memory_tools` binds
that table to a memory; the LangChain and OpenAI Agents SDK adapters
(:mod:`hgm_engine.integrations.langchain`, :mod:`hgm_engine.integrations.openai_agents`)
wrap each :class:`MemoryTool` without restating any of it, so a tool reads and behaves the
same under MCP, LangChain and the Agents SDK.

The error contract is MCP's: arguments are checked against the schema first; a failure is no
exception but the ``{"error": {"category", "message", "line", "column", "where"?}}`` document,
flagged as an error, so the model can read the category and fix its call.

>>> from hgm_engine import Memory
>>> tools = {tool.name: tool for tool in memory_tools(Memory())}
>>> tools["transact"].call({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})[0]["t"]
1
>>> doc, failed = tools["query"].call({"expr": "root.subgoal"})
>>> failed, doc["error"]["category"]
(True, 'unknown-name')
>>> print(tools["query"].text({"expr": "root"}))
{"kind": "nodes", "ids": ["g"], "t": 1, "nodes": [{"id": "g", "type": "goal"}]}
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

import attrs

from hgm_engine.errors import Problem, RequestError
from hgm_engine.memory import Memory
from hgm_engine.server.mcp import TOOLS, call_tool
from hgm_engine.server.registry import MemoryRegistry
from hgm_engine.server.service import MemoryService, ServerLimits

__all__ = ["MemoryTool", "memory_tools", "tool_names", "as_service"]


def tool_names(*, read_only: bool = False) -> list[str]:
    """The names of the tools (only those that never change memory, with ``read_only``).

    >>> "query" in tool_names(read_only=True), "transact" in tool_names(read_only=True)
    (True, False)
    """
    return [tool.name for tool in TOOLS if tool.read_only or not read_only]


@attrs.frozen
class MemoryTool:
    """One tool of :data:`~hgm_engine.server.mcp.TOOLS` bound to a memory's service."""

    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool
    service: MemoryService | MemoryRegistry = attrs.field(repr=False)

    def call(self, arguments: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool]:
        """Run the tool: ``(document, is_error)``, exactly as the MCP server answers."""
        return call_tool(self.service, self.name, arguments)

    def text(self, arguments: Mapping[str, Any] | None) -> str:
        """The answer as the JSON text a model reads (the error document too)."""
        return json.dumps(self.call(arguments)[0], ensure_ascii=False, default=str)


def as_service(memory: Memory | MemoryService | MemoryRegistry, limits: ServerLimits | None = None) -> MemoryService | MemoryRegistry:
    """What the tools run on: ``memory``'s :class:`~hgm_engine.server.service.MemoryService`
    when it is one, a :class:`~hgm_engine.server.registry.MemoryRegistry` as it is (a store of
    many memories: each call's ``memory`` argument picks one, as over MCP), else a new service
    with ``limits`` (a shared service's: query length, work and time per query, ops per
    transaction).

    >>> as_service(Memory()).limits.max_ops
    10000
    """
    if isinstance(memory, (MemoryService, MemoryRegistry)):
        return memory
    if not isinstance(memory, Memory):
        raise RequestError([Problem(
            "invalid-argument",
            f"the tools run on a Memory in this process (or its MemoryService), not {type(memory).__name__}; "
            "for a memory behind a server, give the framework the server's MCP endpoint instead",
            where="memory",
        )])
    return MemoryService(memory, limits)


def memory_tools(
    memory: Memory | MemoryService | MemoryRegistry,
    *,
    names: Iterable[str] | None = None,
    read_only: bool = False,
    limits: ServerLimits | None = None,
) -> list[MemoryTool]:
    """The tools over ``memory`` (a Memory, its service, or a registry of many memories), in
    the order of the MCP table: all of them, those in
    ``names`` (an unknown name is refused with the known ones), and only the read-only ones
    with ``read_only``.

    >>> [tool.name for tool in memory_tools(Memory(), names=["search", "query"])]
    ['query', 'search']
    >>> memory_tools(Memory(), names=["qurey"])
    Traceback (most recent call last):
      ...
    hgm_engine.errors.RequestError: invalid-argument at names: no tool 'qurey'; did you mean 'query'?
    """
    service = as_service(memory, limits)
    known = {tool.name for tool in TOOLS}
    wanted = None
    if names is not None:
        wanted = list(names)
        for name in wanted:
            if name not in known:
                from hgm_engine.model import closest

                near = closest(name, sorted(known)) if isinstance(name, str) else None
                hint = f"; did you mean {near!r}?" if near else f"; tools: {', '.join(sorted(known))}"
                raise RequestError([Problem("invalid-argument", f"no tool {name!r}{hint}", where="names")])
    return [
        MemoryTool(tool.name, tool.title, tool.description, tool.input_schema, tool.read_only, service)
        for tool in TOOLS
        if (wanted is None or tool.name in wanted) and (tool.read_only or not read_only)
    ]
