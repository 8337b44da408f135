"""The memory's tools as OpenAI Agents SDK function tools (``openai-agents``;
``pip install 'hgm-engine[agents]'``).

Each is a ``FunctionTool`` made from one :class:`~hgm_engine.integrations.tools.MemoryTool`:
the same name, description and JSON Schema as the MCP tool (not in the SDK's strict mode,
which would make every optional argument required), the same answer (the JSON document as
text, the ``{"error": ...}`` document on a refusal, so the model reads the category). The
tool runs in a worker thread, so the agent's event loop is never held by a query.

>>> import asyncio, json
>>> from hgm_engine import Memory
>>> tool = agents_tools(Memory(), names=["query"])[0]
>>> tool.name, tool.strict_json_schema
('query', False)
>>> json.loads(asyncio.run(tool.on_invoke_tool(None, '{"expr": "nodes.count()"}')))["value"]
0
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Iterable

from hgm_engine.errors import Problem, RequestError
from hgm_engine.integrations.tools import MemoryTool, memory_tools

__all__ = ["agents_tools", "agents_tool"]


def _require() -> Any:
    try:
        import agents
    except ImportError:
        raise RequestError([Problem(
            "missing-package", "the Agents SDK tools need openai-agents: pip install 'hgm-engine[agents]'"
        )]) from None
    return agents


def _arguments(text: str) -> tuple[Any, str | None]:
    try:
        arguments = json.loads(text) if text and text.strip() else {}
    except ValueError as exc:
        return None, f"the arguments are not JSON: {exc}"
    if not isinstance(arguments, dict):
        return None, "the arguments are a JSON object"
    return arguments, None


def agents_tool(tool: MemoryTool) -> Any:
    """One :class:`~hgm_engine.integrations.tools.MemoryTool` as an Agents SDK ``FunctionTool``."""
    sdk = _require()

    async def invoke(context: Any, text: str) -> str:
        arguments, problem = _arguments(text)
        if problem is not None:
            doc = {"error": {"category": "invalid-argument", "message": problem, "line": None, "column": None}}
            return json.dumps(doc)
        return await asyncio.to_thread(tool.text, arguments)

    return sdk.FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=dict(tool.input_schema),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def agents_tools(memory: Any, *, names: Iterable[str] | None = None, read_only: bool = False) -> list[Any]:
    """The memory's tools (all, those in ``names``, or only the read-only ones) as Agents SDK
    function tools, for ``Agent(tools=...)``."""
    return [agents_tool(tool) for tool in memory_tools(memory, names=names, read_only=read_only)]
