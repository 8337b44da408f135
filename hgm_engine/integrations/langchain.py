"""The memory's tools as LangChain tools (``langchain-core``; ``pip install 'hgm-engine[langchain]'``).

Each is a ``StructuredTool`` made from one :class:`~hgm_engine.integrations.tools.MemoryTool`:
the same name, description and JSON Schema as the MCP tool, the same answer (the JSON
document as text). A refusal is the ``{"error": ...}`` document too, returned to the model as
a tool message with ``status="error"`` (a ``ToolException`` the tool handles), never an
exception out of the agent loop.

>>> from hgm_engine import Memory
>>> tools = {tool.name: tool for tool in langchain_tools(Memory(), names=["transact", "query"])}
>>> tools["transact"].invoke({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})[:25]
'{"committed": true, "t": '
>>> message = tools["query"].invoke({"type": "tool_call", "id": "c1", "name": "query", "args": {"expr": "root.subgoal"}})
>>> message.status, message.content[:40]
('error', '{"error": {"category": "unknown-name", "')
"""

from __future__ import annotations

from typing import Any, Iterable

from hgm_engine.errors import Problem, RequestError
from hgm_engine.integrations.tools import MemoryTool, memory_tools

__all__ = ["langchain_tools", "langchain_tool"]


def _require() -> Any:
    try:
        from langchain_core import tools
    except ImportError:
        raise RequestError([Problem(
            "missing-package", "the LangChain tools need langchain-core: pip install 'hgm-engine[langchain]'"
        )]) from None
    return tools


def langchain_tool(tool: MemoryTool) -> Any:
    """One :class:`~hgm_engine.integrations.tools.MemoryTool` as a LangChain ``StructuredTool``."""
    lc = _require()

    def run(**arguments: Any) -> str:
        text = tool.text(arguments)
        if text.startswith('{"error": '):
            raise lc.ToolException(text)
        return text

    return lc.StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=dict(tool.input_schema),
        func=run,
        handle_tool_error=True,
        handle_validation_error=True,
        metadata={"hgm_read_only": tool.read_only, "title": tool.title},
    )


def langchain_tools(memory: Any, *, names: Iterable[str] | None = None, read_only: bool = False) -> list[Any]:
    """The memory's tools (all, those in ``names``, or only the read-only ones) as LangChain
    tools, for ``model.bind_tools(...)``, LangGraph's ``ToolNode`` or any agent that takes them."""
    return [langchain_tool(tool) for tool in memory_tools(memory, names=names, read_only=read_only)]
