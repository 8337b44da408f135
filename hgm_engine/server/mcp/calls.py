"""Running one MCP tool call: check the arguments against the tool's input schema, pick the
memory (:class:`~hgm_engine.server.mcp.access.Access`), run the tool's operation, and turn
every failure into an ``{"error": ...}`` document (:func:`call_tool`).

>>> from hgm_engine import Memory
>>> from hgm_engine.server.service import MemoryService
>>> service = MemoryService(Memory())
>>> call_tool(service, "transact", {"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})[0]["t"]
1
>>> doc, failed = call_tool(service, "query", {"expr": "root.subgoal"})
>>> failed, doc["error"]["category"]
(True, 'unknown-name')
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from hgm_engine.errors import HGMError
from hgm_engine.model import value_problem
from hgm_engine.server.mcp.access import Access, memories_of
from hgm_engine.server.mcp.tools import TOOLS
from hgm_engine.server.service import error_document
from hgm_engine.server.tokens import OPEN_ACCESS, Grant
from hgm_engine.store import DEFAULT_MEMORY

__all__ = ["call_tool"]

logger = logging.getLogger("hgm.mcp")

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


def call_tool(
    target: Any,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    grant: Grant = OPEN_ACCESS,
    default_memory: str = DEFAULT_MEMORY,
) -> tuple[dict[str, Any], bool]:
    """Run tool ``name``; ``(document, is_error)``. Arguments are checked against the tool's
    input schema first; every failure is an ``{"error": {"category", "message", ...}}``.

    ``target`` is the server's memories (a :class:`~hgm_engine.server.registry.MemoryRegistry`,
    or one :class:`MemoryService`: the memory ``default`` alone); the call's ``memory``
    argument (else ``default_memory``) picks one, which ``grant`` (the request's token) must
    cover: ``forbidden`` otherwise, and for a change with a read token.

    >>> from hgm_engine import Memory
    >>> from hgm_engine.server.service import MemoryService
    >>> call_tool(MemoryService(Memory()), "frontier", {"goal": 3})[0]["error"]["message"]
    "goal: 3 is not of type 'string'"
    >>> call_tool(MemoryService(Memory()), "stale", {"memory": "acme/bob"})[0]["error"]["category"]
    'unknown-memory'
    """
    tool = _BY_NAME.get(name)
    if tool is None:
        return _invalid(f"no tool {name!r}; tools: {', '.join(sorted(_BY_NAME))}"), True
    arguments = dict(arguments or {})
    validator = _VALIDATORS.get(name)
    if validator is None:
        validator = _VALIDATORS[name] = _validator(tool.input_schema)
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except (ValueError, RecursionError):  # the validator's message cannot print the value
        problem = value_problem(arguments, None)
        if problem is None:
            return _invalid("the arguments cannot be checked against the tool's schema"), True
        return _invalid(f"{problem.where + ': ' if problem.where else ''}{problem.message}", problem.where), True
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path)
        return _invalid(f"{where + ': ' if where else ''}{first.message}", where or None), True
    access = Access(memories_of(target), grant, default_memory)
    try:
        if not tool.per_memory:
            return tool.run(access, arguments), False
        memory = access.name(arguments, write=tool.writes(arguments))
        rest = {k: v for k, v in arguments.items() if k != "memory"}
        with access.memories.lease(memory) as service:
            return tool.run(service, rest), False
    except HGMError as err:
        return error_document(err), True
    except RecursionError:
        return {"error": {"category": "limit-exceeded", "message": "the request is nested too deeply", "line": None, "column": None}}, True
    except Exception:  # noqa: BLE001 - a bug: logged in full, and still a result the model can read
        logger.exception("tool %s failed", name)
        message = f"internal error in tool {name!r} (the server's log has the details)"
        return {"error": {"category": "internal", "message": message, "line": None, "column": None}}, True
