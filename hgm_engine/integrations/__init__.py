"""hgm where agent builders already are (docs/integrations.md):

- :mod:`hgm_engine.integrations.tools`: the MCP server's tool table bound to a memory
  (:func:`memory_tools`), the one definition every adapter reads;
- :mod:`hgm_engine.integrations.langchain`: those tools for LangChain (``langchain_tools``);
- :mod:`hgm_engine.integrations.openai_agents`: for the OpenAI Agents SDK (``agents_tools``);
- :mod:`hgm_engine.integrations.langgraph`: a LangGraph ``BaseStore`` kept in an hgm
  memory, local or remote (``HgmStore``).

Each framework is an optional dependency (the ``langchain``, ``openai-agents`` and
``langgraph`` extras) imported only when its adapter is used.

>>> from hgm_engine.integrations import memory_tools
>>> from hgm_engine import Memory
>>> len(memory_tools(Memory())) > 30
True
"""

from __future__ import annotations

from typing import Any

from hgm_engine.integrations.tools import MemoryTool, memory_tools, tool_names

__all__ = ["MemoryTool", "memory_tools", "tool_names", "langchain_tools", "agents_tools", "HgmStore"]

_LAZY = {
    "langchain_tools": "hgm_engine.integrations.langchain",
    "agents_tools": "hgm_engine.integrations.openai_agents",
    "HgmStore": "hgm_engine.integrations.langgraph",
}


def __getattr__(name: str) -> Any:
    """The adapters, imported on first use (each needs its framework).

    >>> from hgm_engine.integrations import langchain_tools
    >>> callable(langchain_tools)
    True
    """
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hgm_engine.integrations' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
